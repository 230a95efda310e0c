"""Multi-token prediction (``workload.mtp_layers``): DeepSeek-V3's MTP module priced where it runs."""

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.core.exceptions import InputError
from mlsysim.engine.io.overrides import vary_workload
from mlsysim.physics.multi_token import mtp_layer_weight
from tests.runner import run

DSV3 = Models.Language.DeepSeek_V3
WITH_MTP = vary_workload(DSV3, {"mtp_layers": "1"})
JOB = DataParallelScaleOutScenario(
    workload=DSV3, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=32, fabric=Systems.Fabrics.InfiniBand_NDR,
    training_tokens=Q_(1e12, "token"), per_device_batch=1, pipeline_parallel=16, expert_parallel=16,
    accumulation_steps=32,
)


def weight():
    """w by the equation of mlsysim.physics.multi_token, from DeepSeek-V3's own figures (Table: h 7168, V 129280,
    61 layers, 37B active; MLA heads 128 x (128 + 64 + 128) / 2 wide; s 4096)."""
    active = float(JOB.result.figures.layout.records.shape.active_parameters)
    layer = 2 * active / 61 + 4 * (128 * (128 + 64 + 128) / 2) * DSV3.seq_len
    return 1 + (4 * 7168**2 + 2 * 129280 * 7168) / layer


def test_the_module_weighs_its_block_projection_and_head_in_average_layers():
    shape = JOB.result.figures.layout.records.shape
    w = mtp_layer_weight(shape.active_parameters, 61, 7168, 129280, DSV3.seq_len, 128 * (128 + 64 + 128) / 2)
    assert w == pytest.approx(weight(), rel=1e-12)
    assert 2.0 < w < 2.7  # the 1.85 GFLOP output head outweighs the block


def test_on_the_last_stage_it_sets_the_pace_and_leaves_the_model_flops():
    plain = JOB.result.figures
    mtp = JOB.variant(workload=WITH_MTP).result.figures
    assert plain.layout.terms.stage.layers == 4  # ceil(61 / 16)
    assert mtp.layout.terms.stage.layers == pytest.approx(4 + weight(), rel=1e-12)  # the last stage: 4 + w
    assert mtp.update_time > plain.update_time
    assert mtp.layout.terms.compute.flops_per_sample == plain.layout.terms.compute.flops_per_sample  # MFU's count


def test_one_stage_runs_every_layer_and_the_module():
    one = JOB.variant(workload=WITH_MTP, pipeline_parallel=None, expert_parallel=32, nodes=4, accumulation_steps=1)
    assert one.result.figures.layout.terms.stage.layers == pytest.approx(61 + weight(), rel=1e-12)


def test_a_custom_layout_places_the_module_where_its_m_is():
    layout = "Et*3|(tt|)*29,m|L"  # the Megatron-Core guide's DeepSeek-V3 layout: rank 14 holds 2 and m
    r = JOB.variant(workload=WITH_MTP, pipeline_layout=layout).result.figures
    assert r.layout.terms.stage.layers == 5  # rank 0's 3 + 2 layers: 2 + w < 5
    heavy = JOB.variant(workload=WITH_MTP, pipeline_layout="Et*3|(tt|)*28,t|tm|L").result.figures
    assert heavy.layout.terms.stage.layers == pytest.approx(3 + weight(), rel=1e-12)  # rank 14: 2, then 1 and m
    with pytest.raises(InputError, match="holds 1 MTP layers"):
        _ = JOB.variant(pipeline_layout=layout).result  # the workload has no MTP module
    with pytest.raises(InputError, match="holds 0 MTP layers"):
        _ = JOB.variant(workload=WITH_MTP, pipeline_layout="Et*3|(tt|)*29,|L").result  # an empty stage, no m


def test_the_command_line_sets_it_on_the_workload(capsys):
    args = ["run", "--set", "workload=DeepSeek_V3", "--set", "node=DGX_H100", "--set", "nodes=32", "--set",
            "fabric=InfiniBand_NDR", "--set", "training_tokens=1e12", "--set", "per_device_batch=1", "--set",
            "pipeline_parallel=16", "--set", "expert_parallel=16", "--set", "accumulation_steps=32"]
    code, out, _ = run(capsys, *args, "--set", "workload.mtp_layers=1")
    assert code == 0 and "mtp_layers=1" in out
    code, _, err = run(capsys, *args, "--set", "workload.mtp_layers=-1")
    assert code == 2 and err.count("\n") == 1 and "mtp_layers" in err
