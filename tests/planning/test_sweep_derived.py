"""Sweeps derive the derived inputs again for every layout, as the scalar solve does."""

import warnings

import numpy as np
import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, InputError, MlsysimWarning, Models, sweep
from mlsysim.hardware.registry import Systems
from tests.planning.conftest import assert_table_matches_scalar

LLAMA_JOB = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_8B,
    precision="bf16",
    node=Systems.Nodes.DGX_H100,
    nodes=2,
    step_time=Q_(1.3, "s"),
    training_tokens=Q_(1e11, "token"),
    per_device_batch=1,
)


def test_batch_axis_derives_training_time_and_activations_per_layout():
    axes = {"per_device_batch": [1, 2, 4], "nodes": [1, 4]}
    table = sweep(LLAMA_JOB, **axes)
    assert_table_matches_scalar(table, LLAMA_JOB, axes)
    # activations grow with the batch: 34 s b h L = 34 x 2^30 bytes per sample
    memory = table["memory_per_device"].reshape(3, 2)[:, 0]
    np.testing.assert_allclose(np.diff(memory), [34 * 2**30, 2 * 34 * 2**30])


def test_node_and_recompute_axes_fill_each_layout_from_its_own_preset():
    axes = {
        "node": [Systems.Nodes.DGX_H100, Systems.Nodes.DGX_A100, "DGX1_V100"],
        "recompute": ["none", "selective", "full"],
        "per_device_batch": [1, 2],
    }
    table = sweep(LLAMA_JOB, **axes)
    assert_table_matches_scalar(
        table,
        LLAMA_JOB,
        {**axes, "node": [Systems.Nodes.DGX_H100, Systems.Nodes.DGX_A100, Systems.Nodes.DGX1_V100]},
    )
    assert table["node"].tolist()[::6] == ["DGX_H100", "DGX_A100", "DGX1_V100"]


def test_an_explicit_activation_axis_wins_and_none_means_derived():
    axes = {"activation_memory": [None, Q_(10, "GB")], "per_device_batch": [1, 2]}
    assert_table_matches_scalar(sweep(LLAMA_JOB, **axes), LLAMA_JOB, axes)


def test_a_workload_axis_with_derived_training_time_gives_each_its_own():
    axes = {"workload": [Models.Language.Llama3_8B, Models.Language.Llama2_7B]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MlsysimWarning)  # the measured step time is carried
        table = sweep(LLAMA_JOB, **axes)
        assert_table_matches_scalar(table, LLAMA_JOB, axes)
    # 1e11 tokens: 8192-token samples for Llama 3, 4096-token samples for Llama 2
    llama3, llama2 = table["training_time"] * table["speedup"]  # one-device times
    assert llama2 == pytest.approx(2 * llama3, rel=1e-12)


def test_sweeping_mfu_needs_a_scenario_that_derives_step_time_from_it():
    with pytest.raises(InputError, match="does not derive step_time from mfu"):
        sweep(LLAMA_JOB, mfu=[0.3, 0.4])


def test_a_fabric_named_on_the_inter_bandwidth_axis_is_its_bandwidth():
    table = sweep(LLAMA_JOB, inter_bandwidth=["InfiniBand_NDR", "Ethernet_100G"])
    assert table["inter_bandwidth"].tolist() == [400.0, 100.0]


FLOPS_JOB = LLAMA_JOB.variant(step_time=None, mfu=0.4, nodes=4)


def test_step_time_from_flops_is_derived_again_per_node_mfu_and_batch():
    axes = {
        "node": [Systems.Nodes.DGX_H100, Systems.Nodes.DGX_A100],
        "mfu": [0.3, 0.5],
        "per_device_batch": [1, 2],
    }
    table = sweep(FLOPS_JOB, **axes)
    assert_table_matches_scalar(table, FLOPS_JOB, axes)
    # compute per update = F b / (P u): the A100's 312 Tflop/s against the H100's 989.4
    compute = table["compute_time"].reshape(2, 2, 2)
    np.testing.assert_allclose(compute[1] / compute[0], 989.4 / 312, rtol=1e-12)
    np.testing.assert_allclose(compute[:, 0, :] / compute[:, 1, :], 0.5 / 0.3, rtol=1e-12)
    np.testing.assert_allclose(compute[:, :, 1] / compute[:, :, 0], 2.0, rtol=1e-12)


def test_a_measured_step_time_on_an_axis_wins_over_mfu():
    axes = {"step_time": [Q_(1, "s"), Q_(2, "s")], "per_device_batch": [1, 2]}
    table = sweep(FLOPS_JOB, **axes)
    assert table["compute_time"].tolist() == [1000.0, 1000.0, 2000.0, 2000.0]


def test_a_time_cleared_on_an_axis_needs_something_to_derive_it():
    with pytest.raises(InputError, match="step_time=none on an axis"):
        sweep(LLAMA_JOB, step_time=[None, Q_(1, "s")])
