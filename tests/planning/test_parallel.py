"""Plans on worker processes and on a real Dask cluster equal the local plan; Parquet equals the sweep."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow.parquet as pq
import pytest
from dask.distributed import Client

from mlsysim import Q_, Assumptions, InputError, Scenarios, plan, sweep
from mlsysim.planning.plan import PlanInterrupted

BASE = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(node_hour_rate=Q_(30, "USD/hour"))
AXES = {
    "nodes": list(range(1, 33)),
    "precision": ["fp16", "fp32"],
    "accumulation_steps": [1, 2, 4, 8],
    "inter_bandwidth": [Q_(10, "Gbps"), Q_(100, "Gbps"), Q_(400, "Gbps")],
    "assumptions": [Assumptions(), Assumptions.realistic()],
}
LIMITS = {"deadline": Q_(3, "hour"), "min_efficiency": 0.5, "max_global_batch": 4096, "top": 4}


def same_plan(a, b):
    assert (a.best_row, a.knee_row, a.excluded, a.feasible_count) == (
        b.best_row,
        b.knee_row,
        b.excluded,
        b.feasible_count,
    )
    for table in ("pareto", "top"):
        x, y = getattr(a, table), getattr(b, table)
        assert [x.grid_index(i) for i in range(len(x))] == [y.grid_index(i) for i in range(len(y))]
    assert a.summary() == b.summary()


@pytest.fixture(scope="module")
def local():
    return plan(BASE, workers=1, **LIMITS, **AXES)


def test_workers_equal_the_local_plan(local):
    p = plan(BASE, workers=2, chunk_rows=100, **LIMITS, **AXES)
    same_plan(p, local)
    assert len([k for k in p.peak_rss if k.startswith("pid")]) >= 1


# -- a real Dask cluster on 127.0.0.1 ----------------------------------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(processes):
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A ``dask scheduler`` and two ``dask worker`` processes (no nanny: one process each)."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path_factory.mktemp("dask")
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    started = []

    def launch(name, *args):
        log = open(logs / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        p = subprocess.Popen(
            [sys.executable, "-m", *args], stdout=log, stderr=subprocess.STDOUT, env=env
        )
        started.append(p)
        return p

    try:
        launch(
            "scheduler",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-dashboard",
        )
        for i in range(2):
            launch(
                f"worker{i}",
                "distributed.cli.dask_worker",
                address,
                "--host",
                "127.0.0.1",
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--memory-limit",
                "0",
            )
        client = Client(address, timeout="60s", set_as_default=False)
        client.wait_for_workers(2, timeout=120)
        yield address, client
        client.close()
    finally:
        _stop(started)
        for p in started:
            assert not psutil.pid_exists(p.pid) or psutil.Process(p.pid).status() == "zombie"


def test_a_dask_cluster_equals_the_local_plan(local, dask_cluster):
    address, client = dask_cluster
    by_address = plan(BASE, scheduler=address, chunk_rows=100, **LIMITS, **AXES)
    same_plan(by_address, local)
    by_client = plan(BASE, scheduler=client, chunk_rows=1000, **LIMITS, **AXES)
    same_plan(by_client, local)
    workers = {k for k in by_address.peak_rss if k.startswith("pid")}
    assert len(workers) == 2  # both workers took tasks
    assert client.status == "running"  # a client we were given stays open


def test_an_unreachable_scheduler_is_one_clear_error():
    with pytest.raises(InputError, match="cannot reach the Dask scheduler"):
        plan(BASE, scheduler=f"tcp://127.0.0.1:{_free_port()}", nodes=[1, 2])


# -- Parquet ---------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_rows", [7, 1 << 16])
def test_parquet_holds_the_in_memory_sweep(tmp_path, chunk_rows):
    path = tmp_path / "rows.parquet"
    assert sweep(BASE, out=path, chunk_rows=chunk_rows, **AXES) == str(path)
    table = sweep(BASE, **AXES)
    frame = pd.read_parquet(path)
    assert list(frame.columns) == list(table.columns)
    assert len(frame) == len(table)
    for column in table.columns:
        got, expected = frame[column].to_numpy(), table[column]
        if column == "fits":  # null where the device memory is unknown, as the table exports it
            assert [None if pd.isna(v) else bool(v) for v in got] == table.export_column("fits")
            continue
        if expected.dtype == object:
            assert got.astype(str).tolist() == expected.tolist(), column
        else:
            assert got.dtype == expected.dtype, column
            np.testing.assert_array_equal(got, expected, err_msg=column)
    units = pq.read_schema(path).field("update_time").metadata[b"unit"]
    assert units == b"millisecond"
    assert [p.name for p in tmp_path.iterdir()] == ["rows.parquet"]  # no temporary file left


def test_a_failed_parquet_sweep_leaves_nothing(tmp_path):
    path = tmp_path / "rows.parquet"

    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(BASE, out=path, chunk_rows=10, progress=stop, **AXES)
    assert list(tmp_path.iterdir()) == []


# -- interruption ----------------------------------------------------------------------


def test_an_interrupted_plan_returns_the_best_so_far():
    calls = []

    def stop(done, total):
        calls.append(done)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(PlanInterrupted) as info:
        plan(BASE, workers=1, chunk_rows=50, progress=stop, **LIMITS, **AXES)
    partial = info.value.plan
    assert partial is not None and partial.partial
    assert partial.evaluated == calls[-1] < partial.size
    assert "PARTIAL: interrupted after" in partial.summary()


def _cli(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "mlsysim", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent,
    )


BIG = [  # 537M layouts: tens of seconds, so a Ctrl-C a second after the workers start lands mid-run
    "Gpt2DataParallelFourNodes10GbE",
    "--set",
    "node_hour_rate=30 USD/hour",
    "--axis",
    "nodes=1..65536",
    "--axis",
    "accumulation_steps=1..64",
    "--axis",
    "devices_per_node=1,2,4,8",
    "--axis",
    "per_device_batch=1,2,4,8,16,32,64,128",
    "--axis",
    "precision=fp32,fp16,bf16,fp8",
]


def _interrupt_when(proc, ready, timeout=120.0):
    """Send SIGINT once ``ready(children)`` holds; the children seen so far."""
    me = psutil.Process(proc.pid)
    seen = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        children = me.children(recursive=True)
        seen |= {c.pid for c in children}
        if ready(children):
            break
        time.sleep(0.2)
    time.sleep(1.0)
    seen |= {c.pid for c in me.children(recursive=True)}
    proc.send_signal(signal.SIGINT)
    return seen


def test_ctrl_c_stops_the_plan_workers_and_reports_the_partial_best():
    proc = _cli("plan", *BIG, "--workers", "2", "--max-layouts", "10000000000")
    seen = _interrupt_when(proc, lambda children: len(children) >= 2)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "PARTIAL: interrupted after" in out or "no feasible layout found so far" in out
    time.sleep(0.5)
    alive = [
        pid for pid in seen if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    ]
    assert alive == [] and len(seen) >= 2


def test_ctrl_c_during_a_parquet_sweep_leaves_no_file(tmp_path):
    target = tmp_path / "big.parquet"
    proc = _cli("sweep", *BIG, "--parquet", str(target), "--max-layouts", "10000000000")
    _interrupt_when(proc, lambda children: any(tmp_path.iterdir()))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert list(tmp_path.iterdir()) == []
