"""Presets and derived inputs (mlsysim.engine.job): what fills what, what wins, what is refused."""

import math
import warnings

import numpy as np
import pytest

from mlsysim import (
    Q_,
    DataParallelScaleOutScenario,
    InputError,
    MlsysimWarning,
    Models,
    Scenarios,
)
from mlsysim.engine.inputs.derivation import derive_inputs
from mlsysim.engine.inputs.workload_figures import flops_per_sample, has_shape
from mlsysim.engine.model.equations import Inputs
from mlsysim.hardware.registry import Hardware, Systems

LLAMA = Models.Language.Llama3_8B
DGX = Systems.Nodes.DGX_H100
NDR = Systems.Fabrics.InfiniBand_NDR
MEASURED = {"step_time": Q_(30, "s"), "training_time": Q_(1000, "h")}
"""A measured profile slower than every model's FLOPs at the peak of the nodes used here (GPT-3 on an H100: 2.2 s;
a shorter step is refused: it implies a model FLOPs utilisation above 1)."""


def job(**given):
    base = {"workload": LLAMA, "precision": "bf16", "per_device_batch": 1}
    return DataParallelScaleOutScenario(**(base | given))


def test_a_node_fills_devices_links_nics_accelerator_and_memory():
    s = job(node=DGX, **MEASURED)
    assert s.devices_per_node == 8
    assert s.intra_bandwidth == Q_(450, "GB/s")
    assert s.intra_latency == DGX.intra_latency
    assert s.nics_per_node == 8
    assert s.inter_bandwidth == Q_(400, "Gbps") and s.inter_latency == NDR.latency
    assert s.accelerator == Hardware.Cloud.H100
    assert s.device_memory == Q_(80, "GB")
    assert s.memory_bandwidth == Q_(3.35, "TB/s")
    assert s.job.origins["devices_per_node"] == "node DGX_H100"
    assert s.job.origins["inter_bandwidth"] == "node DGX_H100 (its NICs)"
    assert not s.job.derives("step_time")


def test_a_node_can_be_named_and_its_figures_reach_the_result():
    s = job(node="DGX_A100", nodes=2, **MEASURED)
    assert s.node == Systems.Nodes.DGX_A100 and s.intra_bandwidth == Q_(300, "GB/s")
    by_hand = s.variant(
        node=None,
        devices_per_node=8,
        intra_bandwidth=Q_(300, "GB/s"),
        intra_latency=s.intra_latency,
        nics_per_node=8,
        inter_bandwidth=Q_(200, "Gbps"),
        inter_latency=s.inter_latency,
        accelerator=Hardware.Cloud.A100,
    )
    assert s.result == by_hand.result
    assert any("from node DGX_A100" in note for note in s.result.constraint_trace)


def test_an_explicit_field_wins_over_the_node():
    s = job(node=DGX, devices_per_node=4, nics_per_node=2, **MEASURED)
    assert s.devices_per_node == 4 and s.nics_per_node == 2
    assert not s.job.derives("devices_per_node") and not s.job.derives("nics_per_node")


def test_a_fabric_wins_over_the_nodes_nics_and_brings_its_latency():
    s = job(node=DGX, fabric=Systems.Fabrics.Ethernet_100G, **MEASURED)
    assert s.inter_bandwidth == Q_(100, "Gbps") and s.inter_latency == Q_(10, "us")
    assert s.job.origins["inter_latency"] == "fabric Ethernet_100G"


def test_a_fabric_named_as_inter_bandwidth_is_refused_with_the_fix():
    for spelled in (NDR, "InfiniBand_NDR"):
        with pytest.raises(InputError, match="fabric='InfiniBand_NDR'") as info:
            Scenarios.Gpt2DataParallelOneNode.variant(nodes=4, inter_bandwidth=spelled)
        assert info.value.field == "inter_bandwidth"


def test_an_unknown_node_lists_the_known_ones():
    with pytest.raises(InputError, match="DGX_H100") as info:
        job(node="DGX_Z900", **MEASURED)
    assert info.value.field == "node"


def test_a_variant_derives_the_preset_fields_again():
    s = job(node=DGX, nodes=2, **MEASURED)
    a100 = s.variant(node=Systems.Nodes.DGX_A100)
    assert a100.intra_bandwidth == Q_(300, "GB/s") and a100.inter_bandwidth == Q_(200, "Gbps")
    assert a100.accelerator == Hardware.Cloud.A100
    unset = s.variant(node=None, nodes=1, devices_per_node=8, intra_bandwidth=Q_(450, "GB/s"))
    assert unset.nics_per_node is None and unset.accelerator is None
    assert unset.inter_bandwidth is None and unset.device_memory is None
    with pytest.raises(
        InputError, match="devices_per_node: required field is missing; or give node="
    ):
        s.variant(node=None)


def test_training_tokens_give_the_one_device_time():
    # 1e12 tokens / 8192 = 122,070,312.5 samples x 4 s / batch 4 = 122,070,312.5 s
    s = job(node=DGX, step_time=Q_(4, "s"), per_device_batch=4, training_tokens=Q_(1e12, "token"))
    assert s.training_time.to("s").magnitude == 122_070_312.5
    assert s.job.samples == 122_070_312.5
    assert s.job.origins["training_time"] == "training_tokens"


def test_training_samples_give_the_one_device_time():
    s = job(
        workload=Models.Vision.ResNet50,
        node=DGX,
        step_time=Q_(0.5, "s"),
        per_device_batch=256,
        training_samples=Q_(90 * 1_281_167, "sample"),
    )
    assert s.training_time.to("s").magnitude == pytest.approx(90 * 1_281_167 * 0.5 / 256)


@pytest.mark.parametrize(
    "given, field",
    [
        (
            {
                "step_time": Q_(1, "s"),
                "training_time": Q_(1, "h"),
                "training_tokens": Q_(1e9, "token"),
            },
            "training_time",
        ),
        (
            {
                "step_time": Q_(1, "s"),
                "training_tokens": Q_(1e9, "token"),
                "training_samples": Q_(1e5, "sample"),
            },
            "training_samples",
        ),
        ({"step_time": Q_(1, "s"), "training_tokens": Q_(1e9, "sample")}, "training_tokens"),
        ({"mfu": 0.4, "training_time": Q_(1, "h")}, "mfu"),  # no accelerator
        ({"mfu": 1.5, "node": DGX}, "mfu"),
        ({"mfu": 0, "node": DGX}, "mfu"),
        ({"mfu": 0.4, "node": DGX, "step_time": Q_(1, "s")}, "step_time"),
        ({"training_time": Q_(1, "h")}, "step_time"),
    ],
)
def test_contradictions_and_missing_sources_name_the_field(given, field):
    with pytest.raises(InputError) as info:
        job(devices_per_node=8, intra_bandwidth=Q_(450, "GB/s"), **given)
    assert info.value.field == field


def test_a_missing_step_time_says_how_to_derive_it():
    with pytest.raises(InputError, match="step_time: required field is missing; or give mfu"):
        job(devices_per_node=8, intra_bandwidth=Q_(450, "GB/s"), training_time=Q_(1, "h"))


def test_tokens_need_a_sequence_length():
    with pytest.raises(InputError, match="training_samples") as info:
        job(
            workload=Models.Vision.ResNet50,
            devices_per_node=1,
            intra_bandwidth=Q_(1, "GB/s"),
            step_time=Q_(1, "s"),
            training_tokens=Q_(1e9, "token"),
        )
    assert info.value.field == "training_tokens"


@pytest.mark.parametrize(
    "mode, flash, expected",
    [("none", 0, 354 * 2**30), ("none", None, 34 * 2**30), ("selective", None, 34 * 2**30),
     ("full", None, 2 * 2**30)],
)
def test_activation_memory_of_llama3_8b_per_recompute_mode(mode, flash, expected):
    # 32 layers x s b h = 32 x 8192 x 1 x 4096 = 2^30; x (34 + 5 x 32 x 8192 / 4096) = 354 for none with
    # the attention matrices stored (flash_attention=0); fused attention, the default, stores 34
    s = job(node=DGX, recompute=mode, flash_attention=flash, **MEASURED)
    assert s.activation_memory.to("B").magnitude == expected
    assert s.job.activations == "derived"
    state = 16 * 8.03e9  # ZeRO stage 0: 16 bytes per parameter
    assert s.result.memory_per_device.to("B").magnitude == state + expected


def test_selective_recomputation_is_the_default():
    assert job(node=DGX, **MEASURED).job.recompute == "selective"


def test_given_activation_memory_wins():
    s = job(node=DGX, activation_memory=Q_(3, "GB"), **MEASURED)
    assert s.activation_memory == Q_(3, "GB") and s.job.activations == "given"
    assert any("activation_memory as given" in n for n in s.result.constraint_trace)


def test_a_workload_without_shape_counts_no_activations_and_says_so():
    s = job(workload=Models.Vision.VGG16, node=DGX, **MEASURED)
    assert s.activation_memory is None and s.job.activations == "none"
    assert not has_shape(Models.Vision.VGG16) and has_shape(LLAMA)
    assert any("activations not counted" in n for n in s.result.constraint_trace)


def test_transformer_flops_per_sample_from_the_registry():
    assert flops_per_sample(LLAMA) == 6 * 8.03e9 * 8192 + 12 * 32 * 4096 * 8192**2
    assert job(node=DGX, **MEASURED).flops_per_sample == Q_(
        6 * 8.03e9 * 8192 + 12 * 32 * 4096 * 8192**2, "flop"
    )


def test_a_measured_step_time_carried_to_another_workload_warns():
    one = Scenarios.Gpt2DataParallelOneNode
    with pytest.warns(MlsysimWarning, match="step_time and training_time measured for GPT-2"):
        one.variant(workload=Models.Language.GPT3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one.variant(workload=Models.Language.GPT2)  # the same workload: nothing carried
        one.variant(
            workload=Models.Language.GPT3, step_time=Q_(60, "s"), training_time=Q_(1e6, "h")
        )


def test_the_state_that_fits_nowhere_is_a_note_not_an_error():
    s = job(workload=Models.Language.GPT3, node=DGX, nodes=1, **MEASURED)
    # ZeRO-3 over 8 devices: 16 x 175e9 / 8 = 350 GB > 80 GB
    assert any("tensor or pipeline parallelism" in n for n in s.result.constraint_trace)


def test_derive_inputs_fills_only_where_a_target_is_nan():
    batch = np.array([1.0, 2.0, 4.0])
    x = Inputs(
        gradient_bytes=1e9,
        parameters=5e8,
        devices_per_node=8.0,
        nodes=1.0,
        accumulation_steps=1.0,
        step_time=math.nan,
        training_time=math.nan,
        per_device_batch=batch,
        intra_bandwidth=1e11,
        activation_memory=np.array([math.nan, 5.0, math.nan]),
    )
    x.mfu, x.flops_per_sample, x.peak_flops = 0.5, 1e12, 1e12
    x.training_tokens, x.sequence_length = 1e6, 1000.0
    x.activation_memory_per_sample = 3.0
    derive_inputs(x)
    np.testing.assert_array_equal(x.step_time, [2.0, 4.0, 8.0])
    np.testing.assert_array_equal(x.training_time, [2000.0] * 3)  # 1000 samples x 2 s per sample
    np.testing.assert_array_equal(x.activation_memory, [3.0, 5.0, 12.0])


def test_a_cloud_node_brings_its_hourly_price():
    s = job(node="AWS_p5_48xlarge", nodes=2, **MEASURED)
    assert s.node_hour_rate == Q_(98.32, "USD/hour")
    assert s.job.origins["node_hour_rate"] == "node AWS_p5_48xlarge"
    hours = s.result.training_time.to("hour").magnitude
    assert s.result.cost == pytest.approx(hours * 2 * 98.32, rel=1e-12)
    assert job(node=DGX, **MEASURED).node_hour_rate is None  # sold, not rented: no list price


def test_clearing_a_measured_time_lets_it_be_derived():
    s = job(node=DGX, **MEASURED)
    derived = s.variant(
        step_time=None, mfu=0.4, training_time=None, training_tokens=Q_(1e9, "token")
    )
    assert derived.job.derives("step_time") and derived.job.derives("training_time")
    # on an H100 (measured kernels) a cleared step time comes from the operators
    assert s.variant(step_time=None).job.origins["step_time"].startswith("operators (bf16")
    with pytest.raises(InputError, match="step_time: a step priced from the operators on the NVIDIA V100 .*: no matmul "
                                         "table measures"):
        job(node=Systems.Nodes.DGX1_V100, **MEASURED).variant(step_time=None, precision="fp16")


def _batch_notes(s: DataParallelScaleOutScenario) -> list[str]:
    return [n for n in s.result.constraint_trace if n.startswith("global batch")]


def test_a_global_batch_beyond_the_reported_one_is_a_note_naming_batch_figure_and_source() -> None:
    # GPT-3 on 256 DGX H100: 1 x 8 x 256 = 2048 sequences > 3.2e6 / 2048 = 1562.5 (x 1.05 = 1640.6)
    s = job(workload=Models.Language.GPT3, node=DGX, nodes=256, **MEASURED)
    (note,) = _batch_notes(s)
    assert note.startswith("global batch 2048 samples is beyond the largest reported for GPT-3")
    assert "1562.5 samples = 3.2M tokens / 2048 per sequence" in note
    assert "(Brown et al. 2020, Table 2.1; trained at)" in note
    # 192 nodes: 1536 <= 1562.5, no note; accumulation counts: 192 nodes x 2 steps = 3072
    assert _batch_notes(s.variant(nodes=192)) == []
    assert (
        "global batch 3072 samples" in _batch_notes(s.variant(nodes=192, accumulation_steps=2))[0]
    )


def test_the_batch_note_allows_the_sources_rounding() -> None:
    # Llama 2 7B: "4M tokens" / 4096 = 976.5625 sequences; x 1.05 = 1025.4
    s = job(workload=Models.Language.Llama2_7B, node=DGX, nodes=16, **MEASURED)
    assert _batch_notes(s.variant(per_device_batch=8)) == []  # 1024 sequences = 4.19M tokens
    (note,) = _batch_notes(s.variant(per_device_batch=9))  # 9 x 128 = 1152
    assert "global batch 1152 samples" in note and "976.5625 samples" in note
    assert "Touvron et al. 2023" in note


def test_the_batch_note_in_samples_and_its_absence_without_a_figure() -> None:
    # ResNet-50: 8192 images (Goyal et al. 2017); 64 per device x 8 x 17 = 8704 > 8601.6
    s = job(workload=Models.Vision.ResNet50, node=DGX, nodes=17, per_device_batch=64, **MEASURED)
    (note,) = _batch_notes(s)
    assert note.startswith(
        "global batch 8704 samples is beyond the largest reported for ResNet-50: 8192 samples (Goyal et al. 2017, abstract and Figure 1; shown feasible without loss of accuracy"
    )
    assert _batch_notes(s.variant(nodes=16)) == []  # 8192
    assert Models.Vision.VGG16.largest_reported_batch is None
    vgg = job(workload=Models.Vision.VGG16, node=DGX, nodes=1000, per_device_batch=64, **MEASURED)
    assert _batch_notes(vgg) == []
