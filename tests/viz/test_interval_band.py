"""The efficiency plot shades the 80% prediction interval of non-seed lines (issue 12)."""

import pytest

from mlsysim import Assumptions, Scenarios, sweep
from mlsysim.viz import plots

pytest.importorskip("matplotlib")


def test_band_only_for_the_realistic_line():
    table = sweep(
        Scenarios.Gpt2DataParallelFourNodes10GbE,
        nodes=[1, 2, 4],
        assumptions=[Assumptions(), Assumptions.realistic()],
    )
    figure = plots.efficiency_plot(table)
    ax = figure.axes[0]
    assert len(ax.collections) == 1  # one shaded band: the realistic line's
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() > 0 and band[:, 1].max() <= 1.0
