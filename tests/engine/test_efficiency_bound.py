"""No result shows an efficiency or a utilisation above 100%, whatever the layout (issue 40, item 1)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, DataParallelScaleOutScenario, Models, Systems
from mlsysim.engine.model.equations import _LAYOUT_BY_NAME, Inputs


def _llama(**given: object) -> DataParallelScaleOutScenario:
    base: dict[str, object] = dict(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_A100, nodes=2,
        per_device_batch=1, accumulation_steps=8, training_tokens=Q_(1e12, "token"), flash_attention=1,
    )
    return DataParallelScaleOutScenario(**(base | given))


@settings(max_examples=25, deadline=None)
@given(
    t=st.sampled_from([1, 2, 4, 8]), cp=st.sampled_from([1, 2, 4]), p=st.sampled_from([1, 2]),
    zero=st.sampled_from([0, 1, 3]), recompute=st.sampled_from(["none", "selective", "full"]),
    seq=st.sampled_from([8192, 32768]), fused=st.booleans(),
)
def test_no_layout_reports_an_efficiency_or_mfu_above_one(t, cp, p, zero, recompute, seq, fused):
    """Tensor, context and pipeline parallelism on operator-priced Llama 3 8B: the speedup never exceeds the
    devices, so neither the efficiency nor the achieved MFU goes above 1 (context parallelism once reported
    106% at cp 2 and 180% at cp 8 on 128K tokens: its attention matrices were counted (s/cp)^2, not (s/cp) s)."""
    long = Models.Language.Llama3_8B.variant(seq_len=seq)
    nodes = max(2, t * cp * p // 8)
    r = _llama(nodes=nodes, workload=long, tensor_parallel=t, context_parallel=cp, pipeline_parallel=p, zero_stage=zero,
               recompute=recompute, flash_attention=int(fused)).result
    assert 0.0 < float(r.efficiency) <= 1.0
    assert float(r.speedup) <= r.n_devices
    assert 0.0 < float(r.figures.achieved_mfu) <= 1.0


@pytest.mark.parametrize("cp", [2, 4])
def test_context_parallelism_is_never_more_efficient_than_one_device(cp):
    """The reference of the speedup and the layout do the same work: splitting the sequence over cp devices
    cannot make a device's share cheaper than 1/cp of the whole (the element-wise bytes at cp 2 are half of
    cp 1's, not a quarter)."""
    one, split = _llama(context_parallel=1).result, _llama(context_parallel=cp).result
    ops_one = one.figures.layout.terms.compute.operators
    ops_split = split.figures.layout.terms.compute.operators
    assert float(ops_split.memory_bytes) == pytest.approx(float(ops_one.memory_bytes) / cp, rel=1e-12)
    assert float(split.efficiency) <= 1.0


def test_every_layout_field_is_an_input_of_its_name_or_derived():
    """layout_records takes the Layout fields it does not derive from the Inputs attribute of the same name:
    a new layout input is a field of the record (and of Inputs) and the term that uses it."""
    names = {f.name for f in dataclasses.fields(Inputs)}
    assert all(name in names for name, _ in _LAYOUT_BY_NAME)
