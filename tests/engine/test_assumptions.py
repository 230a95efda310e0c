"""The opt-in model: defaults reproduce the seed exactly; every choice behaves as its equation says."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import (
    Q_,
    Assumptions,
    DataParallelScaleOutScenario,
    InputError,
    Models,
    Scenarios,
    Workload,
)
from mlsysim.physics.collectives import ALGORITHMS

from .test_properties import scenarios

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE


def test_default_assumptions_are_the_seed_bit_for_bit():
    explicit = FOUR.variant(
        assumptions=Assumptions(),
        nics_per_node=None,
        intra_latency=Q_(0, "s"),
        inter_latency=Q_(0, "s"),
    )
    for field in (
        "intra_time",
        "inter_time",
        "update_time",
        "speedup",
        "efficiency",
        "training_time",
        "cost",
    ):
        assert getattr(explicit.result, field) == getattr(FOUR.result, field)
    assert FOUR.result.exposed_communication_time == FOUR.result.communication_time
    assert FOUR.result.hidden_communication_time.magnitude == 0
    assert FOUR.result.synchronization_time.magnitude == 0


@pytest.mark.parametrize(
    "field, bad",
    [
        ("algorithm", "butterfly"),
        ("intra_efficiency", 0.0),
        ("intra_efficiency", 1.5),
        ("inter_efficiency", -0.1),
        ("overlap", "yes"),
        ("bucket_size", Q_(0, "MB")),
        ("bucket_size", Q_(25, "s")),
        ("backward_fraction", 1.0),
        ("update_overhead", Q_(-1, "ms")),
        ("straggler_cv", -0.01),
        ("straggler_cv", math.inf),
        ("nonsense", 1),
    ],
)
def test_bad_assumptions_fail_at_construction(field, bad):
    with pytest.raises(InputError, match=field):
        Assumptions(**{field: bad})


@pytest.mark.parametrize(
    "field, bad",
    [
        ("nics_per_node", 0),
        ("nics_per_node", 1.5),
        ("intra_latency", Q_(-1, "us")),
        ("inter_latency", Q_(1, "GB")),
        ("assumptions", "optimistic"),
    ],
)
def test_bad_hardware_inputs_fail_at_construction(field, bad):
    with pytest.raises(InputError, match=field):
        FOUR.variant(**{field: bad})


def test_more_nics_divide_the_inter_time():
    one = FOUR.variant(nics_per_node=1).result.inter_time
    eight = FOUR.variant(nics_per_node=8).result.inter_time
    assert eight.magnitude == pytest.approx(one.magnitude / 8)


def test_latency_adds_two_steps_per_rank_of_the_ring():
    base = FOUR.result
    slow = FOUR.variant(intra_latency=Q_(10, "us"), inter_latency=Q_(100, "us")).result
    d, n = 8, 32
    assert (slow.intra_time - base.intra_time).to("us").magnitude == pytest.approx(2 * (d - 1) * 10)
    assert (slow.inter_time - base.inter_time).to("us").magnitude == pytest.approx(
        2 * (n - 1) * 100
    )


def test_hierarchical_moves_a_shard_across_nodes():
    r = FOUR.variant(assumptions=Assumptions(algorithm="hierarchical")).result
    # G f(N) / B with G = 3 GB, N = 4, B = 1.25 GB/s -> 3e9 * 1.5 / 1.25e9 s
    assert r.inter_time.to("s").magnitude == pytest.approx(3e9 * 1.5 / 1.25e9)
    assert r.inter_bytes.magnitude == pytest.approx(3e9 / 8 * 1.5)
    assert r.inter_algorithm == "hierarchical"


def test_tree_trades_bandwidth_for_logarithmic_latency():
    tree = FOUR.variant(
        assumptions=Assumptions(algorithm="tree"), inter_latency=Q_(50, "us")
    ).result
    expected = 2 * math.ceil(math.log2(4)) * 50e-6 + 2 * 3e9 / 1.25e9
    assert tree.inter_time.to("s").magnitude == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(scenarios(), st.floats(0, 200e-6), st.integers(1, 8))
def test_auto_is_never_slower_than_any_single_algorithm(s, latency, nics):
    s = s.variant(inter_latency=Q_(latency, "s"), nics_per_node=nics)
    auto = s.variant(assumptions=Assumptions(algorithm="auto")).result.communication_time
    for name in ALGORITHMS:
        fixed = s.variant(assumptions=Assumptions(algorithm=name)).result.communication_time
        assert auto <= fixed * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(scenarios())
def test_realistic_preset_invariants(s):
    r = s.variant(assumptions=Assumptions.realistic()).result
    assert 0 < r.efficiency <= 1
    assert (
        0 <= r.exposed_communication_time.magnitude <= r.communication_time.magnitude * (1 + 1e-12)
    )
    assert r.hidden_communication_time.magnitude >= -1e-9
    shares = r.compute_share + r.communication_share + r.synchronization_share + r.extra_share
    assert shares == pytest.approx(1.0)
    assert r.bottleneck in ("compute", "intra-node link", "inter-node link", "synchronization")
    assert r.constraint_trace


@settings(max_examples=100, deadline=None)
@given(scenarios())
def test_overlap_never_slows_an_update(s):
    without = s.variant(assumptions=Assumptions(overlap=False)).result.update_time
    with_overlap = s.variant(
        assumptions=Assumptions(overlap=True, bucket_size=Q_(10, "TB"))
    ).result.update_time
    # one bucket holding the whole gradient: nothing overlaps, so the two agree
    assert with_overlap.magnitude == pytest.approx(without.magnitude, rel=1e-9)
    bucketed = s.variant(assumptions=Assumptions(overlap=True)).result.update_time
    assert bucketed <= without * (1 + 1e-9)


def test_overlap_exposes_only_the_last_bucket_when_the_backward_pass_is_long():
    s = Scenarios.Gpt2DataParallelOneNode.variant(
        assumptions=Assumptions(overlap=True, bucket_size=Q_(100, "MB"))
    )
    r = s.result
    # 30 buckets of 100 MB; each costs 100 MB * 1.75 / 450 GB/s; only the last is exposed
    per_bucket_ms = 100e6 * 1.75 / 450e9 * 1e3
    assert r.exposed_communication_time.magnitude == pytest.approx(per_bucket_ms)
    assert r.hidden_communication_time.magnitude == pytest.approx(
        r.communication_time.magnitude - per_bucket_ms
    )


def test_straggler_delay_grows_with_sqrt_log_n():
    a = Assumptions(straggler_cv=0.05)
    r = FOUR.variant(assumptions=a).result
    assert r.synchronization_time.to("s").magnitude == pytest.approx(
        0.05 * 1.8 * math.sqrt(2 * math.log(32))
    )
    one = Scenarios.Gpt2DataParallelOneNode.variant(devices_per_node=1, assumptions=a).result
    assert one.synchronization_time.magnitude == 0


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_a_zero_stage_alone_is_priced_as_the_same_layout_with_tensor_parallel_1(stage):
    """One price per concept: ZeRO on a transformer is the per-layer layout model, t given or not."""
    alone = FOUR.variant(zero_stage=stage).result
    layout = FOUR.variant(zero_stage=stage, tensor_parallel=1).result
    for name in ("update_time", "communication_time", "compute_time", "memory_per_device", "efficiency"):
        assert getattr(alone, name) == getattr(layout, name), name
    assert alone.figures.layout is not None  # explain prints the layout's derivation


def test_zero3_on_llama3_70b_is_one_price():
    """Issue 29's example: Llama 3 70B on 8 DGX H100 nodes, ZeRO-3 alone took the old
    data-parallel rule (1.5x the AllReduce: 1.87 s, efficiency 0.84) and with t = 1 the
    layout model (0.013 s, 0.999)."""
    from mlsysim import Systems

    job = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=8,
        mfu=0.4, training_tokens=Q_(1e12, "token"), per_device_batch=1, accumulation_steps=4,
        zero_stage=3,
    )
    alone, layout = job.result, job.variant(tensor_parallel=1).result
    assert alone.update_time == layout.update_time
    assert alone.efficiency == pytest.approx(layout.efficiency, rel=1e-15)
    assert alone.efficiency > 0.9


def test_zero3_without_layers_keeps_the_data_parallel_rule():
    """A workload with no layers cannot be priced per layer: 1.5x the AllReduce's bytes."""
    plain = FOUR.variant(workload=Workload(name="x", parameters=Q_(1.5e9, "param"))).result
    zero3 = FOUR.variant(workload=Workload(name="x", parameters=Q_(1.5e9, "param")), zero_stage=3).result
    assert zero3.figures.layout is None
    assert zero3.intra_bytes.magnitude == pytest.approx(1.5 * plain.intra_bytes.magnitude)


@pytest.mark.parametrize(
    "stage, per_param", [(0, 16.0), (1, 4 + 12 / 32), (2, 2 + 14 / 32), (3, 16 / 32)]
)
def test_zero_memory_per_device(stage, per_param):
    r = FOUR.variant(zero_stage=stage, device_memory=Q_(80, "GB")).result
    activations = 34 * 1024 * 16 * 1600 * 48  # Korthikanti et al. 2022, selective: 34 s b h L
    # ZeRO-3 holds two layers unsharded at once (the one computing, the one prefetched):
    # 2 x (2 B weights + 2 B gradients) x 1.5e9 / 48 layers
    buffers = 2 * 4 * 1.5e9 / 48 if stage == 3 else 0.0
    assert r.memory_per_device.magnitude == pytest.approx(1.5e9 * per_param + activations + buffers)
    assert r.fits == (1.5e9 * per_param + activations + buffers <= 80e9)
    assert any("memory" in note for note in r.constraint_trace)


def test_device_memory_from_an_accelerator_entry():
    from mlsysim import Hardware

    r = FOUR.variant(device_memory=Hardware.Cloud.H100).result
    assert r.device_memory.to("GB").magnitude == pytest.approx(80)
    assert r.fits is True


def test_explain_covers_every_opt_in_choice():
    s = FOUR.variant(
        assumptions=Assumptions.realistic(),
        nics_per_node=8,
        inter_latency=Q_(5, "us"),
        zero_stage=3,
        device_memory=Q_(80, "GB"),
    )
    text = s.explain()
    for needle in (
        "auto",
        "overlap",
        "synchronization",
        "ZeRO-3",
        "memory",
        "alpha_inter",
        "bottleneck",
        "= 0.925"[:3],
    ):
        assert needle in text
    md = s.explain(format="markdown")
    assert md.startswith("## ") and "| # | quantity | equation | numbers | value |" in md


def test_explain_of_the_seed_shows_its_figures():
    text = FOUR.explain()
    for needle in (
        "5.25 GB",
        "4650 ms",
        "6461.67 ms",
        "8.91411",
        "0.278566",
        "358.981 USD",
        "G x f(n)",
    ):
        assert needle in text, needle
    with pytest.raises(InputError, match="format"):
        FOUR.explain(format="html")
