"""Issue 40, "Every input means what it says", through the Python API as the README types it."""

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, InputError, Models, Systems


def test_active_parameters_that_the_shape_contradicts_are_refused():
    """Item 4: DeepSeek-V3 with 300B active parameters was accepted and printed an MFU of 293%."""
    with pytest.raises(InputError, match=r"active_parameters \(3e\+11\) disagrees with the shape, which counts "
                                         r"3\.755e\+10 used per token") as info:
        Models.Language.DeepSeek_V3.variant(active_parameters=Q_(300e9, "param"))
    assert info.value.field == "active_parameters"
    with pytest.raises(InputError, match="parameters") as info:
        Models.Language.Llama3_8B.variant(parameters=Q_(80e9, "param"))
    assert info.value.field == "parameters"
    # the sources' own rounding passes: "37B" active against 37.55B counted, "7B" for 6.74B
    Models.Language.DeepSeek_V3.variant(active_parameters=Q_(37e9, "param"))
    Models.Language.Llama2_7B.variant(parameters=Q_(7e9, "param"))


@pytest.mark.parametrize("workload", ["Llama3_8B", "DeepSeek_V3", "Qwen3_235B_A22B", "Mixtral_8x7B"])
def test_no_utilisation_above_one_from_any_source_of_the_step(workload):
    w = getattr(Models.Language, workload)
    job = DataParallelScaleOutScenario(
        workload=w, precision="bf16", node=Systems.Nodes.DGX_H100, per_device_batch=1,
        training_tokens=Q_(1e9, "token"),
    )
    for scenario in (job, job.variant(mfu=0.55), job.variant(nodes=2, fabric=Systems.Fabrics.InfiniBand_NDR)):
        assert 0 < scenario.result.achieved_mfu <= 1
