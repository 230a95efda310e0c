"""Presets and derived inputs (mlsysim.engine.job): what fills what, what wins, what is refused."""

import math

import numpy as np
import pytest

from mlsysim import Q_, InputError, Models
from mlsysim.engine.job import derive_inputs, flops_per_sample, has_shape, resolve
from mlsysim.engine.model import Inputs
from mlsysim.hardware.registry import Hardware, Systems

LLAMA = Models.Language.Llama3_8B
DGX = Systems.Nodes.DGX_H100


def _job(**given):
    base = {"workload": LLAMA, "precision": "bf16", "per_device_batch": 1}
    return resolve(base | given)


def test_a_node_fills_devices_links_nics_accelerator_and_memory():
    values, job = _job(node=DGX, step_time=Q_(1, "s"), training_time=Q_(1, "h"))
    assert values["devices_per_node"] == 8
    assert values["intra_bandwidth"] == Q_(450, "GB/s")
    assert values["nics_per_node"] == 8
    assert values["inter_bandwidth"] == Q_(400, "Gbps")
    assert values["inter_latency"] == Systems.Fabrics.InfiniBand_NDR.latency
    assert values["accelerator"] is Hardware.Cloud.H100
    assert values["device_memory"] == Q_(80, "GB")
    assert job.origins["devices_per_node"] == "node DGX_H100"
    assert job.origins["inter_bandwidth"] == "node DGX_H100 (its NICs)"
    assert "step_time" not in job.origins


def test_a_node_can_be_named():
    values, _ = _job(node="DGX_A100", step_time=Q_(1, "s"), training_time=Q_(1, "h"))
    assert values["node"] is Systems.Nodes.DGX_A100
    assert values["intra_bandwidth"] == Q_(300, "GB/s")


def test_an_explicit_field_wins_over_the_node():
    values, job = _job(node=DGX, devices_per_node=4, nics_per_node=2, step_time=Q_(1, "s"))
    assert values["devices_per_node"] == 4 and values["nics_per_node"] == 2
    assert "devices_per_node" not in job.origins and "nics_per_node" not in job.origins


def test_a_fabric_wins_over_the_nodes_nics_and_brings_its_latency():
    values, job = _job(node=DGX, fabric=Systems.Fabrics.Ethernet_100G, step_time=Q_(1, "s"))
    assert values["inter_bandwidth"] == Q_(100, "Gbps")
    assert values["inter_latency"] == Q_(10, "us")
    assert job.origins["inter_latency"] == "fabric Ethernet_100G"


def test_a_fabric_given_as_inter_bandwidth_brings_the_latency_too():
    from mlsysim.engine.job import normalize_given

    given = normalize_given({"inter_bandwidth": "InfiniBand_NDR"})
    assert "inter_bandwidth" not in given and given["fabric"] is Systems.Fabrics.InfiniBand_NDR
    values, _ = _job(**given, step_time=Q_(1, "s"))
    assert values["inter_bandwidth"] == Q_(400, "Gbps")
    assert values["inter_latency"] == Q_(1, "us")


def test_a_fabric_given_twice_is_refused():
    from mlsysim.engine.job import normalize_given

    with pytest.raises(InputError, match="give it once"):
        normalize_given(
            {"inter_bandwidth": Systems.Fabrics.InfiniBand_NDR, "fabric": "Ethernet_10G"}
        )


def test_an_unknown_node_lists_the_known_ones():
    with pytest.raises(InputError, match="DGX_H100"):
        _job(node="DGX_Z900")


def test_training_tokens_give_the_one_device_time():
    # 1e12 tokens / 8192 = 122,070,312.5 samples x 2 s / batch 4 = 61,035,156.25 s
    values, job = _job(step_time=Q_(2, "s"), per_device_batch=4, training_tokens=Q_(1e12, "token"))
    assert values["training_time"].to("s").magnitude == 61_035_156.25
    assert job.samples == 122_070_312.5
    assert job.origins["training_time"] == "training_tokens"


def test_training_samples_give_the_one_device_time():
    values, _ = _job(
        workload=Models.Vision.ResNet50,
        step_time=Q_(0.5, "s"),
        per_device_batch=256,
        training_samples=Q_(90 * 1_281_167, "sample"),
    )
    assert values["training_time"].to("s").magnitude == pytest.approx(90 * 1_281_167 * 0.5 / 256)


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
        ({"mfu": 0.4}, "mfu"),  # no accelerator
        ({"mfu": 1.5, "node": DGX}, "mfu"),
        ({"mfu": 0.4, "node": DGX, "step_time": Q_(1, "s")}, "step_time"),
    ],
)
def test_contradictions_and_missing_sources_name_the_field(given, field):
    with pytest.raises(InputError) as info:
        _job(**given)
    assert info.value.field == field


def test_tokens_need_a_sequence_length():
    with pytest.raises(InputError, match="training_samples"):
        _job(
            workload=Models.Vision.ResNet50,
            step_time=Q_(1, "s"),
            training_tokens=Q_(1e9, "token"),
        )


@pytest.mark.parametrize(
    "mode, expected",
    [("none", 354 * 2**30), ("selective", 34 * 2**30), ("full", 2 * 2**30)],
)
def test_activation_memory_of_llama3_8b_per_recompute_mode(mode, expected):
    # 32 layers x s b h = 32 x 8192 x 1 x 4096 = 2^30; x (34 + 5 x 32 x 8192 / 4096) = 354 for none
    values, job = _job(step_time=Q_(1, "s"), recompute=mode)
    assert values["activation_memory"].to("B").magnitude == expected
    assert job.activations == "derived" and job.origins["activation_memory"] == f"recompute={mode}"


def test_given_activation_memory_wins():
    values, job = _job(step_time=Q_(1, "s"), activation_memory=Q_(3, "GB"))
    assert values["activation_memory"] == Q_(3, "GB") and job.activations == "given"


def test_a_workload_without_shape_counts_no_activations():
    values, job = _job(workload=Models.Vision.VGG16, step_time=Q_(1, "s"))
    assert values.get("activation_memory") is None and job.activations == "none"
    assert not has_shape(Models.Vision.VGG16) and has_shape(LLAMA)


def test_transformer_flops_per_sample_from_the_registry():
    assert flops_per_sample(LLAMA) == 6 * 8.03e9 * 8192 + 12 * 32 * 4096 * 8192**2


def test_derive_inputs_on_arrays_matches_the_scalar_formulas():
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
    )
    x.mfu, x.flops_per_sample, x.peak_flops = 0.5, 1e12, 1e12
    x.training_tokens, x.sequence_length = 1e6, 1000.0
    x.activation_memory_per_sample = 3.0
    derive_inputs(x)
    np.testing.assert_array_equal(x.step_time, [2.0, 4.0, 8.0])
    np.testing.assert_array_equal(x.training_time, [2000.0] * 3)  # 1000 samples x 2 s per sample
    np.testing.assert_array_equal(x.activation_memory, [3.0, 6.0, 12.0])
