"""The page's plan under failures: ranked and limited by the wall clock (issue 30, item 1)."""

import numpy as np
import pytest


def test_the_page_plans_by_the_wall_clock():
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from mlsysim.ui.app import create_app

    client = TestClient(create_app())
    params = {
        "scenario": "Gpt2DataParallelFourNodes10GbE", "plan_axis": "nodes=1,2,4,8,16,32",
        "failure_rate": "1e-2 failures/device/hour", "restart_time": "2 hour",
        "checkpoint_bandwidth": "0.1 GB/s", "objective": "time", "deadline": "50 hour",
    }  # fmt: skip
    body = client.get("/api/plan", params=params).json()
    assert body["time_figure"] == "wall_clock_time" and body["time_label"] == "wall-clock time"
    wall = np.asarray(body["columns"]["wall_clock_time"]["values"], dtype=float)
    assert body["ranked"]["time"] == pytest.approx(wall.tolist())
    feasible = np.asarray(body["feasible"])
    assert (wall[feasible] <= 50).all() and (wall[~feasible] > 50).any()
    assert body["best"] == int(np.argmin(np.where(feasible, wall, np.inf)))
