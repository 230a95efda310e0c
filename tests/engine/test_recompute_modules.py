"""Megatron-Core's per-module selective recomputation (``recompute_modules``), typed as a user types it."""

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.core.exceptions import InputError
from mlsysim.physics.operators import dense_mlp_parameters
from mlsysim.physics.tensor_parallel import tp_activation_bytes_per_layer
from tests.runner import run

LLAMA = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=1,
    training_tokens=Q_(1e12, "token"), per_device_batch=2, tensor_parallel=2, accumulation_steps=4,
)


def figures(**changes):
    return LLAMA.variant(**changes).result.figures


def test_the_default_is_the_attention_core_bit_for_bit():
    default, named = figures(), figures(recompute_modules="core_attn")
    assert default.update_time == named.update_time and default.memory_per_device == named.memory_per_device


@pytest.mark.parametrize("sp", [False, True])
def test_each_module_drops_its_tensors_from_the_layer(sp):
    """Korthikanti et al. 2022, section 4.1: 16 s b h / t between the MLP's products, 4 s b h of norm outputs
    (split by t under sequence parallelism)."""
    s, b, h, a, t = 4096, 2, 4096, 32, 4
    sbh = s * b * h

    def layer(*modules):
        return tp_activation_bytes_per_layer(s, b, h, a, t, sequence_parallel=sp, recompute="selective",
                                             flash_attention=True, modules=modules)

    assert layer() == layer("core_attn") == pytest.approx(sbh * (34 / t if sp else 10 + 24 / t))
    assert layer("core_attn") - layer("core_attn", "mlp") == pytest.approx(16 * sbh / t)
    assert layer("core_attn") - layer("core_attn", "layernorm") == pytest.approx(4 * sbh / (t if sp else 1))
    unfused = tp_activation_bytes_per_layer(s, b, h, a, t, sequence_parallel=sp, recompute="selective",
                                            flash_attention=False, modules=("mlp",))
    assert unfused - layer("mlp") == pytest.approx(5 * a * s * s * b / t)  # the core's matrices stay stored


def test_rerunning_the_mlp_costs_its_forward_and_one_more_collective():
    core, mlp = figures(), figures(recompute_modules="core_attn,mlp")
    full = figures(recompute="full")
    assert core.compute_time < mlp.compute_time < full.compute_time
    assert mlp.tensor_parallel_time == pytest.approx(core.tensor_parallel_time * 5 / 4, rel=1e-12)
    assert mlp.state_memory == core.state_memory and mlp.stage_activation_memory < core.stage_activation_memory
    shape = LLAMA.variant(recompute_modules="core_attn,mlp").result.figures.layout.records.shape
    extra = mlp.layout.terms.compute.recompute_flops_per_sample - core.layout.terms.compute.recompute_flops_per_sample
    assert extra == pytest.approx(2 * 32 * dense_mlp_parameters(shape) * 8192, rel=1e-12)  # 2 L N_mlp s


def test_dropping_the_attention_core_from_the_list_stops_rerunning_it():
    core, mlp_only = figures(recompute_modules="core_attn,mlp"), figures(recompute_modules="mlp")
    assert mlp_only.compute_time < core.compute_time
    assert mlp_only.stage_activation_memory == core.stage_activation_memory  # fused attention stores no matrices


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(recompute="none", recompute_modules="mlp"), "give recompute=selective"),
        (dict(recompute="full", recompute_modules="mlp"), "give recompute=selective"),
        (dict(recompute_modules="moe"), "not priced yet"),
        (dict(recompute_modules="mlpp"), "unknown module 'mlpp'"),
        (dict(recompute_modules=" , "), "expected one or more"),
        (dict(workload=Models.Language.Mixtral_8x7B, recompute_modules="mlp"), "mixture of experts"),
    ],
)
def test_a_module_that_cannot_apply_is_refused_with_the_reason(changes, message):
    with pytest.raises(InputError, match=message) as caught:
        _ = LLAMA.variant(**changes).result
    assert "recompute_modules" in str(caught.value)


def test_the_command_line_takes_megatron_s_list(capsys):
    args = ["explain", "--set", "workload=Llama3_8B", "--set", "node=DGX_H100", "--set", "nodes=1", "--set",
            "training_tokens=1e12", "--set", "per_device_batch=2", "--set", "tensor_parallel=2", "--set",
            "accumulation_steps=4"]
    code, out, _ = run(capsys, *args, "--set", "recompute_modules=core_attn, mlp")
    assert code == 0 and "F_re = 4 L h s^2 + 2 L N_mlp s" in out and "core_attn,mlp" in out
    code, _, err = run(capsys, *args, "--set", "recompute_modules=shared_experts")
    assert code == 2 and err.count("\n") == 1 and "shared_experts" in err
