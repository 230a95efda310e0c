"""Text values for scenario fields (--set and scenario files): units, registry names, presets."""

import pytest

from mlsysim import Q_, Assumptions, InputError, Scenarios, Systems
from mlsysim.engine.io.overrides import apply_overrides, coerce_field

ONE = Scenarios.Gpt2DataParallelOneNode


def test_a_fabric_comes_through_fabric_and_brings_its_latency():
    four = apply_overrides(ONE, ["nodes=4", "fabric=InfiniBand_NDR"])
    assert four.inter_bandwidth == Systems.Fabrics.InfiniBand_NDR.bandwidth
    assert four.inter_latency == Systems.Fabrics.InfiniBand_NDR.latency
    assert four.fabric == Systems.Fabrics.InfiniBand_NDR


@pytest.mark.parametrize("name", ["inter_bandwidth", "inter_latency"])
def test_a_fabric_named_as_a_link_figure_says_to_give_it_as_fabric(name):
    with pytest.raises(InputError, match=r"InfiniBand_NDR is a fabric.*fabric='InfiniBand_NDR'") as info:
        coerce_field(name, "InfiniBand_NDR")
    assert info.value.loc == (name,)
    with pytest.raises(InputError, match="fabric='InfiniBand_NDR'"):
        ONE.variant(nodes=4, inter_bandwidth=Systems.Fabrics.InfiniBand_NDR)


def test_a_link_named_as_the_intra_node_figure_is_refused_with_the_fix():
    with pytest.raises(InputError, match="is a fabric.*node='DGX_H100'"):
        coerce_field("intra_bandwidth", "NVLink4")


def test_unknown_link_text_is_a_bandwidth_error_at_its_field():
    with pytest.raises(InputError, match="inter_bandwidth") as info:
        coerce_field("inter_bandwidth", "Infiniband_QDR")
    assert info.value.loc == ("inter_bandwidth",)


def test_overrides_rename_the_scenario_so_titles_do_not_mislead():
    changed = apply_overrides(ONE, ["nodes=4", "inter_bandwidth=100 Gbps"])
    assert changed.name == "Gpt2DataParallelOneNode [nodes=4, inter_bandwidth=100 Gbps]"
    assert changed.inter_bandwidth == Q_(100, "Gbps")
    assert apply_overrides(ONE, ["name=mine", "nodes=1"]).name == "mine"
    assert apply_overrides(ONE, []) is ONE


def test_assumption_fields_and_presets():
    s = apply_overrides(ONE, ["assumptions=realistic", "assumptions.straggler_cv=0.05"])
    assert s.assumptions == Assumptions.realistic().variant(straggler_cv=0.05)
    assert apply_overrides(ONE, ["assumptions=seed"]).assumptions.is_seed()
    with pytest.raises(InputError, match="assumptions"):
        apply_overrides(ONE, ["assumptions=optimistic"])


@pytest.mark.parametrize("text", ["none", "None", "null"])
def test_none_clears_an_optional_field(text):
    assert apply_overrides(ONE, [f"node_hour_rate={text}"]).result.cost is None
