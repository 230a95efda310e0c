"""Plots: non-empty PNG and SVG files with titles and units, and a clear error without matplotlib."""

import sys

import pytest

from mlsysim import Q_, Assumptions, MissingDependencyError, Scenarios, plan, sweep
from mlsysim.viz import plots

pytest.importorskip("matplotlib")

BASE = Scenarios.Gpt2DataParallelOneNode
BW = [Q_(25, "Gbps"), Q_(400, "Gbps")]


@pytest.fixture(scope="module")
def table():
    return sweep(
        BASE.variant(assumptions=Assumptions.realistic()), nodes=[1, 2, 4, 8], inter_bandwidth=BW
    )


def _texts(figure):
    ax = figure.axes[0]
    return ax.get_title(), ax.get_xlabel(), ax.get_ylabel()


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_each_plot_writes_a_file(tmp_path, table, suffix):
    p = plan(BASE, nodes=[1, 2, 4, 8], inter_bandwidth=BW, min_efficiency=0.5)
    drawn = [
        plots.speedup_plot(table, tmp_path / f"speedup{suffix}"),
        plots.efficiency_plot(table, path=tmp_path / f"eff{suffix}"),
        plots.pareto_plot(p, tmp_path / f"pareto{suffix}"),
        plots.breakdown_plot(table, tmp_path / f"bars{suffix}"),
    ]
    for name in ("speedup", "eff", "pareto", "bars"):
        data = (tmp_path / f"{name}{suffix}").read_bytes()
        assert len(data) > 5000
        assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]
    for figure in drawn:
        title, xlabel, ylabel = _texts(figure)
        assert "Gpt2DataParallelOneNode" in title
        assert "(" in xlabel and "(" in ylabel  # a unit on every axis


def test_efficiency_plot_has_one_line_per_series_value(table):
    figure = plots.efficiency_plot(table, x="nodes", series="inter_bandwidth")
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert labels == ["inter_bandwidth=25 Gbps", "inter_bandwidth=400 Gbps"]
    assert figure.axes[0].get_xlabel() == "nodes (count)"


def test_other_axes_are_held_at_their_first_value_and_named():
    t = sweep(BASE, nodes=[1, 2], inter_bandwidth=BW, accumulation_steps=[1, 4])
    figure = plots.efficiency_plot(t)
    assert "accumulation_steps=1" in figure.axes[0].get_title()
    assert all(len(line.get_xdata()) == 2 for line in figure.axes[0].get_lines())


def test_pareto_plot_marks_the_plan():
    p = plan(BASE, nodes=[1, 2, 4], inter_bandwidth=BW)
    labels = {c.get_label() for c in plots.pareto_plot(p).axes[0].collections}
    assert "plan (best cost)" in labels


def test_bad_suffix_is_an_error(tmp_path, table):
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        plots.speedup_plot(table, tmp_path / "x.jpg")


def test_missing_matplotlib_says_what_to_install(monkeypatch, table):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingDependencyError, match=r"mlsysim\[plot\]"):
        plots.speedup_plot(table)
