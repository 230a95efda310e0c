"""Issue 32's physics through the public scenario: experts, context parallelism, NVLink domains."""

import math

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, InputError, Models, Systems
from mlsysim.physics.compute import transformer_flops_per_sample


def deepseek(**given):
    base = dict(
        workload=Models.Language.DeepSeek_V3, node=Systems.Nodes.HGX_H800, nodes=256, precision="bf16",
        matmul_format="fp8", per_device_batch=1, accumulation_steps=120, pipeline_parallel=16,
        expert_parallel=64, zero_stage=1, flash_attention=1, recompute="none", expert_overlap=1,
        training_tokens=Q_(14.8e12, "token"),
    )
    return DataParallelScaleOutScenario(**(base | given))


def test_a_mixture_of_experts_computes_with_its_active_parameters():
    s = deepseek()
    w = Models.Language.DeepSeek_V3
    dense = transformer_flops_per_sample(671e9, w.layers, w.hidden_dim, w.seq_len)
    assert s.job.flops_per_sample < 0.15 * dense


def test_more_expert_parallelism_needs_less_memory():
    assert deepseek().result.memory_per_device < deepseek(expert_parallel=8).result.memory_per_device


def test_deepseek_v3_gpu_hours_within_15_percent_without_mfu():
    """DeepSeek-AI 2024, Table 1: 2.664M H800 GPU-hours of pre-training on 14.8T tokens (2,048 GPUs,
    PP 16, EP 64, ZeRO-1, batch 15,360 x 4,096, DualPipe's overlap): priced from the operators."""
    s = deepseek()
    assert s.job.origins["step_time"].startswith("operators (fp8")
    hours = s.result.training_time.to("hour").magnitude * 2048
    assert hours == pytest.approx(2.664e6, rel=0.15)


def test_nvl72_racks_halve_the_non_compute_time_of_expert_parallelism():
    """PP 4, EP 64 on 256 GPUs: the all-to-alls inside GB200 NVL72 racks against InfiniBand between
    HGX H800 nodes; the non-compute time under half."""
    def non_compute(node, nodes, assumptions=None):
        s = deepseek(node=node, nodes=nodes, pipeline_parallel=4, accumulation_steps=32, expert_overlap=0,
                     **({"assumptions": assumptions} if assumptions else {}))
        r = s.result
        return (r.update_time - r.compute_time).to("s").magnitude, r
    rack, r_rack = non_compute(Systems.Nodes.GB200_NVL72, 64)  # Blackwell MoE's fitted ceilings
    ib, r_ib = non_compute(Systems.Nodes.HGX_H800, 32)
    assert rack < 0.5 * ib
    assert float(r_rack.figures.expert_parallel_time) < float(r_ib.figures.expert_parallel_time)


def test_context_parallelism_divides_the_activations():
    def memory(cp):
        s = DataParallelScaleOutScenario(
            workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=1, precision="bf16",
            per_device_batch=1, context_parallel=cp, flash_attention=1, recompute="full",
            training_tokens=Q_(1e12, "token"),
        )
        return float(s.result.figures.stage_activation_memory)
    assert memory(1) / memory(8) == pytest.approx(8.0, rel=0.25)


def test_layout_rules_for_experts_and_context_name_the_fix():
    with pytest.raises(InputError, match=r"expert_parallel \(96\) must divide the experts \(256\)"):
        deepseek(expert_parallel=96)
    with pytest.raises(InputError, match="no experts"):
        DataParallelScaleOutScenario(
            workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=2, precision="bf16",
            per_device_batch=1, expert_parallel=4, training_tokens=Q_(1e12, "token"),
        )
    with pytest.raises(InputError, match="must divide the devices"):
        DataParallelScaleOutScenario(
            workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=2, precision="bf16",
            per_device_batch=1, context_parallel=3, training_tokens=Q_(1e12, "token"),
        )


def test_async_tensor_parallelism_hides_its_collectives_under_the_products_but_not_the_first_chunk():
    def tensor_time(overlap):
        s = DataParallelScaleOutScenario(
            workload=Models.Language.Llama3_70B, node=Systems.Nodes.DGX_H100, nodes=4, precision="bf16",
            per_device_batch=4, tensor_parallel=8, sequence_parallel=1, zero_stage=1, flash_attention=1,
            tensor_overlap=overlap, training_tokens=Q_(1e12, "token"),
        )
        return float(s.result.figures.tensor_parallel_time)
    plain, overlapped = tensor_time(0), tensor_time(1)
    assert plain / 8 <= overlapped < plain


def test_a_layout_faster_than_one_device_is_measured_against_its_own_kernels():
    """With 256 experts on one device each expert sees a few tokens (and every expert's weights are cast for
    them); spread over ep = 64 devices each sees 64 times more: the layout's kernels do a micro-batch's work
    faster than one device runs the whole model. The speedup is then measured against one device running the
    layout's kernels, T_ref = t_c t cp L / L_s: the efficiency stays at most 1, and explain says so."""
    from mlsysim.engine.model.equations import one_device_reference

    r = deepseek().result
    f = r.figures
    t1 = float(r.model_inputs.step_time)
    reference = float(one_device_reference(t1, f.layout))
    assert reference == pytest.approx(float(f.layout.terms.compute.micro_batch_time) * 61 / 4, rel=1e-12)
    assert reference < t1
    assert 0 < float(r.efficiency) <= 1.0
    assert float(r.speedup) == pytest.approx(f.data_parallel * 120 * reference / float(f.update_time), rel=1e-12)
    assert any("measured against one device running the layout's kernels" in n for n in r.constraint_trace)
    assert "T_ref = min(T1, t_c t cp L / L_s)" in r.explain()


def test_only_the_routed_experts_run_at_the_expert_ceiling():
    """A mixture of experts' attention, dense and shared layers keep the dense ceilings; the routed experts'
    grouped products take expert_ceiling: halving it slows only their products, and exactly their time."""
    from mlsysim.kernels.device import device_kernels
    from mlsysim.physics.operators import Experts, operator_times
    from mlsysim.physics.records import records_from

    shape = dict(parameters=235e9, layers=94.0, hidden=4096.0, heads=64.0, kv_heads=4.0, head_dim=128.0,
                 seq_len=4096.0, vocab=151936.0, micro_batch=1.0, matmul_peak=989e12, matmul_ceiling=0.77,
                 attention_peak=989e12, attention_ceiling=0.77, memory_bandwidth=3.35e12, compute_units=132.0,
                 ffn_hidden=12288.0, gated_mlp=1.0, flash_attention=True)
    experts = Experts(share=1.0, experts=128.0, top_k=8.0, width=1536.0, parallel=8.0)

    def ops(expert_ceiling=math.nan, **given):
        values = shape | given
        return operator_times(*records_from(peak_flops=values["matmul_peak"], **values,
                                            moe=experts._replace(ceiling=expert_ceiling),
                                            kernels=device_kernels("H100", "bf16").constants))

    same = ops()  # NaN: the linear layers' ceiling
    assert ops(0.77).matmul_time == pytest.approx(float(same.matmul_time), rel=1e-12)
    slow = ops(0.385)
    assert slow.attention_time == same.attention_time and slow.memory_time == same.memory_time
    routed = float(slow.matmul_time - same.matmul_time)  # halving c_e doubles the routed products' time
    assert 0.0 < routed < float(same.matmul_time)
    assert ops(0.385 / 2).matmul_time - same.matmul_time == pytest.approx(3.0 * routed, rel=1e-9)


def test_a_mixture_of_experts_reads_the_dense_ceilings_and_its_experts_own():
    s = deepseek()
    job = s.job
    from mlsysim.kernels.device import device_kernels
    from mlsysim.physics.matmul import fitted_ceiling

    kernels = device_kernels(Systems.Nodes.HGX_H800.accelerator, "fp8")
    share = fitted_ceiling("Hopper", "bf16") / kernels.sixteen_bit_ceiling  # the in-training share of the kernels
    assert job.matmul_ceiling == pytest.approx(share * kernels.matmul_ceiling, rel=1e-12)
    assert job.attention_ceiling == pytest.approx(fitted_ceiling("Hopper", "bf16"), rel=1e-12)
    assert job.expert_ceiling == fitted_ceiling("Hopper", "fp8", experts=True) < job.matmul_ceiling
    assert "routed experts" in job.origins["step_time"]
    from mlsysim import Assumptions

    given = deepseek(assumptions=Assumptions(expert_ceiling=0.3))
    assert given.job.expert_ceiling == 0.3 and given.job.matmul_ceiling == job.matmul_ceiling
    assert given.result.update_time < s.result.update_time  # faster experts, faster update
    dense = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_405B, node=Systems.Nodes.DGX_H100, nodes=64, precision="bf16",
        per_device_batch=1, accumulation_steps=16, tensor_parallel=8, pipeline_parallel=8,
        training_tokens=Q_(1e12, "token"),
    )
    assert math.isnan(dense.job.expert_ceiling)


def test_remote_domains_per_token_counts_what_enumeration_counts():
    """r = (n - 1) (1 - C(E - E/n, k) / C(E, k)) against every k-subset of a small E (uniform routing)."""
    from itertools import combinations

    import numpy as np

    from mlsysim.physics.experts import remote_domains_per_token

    experts, k, group, local = 12, 3, 6.0, 2.0  # 3 domains of 4 experts; the device's domain is domain 0
    per = 4
    subsets = list(combinations(range(experts), k))
    remote = sum(len({e // per for e in s} - {0}) for s in subsets) / len(subsets)
    assert remote_domains_per_token(float(experts), float(k), group, local) == pytest.approx(remote, rel=1e-12)
    rows = remote_domains_per_token(128.0, 8.0, np.array([8.0, 16.0, 32.0]), np.array([8.0, 8.0, 8.0]))
    assert rows[0] == 0.0 and 0 < rows[1] < rows[2] < 8 * 24 / 32


def test_a_hierarchical_dispatch_lowers_only_what_crosses_the_nics():
    inside = deepseek(expert_parallel=8, expert_overlap=0, pipeline_parallel=16)
    across = deepseek(expert_overlap=0)
    assert inside.variant(hierarchical_dispatch=1).result.update_time == inside.result.update_time
    assert across.variant(hierarchical_dispatch=1).result.figures.layout.expert_time < (
        across.result.figures.layout.expert_time
    )
