"""Mixtures of experts and multi-head latent attention: the new workload fields, their checks, and
parameter counts recounted from each registry shape against the counts its source states."""

from __future__ import annotations

import pytest

from mlsysim import Q_, InputError, Models, TransformerWorkload
from mlsysim.models.moe import attention_parameters, moe_layer_count, moe_layers, parameter_counts

LANG = Models.Language

# (entry, total and active parameters as the source states them)
STATED = {
    "DeepSeek_V3": (671e9, 37e9),  # paper; main model without the MTP module
    "Qwen3_235B_A22B": (235e9, 22e9),
    "Mixtral_8x7B": (46.7e9, 12.9e9),
    "Mixtral_8x22B": (141e9, 39e9),
    "Llama3_405B": (405e9, 405e9),  # dense: every parameter is active
}


@pytest.mark.parametrize("name", STATED)
def test_the_shape_accounts_for_the_stated_counts_within_2_percent(name: str) -> None:
    workload = getattr(LANG, name)
    total, active = parameter_counts(workload)
    stated_total, stated_active = STATED[name]
    assert total == pytest.approx(stated_total, rel=0.02)
    assert active == pytest.approx(stated_active, rel=0.02)
    assert workload.parameter_count() == stated_total
    if workload.active_parameters is not None:
        assert workload.active_parameters == Q_(stated_active, "param")


def test_deepseek_v3_is_as_its_report_and_config_state() -> None:
    ds = LANG.DeepSeek_V3
    assert (ds.layers, ds.hidden_dim, ds.heads, ds.vocab_size, ds.seq_len) == (61, 7168, 128, 129280, 4096)
    assert (ds.kv_lora_rank, ds.q_lora_rank, ds.qk_rope_head_dim, ds.qk_nope_head_dim, ds.v_head_dim) == (
        512, 1536, 64, 128, 128)
    assert (ds.experts, ds.experts_per_token, ds.expert_ffn_hidden, ds.shared_experts) == (256, 8, 2048, 1)
    assert (ds.dense_layers, ds.ffn_hidden, ds.attention) == (3, 18432, "mla")
    assert moe_layers(ds) == 58
    # MLA: q down 7168x1536 + up 1536x128x192, kv down 7168x576 + up 512x128x256, out 128x128x7168
    assert attention_parameters(ds) == 11_010_048 + 37_748_736 + 4_128_768 + 16_777_216 + 117_440_512
    total, active = parameter_counts(ds)
    # the paper's 671B excludes the 11.5B-parameter MTP module; the weights README gives 36.7B active
    assert round(total / 1e9, 1) == 671.0 and round(active / 1e9, 1) == 37.6


def test_qwen3_heads_are_128_wide_not_hidden_over_heads() -> None:
    qwen = LANG.Qwen3_235B_A22B
    assert (qwen.layers, qwen.hidden_dim, qwen.heads, qwen.kv_heads, qwen.head_dim) == (94, 4096, 64, 4, 128)
    assert (qwen.experts, qwen.experts_per_token, qwen.expert_ffn_hidden) == (128, 8, 1536)
    assert moe_layers(qwen) == 94 and not qwen.shared_experts
    # Q and O 4096 x 8192 each, K and V 4096 x 512 each
    assert attention_parameters(qwen) == 2 * 4096 * 8192 + 2 * 4096 * 512


def test_mixtral_and_llama_405b_shapes() -> None:
    small, large, llama = LANG.Mixtral_8x7B, LANG.Mixtral_8x22B, LANG.Llama3_405B
    assert (small.layers, small.hidden_dim, small.expert_ffn_hidden, small.seq_len) == (32, 4096, 14336, 32768)
    assert (large.layers, large.hidden_dim, large.heads, large.expert_ffn_hidden) == (56, 6144, 48, 16384)
    for mixtral in (small, large):
        assert (mixtral.experts, mixtral.experts_per_token, mixtral.kv_heads) == (8, 2, 8)
        assert moe_layers(mixtral) == mixtral.layers
    assert not llama.is_moe() and moe_layers(llama) == 0
    assert (llama.layers, llama.hidden_dim, llama.ffn_hidden, llama.kv_heads) == (126, 16384, 53248, 8)


def test_dense_models_count_the_same_total_and_active() -> None:
    for name in ("Llama2_70B", "Llama3_70B", "Llama3_8B"):
        workload = getattr(LANG, name)
        total, active = parameter_counts(workload)
        assert total == active == pytest.approx(workload.parameter_count(), rel=0.02)


def test_moe_layer_counting() -> None:
    assert moe_layer_count(61, 3, 1) == 58
    assert moe_layer_count(32, None, None) == 32
    assert moe_layer_count(24, 0, 2) == 12  # relative layers 0, 2, ..., 22
    assert moe_layer_count(25, 0, 2) == 13  # ... and 24
    assert moe_layer_count(10, 1, 4) == 3  # of the 9 after the dense one: 0, 4, 8


def _moe(**overrides: object) -> TransformerWorkload:
    """A small mixture of experts whose stated parameters are its shape's count (a count the shape contradicts
    is refused)."""
    from types import SimpleNamespace

    fields: dict[str, object] = dict(
        name="m", layers=4, hidden_dim=64, heads=4, vocab_size=100,
        experts=8, experts_per_token=2, expert_ffn_hidden=32, gated_mlp=True,
    )
    fields.update(overrides)
    shape = SimpleNamespace(**{name: f.default for name, f in TransformerWorkload.model_fields.items()} | fields)
    try:
        counted = parameter_counts(shape)[0]
    except InputError:  # a shape the workload refuses for its own reason (the tests below)
        counted = 1e9
    fields.setdefault("parameters", Q_(counted, "param"))
    return TransformerWorkload(**fields)  # type: ignore[arg-type]


def test_a_small_moe_counts_by_the_formula() -> None:
    w = _moe(shared_experts=1, shared_expert_ffn_hidden=16, dense_layers=1, ffn_hidden=128)
    attention = 4 * 64 * 64
    dense = 3 * 64 * 128
    expert, shared, router = 3 * 64 * 32, 3 * 64 * 16, 64 * 8
    embeddings = 2 * 100 * 64
    total, active = parameter_counts(w)
    assert total == 4 * attention + dense + 3 * (8 * expert + shared + router) + embeddings
    assert active == 4 * attention + dense + 3 * (2 * expert + shared + router) + embeddings
    tied = parameter_counts(_moe(tied_embeddings=True))[0]
    assert parameter_counts(_moe())[0] - tied == 100 * 64


@pytest.mark.parametrize(
    "overrides, field",
    [
        (dict(experts_per_token=9), "experts_per_token"),
        (dict(experts_per_token=None), "experts_per_token"),
        (dict(expert_ffn_hidden=None), "expert_ffn_hidden"),
        (dict(experts=None), "experts_per_token"),
        (dict(experts=0), "experts"),
        (dict(shared_experts=-1), "shared_experts"),
        (dict(shared_expert_ffn_hidden=16), "shared_expert_ffn_hidden"),
        (dict(dense_layers=4), "dense_layers"),
        (dict(dense_layers=1), "ffn_hidden"),
        (dict(moe_layer_frequency=2), "ffn_hidden"),
        (dict(moe_layer_frequency=0), "moe_layer_frequency"),
        (dict(active_parameters=Q_(2e9, "param")), "active_parameters"),
        (dict(active_parameters=Q_(2, "GB")), "active_parameters"),
        (dict(attention="gqa"), "attention"),
        (dict(kv_lora_rank=512), "kv_lora_rank"),
        (dict(attention="mla", kv_lora_rank=8, q_lora_rank=8, qk_rope_head_dim=4,
              qk_nope_head_dim=8), "v_head_dim"),
        (dict(attention="mla", kv_lora_rank=8, q_lora_rank=8, qk_rope_head_dim=4,
              qk_nope_head_dim=8, v_head_dim=8, kv_heads=2), "kv_heads"),
        (dict(head_dim=0), "head_dim"),
    ],
)
def test_each_inconsistency_is_named_by_its_field(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as caught:
        _moe(**overrides)
    assert caught.value.errors()[0]["loc"][-1] == field
    assert "\n" not in str(caught.value)


def test_a_dense_transformer_needs_none_of_the_new_fields() -> None:
    w = TransformerWorkload(name="d", parameters=Q_(1e9, "param"))
    assert w.experts is None and w.attention == "mha" and not w.is_moe()
    with pytest.raises(InputError, match="no layers"):
        parameter_counts(w)
