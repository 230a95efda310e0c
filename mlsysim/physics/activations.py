"""Activation memory of a transformer's layers during training (bytes, per device).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", section 4 ("Activation Memory"), with 16-bit activations
and no tensor or sequence parallelism (t = 1). One layer of s tokens, micro-batch
b, hidden size h and a attention heads stores:

* no recomputation (section 4.1, equation 1): s b h (34 + 5 a s / h) bytes:
  11 s b h in the attention block plus 5 a s^2 b for its score, softmax and
  dropout matrices, 19 s b h in the MLP (4 h wide), 4 s b h in the two
  layer norms;
* selective recomputation (section 5, Table 2): 34 s b h: the attention
  score, softmax and dropout matrices (the 5 a s^2 b term) are recomputed in
  the backward pass. Kernels that never store them, such as FlashAttention
  (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention
  with IO-Awareness"), store the same;
* full recomputation (section 5): 2 s b h, the layer's 16-bit input only; the
  rest is recomputed from it.

The counts are those of a GPT block (multi-head attention, a 4 h MLP, dropout);
models with gated MLPs, grouped-query attention or no dropout store a few s b h
more or less. The embedding, the final layer norm and the output logits (4 s b V
bytes when the loss is computed in fp32, section 4.3) are outside the layers
and are not counted here.
"""

from __future__ import annotations

from functools import cache

from mlsysim.core.exceptions import InputError
from mlsysim.physics._array import Num

RECOMPUTE_MODES = ("none", "selective", "full")
"""Activation recomputation strategies, from most memory to least."""

RECOMPUTE_MODULES = ("core_attn", "mlp", "layernorm")
"""The modules selective recomputation may rerun, as Megatron-Core's ``--recompute-modules`` names them
(Megatron-Core's TransformerConfig.recompute_modules; its default: ``core_attn``): the attention core
(Korthikanti et al. 2022's selective recomputation), the dense MLP from its input, the two layer norms.
Under ``recompute = "selective"`` without a list: ``core_attn`` alone."""

UNPRICED_MODULES = {
    "moe_act": "the experts' activation function",
    "moe": "the MoE layer",
    "shared_experts": "the shared experts",
    "mla_up_proj": "multi-head latent attention's up projections",
}
"""Megatron-Core modules the activation model cannot price yet: it counts a GPT block's tensors (Korthikanti
et al. 2022), with no separate tensors for experts or latent attention."""

MLP_RERUN_UNITS = 16.0
"""Bytes per s b h the MLP stores between its two products: the first product's output and the activation's,
4 h wide each in 16 bits (Korthikanti et al. 2022, section 4.1: 8 + 8 of the MLP's 19); what recomputing the
MLP from its input saves (split by t)."""

NORM_OUTPUT_UNITS = 4.0
"""Bytes per s b h of the two layer norms' outputs (the QKV and MLP inputs, 2 + 2; Korthikanti et al. 2022,
section 4.1): what recomputing the layer norms saves (split by t only under sequence parallelism)."""

LAYER_ACTIVATION_UNITS = 34.0
"""Bytes per s b h a layer stores outside the attention matrices (Korthikanti et al. 2022, equation 1)."""

ATTENTION_MATRIX_UNITS = 5.0
"""Bytes per a s^2 b of the attention score, softmax and dropout matrices (Korthikanti et al. 2022, equation 1)."""

LAYER_INPUT_UNITS = 2.0
"""Bytes per s b h of a layer's 16-bit input, all full recomputation keeps (Korthikanti et al. 2022, section 5)."""


def check_recompute(value: object) -> str:
    """A recomputation mode name (case-insensitive), returned in lower case."""
    if isinstance(value, str) and value.strip().lower() in RECOMPUTE_MODES:
        return value.strip().lower()
    raise InputError(
        f"unknown recompute mode {value!r}; expected one of {', '.join(RECOMPUTE_MODES)}",
        field="recompute",
    )


@cache
def recomputed_modules(recompute: str, modules: tuple[str, ...] = ()) -> frozenset[str]:
    """The modules each layer reruns in the backward: none under ``none``, all under ``full``, under
    ``selective`` the ``modules`` given (:data:`RECOMPUTE_MODULES`), else the attention core alone."""
    if recompute == "full":
        return frozenset(RECOMPUTE_MODULES)
    if recompute == "selective":
        return frozenset(modules or ("core_attn",))
    return frozenset()


def activation_bytes_per_layer(
    seq_len: Num, micro_batch: Num, hidden: Num, heads: Num, recompute: str = "none"
) -> Num:
    """Bytes of activations one transformer layer keeps for its backward pass.

        none:       s b h (34 + 5 a s / h)
        selective:  34 s b h
        full:       2 s b h

    (Korthikanti et al. 2022, equation 1, Table 2 and section 5; 16-bit
    activations, no tensor parallelism.)
    """
    sbh = seq_len * micro_batch * hidden
    mode = check_recompute(recompute)
    if mode == "none":
        return sbh * (LAYER_ACTIVATION_UNITS + ATTENTION_MATRIX_UNITS * heads * seq_len / hidden)
    if mode == "selective":
        return LAYER_ACTIVATION_UNITS * sbh
    return LAYER_INPUT_UNITS * sbh


def activation_bytes(
    layers: Num, seq_len: Num, micro_batch: Num, hidden: Num, heads: Num, recompute: str = "none"
) -> Num:
    """Bytes of activations of all ``layers`` layers: L times :func:`activation_bytes_per_layer`."""
    return layers * activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, recompute)
