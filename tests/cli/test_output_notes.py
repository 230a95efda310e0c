"""The terminal's notes: a printed figure that rounds to zero says its value; a huge layout says
it is beyond any published training run."""

import re

from mlsysim import Scenarios
from mlsysim.cli import main
from mlsysim.cli.render import result_rows, rounding_notes

FOUR = "Gpt2DataParallelFourNodes10GbE"


def test_a_figure_printed_as_zero_gets_a_note_with_its_value(capsys):
    assert main(["run", FOUR, "--set", "nodes=1000000000"]) == 0
    out = capsys.readouterr().out
    row = re.search(r"^training time on \d+ devices\s+(\S+)\s+(\S+)", out, re.M)
    assert row and float(row[1]) == 0.0
    hours = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(nodes=10**9).result.training_time
    minutes = hours.to("min").magnitude
    assert f"is {minutes:.3g} min, below the last digit printed (0.0)" in out
    assert "more than the largest training run with a published device count" in out


def test_no_rounding_note_when_every_printed_figure_is_its_value():
    scenario = Scenarios.Gpt2DataParallelFourNodes10GbE
    assert rounding_notes(scenario) == []
    assert all(text not in ("0.0", "0.00", "0.000") for _, text, _ in result_rows(scenario))
