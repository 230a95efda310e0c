"""Plots: non-empty PNG and SVG files with titles and units, and a clear error without matplotlib."""

import sys

import numpy as np
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


def _series_lines(figure):
    return [line for line in figure.axes[0].get_lines() if line.get_label().startswith("inter")]


def test_efficiency_plot_has_one_line_per_series_value(table):
    figure = plots.efficiency_plot(table, x="nodes", series="inter_bandwidth")
    labels = [line.get_label() for line in _series_lines(figure)]
    assert labels == ["inter_bandwidth=25 Gbps", "inter_bandwidth=400 Gbps"]
    assert figure.axes[0].get_xlabel() == "nodes (count)"


def test_coinciding_lines_stay_apart_by_marker_style_and_end_label():
    """Compute-bound layouts: 100 and 400 Gbps give the same efficiency, both must stay visible."""
    base = BASE.variant(assumptions=Assumptions.realistic(), nics_per_node=8)
    t = sweep(base, nodes=[1, 2, 4, 8], inter_bandwidth=[Q_(100, "Gbps"), Q_(400, "Gbps")])
    figure = plots.efficiency_plot(t)
    lines = _series_lines(figure)
    # they coincide within 1% (the realistic preset's interference term grows a little with
    # the AllReduce hidden under backward, so the slower link costs ~0.4% more)
    assert np.allclose(lines[0].get_ydata(), lines[1].get_ydata(), rtol=1e-2)
    assert lines[0].get_marker() != lines[1].get_marker()
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    ends = {a.get_text(): a.xyann[1] for a in figure.axes[0].texts}
    assert set(ends) == {"100 Gbps", "400 Gbps"}
    assert abs(ends["100 Gbps"] - ends["400 Gbps"]) >= 0.05  # labels spread apart


def test_lines_are_coloured_by_the_swept_value_in_order(table):
    figure = plots.speedup_plot(
        sweep(BASE, nodes=[1, 2, 4], inter_bandwidth=[Q_(400, "Gbps"), Q_(25, "Gbps")])
    )
    colors = {line.get_label(): line.get_color() for line in _series_lines(figure)}
    assert len(set(map(str, colors.values()))) == 2

    # a sequential map, darker for the larger value, whatever the order of the axis
    def lightness(c):
        return sum(c[:3])

    assert lightness(colors["inter_bandwidth=400 Gbps"]) < lightness(
        colors["inter_bandwidth=25 Gbps"]
    )


def test_legends_sit_outside_the_data(tmp_path, table):
    p = plan(BASE, nodes=[1, 2, 4, 8], inter_bandwidth=BW, min_efficiency=0.5)
    for figure in (
        plots.speedup_plot(table),
        plots.efficiency_plot(table),
        plots.pareto_plot(p),
        plots.breakdown_plot(table),
    ):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        renderer = FigureCanvasAgg(figure).get_renderer()
        figure.savefig(tmp_path / "x.png")  # lay out
        axes_box = figure.axes[0].get_window_extent(renderer)
        for legend in figure.legends + [figure.axes[0].get_legend()]:
            if legend is not None:
                assert not legend.get_window_extent(renderer).overlaps(axes_box)


def test_breakdown_stacks_to_the_update_time_and_keeps_hidden_communication_apart(table):
    figure = plots.breakdown_plot(table)
    ax = figure.axes[0]
    stacked = [c for c in ax.containers if not c.get_label().startswith("hidden")]
    hidden = [c for c in ax.containers if c.get_label().startswith("hidden")]
    assert {c.get_label() for c in stacked} >= {"compute", "exposed communication"}
    assert len(hidden) == 1 and table["hidden_communication_time"].any()
    tops = np.sum([[bar.get_height() for bar in c] for c in stacked], axis=0)
    assert tops == pytest.approx(table["update_time"], rel=1e-12)
    for bar, h, compute in zip(
        hidden[0], table["hidden_communication_time"], table["compute_time"], strict=True
    ):
        assert bar.get_height() == pytest.approx(h)
        assert bar.get_y() + bar.get_height() == pytest.approx(compute)  # inside the compute
        assert bar.get_fill() is False and bar.get_hatch()
    assert max(bar.get_y() + bar.get_height() for c in stacked for bar in c) <= ax.get_ylim()[1]


def test_pareto_cost_axis_starts_at_zero_and_an_edge_knee_is_not_called_a_knee():
    p = plan(BASE, nodes=[1, 2, 4, 8], inter_bandwidth=BW, min_efficiency=0.5)
    ax = plots.pareto_plot(p).axes[0]
    assert ax.get_ylim()[0] == 0
    labels = {c.get_label() for c in ax.collections}
    assert "largest feasible layout (no knee in range)" in labels and "knee" not in labels
    assert {"inter_bandwidth=25 Gbps", "inter_bandwidth=400 Gbps"} <= labels


def test_other_axes_are_held_at_their_first_value_and_named():
    t = sweep(BASE, nodes=[1, 2], inter_bandwidth=BW, accumulation_steps=[1, 4])
    figure = plots.efficiency_plot(t)
    assert "accumulation_steps=1" in figure.axes[0].get_title()
    assert all(len(line.get_xdata()) == 2 for line in figure.axes[0].get_lines())


def test_pareto_plot_marks_the_plan():
    p = plan(BASE, nodes=[1, 2, 4], inter_bandwidth=BW)
    labels = {c.get_label() for c in plots.pareto_plot(p).axes[0].collections}
    assert "plan: best cost" in labels


def test_bad_suffix_is_an_error(tmp_path, table):
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        plots.speedup_plot(table, tmp_path / "x.jpg")


def test_missing_matplotlib_says_what_to_install(monkeypatch, table):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingDependencyError, match=r"mlsysim\[plot\]"):
        plots.speedup_plot(table)


def test_pareto_plot_needs_only_the_plans_front_best_and_knee():
    """A plan that keeps no full table (a streaming plan) still draws its front."""
    from types import SimpleNamespace

    p = plan(BASE, nodes=[1, 2, 4, 8], inter_bandwidth=BW, min_efficiency=0.5)
    kept = SimpleNamespace(
        pareto=p.pareto, best=p.best, knee=p.knee, objective=p.objective, constraints=p.constraints
    )
    ax = plots.pareto_plot(kept).axes[0]
    star = next(c for c in ax.collections if c.get_label() == "plan: best cost")
    assert star.get_offsets()[0].tolist() == [
        p.best.result.training_time.magnitude,
        p.best.result.cost,
    ]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_the_timeline_draws_a_bar_per_stage_and_a_legend_per_kind(tmp_path, suffix):
    from mlsysim.engine.io.overrides import apply_overrides
    from mlsysim.engine.reports.timeline import KINDS, timeline

    scenario = apply_overrides(BASE, [
        "workload=Llama3_70B", "node=DGX_H100", "fabric=InfiniBand_NDR", "nodes=16", "mfu=0.5",
        "step_time=none", "training_time=none", "training_tokens=1e12 token", "tensor_parallel=8",
        "pipeline_parallel=4", "accumulation_steps=8", "assumptions.overlap=true",
    ])
    figure = plots.timeline_plot(scenario, tmp_path / f"update{suffix}")
    data = (tmp_path / f"update{suffix}").read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["stage 4", "stage 3", "stage 2", "stage 1"]
    assert ax.get_xlabel() == "time in the update (second)"
    assert ax.get_xlim() == pytest.approx((0, scenario.result.update_time.to("s").magnitude))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    kinds = {seg.kind for row in timeline(scenario.result).rows for seg in row.segments}
    assert len(legend) == len(kinds) + 1  # and the hidden reduction
    assert KINDS["idle"] in legend and KINDS["tensor"] in legend
    assert "(t=8 p=4 d=4, m=8)" in ax.get_title()


def test_a_short_update_is_drawn_in_milliseconds():
    figure = plots.timeline_plot(Scenarios.get("Gpt2DataParallelOneNode").variant(step_time=Q_(20, "ms")))
    assert figure.axes[0].get_xlabel() == "time in the update (millisecond)"
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["device"]


def test_every_kind_of_segment_has_a_colour():
    from mlsysim.engine.reports.timeline import KINDS

    assert list(plots.KIND_COLORS) == list(KINDS)
