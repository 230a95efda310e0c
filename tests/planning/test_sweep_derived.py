"""Sweeps derive the derived inputs again for every layout, as the scalar solve does."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlsysim import Q_, DataParallelScaleOutScenario, InputError, MlsysimWarning, Models, sweep
from mlsysim.hardware.registry import Systems
from tests.planning.conftest import assert_table_matches_scalar, brute_force

LLAMA_JOB = DataParallelScaleOutScenario(
    workload=Models.Language.Llama3_8B,
    precision="bf16",
    node=Systems.Nodes.DGX_H100,
    nodes=2,
    step_time=Q_(4, "s"),  # slower than the model FLOPs at the peak of the nodes and batches swept (A100: 1.6 s)
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


def test_a_swept_mfu_replaces_the_measured_step_time_as_variant_does():
    axes = {"mfu": [0.3, 0.4], "nodes": [1, 2]}
    table = sweep(LLAMA_JOB, **axes)
    assert_table_matches_scalar(table, LLAMA_JOB, axes)
    assert LLAMA_JOB.variant(mfu=0.3).job.origins["step_time"].startswith("mfu, replacing")


def test_a_fabric_named_on_the_inter_bandwidth_axis_says_to_sweep_fabric():
    with pytest.raises(InputError, match="fabric='InfiniBand_NDR'"):
        sweep(LLAMA_JOB, inter_bandwidth=["InfiniBand_NDR", "Ethernet_100G"])
    axes = {"fabric": ["InfiniBand_NDR", "Ethernet_100G"]}
    table = sweep(LLAMA_JOB, **axes)
    assert_table_matches_scalar(table, LLAMA_JOB, axes)


FLOPS_JOB = LLAMA_JOB.variant(step_time=None, mfu=0.4, nodes=4)


def test_step_time_from_flops_is_derived_again_per_node_mfu_and_batch():
    axes = {
        "node": [Systems.Nodes.DGX_H100, Systems.Nodes.DGX_A100],
        "mfu": [0.3, 0.5],
        "per_device_batch": [1, 2],
    }
    table = sweep(FLOPS_JOB, **axes)
    assert_table_matches_scalar(table, FLOPS_JOB, axes)
    # compute per update = A b F / (P u) (u the model FLOPs utilisation: nothing added): the A100's
    # 312 Tflop/s against the H100's 989.4
    compute = table["compute_time"].reshape(2, 2, 2) / 1e3
    flops = FLOPS_JOB.job.flops_per_sample
    for i, peak in enumerate((989.4e12, 312e12)):
        for j, u in enumerate((0.3, 0.5)):
            for k, b in enumerate((1, 2)):
                expected = FLOPS_JOB.accumulation_steps * b * flops / (peak * u)
                assert compute[i, j, k] == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(compute[:, :, 1] / compute[:, :, 0], 2.0, rtol=1e-12)


def test_a_measured_step_time_on_an_axis_wins_over_mfu():
    axes = {"step_time": [Q_(2, "s"), Q_(3, "s")], "per_device_batch": [1, 2]}
    table = sweep(FLOPS_JOB, **axes)
    assert table["compute_time"].tolist() == [2000.0, 2000.0, 3000.0, 3000.0]
    # a step shorter than its model FLOPs at the peak (b = 2: 1.01 s on an H100) is refused, as one scenario is
    with pytest.raises(InputError, match="1 of 4 combinations have a step_time shorter"):
        sweep(FLOPS_JOB, step_time=[Q_(1, "s"), Q_(2, "s")], per_device_batch=[1, 2])
    with pytest.raises(InputError, match="model FLOPs utilisation of 1.011, above 1"):
        FLOPS_JOB.variant(step_time=Q_(1, "s"), per_device_batch=2)


def test_a_time_cleared_on_an_axis_needs_something_to_derive_it():
    # on an H100 the cleared step comes from the operators, in the sweep as in the scalar solve
    axes = {"step_time": [None, Q_(1, "s")]}
    assert_table_matches_scalar(sweep(LLAMA_JOB, **axes), LLAMA_JOB, axes)
    # on a V100 nothing derives it: it has no bf16 peak (the job's precision), nor a fitted ceiling
    with pytest.raises(InputError, match="has no bf16 peak"):
        sweep(LLAMA_JOB.variant(node=Systems.Nodes.DGX1_V100), step_time=[None, Q_(3, "s")])
    with pytest.raises(InputError, match="no matmul table measures fp16 on Volta"):
        v100 = LLAMA_JOB.variant(node=Systems.Nodes.DGX1_V100, precision="fp16", step_time=Q_(5, "s"))
        sweep(v100, step_time=[None, Q_(5, "s")])


# -- the property: every row of any sweep is the scalar solve of its layout -----------------

_AXES = {
    "nodes": st.lists(st.sampled_from([1, 2, 4, 32]), min_size=1, max_size=3, unique=True),
    "fabric": st.lists(
        st.sampled_from(["InfiniBand_NDR", "Ethernet_100G", "Ethernet_10G"]),
        min_size=1, max_size=2, unique=True,
    ),
    "node": st.lists(
        st.sampled_from(["DGX_H100", "DGX_A100", "DGX1_V100"]), min_size=1, max_size=2, unique=True
    ),
    "inter_bandwidth": st.lists(
        st.sampled_from([Q_(25, "Gbps"), Q_(400, "Gbps"), Q_(50, "GB/s")]),
        min_size=1, max_size=2, unique=True,
    ),
    "mfu": st.lists(st.sampled_from([0.2, 0.35, 0.5]), min_size=1, max_size=2, unique=True),
    "per_device_batch": st.lists(st.sampled_from([1, 2, 8]), min_size=1, max_size=2, unique=True),
    "precision": st.lists(st.sampled_from(["bf16", "fp16"]), min_size=1, max_size=2, unique=True),
    "recompute": st.lists(
        st.sampled_from(["none", "selective", "full"]), min_size=1, max_size=2, unique=True
    ),
    "assumptions": st.lists(st.sampled_from(["seed", "realistic"]), min_size=1, max_size=2, unique=True),
    "accumulation_steps": st.lists(st.sampled_from([1, 4]), min_size=1, max_size=2, unique=True),
}

_BASES = [LLAMA_JOB, FLOPS_JOB, LLAMA_JOB.variant(fabric="Ethernet_10G")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(_BASES),
    axes=st.lists(st.sampled_from(sorted(_AXES)), min_size=1, max_size=3, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({n: _AXES[n] for n in names})
    ),
)
def test_every_sweep_row_equals_the_scalar_solve_presets_and_fabrics_included(base, axes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MlsysimWarning)
        try:
            table = sweep(base, **axes)
        except InputError:
            # the sweep refuses only what the scalar solve refuses for some layout
            with pytest.raises(InputError):
                for scenario in brute_force(base, axes):
                    scenario.result  # noqa: B018 - evaluated for its error
            return
        assert_table_matches_scalar(table, base, axes)


def test_a_step_from_mfu_keeps_its_time_over_recompute_and_fused_attention_axes():
    """A given mfu is a measured model FLOPs utilisation: the recomputed forward and the kernels' fusion are
    inside it, so every row of a recompute or fused-attention axis has the same step (each row derived as the
    scalar solve derives it); a step from the operators prices the recomputed forward."""
    axes = {"recompute": ["none", "selective", "full"], "flash_attention": [0, 1], "per_device_batch": [1, 2]}
    table = sweep(FLOPS_JOB, **axes)
    assert_table_matches_scalar(table, FLOPS_JOB, axes)
    compute = table["compute_time"].reshape(3, 2, 2)
    np.testing.assert_allclose(compute, np.broadcast_to(compute[:1, :1, :], compute.shape), rtol=1e-12)
    priced = FLOPS_JOB.variant(mfu=None)
    steps = {m: priced.variant(recompute=m).step_time.to("s").magnitude for m in ("none", "selective", "full")}
    assert steps["none"] < steps["selective"] < steps["full"]


def test_a_step_from_the_operators_is_priced_at_each_rows_batch():
    """Wave quantisation makes the operators' step not proportional to the batch: each row is priced at its
    own batch, as its scalar solve is (the data-parallel model and a layout alike)."""
    job = LLAMA_JOB.variant(step_time=None)
    assert job.job.origins["step_time"].startswith("operators (")
    for base in (job, job.variant(tensor_parallel=2)):
        axes = {"per_device_batch": [1, 3, 8], "nodes": [1, 2]}
        assert_table_matches_scalar(sweep(base, **axes), base, axes)


def test_an_mfu_axis_on_a_step_from_the_operators_prices_each_row_as_its_scalar_solve():
    """A row that gives mfu is priced from the FLOPs, a row that clears it from the operators."""
    job = LLAMA_JOB.variant(step_time=None)
    for base in (job, job.variant(tensor_parallel=2)):
        axes = {"mfu": [None, 0.3, 0.5]}
        assert_table_matches_scalar(sweep(base, **axes), base, axes)
