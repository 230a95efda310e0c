"""Counting a transformer's parameters from its shape, mixtures of experts included.

Pure arithmetic over a :class:`~mlsysim.models.types.TransformerWorkload`'s
fields (no physics): which layers are MoE layers, and how many parameters the
model holds in all and uses per token. The registry checks its stated counts
against these (tests/models/test_moe.py).
"""

from __future__ import annotations

from typing import Protocol

from mlsysim.core.exceptions import InputError


class TransformerShape(Protocol):
    """The fields of :class:`mlsysim.models.types.TransformerWorkload` this module reads (read-only;
    a protocol, so that the types module can use this one without an import circle)."""

    @property
    def name(self) -> str: ...

    @property
    def layers(self) -> int | None: ...

    @property
    def hidden_dim(self) -> int | None: ...

    @property
    def heads(self) -> int | None: ...

    @property
    def vocab_size(self) -> int | None: ...

    @property
    def kv_heads(self) -> int | None: ...

    @property
    def head_dim(self) -> int | None: ...

    @property
    def ffn_hidden(self) -> int | None: ...

    @property
    def gated_mlp(self) -> bool | None: ...

    @property
    def tied_embeddings(self) -> bool | None: ...

    @property
    def experts(self) -> int | None: ...

    @property
    def experts_per_token(self) -> int | None: ...

    @property
    def expert_ffn_hidden(self) -> int | None: ...

    @property
    def shared_experts(self) -> int | None: ...

    @property
    def shared_expert_ffn_hidden(self) -> int | None: ...

    @property
    def dense_layers(self) -> int | None: ...

    @property
    def moe_layer_frequency(self) -> int | None: ...

    @property
    def attention(self) -> str: ...

    @property
    def kv_lora_rank(self) -> int | None: ...

    @property
    def q_lora_rank(self) -> int | None: ...

    @property
    def qk_rope_head_dim(self) -> int | None: ...

    @property
    def qk_nope_head_dim(self) -> int | None: ...

    @property
    def v_head_dim(self) -> int | None: ...



def moe_layer_count(layers: int, dense_layers: int | None, frequency: int | None) -> int:
    """MoE layers among ``layers``: the first ``dense_layers`` (None: 0) are dense; of the
    remaining R = layers - dense_layers, every ``frequency``-th (None: 1) is MoE, counted from the
    first of them (relative indices 0, n, 2n, ...): ceil(R / n).

    >>> moe_layer_count(61, 3, 1)  # DeepSeek-V3
    58
    >>> moe_layer_count(32, None, None)  # Mixtral
    32
    >>> moe_layer_count(24, 0, 2)  # every other layer, the first one MoE
    12
    """
    remaining = max(layers - (dense_layers or 0), 0)
    n = frequency or 1
    return -(-remaining // n)


def moe_layers(workload: TransformerShape) -> int:
    """How many of the workload's layers are MoE layers: 0 for a dense model (``experts`` None),
    else :func:`moe_layer_count` of ``layers``, ``dense_layers`` and ``moe_layer_frequency``."""
    if workload.experts is None:
        return 0
    return moe_layer_count(
        _required(workload, "layers"), workload.dense_layers, workload.moe_layer_frequency
    )


def attention_parameters(workload: TransformerShape) -> int:
    """The weight matrices of one attention block (biases and norms not counted).

    Multi-head / grouped-query (``attention="mha"``), with d = ``head_dim`` (None: h / heads)
    and g = ``kv_heads`` (None: heads)::

        h*heads*d (Q) + 2*h*g*d (K, V) + heads*d*h (O)

    Multi-head latent (``attention="mla"``; DeepSeek-V2 section 2.1), with r_q =
    ``q_lora_rank``, r_kv = ``kv_lora_rank``, d_n, d_r, d_v the nope, rope and value widths::

        h*r_q + r_q*heads*(d_n + d_r)            queries: down, then up
        + h*(r_kv + d_r) + r_kv*heads*(d_n + d_v)  keys and values: joint down (with the
                                                   shared rotary key), then up
        + heads*d_v*h                             output
    """
    h = _required(workload, "hidden_dim")
    heads = _required(workload, "heads")
    if workload.attention == "mla":
        r_q = _required(workload, "q_lora_rank")
        r_kv = _required(workload, "kv_lora_rank")
        d_n = _required(workload, "qk_nope_head_dim")
        d_r = _required(workload, "qk_rope_head_dim")
        d_v = _required(workload, "v_head_dim")
        queries = h * r_q + r_q * heads * (d_n + d_r)
        keys_values = h * (r_kv + d_r) + r_kv * heads * (d_n + d_v)
        return queries + keys_values + heads * d_v * h
    d = workload.head_dim if workload.head_dim is not None else h // heads
    g = workload.kv_heads if workload.kv_heads is not None else heads
    return 2 * h * heads * d + 2 * h * g * d


def mlp_parameters(workload: TransformerShape, width: int) -> int:
    """One MLP (or expert) of inner width ``width``: 3 h width when ``gated_mlp`` (SwiGLU),
    else 2 h width (biases not counted)."""
    matrices = 3 if workload.gated_mlp else 2
    return matrices * _required(workload, "hidden_dim") * width


def parameter_counts(workload: TransformerShape) -> tuple[float, float]:
    """(total, active) parameters of a transformer, from its shape.

    With L layers, M = :func:`moe_layers` of them MoE, h = ``hidden_dim``, V = ``vocab_size``,
    A = :func:`attention_parameters`, P(f) = :func:`mlp_parameters` of width f::

        total  = L*A + (L-M)*P(ffn_hidden)
                 + M*(E*P(f_e) + S*P(f_s) + h*E) + E_emb
        active = L*A + (L-M)*P(ffn_hidden)
                 + M*(k*P(f_e) + S*P(f_s) + h*E) + E_emb

    E = ``experts``, k = ``experts_per_token``, f_e = ``expert_ffn_hidden``, S =
    ``shared_experts`` (None: 0), f_s = ``shared_expert_ffn_hidden`` (None: f_e), h*E the router
    of each MoE layer; E_emb = V*h for the input embedding plus V*h for the output layer unless
    ``tied_embeddings``. Both embedding matrices count as active (as DeepSeek-V3's and
    Mixtral's stated active counts do). Not counted: biases, norms, position embeddings, and
    modules outside the L layers (DeepSeek-V3's multi-token-prediction module). A dense model
    (``experts`` None) has total == active.

    Raises :class:`InputError` naming the first shape figure missing.
    """
    layers = _required(workload, "layers")
    h = _required(workload, "hidden_dim")
    vocab = _required(workload, "vocab_size")
    moe = moe_layers(workload)
    common = layers * attention_parameters(workload)
    if layers - moe:
        common += (layers - moe) * mlp_parameters(workload, _required(workload, "ffn_hidden"))
    common += vocab * h * (1 if workload.tied_embeddings else 2)
    if not moe:
        return float(common), float(common)
    experts = _required(workload, "experts")
    top_k = _required(workload, "experts_per_token")
    expert = mlp_parameters(workload, _required(workload, "expert_ffn_hidden"))
    shared_width = workload.shared_expert_ffn_hidden or _required(workload, "expert_ffn_hidden")
    always = (workload.shared_experts or 0) * mlp_parameters(workload, shared_width) + h * experts
    total = common + moe * (experts * expert + always)
    active = common + moe * (top_k * expert + always)
    return float(total), float(active)


def _required(workload: TransformerShape, name: str) -> int:
    value = getattr(workload, name)
    if value is None:
        raise InputError(
            f"{workload.name} has no {name}; counting its parameters from its shape needs it",
            field=name,
        )
    return int(value)
