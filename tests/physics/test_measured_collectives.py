"""The layout's collectives by the measured size curves (issue 38): each term's collective is the kernel API's
(:func:`mlsysim.kernels.collectives.collective_time`) for the same op, size, group and link; a link that is not
the registry's keeps the alpha-beta equations at its own rate; arrays of layouts equal their rows."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.hardware.registry import Systems
from mlsysim.kernels._accelerator import nvlink_rate
from mlsysim.kernels.collectives import Fabric, collective_time
from mlsysim.kernels.device import device_kernels
from mlsysim.kernels.links import link_curves
from mlsysim.physics.collectives import (
    all_reduce_wires,
    fastest,
    gather_wires,
    measured_links,
)
from mlsysim.physics.layout import layout_figures
from mlsysim.physics.records import Cluster, records_from
from mlsysim.physics.tensor_parallel import tp_allreduce_time

DGX = Systems.get("DGX_H100")
CURVES = link_curves(DGX)
KERNELS = device_kernels("H100", "bf16").constants._replace(collectives=CURVES)
LLAMA = dict(parameters=70.6e9, layers=80.0, hidden=8192.0, heads=64.0, seq_len=8192.0, vocab=128256.0)
H100 = dict(devices=512.0, devices_per_node=8.0, peak_flops=989.4e12, math_efficiency=0.5, memory_bandwidth=3.35e12,
            intra_bandwidth=450e9, nic_bandwidth=50e9, nics_per_node=8.0, intra_latency=1e-6, inter_latency=1e-6,
            kernels=KERNELS, flash_attention=True)
INSIDE = Fabric("Hopper", "nvlink", nvlink_rate(DGX.accelerator), 0.0, None)
ACROSS = Fabric("Hopper", "nvlink", nvlink_rate(DGX.accelerator), 50e9, "infiniband")


def figures(**changes):
    return layout_figures(*records_from(**{**LLAMA, **H100, **changes}))


def test_the_curves_are_the_dgx_h100s_links_and_fits():
    assert CURVES.up_rate == 450e9 and CURVES.out_rate == 50e9 and CURVES.up_latency == CURVES.out_latency == 1e-6
    assert CURVES.ring_efficiency == pytest.approx(0.813151) and CURVES.out_efficiency == pytest.approx(0.950399)
    assert CURVES.nvls_efficiency == pytest.approx(0.699396)  # Hopper's NVLink SHARP inside an 8-GPU node
    assert "Hopper NVLink, infiniband" in CURVES.source


@pytest.mark.parametrize("t, sp", [(2, False), (4, False), (8, False), (8, True), (16, False), (16, True)])
def test_the_tensor_collective_is_the_kernel_apis(t, sp):
    f = figures(tensor_parallel=float(t), micro_batches=4.0, sequence_parallel=sp)
    q = f.terms
    assert q.tensor.measured
    message = 2.0 * 1 * 8192 * 8192
    fabric = INSIDE if t <= 8 else ACROSS
    if sp:  # a reduce-scatter and an all-gather of the same buffer
        expected = float(collective_time("reduce_scatter", message, t, 8, fabric).time) + float(
            collective_time("all_gather", message, t, 8, fabric).time)
    else:
        expected = float(collective_time("all_reduce", message, t, 8, fabric).time)
    assert float(q.tensor.collective_time) == pytest.approx(expected, rel=1e-12)
    assert float(q.tensor.collective_time) > tp_allreduce_time(message, t, 450e9 if t <= 8 else 400e9, 1e-6)


def test_zero3_gathers_and_the_gradient_collectives_are_the_kernel_apis():
    f = figures(tensor_parallel=4.0, micro_batches=4.0, zero_stage=3.0)
    q = f.terms
    layer = 2.0 * float(q.sharding.parameters) / float(q.stage.layers)
    k, k_node = float(q.sharding.group), float(q.sharding.group_per_domain)
    assert q.sharding.measured and (k, k_node) == (128.0, 2.0)
    expected = collective_time("all_gather", layer, k, k_node, ACROSS)
    assert float(q.sharding.layer_gather_time) == pytest.approx(float(expected.time), rel=1e-12)
    f1 = figures(tensor_parallel=8.0, micro_batches=4.0, zero_stage=1.0)
    q1 = f1.terms
    gradient = 2.0 * float(q1.sharding.dense_parameters)
    assert q1.data.measured_scatter
    assert float(q1.data.scatter_time) == pytest.approx(float(collective_time(
        "reduce_scatter", gradient, float(q1.sharding.group), 1.0, ACROSS).time), rel=1e-12)
    f0 = figures(tensor_parallel=2.0, micro_batches=4.0, algorithm="tree")
    q0 = f0.terms
    shard = 2.0 * float(q0.sharding.dense_parameters)
    assert q0.data.measured_replica
    assert float(q0.data.replica_time) == pytest.approx(float(collective_time(
        "all_reduce", shard, 256.0, 4.0, ACROSS, algorithm="tree").time), rel=1e-12)


def test_pipeline_and_context_transfers_are_send_recvs_of_the_kernel_api():
    f = figures(tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0)
    q = f.terms
    send = collective_time("send_recv", float(q.pipeline.message), 2, 1, ACROSS)
    assert float(q.pipeline.send_time) == pytest.approx(float(send.time), rel=1e-12)
    assert float(f.pipeline_time) == pytest.approx(2 * (32 + 3) * float(send.time), rel=1e-12)
    c = figures(tensor_parallel=2.0, context_parallel=4.0, micro_batches=4.0, kv_heads=8.0)
    ring = collective_time("send_recv", float(c.terms.context.message), 2, 2, INSIDE)
    assert c.terms.context.measured
    assert float(c.terms.context.pass_time) == pytest.approx(3 * float(ring.time), rel=1e-12)


def test_a_flat_all_to_all_is_the_kernel_apis():
    from mlsysim.physics.operators import Experts

    deepseek = dict(parameters=671e9, layers=61.0, hidden=7168.0, heads=128.0, seq_len=4096.0, vocab=129280.0,
                    active_parameters=37e9, expert_parameters=654e9)
    f = layout_figures(*records_from(**{**deepseek, **H100, "devices": 2048.0, "pipeline_parallel": 16.0,
                                        "micro_batches": 32.0, "moe": Experts(58 / 61, 256.0, 8.0, 2048.0, 1.0,
                                                                              math.nan, 64.0)}))
    q = f.terms
    assert q.experts.measured
    expected = collective_time("all_to_all", float(q.experts.message), 64, 8, ACROSS)
    assert float(q.experts.all_to_all_time) == pytest.approx(float(expected.time), rel=1e-12)


def test_a_link_given_by_hand_means_what_it_says():
    """A rate or latency other than the registry's (given, or scaled by an efficiency) is priced alpha-beta at it;
    the registry's own is priced by the curve (and is slower than its nominal alpha-beta)."""
    measured = figures(tensor_parallel=8.0, micro_batches=4.0)
    given = figures(tensor_parallel=8.0, micro_batches=4.0, intra_bandwidth=300e9)
    message = 2.0 * 8192 * 8192
    assert measured.terms.tensor.measured and not given.terms.tensor.measured
    assert float(given.terms.tensor.collective_time) == pytest.approx(tp_allreduce_time(message, 8, 300e9, 1e-6))
    assert float(given.tensor_time) != float(measured.tensor_time)
    latency = figures(tensor_parallel=8.0, micro_batches=4.0, intra_latency=5e-6)
    assert not latency.terms.tensor.measured
    assert float(latency.terms.tensor.collective_time) == pytest.approx(tp_allreduce_time(message, 8, 450e9, 5e-6))
    nic = figures(tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, nic_bandwidth=25e9)
    assert nic.terms.tensor.measured and not nic.terms.pipeline.measured  # the NICs given: only the NVLink's curve
    assert measured_links(Cluster(1.0, 1.0, intra_bandwidth=450e9 * 0.8, intra_latency=1e-6), CURVES) == (False, False)


def test_without_curves_the_terms_are_the_alpha_beta_ones_exactly():
    plain = figures(tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, zero_stage=1.0,
                    kernels=KERNELS._replace(collectives=None))
    seed = figures(tensor_parallel=8.0, pipeline_parallel=4.0, micro_batches=32.0, zero_stage=1.0,
                   kernels=device_kernels("H100", "bf16").constants)
    assert plain.update_time == seed.update_time
    assert not any(bool(x) for x in (plain.terms.tensor.measured, plain.terms.pipeline.measured,
                                     plain.terms.data.measured_scatter))


def test_uncovered_architectures_and_fabrics_get_no_curve():
    assert link_curves(Systems.get("GB300_NVL72")) is None  # no collective table measures Blackwell Ultra
    p5 = link_curves(Systems.get("AWS_p5_48xlarge"))  # its NICs Ethernet (RoCE): no fit, alpha-beta across nodes
    assert p5 is not None and math.isnan(p5.out_efficiency)
    nvl72 = link_curves(Systems.get("GB200_NVL72"))
    assert nvl72 is not None and "NVL72" in nvl72.source and nvl72.nvls_efficiency == pytest.approx(0.475098)


ROWS = dict(tensor_parallel=np.array([1.0, 2.0, 8.0, 16.0, 4.0, 8.0]),
            pipeline_parallel=np.array([1.0, 4.0, 2.0, 1.0, 8.0, 4.0]),
            context_parallel=np.array([1.0, 1.0, 2.0, 1.0, 2.0, 1.0]),
            micro_batches=np.array([8.0, 8.0, 16.0, 8.0, 32.0, 8.0]),
            intra_bandwidth=np.array([450e9, 450e9, 300e9, 450e9, 450e9, 450e9]),
            zero_stage=np.array([0.0, 1.0, 3.0, 3.0, 1.0, 0.0]))


def test_an_array_of_layouts_equals_its_rows():
    many = figures(**ROWS, kv_heads=8.0)
    for row in range(6):
        one = figures(**{name: float(values[row]) for name, values in ROWS.items()}, kv_heads=8.0)
        for name in ("update_time", "tensor_time", "context_time", "pipeline_time", "sharding_time", "data_time"):
            assert float(np.asarray(getattr(many, name))[row]) == pytest.approx(float(getattr(one, name)), rel=1e-12,
                                                                                abs=1e-15), (row, name)


@settings(max_examples=60, deadline=None)
@given(size=st.floats(1e3, 1e11), group=st.sampled_from([2, 4, 8, 16, 64, 512]),
       op=st.sampled_from(["all_reduce", "all_gather"]), algorithm=st.sampled_from(["auto", "ring", "tree"]))
def test_the_wires_are_the_curve_modules_for_any_size_and_group(size, group, op, algorithm):
    fabric = INSIDE if group <= 8 else ACROSS
    if op == "all_reduce":
        wires = all_reduce_wires(CURVES, size, group, 8, algorithm)
    else:
        wires = gather_wires(CURVES, size, group, 8)
        algorithm = "auto"
    if group <= 8:
        algorithm = "auto"  # inside one domain NCCL picks ring or NVLS whatever the assumption across domains
    mine = fastest(CURVES, wires, 450e9, 50e9)[0]
    assert mine == pytest.approx(float(collective_time(op, size, group, 8, fabric, algorithm=algorithm).time),
                                 rel=1e-12)
    assert mine > CURVES.base_latency  # never below the fixed start of a collective
