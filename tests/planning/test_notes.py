"""Plans warn like runs: the best layout and the rows a plan prints carry the notes
``mlsysim run`` gives, once per plan, and the constraint that avoids them."""

import json

import pytest

from mlsysim import Q_, Scenarios, plan
from mlsysim.cli import main
from mlsysim.core.suggest import caller_syntax
from mlsysim.engine.reports.notes import BATCH_SANITY_TOLERANCE
from mlsysim.planning.notes import batch_limit, layout_notes, plan_notes

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
UNPROVEN = "convergence at this batch is unproven"


@pytest.fixture(scope="module")
def found():
    return plan(FOUR, nodes=range(1, 65), deadline=Q_(1, "hour"))


def test_the_best_layout_carries_the_notes_run_gives_it(found):
    best = found.best
    assert best.nodes == 12
    run_notes = [n for n in best.result.constraint_trace if UNPROVEN in n]
    assert len(run_notes) == 1 and "global batch 1536 samples" in run_notes[0]
    assert f"best layout: {run_notes[0]}" in plan_notes(found)
    assert layout_notes(best) == tuple(
        n for n in best.result.constraint_trace if n in layout_notes(best)
    )


def test_rows_are_counted_once_per_kind_not_noted_per_row(found):
    notes = plan_notes(found)
    rows = [n for n in notes if n[0].isdigit()]
    assert len(rows) == 1  # one kind of note: the global batch
    front = found.pareto
    reported = FOUR.workload.largest_reported_batch_samples()
    beyond = int((front["global_batch"] > reported * BATCH_SANITY_TOLERANCE).sum())
    assert rows[0].startswith(f"{beyond} of the {len(front)} layouts of the Pareto front")


def test_the_suggested_constraint_is_in_the_callers_syntax_and_removes_the_notes(found):
    limit = batch_limit(FOUR)
    assert limit == 512  # GPT-2's reported 512 sequences, in steps of 128 per node
    assert plan_notes(found)[-1].endswith(f"add plan(..., max_global_batch={limit})")
    with caller_syntax("text"):
        assert plan_notes(found)[-1].endswith(f"add --max-global-batch {limit}")
    bounded = plan(FOUR, nodes=range(1, 65), max_global_batch=limit)
    assert not any(UNPROVEN in n for n in bounded.notes())
    assert all(bounded.pareto["global_batch"] <= limit)


def test_the_plan_command_prints_the_notes_once(capsys):
    argv = ["plan", "Gpt2DataParallelFourNodes10GbE", "--axis", "nodes=1..64"]
    for rows in ("5", "40"):
        assert main([*argv, "--deadline", "1 hour", "--rows", rows]) == 0
        out = capsys.readouterr().out
        assert out.count(UNPROVEN) == 2  # the best layout, and one example for the rows
        assert f"{rows} of the {rows} rows of the front shown carry this note" in out
        assert "add --max-global-batch 512" in out
    assert main([*argv, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert any(UNPROVEN in n for n in body["notes"])


def test_a_plan_within_every_bound_has_no_notes():
    small = plan(Scenarios.Gpt2DataParallelOneNode, nodes=[1], objective="time")
    assert small.best.result.global_batch <= 512
    assert small.notes() == []
