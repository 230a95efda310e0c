"""A layout's derivation: every printed right-hand side recomputed from its printed operands."""

import math
import re

import pytest

from mlsysim.engine.reports.layout_steps import layout_steps
from mlsysim.hardware.registry import Systems
from mlsysim.kernels.device import device_kernels
from mlsysim.kernels.links import link_curves
from mlsysim.physics.layout import layout_figures
from mlsysim.physics.operators import Experts
from mlsysim.physics.records import MultiHeadLatent, records_from

H100_KERNELS = device_kernels("H100", "bf16").constants

UNITS = {"TB/s": 1e12, "GB/s": 1e9, "MB/s": 1e6, "TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1.0,
         "h": 3600.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
QUANTITY = re.compile(rf"({NUMBER})(?:\s+({'|'.join(re.escape(u) for u in UNITS)}))?(?![\w/])")


def value_of(text):
    expr = text.replace(" x ", " * ")
    expr = QUANTITY.sub(lambda m: f"({m[1]} * {UNITS.get(m[2], 1.0) if m[2] else 1.0})", expr)
    return float(eval(expr, {"__builtins__": {}}, {"max": max, "min": min, "ceil": math.ceil}))


LLAMA = dict(parameters=70.6e9, layers=80.0, hidden=8192.0, heads=64.0, seq_len=8192.0, vocab=128256.0)
H100 = dict(devices=512.0, devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.73,
            memory_bandwidth=3.35e12, intra_bandwidth=450e9, nic_bandwidth=50e9, nics_per_node=8.0)
CASES = {
    "zero-3 picked by the search": dict(tensor_parallel=4.0, micro_batches=4.0, zero_stage=3.0,
                                        sequence_parallel=True, flash_attention=True),
    "pipeline with zero-1": dict(tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, zero_stage=1.0,
                                 sequence_parallel=True, flash_attention=True),
    "interleaved, full recompute, latencies, no overlap": dict(
        tensor_parallel=8.0, pipeline_parallel=8.0, pipeline_chunks=2.0, micro_batches=16.0, recompute="full",
        intra_latency=2e-6, inter_latency=5e-6, data_overlap=0.0),
    "hsdp across nodes, comm-bound": dict(devices=1024.0, micro_batches=8.0, zero_stage=3.0, shard_group=8.0,
                                          nic_bandwidth=3.125e9, nics_per_node=1.0, backward_gathers=0.0,
                                          flash_attention=True),
    "given step time, tensor across nodes": dict(tensor_parallel=16.0, micro_batches=2.0, device_step_time=40.0),
    "operators, fp8 with casts, pipeline": dict(
        tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, zero_stage=1.0, sequence_parallel=True,
        flash_attention=True, matmul_ceiling=0.6, matmul_peak=1979e12, attention_ceiling=0.75,
        compute_units=132.0, kv_heads=8.0, ffn_hidden=28672.0, gated_mlp=1.0, cast_bytes=6.0, matmul_bytes=1.0,
        kernels=H100_KERNELS),
    "operators, 16-bit, unfused attention, full recompute": dict(
        tensor_parallel=4.0, micro_batches=4.0, zero_stage=3.0, recompute="full", matmul_ceiling=0.75,
        compute_units=132.0, fused_elementwise=1.0, kernels=H100_KERNELS),
    "context parallel 8 over two nodes, full recompute, u-priced": dict(
        tensor_parallel=2.0, context_parallel=8.0, micro_batches=4.0, recompute="full", kv_heads=8.0,
        intra_latency=1e-6, inter_latency=5e-6, nic_bandwidth=5e9, flash_attention=True),
    "context parallel 8 over two nodes, all-gather, u-priced": dict(
        tensor_parallel=2.0, context_parallel=8.0, micro_batches=4.0, recompute="full", kv_heads=8.0,
        intra_latency=1e-6, inter_latency=5e-6, nic_bandwidth=5e9, flash_attention=True, context_all_gather=1.0),
    "context parallel 4 in the node, operators": dict(
        tensor_parallel=2.0, context_parallel=4.0, pipeline_parallel=2.0, micro_batches=8.0, kv_heads=8.0,
        matmul_ceiling=0.75, compute_units=132.0, ffn_hidden=28672.0, gated_mlp=1.0, flash_attention=True,
        zero_stage=1.0, kernels=H100_KERNELS),
}
DEEPSEEK = dict(parameters=671e9, layers=61.0, hidden=7168.0, heads=128.0, seq_len=4096.0, vocab=129280.0,
                active_parameters=37e9, expert_parameters=654e9,
                mla=MultiHeadLatent(1536.0, 512.0, 64.0, 128.0, 128.0))
H800 = dict(devices=2048.0, devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.4,
            memory_bandwidth=3.35e12, intra_bandwidth=200e9, nic_bandwidth=50e9, nics_per_node=8.0,
            intra_latency=1e-6, inter_latency=2e-6, pipeline_parallel=16.0, micro_batches=32.0, zero_stage=1.0,
            flash_attention=True)
EXPERT_CASES = {
    "deepseek-v3, ep 64 across nodes": dict(moe=Experts(58 / 61, 256.0, 8.0, 2048.0, 1.0, math.nan, 64.0)),
    "deepseek-v3, ep 64 across nodes, hierarchical dispatch": dict(
        moe=Experts(58 / 61, 256.0, 8.0, 2048.0, 1.0, math.nan, 64.0, hierarchical=1.0)),
    "deepseek-v3, ep 8 in the node, overlapped, expert gradients reduced": dict(
        moe=Experts(58 / 61, 256.0, 8.0, 2048.0, 1.0, math.nan, 8.0), expert_overlap=1.0),
    "deepseek-v3, ep 16 x etp 2 on an NVL72 domain, full recompute": dict(
        moe=Experts(58 / 61, 256.0, 8.0, 2048.0, 1.0, math.nan, 16.0, 2.0), scale_up_domain=72.0,
        devices_per_node=4.0, nics_per_node=4.0, recompute="full", devices=2304.0, tensor_parallel=2.0),
}
CASES.update({name: {**H800, **case} for name, case in EXPERT_CASES.items()})
MODELS = {name: DEEPSEEK for name in EXPERT_CASES}

# the measured collective curves (Assumptions.collectives "measured"): the registry nodes' links, latencies included
DGX_H100_CURVES = H100_KERNELS._replace(collectives=link_curves(Systems.get("DGX_H100")))
HGX_H800_CURVES = H100_KERNELS._replace(collectives=link_curves(Systems.get("HGX_H800")))
REGISTRY_LATENCIES = dict(intra_latency=1e-6, inter_latency=1e-6)
MEASURED_CASES = {
    "measured: tensor 8 with sequence parallelism, pipeline, zero-1": dict(
        tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, zero_stage=1.0, sequence_parallel=True,
        flash_attention=True),
    "measured: zero-3 over 128 nodes, tensor 4 (nvls)": dict(tensor_parallel=4.0, micro_batches=4.0, zero_stage=3.0,
                                                          flash_attention=True),
    "measured: tensor 16 across two nodes": dict(tensor_parallel=16.0, micro_batches=2.0, device_step_time=40.0),
    "measured: context ring 8 over two nodes": dict(tensor_parallel=2.0, context_parallel=8.0, micro_batches=4.0,
                                                    recompute="full", kv_heads=8.0, flash_attention=True),
    "measured: context all-gather 8 over two nodes": dict(
        tensor_parallel=2.0, context_parallel=8.0, micro_batches=4.0, recompute="full", kv_heads=8.0,
        flash_attention=True, context_all_gather=1.0),
    "measured: hierarchical all-reduce over the replicas": dict(tensor_parallel=8.0, micro_batches=4.0,
                                                                algorithm="hierarchical"),
}
CASES.update({name: {**case, **REGISTRY_LATENCIES, "kernels": DGX_H100_CURVES} for name, case in MEASURED_CASES.items()})
MEASURED_EXPERT_CASES = {
    "measured: deepseek-v3, ep 64 across nodes": EXPERT_CASES["deepseek-v3, ep 64 across nodes"],
    "measured: deepseek-v3, ep 64, DeepEP's hierarchical dispatch": EXPERT_CASES[
        "deepseek-v3, ep 64 across nodes, hierarchical dispatch"],
    "measured: deepseek-v3, ep 8 in the node, overlapped": EXPERT_CASES[
        "deepseek-v3, ep 8 in the node, overlapped, expert gradients reduced"],
}
CASES.update({name: {**H800, **case, "inter_latency": 1e-6, "kernels": HGX_H800_CURVES}
              for name, case in MEASURED_EXPERT_CASES.items()})
MODELS.update({name: DEEPSEEK for name in MEASURED_EXPERT_CASES})

OPERATOR_CASES = [name for name in CASES if name.startswith("operators")]


@pytest.mark.parametrize("name", list(CASES))
def test_every_printed_step_recomputes_from_its_printed_operands(name):
    inputs = {**MODELS.get(name, LLAMA), **H100, **CASES[name]}
    figures = layout_figures(*records_from(**inputs))
    steps = layout_steps(figures)
    assert len(steps) >= 8
    for what, equation, operands, value in steps:
        assert equation and "\n" not in operands
        assert value_of(operands) == pytest.approx(value_of(value), rel=2e-5, abs=1e-9), (what, operands, value)


@pytest.mark.parametrize("name", OPERATOR_CASES)
def test_operator_classes_are_printed_and_sum_to_the_micro_batch_time(name):
    """t_c priced operator by operator: a step per class (casts only where there are any), then their sum."""
    inputs = {**LLAMA, **H100, **CASES[name]}
    figures = layout_figures(*records_from(**inputs))
    ops = figures.terms.compute.operators
    steps = {s[0].split(" (")[0].split(",")[0].split(":")[0]: s for s in layout_steps(figures)}
    assert "matrix products per micro-batch" not in steps  # the u-priced steps are replaced
    for what, time in (("matrix products of the linear layers", ops.matmul_time), ("attention core", ops.attention_time),
                       ("memory-bound element-wise work", ops.memory_time), ("t_c", figures.terms.compute.micro_batch_time)):
        assert value_of(steps[what][3]) == pytest.approx(float(time), rel=1e-5), what
    casts = [s for s in steps if s.startswith("casts to")]
    assert bool(casts) == (float(ops.cast_time) > 0)
    assert value_of(steps["t_c"][3]) == pytest.approx(float(ops.total), rel=1e-5)


def test_the_update_step_prints_the_update_time():
    inputs = {**LLAMA, **H100, **CASES["pipeline with zero-1"]}
    figures = layout_figures(*records_from(**inputs))
    update = [s for s in layout_steps(figures) if s[0] == "update"][0]
    assert value_of(update[3]) == pytest.approx(figures.update_time, rel=1e-5)


def test_a_wrong_operand_would_be_caught():
    assert value_of("2 x (8 - 1) x 0 ms + 134.218 MB x 2 x (8 - 1) / 8 / 450 GB/s") == pytest.approx(
        134.218e6 * 1.75 / 450e9)
    assert value_of("4 x 1.43830 s") != pytest.approx(value_of("5763.2 ms"), rel=2e-5)


def _steps(name):
    inputs = {**MODELS.get(name, LLAMA), **H100, **CASES[name]}
    figures = layout_figures(*records_from(**inputs))
    return figures, {s[0].split(" (")[0].split(",")[0].split(";")[0]: s for s in layout_steps(figures)}


@pytest.mark.parametrize("name", [n for n in CASES if "context parallel" in n])
def test_the_ring_steps_print_the_exposed_context_time(name):
    """(Priced alpha-beta: the measured cases print their passes by the curves, below.)"""
    figures, steps = _steps(name)
    q = figures.terms
    assert value_of(steps["keys and values of one ring block"][3]) == pytest.approx(float(q.context.message), rel=1e-5)
    exposed = "context-parallel all-gathers per micro-batch" if "all-gather" in name else (
        "context-parallel ring per micro-batch")
    assert value_of(steps[exposed][3]) == pytest.approx(float(q.context.micro_batch_time), rel=1e-5, abs=1e-9)
    assert value_of(steps["context-parallel time"][3]) == pytest.approx(float(figures.context_time), rel=1e-5,
                                                                        abs=1e-9)
    assert "t_cp" in steps["update"][1] and "t_ep" in steps["update"][1]
    assert value_of(steps["update"][3]) == pytest.approx(float(figures.update_time), rel=1e-5)


def test_a_ring_across_nodes_is_exposed_and_named_so():
    figures, steps = _steps("context parallel 8 over two nodes, full recompute, u-priced")
    assert float(figures.context_time) > 0.05 * float(figures.update_time)
    assert "across scale-up domains of 8 devices" in steps["context-parallel ring per micro-batch"][0]
    assert "4 x (8 - 1)" in steps["context-parallel ring per micro-batch"][2]  # n_kv = 4: the forward recomputed


@pytest.mark.parametrize("name", [*EXPERT_CASES, *MEASURED_EXPERT_CASES])
def test_the_all_to_all_steps_print_the_exposed_expert_time(name):
    figures, steps = _steps(name)
    assert (float(figures.expert_time) > 0) == ("overlapped" not in name)  # one layer's compute hides ep = 8's
    assert value_of(steps["expert all-to-alls per micro-batch"][3]) == pytest.approx(
        float(figures.terms.experts.micro_batch_time), rel=1e-5)
    assert value_of(steps["expert-parallel time"][3]) == pytest.approx(float(figures.expert_time), rel=1e-5)
    assert value_of(steps["parameters per device"][3]) == pytest.approx(
        float(figures.terms.sharding.parameters), rel=1e-5)
    assert value_of(steps["update"][3]) == pytest.approx(float(figures.update_time), rel=1e-5)
    assert steps["update"][2].count(" + ") == 8  # nine terms, t_cp and t_ep among them


def test_the_all_to_all_splits_local_and_remote_ranks_by_the_scale_up_domain():
    _, across = _steps("deepseek-v3, ep 64 across nodes")
    assert across["all-to-all ranks in the device's scale-up domain of D = 8 devices"][3] == "8"
    _, nvl72 = _steps("deepseek-v3, ep 16 x etp 2 on an NVL72 domain, full recompute")
    assert nvl72["all-to-all ranks in the device's scale-up domain of D = 72 devices"][3] == "16"  # all of them
    assert "6 x" in nvl72["expert all-to-alls per micro-batch"][2]  # full recomputation: 6 all-to-alls a layer


def test_overlapped_all_to_alls_subtract_a_layer_of_compute_and_the_experts_gradients_are_printed():
    figures, steps = _steps("deepseek-v3, ep 8 in the node, overlapped, expert gradients reduced")
    cover = float(figures.terms.compute.micro_batch_time) / float(figures.terms.stage.layers)
    exposed = steps["expert all-to-alls per micro-batch"][2]
    assert value_of(exposed.split(" - ")[-1].rstrip(")")) == pytest.approx(cover, rel=1e-5)
    sync = steps["the experts' gradient reduction over the d_e ranks that hold the same experts"]
    assert value_of(sync[3]) > 0
    assert value_of(steps["gradient synchronisation"][3]) == pytest.approx(float(figures.data_time), rel=1e-5)


def test_a_dense_layout_without_context_parallelism_prints_the_seed_update_equation():
    from mlsysim.physics.layout import UPDATE_EQUATION

    _, steps = _steps("pipeline with zero-1")
    assert steps["update"][1] == UPDATE_EQUATION
    assert not any("t_cp" in s[1] or "all-to-all" in s[0] for s in steps.values())


def test_a_hierarchical_dispatch_crosses_the_nics_once_per_remote_domain():
    """DeepSeek-V3's 8 of 256 experts over ep 64 on 8 nodes: the flat all-to-all sends 7/8 of the copies across,
    the hierarchical one r / k = 7 (1 - C(224, 8) / C(256, 8)) / 8, about 0.58 of them: less time on the NICs."""
    flat, flat_steps = _steps("deepseek-v3, ep 64 across nodes")
    deep, deep_steps = _steps("deepseek-v3, ep 64 across nodes, hierarchical dispatch")
    miss = math.comb(224, 8) / math.comb(256, 8)
    assert float(deep.terms.experts.outside_share) == pytest.approx(7 * (1 - miss) / 8, rel=1e-12)
    assert float(flat.terms.experts.outside_share) == pytest.approx(56 / 64, rel=1e-12)
    assert float(deep.terms.experts.all_to_all_time) < float(flat.terms.experts.all_to_all_time)
    assert any(what.startswith("a remote domain holds none") for what in deep_steps)


def test_an_all_gather_exposes_what_the_ring_hides_under_the_attention():
    """The same bytes; the ring runs under each layer's attention, the all-gather under the local block's
    (1 / cp of it): never less exposed, and more where the attention covered the ring."""
    ring, _ = _steps("context parallel 8 over two nodes, full recompute, u-priced")
    gather, steps = _steps("context parallel 8 over two nodes, all-gather, u-priced")
    assert float(gather.terms.context.message) == float(ring.terms.context.message)
    assert float(gather.context_time) >= float(ring.context_time)
    assert any(what.startswith("context-parallel all-gathers per micro-batch") for what in steps)
    from mlsysim.physics.context_parallel import ring_attention_exposed

    args = (1e8, 8.0, 50e9, 0.0, 0.1, "none")  # 3 x 7 x 2 ms = 42 ms of transfers, 100 ms of attention
    assert ring_attention_exposed(*args) == 0.0
    assert ring_attention_exposed(*args, all_gather=1.0) == pytest.approx(0.042 - 0.1 / 8)


@pytest.mark.parametrize("name", list(MEASURED_CASES) + list(MEASURED_EXPERT_CASES))
def test_measured_collectives_print_their_curve_with_the_constants_source(name):
    """Every term the measured curves priced prints its curve (the equation, the fitted constants as operands, the
    source of the constants named); no alpha-beta row is left for a collective the curves priced."""
    figures, steps = _steps(name)
    q = figures.terms
    priced = [what for what, equation, *_ in steps.values() if "a_0 + a h" in equation or "a_d + max" in equation]
    assert priced and all("kernel_fits" in what or "collectives.json" in what for what in priced)
    measured = [bool(q.tensor.measured), bool(q.context.measured), bool(q.experts.measured),
                bool(q.pipeline.measured), bool(q.sharding.measured), bool(q.data.measured_replica)]
    assert any(measured)
    if q.tensor.measured:
        assert "one tensor-parallel all-reduce" not in steps and "2 (t-1) alpha" not in str(steps)
    if q.context.measured:
        assert not any("M_kv / B_cp" in equation for _, equation, *_ in steps.values())
    if q.experts.measured:
        assert "one all-to-all" in steps or "one dispatch or combine by DeepEP's normal kernels" in steps


def test_the_measured_tensor_all_reduce_is_the_fastest_of_ring_and_nvls_and_names_it():
    _, steps = _steps("measured: zero-3 over 128 nodes, tensor 4 (nvls)")
    row = next(s for what, s in steps.items() if what.startswith("one tensor-parallel all-reduce of M over 4 ranks"))
    assert row[0].split("(")[1].startswith("nvls")  # NVLink SHARP beats the ring on 4 H100s at 168 MB
    _, sp = _steps("measured: tensor 8 with sequence parallelism, pipeline, zero-1")
    assert any(what.startswith("one tensor-parallel reduce-scatter and all-gather of M") for what in sp)
