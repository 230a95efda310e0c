"""The fix a layout error suggests: values that obey every layout rule at once.

A message that names one broken rule and suggests values that fix only that rule
sends the reader in circles (GPT-2's 25 heads on 8 devices: tensor_parallel 5
breaks "t divides the devices", whose suggestion 2 breaks "heads divisible by
t", whose suggestion 25 breaks the first again). Here every suggested value is
tested against all the rules together, through the mask the caller passes
(:func:`~mlsysim.physics.layout.layout_mask`), so the advice follows the rules
as they are written, whichever they are:

1. values of the inputs the broken rule names, the others held (nearest first);
2. where none exists, values of any other layout input;
3. where no single change works, pairs of values of the first input and one other;
4. at last, the data-parallel layout (every size 1), when the rules accept it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np

ADJUSTABLE: Final = {
    "tensor_parallel": "tensor_parallel",
    "pipeline_parallel": "pipeline_parallel",
    "pipeline_chunks": "pipeline_chunks",
    "accumulation_steps": "micro_batches",
    "shard_group": "shard_group",
    "context_parallel": "context_parallel",
    "expert_parallel": "expert_parallel",
    "expert_tensor_parallel": "expert_tensor_parallel",
}
"""The layout inputs a suggestion may change: the scenario's name -> the mask's argument."""

SHOWN: Final = 4
"""Most values suggested for one input."""

MAX_CANDIDATES: Final = 1 << 20
"""Largest value tried for one input (a bound on the work, far above any real layout)."""

PAIR_RANGE: Final = 256
"""Largest value tried for each input of a pair."""

SHOWN_PAIRS: Final = 3
"""Most pairs suggested."""

Mask = Callable[..., Any]
"""The rules: keyword arguments (floats or arrays) -> True where a layout obeys them all."""


def _limit(layout: Mapping[str, int], argument: int) -> int:
    """The largest value tried for one input: every size of the layout, and twice the current."""
    sizes = [int(v) for v in layout.values()]
    return max(1, min(MAX_CANDIDATES, max([*sizes, 2 * argument, 2 * int(layout.get("micro_batches", 1))])))


def _accepted(mask: Mask, layout: Mapping[str, int], changes: Mapping[str, np.ndarray]) -> np.ndarray:
    arguments: dict[str, float | np.ndarray] = {k: float(v) for k, v in layout.items()}
    arguments.update({ADJUSTABLE[name]: values.astype(float) for name, values in changes.items()})
    shape = np.broadcast_shapes(*(v.shape for v in changes.values()))
    return np.broadcast_to(np.asarray(mask(**arguments), dtype=bool), shape)


def valid_values(mask: Mask, layout: Mapping[str, int], name: str, *, shown: int = SHOWN) -> list[int]:
    """Up to ``shown`` values of input ``name`` (nearest its current value first, then the
    smaller) with which ``layout`` (the mask's arguments) obeys every rule; sorted.

    >>> from mlsysim.physics.layout import layout_mask
    >>> gpt2 = dict(devices=8, tensor_parallel=5, pipeline_parallel=1, heads=25, layers=48,
    ...             micro_batches=1, pipeline_chunks=1, shard_group=0)
    >>> valid_values(layout_mask, gpt2, "tensor_parallel")  # 25 heads, 8 devices
    [1]
    >>> valid_values(layout_mask, {**gpt2, "devices": 40, "tensor_parallel": 2}, "tensor_parallel")
    [1, 5]
    """
    current = int(layout[ADJUSTABLE[name]])
    candidates = np.arange(1, _limit(layout, current) + 1)
    ok = candidates[_accepted(mask, layout, {name: candidates})]
    nearest = sorted(ok.tolist(), key=lambda k: (abs(k - current), k))[:shown]
    return sorted(int(k) for k in nearest if k != current)


def valid_pairs(
    mask: Mask, layout: Mapping[str, int], first: str, second: str, *, shown: int = SHOWN
) -> list[tuple[int, int]]:
    """Up to ``shown`` pairs of values of ``first`` and ``second`` with which ``layout`` obeys
    every rule, those changing the current values least first."""
    a = np.arange(1, min(PAIR_RANGE, _limit(layout, int(layout[ADJUSTABLE[first]]))) + 1)[:, None]
    b = np.arange(1, min(PAIR_RANGE, _limit(layout, int(layout[ADJUSTABLE[second]]))) + 1)[None, :]
    ok = _accepted(mask, layout, {first: a, second: b})
    i, j = np.nonzero(ok)
    now_a, now_b = layout[ADJUSTABLE[first]], layout[ADJUSTABLE[second]]
    pairs = [(int(a[x, 0]), int(b[0, y])) for x, y in zip(i, j, strict=True)]
    return sorted(pairs, key=lambda p: (abs(np.log(p[0] / max(now_a, 1))) + abs(np.log(p[1] / max(now_b, 1))), p))[:shown]


def _values(name: str, values: list[int]) -> str:
    return f"{name} {values[0]}" if len(values) == 1 else f"{name} in {', '.join(map(str, values))}"


def suggestions(mask: Mask, layout: Mapping[str, int], names: tuple[str, ...]) -> list[dict[str, int]]:
    """Every change the advice suggests, each as ``{input: value}``: each obeys every rule.

    ``names`` are the inputs of the broken rule (the first is the one the error is located at).
    """
    found = [{name: v} for name in names for v in valid_values(mask, layout, name)]
    if found:
        return found
    others = [name for name in ADJUSTABLE if name not in names and ADJUSTABLE[name] in layout]
    found = [{name: v} for name in others for v in valid_values(mask, layout, name)]
    if found:
        return found
    for other in [*names[1:], *others]:
        pairs = valid_pairs(mask, layout, names[0], other, shown=SHOWN_PAIRS)
        if pairs:
            return [{names[0]: x, other: y} for x, y in pairs]
    plain = {name: 1 for name in ADJUSTABLE if name != "accumulation_steps" and ADJUSTABLE[name] in layout}
    if not layout.get("shard_group"):
        plain.pop("shard_group", None)
    ones = {name: np.asarray([v]) for name, v in plain.items()}
    return [plain] if plain and bool(_accepted(mask, layout, ones)[0]) else []


def advice(mask: Mask, layout: Mapping[str, int], names: tuple[str, ...]) -> str:
    """The suggestions of :func:`suggestions` in words: ``"try tensor_parallel in 1, 5"``.

    >>> from mlsysim.physics.layout import layout_mask
    >>> gpt2 = dict(devices=8, tensor_parallel=2, pipeline_parallel=1, heads=25, layers=48,
    ...             micro_batches=1, pipeline_chunks=1, shard_group=0)
    >>> advice(layout_mask, gpt2, ("tensor_parallel",))
    'try tensor_parallel 1'
    """
    found = suggestions(mask, layout, names)
    if not found:
        return "no layout near this one obeys every rule"
    if len(found[0]) > 1:
        shown = (" with ".join(f"{name} {value}" for name, value in s.items()) for s in found)
        return "no single change obeys every rule; try " + ", or ".join(shown)
    by_name: dict[str, list[int]] = {}
    for s in found:
        ((name, value),) = s.items()
        by_name.setdefault(name, []).append(value)
    return "try " + " or ".join(_values(name, values) for name, values in by_name.items())


__all__ = ["ADJUSTABLE", "advice", "suggestions", "valid_pairs", "valid_values"]
