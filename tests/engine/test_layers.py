"""Later words win: one precedence rule for variant, --set, files, sweep axes and the page."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlsysim import Q_, DataParallelScaleOutScenario, Hardware, Models, Scenarios, Systems, sweep
from mlsysim.core.exceptions import InputError, MlsysimWarning
from mlsysim.engine.inputs.layers import overlay
from mlsysim.engine.io.overrides import apply_overrides

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
ONE = Scenarios.Gpt2DataParallelOneNode
NDR = Systems.Fabrics.InfiniBand_NDR


def test_a_fabric_given_later_replaces_the_link_the_scenario_gave():
    s = FOUR.variant(fabric="InfiniBand_NDR")
    assert s.inter_bandwidth == NDR.bandwidth and s.inter_latency == NDR.latency
    assert s.job.origins["inter_bandwidth"] == (
        "fabric InfiniBand_NDR, replacing 10 Gbps of the scenario"
    )
    assert "inter_bandwidth" not in s.given  # the fabric fills it now
    assert s.result.update_time < FOUR.result.update_time


def test_set_on_a_named_scenario_follows_the_same_rule():
    s = apply_overrides(FOUR, ["fabric=InfiniBand_NDR"])
    assert s.inter_bandwidth == NDR.bandwidth and s.inter_latency == NDR.latency


def test_an_explicit_value_given_later_wins_over_an_older_preset():
    s = FOUR.variant(fabric="InfiniBand_NDR").variant(inter_bandwidth=Q_(25, "Gbps"))
    assert s.inter_bandwidth == Q_(25, "Gbps")
    assert s.inter_latency == NDR.latency  # what the fabric still says


def test_inside_one_layer_an_explicit_value_wins_over_a_preset():
    s = ONE.variant(nodes=4, fabric="InfiniBand_NDR", inter_bandwidth=Q_(25, "Gbps"))
    assert s.inter_bandwidth == Q_(25, "Gbps") and s.inter_latency == NDR.latency


def test_a_sweep_axis_over_the_fabric_equals_the_scalar_variant():
    table = sweep(FOUR, fabric=["InfiniBand_NDR", "Ethernet_100G"])
    for row, name in enumerate(["InfiniBand_NDR", "Ethernet_100G"]):
        scalar = FOUR.variant(fabric=name).result
        assert table["update_time"][row] == pytest.approx(
            scalar.update_time.magnitude, rel=1e-12
        )
    ndr = ONE.variant(nodes=4, fabric="InfiniBand_NDR").result
    assert table["update_time"][0] == pytest.approx(ndr.update_time.magnitude, rel=1e-12)


def test_a_newer_mfu_replaces_an_older_measured_step_time():
    job = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100,
        nodes=2, step_time=Q_(2, "s"), training_time=Q_(1000, "hour"), per_device_batch=1,
    )
    derived = job.variant(mfu=0.4)
    assert derived.job.origins["step_time"].startswith("mfu, replacing 2 s")
    measured_again = derived.variant(step_time=Q_(3, "s"))
    assert measured_again.step_time == Q_(3, "s") and measured_again.mfu is None


def test_a_newer_node_replaces_the_accelerator_and_its_memory():
    job = DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100,
        nodes=2, step_time=Q_(2, "s"), training_time=Q_(1000, "hour"), per_device_batch=1,
        device_memory=Q_(40, "GB"),
    )
    a100 = job.variant(node=Systems.Nodes.DGX_A100)
    assert a100.accelerator == Hardware.Cloud.A100
    assert a100.device_memory == Hardware.Cloud.A100.memory.capacity


def test_a_clear_fills_nothing_and_replaces_nothing():
    assert overlay({"mfu": 0.4}, {"step_time": None}).given == {"mfu": 0.4, "step_time": None}
    assert overlay({"mfu": 0.4}, {"step_time": None}).replaced == {}


def test_two_sources_in_one_layer_still_contradict():
    with pytest.raises(InputError, match="not both"):
        DataParallelScaleOutScenario(
            workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100,
            step_time=Q_(2, "s"), mfu=0.4, training_time=Q_(1, "hour"), per_device_batch=1,
        )


# -- the property: a chain of variants equals one construction from the folded layers --------

_CHANGES = {
    "nodes": st.sampled_from([1, 2, 4, 16]),
    "fabric": st.sampled_from([None, "InfiniBand_NDR", "Ethernet_100G", "Ethernet_10G"]),
    "inter_bandwidth": st.sampled_from([Q_(10, "Gbps"), Q_(200, "Gbps"), Q_(50, "GB/s")]),
    "inter_latency": st.sampled_from([None, Q_(0, "us"), Q_(5, "us")]),
    "node": st.sampled_from([None, "DGX_H100", "DGX_A100"]),
    "accelerator": st.sampled_from([None, "H100", "A100"]),
    "mfu": st.sampled_from([None, 0.3, 0.5]),
    "step_time": st.sampled_from([None, Q_(1.5, "s"), Q_(2, "s")]),
    "training_tokens": st.sampled_from([None, Q_(1e10, "token")]),
    "training_samples": st.sampled_from([None, Q_(1e6, "sample")]),
    "training_time": st.sampled_from([None, Q_(100, "hour")]),
    "per_device_batch": st.sampled_from([1, 2, 8]),
    "precision": st.sampled_from(["fp16", "bf16"]),
    "recompute": st.sampled_from(["none", "selective", "full"]),
    "devices_per_node": st.sampled_from([4, 8]),
    "intra_bandwidth": st.sampled_from([Q_(300, "GB/s"), Q_(450, "GB/s")]),
    "device_memory": st.sampled_from([None, Q_(80, "GB")]),
    "accumulation_steps": st.sampled_from([1, 4]),
}

changes = st.dictionaries(st.sampled_from(sorted(_CHANGES)), st.none(), max_size=5).flatmap(
    lambda keys: st.fixed_dictionaries({k: _CHANGES[k] for k in keys})
)

BASES = [
    FOUR,
    DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100,
        fabric=NDR, nodes=4, mfu=0.4, training_tokens=Q_(1e11, "token"), per_device_batch=1,
    ),
]


def _attempt(build):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MlsysimWarning)
            return build(), None
    except InputError as exc:
        return None, type(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(BASES), a=changes, b=changes)
def test_variant_of_variant_equals_one_construction_from_the_folded_layers(base, a, b):
    chained, chain_error = _attempt(lambda: base.variant(**a).variant(**b))
    folded, fold_error = _attempt(
        lambda: DataParallelScaleOutScenario.from_layers(dict(base.given), a, b)
    )
    if chain_error is not None:
        # the intermediate scenario may be refused where the folded one is not; never the reverse
        return
    assert fold_error is None
    assert chained == folded
    assert dict(chained.job.origins).keys() == dict(folded.job.origins).keys()
    # what was derived (a variant may keep its base's Job), and the numbers the model reads
    assert _same(chained.job[1:], folded.job[1:])
    assert list(chained._checked()[0]) == list(folded._checked()[0])
    assert _same(tuple(chained._checked()[0].values()), tuple(folded._checked()[0].values()))
    assert _same(chained.result.figures, folded.result.figures)


def _same(a: object, b: object) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    return a == b or (a != a and b != b)
