"""Rules between inputs, written once for one layout and for a grid of layouts.

Each :class:`Rule` reads a few inputs, turns each value into a number or a
flag (``nodes`` -> 4, ``inter_bandwidth`` -> "not given"), and says where the
rule is broken with operators that work on Python scalars and numpy arrays
alike (``&``, ``>``). The scenario calls :func:`check_together` on its inputs;
a sweep or a plan evaluates the same ``broken`` on its axes, broadcast over
the grid, and reports how many layouts break it and one example
(:func:`mlsysim.planning.space.Space.check_rules`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mlsysim.core.exceptions import InputError


def _not_given(value: object) -> bool:
    return value is None


def _given(value: object) -> bool:
    return value is not None


def _positive_rate(value: object) -> object:
    """A failure rate that asks for failures to be priced: given and above zero."""
    if value is None:
        return False
    magnitude = getattr(value, "magnitude", value)
    return isinstance(magnitude, int | float) and magnitude > 0


def _needs(example: str) -> Callable[[Mapping[str, object]], str]:
    """The message of a failure rate given without what a failure costs."""

    def message(values: Mapping[str, object]) -> str:
        return f"required with failure_rate (it prices a failure): give e.g. {example}"

    return message


def _count(value: object) -> object:
    return value


@dataclass(frozen=True)
class Rule:
    """A rule between inputs.

    ``fields`` are the inputs read, ``reads`` turn each value into what
    ``broken`` takes (same order); ``broken`` returns True (or a boolean
    array) where the rule is broken. ``loc`` is the input the error is located
    at; ``message`` the error of one layout (from its values), ``phrase`` what
    a grid's broken layouts "have" (``"nodes > 1 and no inter_bandwidth"``).
    """

    fields: tuple[str, ...]
    reads: tuple[Callable[[object], object], ...]
    broken: Callable[..., Any]
    loc: str
    message: Callable[[Mapping[str, object]], str]
    phrase: str

    def is_broken(self, values: Mapping[str, object]) -> bool:
        """Whether one layout's checked ``values`` break this rule."""
        return bool(
            self.broken(*(read(values.get(f)) for f, read in zip(self.fields, self.reads, strict=True)))
        )


RULES: Final = (
    Rule(
        ("nodes", "inter_bandwidth"),
        (_count, _not_given),
        lambda nodes, missing: (nodes > 1) & missing,
        "inter_bandwidth",
        lambda v: (
            f"required when nodes > 1 (got nodes={v.get('nodes')} and no inter_bandwidth); "
            "give the inter-node link, e.g. inter_bandwidth=Q_(100, 'Gbps'), or a fabric "
            "(fabric=InfiniBand_NDR)"
        ),
        "nodes > 1 and no inter_bandwidth",
    ),
    Rule(
        ("optimizer", "optimizer_step_time"),
        (_given, _given),
        lambda optimizer, step: optimizer & step,
        "optimizer",
        lambda v: "give either optimizer (with memory_bandwidth) or optimizer_step_time, not both",
        "both optimizer and optimizer_step_time",
    ),
    Rule(
        ("optimizer", "memory_bandwidth"),
        (_given, _not_given),
        lambda optimizer, missing: optimizer & missing,
        "memory_bandwidth",
        lambda v: (
            f"required with optimizer={v.get('optimizer')!r} (its step's bytes move at the "
            "device's memory bandwidth); give e.g. memory_bandwidth=Q_(2.0, 'TB/s') or 'A100'"
        ),
        "an optimizer and no memory_bandwidth",
    ),
    *(
        Rule(
            ("failure_rate", needed),
            (_positive_rate, _not_given),
            lambda rate, missing: rate & missing,
            needed,
            _needs(example),
            f"a failure_rate and no {needed}",
        )
        for needed, example in (
            ("checkpoint_bandwidth", "checkpoint_bandwidth=Q_(2, 'GB/s') (per node)"),
            ("restart_time", "restart_time=Q_(10, 'min')"),
        )
    ),
)
"""Every rule between inputs, in the order they are checked."""


def check_together(values: Mapping[str, object]) -> None:
    """Raise an :class:`InputError` located at its input for the first rule ``values`` break."""
    for rule in RULES:
        if rule.is_broken(values):
            raise InputError(
                rule.message(values), loc=(rule.loc,), type="rule", ctx={"fields": rule.fields}
            )
