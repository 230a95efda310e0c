"""Multi-token prediction (MTP): the extra work of D prediction modules, in layers of the model's own.

Source: DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" (arXiv:2412.19437), section 2.2: each of the D MTP
modules (D = 1 in DeepSeek-V3) is one transformer block, a projection M_k of the concatenated 2h-wide
representation back to h, and the output head shared with the main model; Megatron-Core runs them on the
last pipeline stage unless a custom layout places them (``m`` in ``pipeline_layout``). The model FLOPs of a
run (MFU) leave them out, as the report does (671B parameters, the 14B of the MTP module apart).

The scenario prices a module as w of the model's average layers (its forward FLOPs per token over theirs):

    w = 1 + (4 h^2 + 2 V h) / (2 N_act / L + 4 h_att s)

the block taken as an average layer (F = 6 N_act s + 12 L h_att s^2 per sample, per layer and token
forward: 2 N_act / L + 4 h_att s), plus the projection (2 h x h: 4 h^2 FLOPs) and the head (2 V h). Its
parameters are priced the same way (the shared head is counted again: an overestimate of V h per module).
"""

from __future__ import annotations

from mlsysim.physics._array import Num


def attention_width(hidden: Num, heads: Num, latent_widths: tuple[Num, Num, Num] | None = None) -> Num:
    """h_att: the attention core's width per token, h; with multi-head latent attention's (d_nope, d_rope, d_v)
    ``latent_widths``: a (d_nope + d_rope + d_v) / 2, its heads' query, key and value widths."""
    if latent_widths is None:
        return hidden
    nope, rope, value = latent_widths
    return heads * (nope + rope + value) / 2.0


MTP_WEIGHT_EQUATION = "w = 1 + (4 h^2 + 2 V h) / (2 N_act / L + 4 h_att s)"


def mtp_layer_weight(active_parameters: Num, layers: Num, hidden: Num, vocab: Num, seq_len: Num,
                     attention_width: Num) -> Num:
    """w: one MTP module's forward FLOPs per token in average layers of the model (module docstring)."""
    layer = 2.0 * active_parameters / layers + 4.0 * attention_width * seq_len
    return 1.0 + (4.0 * hidden * hidden + 2.0 * vocab * hidden) / layer
