"""The plan's plot under failures draws the figures the plan ranked by (issue 30, item 1)."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from mlsysim import plan  # noqa: E402
from mlsysim.viz.plots import pareto_plot  # noqa: E402
from tests.planning.test_plan_wall_clock import NODES, PRICED  # noqa: E402


def test_the_plot_of_a_plan_under_failures_is_wall_clock_against_whole_run_cost():
    p = plan(PRICED, objective="time", nodes=NODES)
    ax = pareto_plot(p).axes[0]
    assert ax.get_xlabel().startswith("wall-clock time")
    assert ax.get_ylabel().startswith("whole-run cost")
    best = [c for c in ax.collections if c.get_label().startswith("plan: best")][0]
    x, y = best.get_offsets()[0]
    r = p.best.result
    assert x == pytest.approx(r.wall_clock_time.to("hour").magnitude)  # 84.5 days, 128 nodes
    assert y == pytest.approx(r.total_cost)
    assert np.isfinite([x, y]).all()
