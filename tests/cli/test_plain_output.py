"""``run``'s table without rich (a pipe, a file) is the text rich prints there, byte for byte."""

import io

import pytest

from mlsysim.cli import render
from mlsysim.engine.scenarios import Scenarios

VARIANTS = [
    {},
    {"assumptions": "realistic"},
    {"nodes": 4},
    {"nodes": 16, "tensor_parallel": 1, "pipeline_parallel": 2},
    {"failure_rate": "2e-5 failures/device/hour", "checkpoint_bandwidth": "2 GB/s",
     "restart_time": "600 s", "nodes": 32},
]  # fmt: skip


def _printed(monkeypatch, scenario, *, rich: bool) -> str:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr(render, "rich_console_needed", lambda: rich)
    render.print_result(scenario, next_steps=["Next: mlsysim explain X   (how)", "      more"])
    return out.getvalue()


def _scenarios():
    from mlsysim.engine.io.overrides import apply_overrides

    for name in Scenarios.names():
        for changes in VARIANTS:
            sets = [f"{k}={v}" for k, v in changes.items()]
            try:
                yield f"{name} {sets}", apply_overrides(Scenarios.get(name), sets)
            except Exception:  # noqa: BLE001 - a variant the scenario refuses: not a table to compare
                continue


@pytest.mark.filterwarnings("ignore")
def test_the_plain_table_is_what_rich_prints_to_a_pipe(monkeypatch):
    plain_tables = 0
    for label, scenario in _scenarios():
        plain = _printed(monkeypatch, scenario, rich=False)
        assert plain == _printed(monkeypatch, scenario, rich=True), label
        tables = [
            render.plain_table(("result", "value", "unit"), render.result_rows(scenario)),
            render.plain_table(("input", "value", "meaning"), render.input_rows(scenario), escaped=True),
        ]
        plain_tables += all(t is not None for t in tables)
    assert plain_tables >= len(Scenarios.names())  # the plain path was compared, not rich twice


def test_cells_only_rich_can_print_go_to_rich():
    assert render.plain_table(("a", "b", "c"), [("x", "1", "y")]) is not None
    assert render.plain_table(("a", "b", "c"), [("[bold]x", "1", "y")]) is None  # markup
    assert render.plain_table(("a", "b", "c"), [("x", "[bold]1", "y")], escaped=True) is not None
    assert render.plain_table(("a", "b", "c"), [("x", "1", "µs")]) is None  # not ASCII
    assert render.plain_table(("a", "b", "c"), [("x", ":smile:", "y")], escaped=True) is None
