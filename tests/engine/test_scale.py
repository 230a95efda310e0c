"""A layout of more devices than the largest published training run is noted, with the figure and its source."""

from mlsysim import Scenarios
from mlsysim.engine.reports.scale import LARGEST_PUBLISHED_RUN_DEVICES, cluster_note

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE  # 8 devices per node


def notes_of(nodes):
    return [n for n in FOUR.variant(nodes=nodes).result.constraint_trace if "published" in n]


def test_the_note_starts_just_beyond_the_largest_published_run():
    at = LARGEST_PUBLISHED_RUN_DEVICES // 8
    assert notes_of(at) == []
    (note,) = notes_of(at + 1)
    assert note.startswith(f"{(at + 1) * 8:,} devices is more than the largest training run")
    assert "16,384 GPUs" in note and "Llama 3 405B" in note and "Table 4" in note


def test_a_billion_nodes_is_noted_and_the_seed_figures_are_unchanged():
    huge = FOUR.variant(nodes=1_000_000_000)
    assert cluster_note(huge.result.n_devices) in huge.result.constraint_trace
    assert huge.result.update_time == FOUR.variant(nodes=1_000_000_000).result.update_time
