"""Custom pipeline layouts (Megatron-Core's --pipeline-model-parallel-layout): the grammar and the pace rank."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.core.exceptions import InputError
from mlsysim.physics.pipeline_layout import (
    check_pipeline_layout,
    parse_pipeline_layout,
    stage_layers,
)

DEEPSEEK_V3 = "Et*3|(tt|)*29,m|L"  # the Megatron-Core guide's example: 61 layers and one MTP layer at p 16, v 2


def test_the_guides_deepseek_example_puts_five_layers_on_rank_zero():
    layout = parse_pipeline_layout(DEEPSEEK_V3)
    assert len(layout.stages) == 32 and layout.layers == 61 and layout.mtp_layers == 1
    assert layout.stages[0] == "Ettt" and layout.stages[-2] == "m" and layout.stages[-1] == "L"
    # rank 0 holds stage 0 (3 layers) and stage 16 (2 layers); ranks 1-15 hold 2 + 2, rank 14 2 + the MTP layer
    assert stage_layers(layout, 16) == 5
    assert check_pipeline_layout(layout, DEEPSEEK_V3, layers=61, pipeline_parallel=16, pipeline_chunks=None,
                                 mtp_layers=1) == 2
    assert stage_layers(layout, 16, mtp_weight=4.0) == 6  # rank 14: 2 + 2 layers and the MTP module as 4


def test_embedding_and_loss_slots_make_126_layers_fit_128_slots():
    text = "E|(t|)*126L"  # Llama 3 405B: the embedding and the loss each take one of p v = 128 slots
    layout = parse_pipeline_layout(text)
    assert len(layout.stages) == 128 and layout.layers == 126
    assert check_pipeline_layout(layout, text, layers=126, pipeline_parallel=16, pipeline_chunks=8) == 8
    assert stage_layers(layout, 16) == 8


def test_nested_repeats_commas_spaces_and_empty_stages():
    assert parse_pipeline_layout("E||t|L").stages == ("E", "", "t", "L")
    assert parse_pipeline_layout("((t|)*2 , t*2|)*2L").stages == ("t", "t", "tt", "t", "t", "tt", "L")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("E|t|x", "'x' is not a layout symbol"),
        ("E|(t|L", "'(' is not a layout symbol"),
        ("tttt", "one stage"),
        ("t|E|L", "embedding (E) goes once, on the first stage"),
        ("EE|t|L", "embedding (E) goes once"),
        ("E|L|t", "loss (L) goes once, on the last stage"),
        ("t*0|L", "a repeat takes 1 to"),
        ("(((t)*1000)*1000)*1000|L", "expands to more than"),
        ("t*999999" * 3 + "|L", "expands to more than"),
    ],
)
def test_bad_texts_say_what_is_wrong(text, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_pipeline_layout(text)


@pytest.mark.parametrize(
    ("layers", "p", "chunks", "field", "message"),
    [
        (60, 16, None, "pipeline_layout", "holds 61 transformer layers"),
        (61, 1, None, "pipeline_layout", "needs a pipeline"),
        (61, 5, None, "pipeline_layout", "not a multiple of pipeline_parallel"),
        (61, 16, 4, "pipeline_chunks", "leave pipeline_chunks out"),
        (61, 16, None, "pipeline_layout", "holds 1 MTP layers"),
    ],
)
def test_a_layout_that_disagrees_with_the_scenario_names_the_field(layers, p, chunks, field, message):
    mtp = 0 if "MTP" in message else 1
    with pytest.raises(InputError, match=message) as caught:
        check_pipeline_layout(parse_pipeline_layout(DEEPSEEK_V3), DEEPSEEK_V3, layers, p, chunks, mtp)
    assert caught.value.field == field


@given(
    per_stage=st.lists(st.integers(0, 6), min_size=2, max_size=24),
    p=st.integers(1, 8),
)
@settings(max_examples=100, deadline=None)
def test_the_pace_rank_holds_the_most_layers_and_at_least_the_mean(per_stage, p):
    stages = per_stage[: len(per_stage) - len(per_stage) % p] or per_stage[:p]
    if len(stages) % p:
        return
    layout = parse_pipeline_layout("|".join("t" * n for n in stages))
    ranks = [sum(stages[r::p]) for r in range(p)]
    assert stage_layers(layout, p) == max(ranks)
    assert stage_layers(layout, p) * p >= layout.layers
