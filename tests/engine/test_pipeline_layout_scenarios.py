"""A custom pipeline layout through the public scenario, the sweep and the command line."""

import pytest

import mlsysim
from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.core.exceptions import InputError
from tests.planning.conftest import assert_table_matches_scalar
from tests.runner import run

BASE = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=8,
    fabric=Systems.Fabrics.InfiniBand_NDR, mfu=0.4, training_tokens=Q_(1e12, "token"), per_device_batch=1,
    accumulation_steps=16, tensor_parallel=8, pipeline_parallel=4,
)
BALANCED_V2 = "|".join(["t" * 10] * 8)  # 80 layers, 8 stages of 10: what pipeline_chunks=2 balances to


def test_a_balanced_layout_prices_as_the_chunks_it_implies():
    by_layout = BASE.variant(pipeline_layout=BALANCED_V2).result
    by_chunks = BASE.variant(pipeline_chunks=2).result
    assert by_layout.figures.layout.terms.stage.layers == 20  # two chunks of 10 on each rank
    assert by_layout.update_time.to("s").magnitude == pytest.approx(by_chunks.update_time.to("s").magnitude,
                                                                      rel=1e-12)
    assert by_layout.figures.layout.bubble_fraction == pytest.approx(by_chunks.figures.layout.bubble_fraction)


def test_the_fullest_rank_sets_the_pace():
    heavy_first = "t*26|t*18|t*18|t*18"  # rank 0 holds 26 layers, 8 more than the others
    even = BASE.variant(pipeline_layout="t*20|t*20|t*20|t*20").result.figures
    uneven = BASE.variant(pipeline_layout=heavy_first).result.figures
    assert uneven.layout.terms.stage.layers == 26 and even.layout.terms.stage.layers == 20
    assert uneven.compute_time == pytest.approx(even.compute_time * 26 / 20, rel=1e-9)


def test_embedding_and_loss_slots_let_llama_405b_run_at_p16_v8():
    llama = BASE.variant(workload=Models.Language.Llama3_405B, nodes=16, pipeline_parallel=16)
    with pytest.raises(InputError, match="must be at least"):
        _ = llama.variant(pipeline_chunks=8).result  # 126 layers < 128 stages without the two slots
    r = llama.variant(pipeline_layout="E|(t|)*126L").result
    assert r.figures.layout.terms.stage.layers == 8
    text = llama.variant(pipeline_layout="E|(t|)*126L").explain()
    assert "t=8 p=16 (v=8)" in text and "the custom pipeline layout's fullest rank" in text


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (dict(pipeline_layout="t*20|t*20|t*20|t*19"), "pipeline_layout", "holds 79 transformer layers"),
        (dict(pipeline_layout="t*40|t*40", pipeline_parallel=4), "pipeline_layout", "not a multiple"),
        (dict(pipeline_layout=BALANCED_V2, pipeline_chunks=4), "pipeline_chunks", "leave pipeline_chunks out"),
        (dict(pipeline_layout="t*40|t*40", pipeline_parallel=1), "pipeline_layout", "pipeline"),
        (dict(pipeline_layout=BALANCED_V2, first_stage_layers=5), "pipeline_layout", "first_stage_layers"),
        (dict(pipeline_layout="t*20|t*20|t*20|x"), "pipeline_layout", "not a layout symbol"),
    ],
)
def test_a_layout_that_disagrees_is_refused_naming_the_field(changes, field, message):
    with pytest.raises(InputError, match=message) as caught:
        _ = BASE.variant(**changes).result
    assert field in str(caught.value)


def test_a_sweep_with_a_layout_equals_its_solves_and_refuses_a_pipeline_axis():
    job = BASE.variant(pipeline_layout=BALANCED_V2)
    axes = {"nodes": [8, 16]}
    assert_table_matches_scalar(mlsysim.sweep(job, **axes), job, axes)
    with pytest.raises(InputError, match="an axis over pipeline_parallel with pipeline_layout"):
        mlsysim.sweep(job, pipeline_parallel=[2, 4])


def test_the_command_line_takes_a_layout_and_refuses_a_bad_one_in_one_line(capsys):
    args = ["run", "--set", "workload=Llama3_405B", "--set", "node=DGX_H100", "--set", "fabric=InfiniBand_NDR",
            "--set", "nodes=16", "--set", "tensor_parallel=8", "--set", "pipeline_parallel=16", "--set",
            "per_device_batch=1", "--set", "accumulation_steps=16", "--set", "training_tokens=1e12 token"]
    code, out, err = run(capsys, *args, "--set", "pipeline_layout=E|(t|)*126L")
    assert code == 0 and "update time" in out
    code, out, err = run(capsys, *args, "--set", "pipeline_layout=E|(t|)*125L")
    assert code == 2 and err.count("\n") == 1 and "pipeline_layout" in err and "125" in err
