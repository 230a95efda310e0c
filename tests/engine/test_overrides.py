"""Text values for scenario fields (--set and scenario files): units, registry names, presets."""

import pytest

from mlsysim import Q_, Assumptions, InputError, Scenarios, Systems
from mlsysim.engine.overrides import apply_overrides, coerce_field

ONE = Scenarios.Gpt2DataParallelOneNode


def test_fabric_names_give_their_bandwidth_and_latency():
    # a fabric named as inter_bandwidth is the fabric: it brings its latency too
    assert coerce_field("inter_bandwidth", "InfiniBand_NDR") == Systems.Fabrics.InfiniBand_NDR
    four = apply_overrides(ONE, ["nodes=4", "inter_bandwidth=InfiniBand_NDR"])
    assert four.inter_bandwidth == Systems.Fabrics.InfiniBand_NDR.bandwidth
    assert four.inter_latency == Systems.Fabrics.InfiniBand_NDR.latency
    assert four.fabric == Systems.Fabrics.InfiniBand_NDR
    assert coerce_field("inter_latency", "infiniband_ndr") == Systems.Fabrics.InfiniBand_NDR.latency
    assert coerce_field("intra_bandwidth", "NVLink4") == Q_(450, "GB/s")


def test_unknown_link_text_lists_the_fabrics():
    with pytest.raises(InputError, match=r"inter_bandwidth.*or name a fabric: InfiniBand_EDR.*and \d+ more"):
        coerce_field("inter_bandwidth", "Infiniband_QDR")


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
