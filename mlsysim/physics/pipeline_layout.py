"""A custom pipeline layout: which layers each virtual pipeline stage holds (Megatron-Core's
``--pipeline-model-parallel-layout``).

Source: Megatron-Core developer guide, "Custom Pipeline Model Parallel Layout"
(docs.nvidia.com/megatron-core/developer-guide/latest/user-guide/features/pipeline_parallel_layout.html):
the text lists the virtual stages in order, split by ``|``; ``E`` is the embedding, ``t`` a transformer
decoder layer, ``m`` a multi-token-prediction (MTP) layer, ``L`` the loss; ``x*N`` repeats a symbol,
``(...)*N`` a run of stages; commas are cosmetic; an empty stage is legal (``E||t|L``). With p pipeline
ranks the string holds p v stages, virtual stage i on rank i mod p (its chunk i // p), so the guide's
DeepSeek-V3 example ``Et*3|(tt|)*29,m|L`` at p = 16 (v = 2) puts the embedding and 3 + 2 decoder layers
on rank 0, 2 + 2 on ranks 1-13, 2 and the MTP layer on rank 14, 2 and the loss on rank 15. Megatron's
``--account-for-embedding-in-pipeline-split`` / ``...-loss-...`` are the layout ``E t..|...|..t L`` where
the embedding and the loss each fill a slot (Llama 3 405B: 126 layers at p 16 v 8 = 128 slots).

The model prices the rank with the most layers: the pipeline's pace (:func:`stage_layers`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Final, NamedTuple

from mlsysim.core.exceptions import InputError

SYMBOLS: Final = {"E": "embedding", "t": "transformer layer", "m": "multi-token-prediction layer", "L": "loss"}
"""The symbols of a layout, as Megatron-Core names them."""

LAYER_SYMBOLS: Final = ("t", "m")
"""The symbols that count as work on their stage: a decoder layer, and an MTP layer (DeepSeek-V3's MTP module:
one more transformer block, a projection and the shared output head, priced as w layers,
:mod:`mlsysim.physics.multi_token`; the model's FLOPs per sample, and so MFU, leave it out). The embedding and
the loss count as no layer: their FLOPs stay in the model's count as everywhere else (6 N with the output layer
spread over the layers)."""

STAGE_LAYERS_EQUATION: Final = "L_s = max over ranks r of sum over chunks c (t + w m in stage c p + r)"

_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_SYMBOL = re.compile(r"([EtmL])\*(\d+)")
_MAX_REPEAT = 100_000
_MAX_SYMBOLS = 1_000_000  # no real model holds more; bounds the expansion of nested repeats


class PipelineLayout(NamedTuple):
    """A parsed layout: each virtual stage's symbols, in order."""

    stages: tuple[str, ...]

    @property
    def layers(self) -> int:
        """Decoder layers (``t``) over all stages."""
        return sum(s.count("t") for s in self.stages)

    @property
    def mtp_layers(self) -> int:
        return sum(s.count("m") for s in self.stages)


@cache
def parse_pipeline_layout(text: str) -> PipelineLayout:
    """The stages of a layout text (the grammar of the module docstring), or an :class:`InputError` naming what
    is wrong: an unknown symbol, unbalanced parentheses, a repeat of 0, no ``|`` at all, the embedding not on
    the first stage or the loss not on the last."""
    if not isinstance(text, str):
        raise InputError(f"expected a layout text such as 'Et*3|(tt|)*29,m|L', got {text!r}")
    expanded = text.replace(",", "").replace(" ", "")
    for _ in range(64):  # inner groups first; a bounded number of nesting levels
        match = _GROUP.search(expanded)
        if match is None:
            break
        expanded = expanded[: match.start()] + _repeat(match.group(1), match.group(2), text) + expanded[match.end():]
        if len(expanded) > _MAX_SYMBOLS:
            raise InputError(f"the layout {text!r} expands to more than {_MAX_SYMBOLS} symbols")
    if len(expanded) + sum(int(m.group(2)) for m in _SYMBOL.finditer(expanded)) > _MAX_SYMBOLS:
        raise InputError(f"the layout {text!r} expands to more than {_MAX_SYMBOLS} symbols")
    expanded = _SYMBOL.sub(lambda m: _repeat(m.group(1), m.group(2), text), expanded)
    bad = sorted(set(expanded) - set(SYMBOLS) - {"|"})
    if bad:
        raise InputError(
            f"the layout {text!r}: {''.join(bad)!r} is not a layout symbol; expected E (embedding), t "
            "(transformer layer), m (MTP layer), L (loss), '|' between stages, x*N and (...)*N repeats, commas"
        )
    stages = tuple(expanded.split("|"))
    if len(stages) < 2:
        raise InputError(f"the layout {text!r} holds one stage; split the stages by '|'")
    if "E" in "".join(stages[1:]) or stages[0].count("E") > 1:
        raise InputError(f"the layout {text!r}: the embedding (E) goes once, on the first stage")
    if "L" in "".join(stages[:-1]) or stages[-1].count("L") > 1:
        raise InputError(f"the layout {text!r}: the loss (L) goes once, on the last stage")
    return PipelineLayout(stages)


def _repeat(run: str, times: str, text: str) -> str:
    n = int(times)
    if not 1 <= n <= _MAX_REPEAT:
        raise InputError(f"the layout {text!r}: a repeat takes 1 to {_MAX_REPEAT}, got {n}")
    if len(run) * n > _MAX_SYMBOLS:
        raise InputError(f"the layout {text!r} expands to more than {_MAX_SYMBOLS} symbols")
    return run * n


def stage_layers(layout: PipelineLayout, pipeline_parallel: int, mtp_weight: float = 1.0) -> float:
    """The layers of the rank that holds the most (the pipeline's pace):

        L_s = max_r sum_c (t + w m)[c p + r]

    virtual stage i on rank i mod p (Megatron-Core's order); an MTP layer counts as ``mtp_weight`` w layers
    (:func:`mlsysim.physics.multi_token.mtp_layer_weight`: its block, projection and output head)."""
    return max(rank_layers(layout, pipeline_parallel, mtp_weight))


def rank_layers(layout: PipelineLayout, pipeline_parallel: int, mtp_weight: float = 1.0) -> list[float]:
    """Each rank's layers, sum_c (t + w m)[c p + r], in rank order (:func:`stage_layers`)."""
    p = pipeline_parallel
    per_rank = [0.0] * p
    for i, stage in enumerate(layout.stages):
        per_rank[i % p] += stage.count("t") + mtp_weight * stage.count("m")
    return per_rank


def check_pipeline_layout(layout: PipelineLayout, text: str, layers: int, pipeline_parallel: int,
                          pipeline_chunks: int | None, mtp_layers: int = 0) -> int:
    """The chunks per rank v the layout implies, after its checks against the scenario: p v stages (v given, or
    derived as stages / p, a whole number), as many ``t`` as the workload's layers and ``m`` as its MTP modules
    (``mtp_layers``). Each failure is an :class:`InputError` naming the numbers and the fix."""
    n, p = len(layout.stages), pipeline_parallel
    if layout.layers != layers:
        raise InputError(f"the layout {text!r} holds {layout.layers} transformer layers (t); the workload has "
                         f"{layers}", field="pipeline_layout")
    if layout.mtp_layers != mtp_layers:
        raise InputError(f"the layout {text!r} holds {layout.mtp_layers} MTP layers (m); the workload has "
                         f"{mtp_layers} (workload.mtp_layers): give as many", field="pipeline_layout")
    if p < 2:
        raise InputError(f"the layout ({n} stages) needs a pipeline: give pipeline_parallel > 1 (a divisor "
                         f"of {n})", field="pipeline_layout")
    if n % p:
        raise InputError(f"the layout holds {n} stages, not a multiple of pipeline_parallel ({p}): each rank "
                         f"holds the same number of virtual stages", field="pipeline_layout")
    v = n // p
    if pipeline_chunks is not None and pipeline_chunks != v:
        raise InputError(f"the layout pipeline_layout holds {n} stages = pipeline_parallel {p} x {v}, but pipeline_chunks is "
                         f"{pipeline_chunks}; leave pipeline_chunks out (the layout sets it) or give {v}",
                         field="pipeline_chunks")
    return v
