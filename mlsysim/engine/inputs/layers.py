"""The one precedence rule: later words win.

A scenario's inputs arrive in layers: the named scenario or the file, then
``variant(...)``, ``--set``, a sweep or plan axis, a change on the page. Each
layer is a mapping of inputs as the user gave them (checked values). The rule,
written here once and used by all of them:

1. values given in the newest layer win;
2. a *source* given in a newer layer (a preset: ``node``, ``fabric``,
   ``accelerator``; a derivation source: ``mfu``, ``training_tokens``,
   ``training_samples``, ``recompute``) replaces what older layers said for the
   inputs it fills: ``variant(fabric="InfiniBand_NDR")`` of a scenario that gave
   ``inter_bandwidth=10 Gbps`` gets NDR's bandwidth and latency;
3. an older source whose every input is now given or filled by a newer layer
   is dropped (a newer ``step_time`` replaces an older ``mfu``; a newer node
   with NICs replaces an older fabric);
4. inside one layer an explicit value wins over a preset
   (:func:`mlsysim.engine.inputs.derivation.resolve`).

``None`` given for an input clears it (it is then derived, or left out); it
fills nothing and replaces nothing.

:func:`overlay` folds a newer layer onto the flattened older ones; folding the
layers of a ``variant`` chain one by one gives the same inputs as folding them
at once (tested in ``tests/engine/test_layers.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from mlsysim.engine.inputs.presets import PRESETS, preset_fills

DERIVATION_FILLS: Final[Mapping[str, frozenset[str]]] = {
    "mfu": frozenset({"step_time"}),
    "training_tokens": frozenset({"training_time", "training_samples"}),
    "training_samples": frozenset({"training_time", "training_tokens"}),
    "recompute": frozenset({"activation_memory"}),
}
"""What each derivation source fills (or excludes: tokens and samples are either-or)."""

KEPT_SOURCES: Final = frozenset({"recompute"})
"""Sources never dropped by rule 3: a modeling choice of their own, not only a way to fill."""

_SOURCES: Final = frozenset(PRESETS) | frozenset(DERIVATION_FILLS)


def fills(name: str, value: object) -> frozenset[str]:
    """The inputs that input ``name`` with ``value`` fills (empty for a plain input or None)."""
    if value is None:
        return frozenset()
    if name in PRESETS:
        return preset_fills(name, value)
    return DERIVATION_FILLS.get(name, frozenset())


class Overlay(NamedTuple):
    """The inputs after a newer layer, and what the newer layer replaced.

    ``replaced`` maps an input of the older layers to the value it had, for
    each input the newer layer's sources took over (explain and ``run`` say
    "replacing 10 Gbps of the scenario").
    """

    given: dict[str, object]
    replaced: dict[str, object]


def overlay(older: Mapping[str, object], newer: Mapping[str, object]) -> Overlay:
    """``older`` (flattened layers) with the layer ``newer`` on top, by the rule above."""
    given = dict(older)
    replaced: dict[str, object] = {}
    if _SOURCES.isdisjoint(newer) and _SOURCES.isdisjoint(older):  # rule 1 alone (most variants)
        given.update(newer)
        return Overlay(given, replaced)
    stated = {name for name, value in newer.items() if value is not None}
    covered: set[str] = set()
    for name in _SOURCES.intersection(stated):
        covered |= fills(name, newer[name])
    for name in covered - newer.keys():
        old = given.pop(name, None)
        if old is not None:
            replaced[name] = old
    taken = covered | stated
    for name in _SOURCES.intersection(given):
        if name in newer or name in KEPT_SOURCES:
            continue
        filled = fills(name, given[name])
        if filled and filled <= taken:
            replaced[name] = given.pop(name)
    given.update(newer)
    return Overlay(given, replaced)
