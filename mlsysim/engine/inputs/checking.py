"""Normalise once, then trust: a layer of inputs checked, laid over the older ones, resolved.

:func:`checked_inputs` is the one door into the model for a scenario, its
``variant`` and ``solve``: each value given is checked by its field
(:mod:`mlsysim.engine.inputs.fields`), the layer is laid over the scenario's older
inputs by the precedence rule (:mod:`mlsysim.engine.inputs.layers`), presets and
derivations fill the rest (:mod:`mlsysim.engine.inputs.derivation`), and the rules
between inputs run (:mod:`mlsysim.engine.inputs.rules`). Every mistake of the layer
is reported at once, each located at its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple, cast

from mlsysim.core.exceptions import InputError
from mlsysim.core.suggest import known
from mlsysim.core.validation import input_error
from mlsysim.engine.inputs.derivation import (
    DERIVABLE,
    DERIVED_TARGETS,
    OPERATOR_NUMBERS,
    SOURCES,
    Job,
    operator_numbers,
    plain_job,
    resolve,
    wants_derivation,
)
from mlsysim.engine.inputs.fields import (
    DERIVED_FROM,
    FIELDS,
    LAYOUT_NUMBERS,
    Value,
    derived_numbers,
)
from mlsysim.engine.inputs.layers import overlay
from mlsysim.engine.inputs.presets import PRESETS, preset_fills
from mlsysim.engine.inputs.rules import check_together
from mlsysim.engine.inputs.workload_figures import SHAPE_NUMBERS
from mlsysim.engine.model.equations import NEUTRAL_INPUTS

DEFAULTS: Final[Mapping[str, Value]] = {
    f.name: None if f.required else cast(Value, f.default) for f in FIELDS.values()
}
"""Every input's default; None for a required one (reported missing unless given or derived)."""

_DEFAULT_NUMBERS: Final[dict[str, float]] = dict(NEUTRAL_INPUTS)
"""The model numbers of the defaults: every :class:`~mlsysim.engine.model.equations.Inputs` field,
in its order (so ``Inputs`` is built by position), at its field's default or neutral value."""
_DEFAULT_NUMBERS.update(
    (name, FIELDS[name].to_model(value))
    for name, value in DEFAULTS.items()
    if FIELDS[name].numeric and value is not None
)
_REQUIRED: Final = tuple(f.name for f in FIELDS.values() if f.required)
_NUMERIC: Final = frozenset(f.name for f in FIELDS.values() if f.numeric)
_ORDER: Final = {name: i for i, name in enumerate(FIELDS)}
_DERIVED_NUMBERS: Final = (
    "gradient_bytes", "parameters", "optimizer_bytes", "inter_transport", "input_pipeline", *SHAPE_NUMBERS,
    *LAYOUT_NUMBERS,
)

_MISSING_HINTS: Final = {
    "step_time": "; or give mfu with node= or accelerator= to derive it from FLOPs (a transformer on an "
    "accelerator with a fitted matrix-product ceiling derives it from its operators)",
    "training_time": "; or give training_tokens or training_samples to derive it",
    "devices_per_node": "; or give node= (e.g. DGX_H100)",
    "intra_bandwidth": "; or give node= (e.g. DGX_H100)",
}


class CheckedInputs(NamedTuple):
    """A scenario's inputs after :func:`checked_inputs`.

    ``values``: every input (given, default, filled or derived); ``numbers``:
    the model numbers of the numeric ones (canonical SI floats); ``job``: what
    was derived and from what; ``given``: the inputs as given, all layers
    folded by the precedence rule (the base a later ``variant`` lays its
    changes over).
    """

    values: dict[str, Value]
    numbers: dict[str, float]
    job: Job
    given: dict[str, Value]


def checked_inputs(
    data: Mapping[str, object],
    owner: str,
    *,
    older: CheckedInputs | None = None,
    rules: bool = True,
) -> CheckedInputs:
    """The layer ``data`` checked and laid over ``older`` (a scenario's checked inputs), or the defaults.

    ``older``'s numbers are reused for the inputs it gave and this layer keeps;
    the inputs it derived are derived again, unless this layer changes nothing
    the derivation reads (then its derived values and its :class:`Job` are
    kept: the same function of the same inputs). ``rules=False`` leaves the
    rules between inputs to the caller (a sweep checks them over its whole
    grid). Unknown names, missing required inputs and bad values are reported
    together, located at their fields.
    """
    errors: list[InputError] = []
    values = dict(DEFAULTS)
    replaced: Mapping[str, object] = {}
    if older is None:  # one layer: checked straight into the defaults
        numbers = dict(_DEFAULT_NUMBERS)
        given: dict[str, Value] = {}
        for name, value in data.items():
            if name not in FIELDS:
                errors.append(_unknown(name, value))
                continue
            try:
                checked, number = FIELDS[name].normalize(value)
            except InputError as exc:
                errors.append(exc.with_input(value))
                continue
            given[name] = checked
            if number is not None:
                numbers[name] = number
            elif name in _NUMERIC:  # a numeric input given as None: its default
                _reset(numbers, name)
        values.update(given)
        kept_job = None
    else:
        newer, newer_numbers, errors = _check_layer(data)
        layered = overlay(older.given, newer)
        given, replaced = cast("dict[str, Value]", layered.given), layered.replaced
        values.update(given)
        kept_job = older.job if not replaced and _keeps_derivation(data, values, older.job) else None
        numbers = dict(older.numbers)  # but for what this layer changes, replaces or derives again
        if kept_job is None:
            for name in older.job.origins:
                _reset(numbers, name)
        else:
            for name in kept_job.origins:
                values[name] = older.values[name]
        for name in replaced:
            _reset(numbers, name)
        for name, number in newer_numbers.items():
            if number is not None:
                numbers[name] = number
            elif name in _NUMERIC:  # a numeric input cleared (None): back to its default
                _reset(numbers, name)
    missing: list[str] = []
    for name in _REQUIRED:  # a plain loop: a comprehension is a call of its own in Python 3.11
        if values[name] is None:
            missing.append(name)
    if missing:
        errors += [_missing(name) for name in missing if name not in DERIVABLE and name not in data]
    if errors:
        errors.sort(key=lambda e: _ORDER.get(e.loc[0] if e.loc else "", 0))
        raise input_error(owner, errors)
    if kept_job is not None:
        job = kept_job
    elif wants_derivation(values):
        try:
            job = resolve(values, replaced, numbers)
            for name in job.origins:
                values[name], number = FIELDS[name].normalize(values[name])
                if number is not None:
                    numbers[name] = number
        except InputError as exc:
            raise exc.at(owner=owner) from None
    else:
        job = plain_job(values)
    if kept_job is None:  # the job's model FLOPs and peak: for a step from FLOPs and the achieved MFU
        numbers["flops_per_sample"] = job.flops_per_sample
        numbers["peak_flops"] = job.peak_flops
        numbers["activation_memory_per_sample"] = job.activation_memory_per_sample
        operated = operator_numbers(job)
        if operated:
            numbers.update(operated)
        else:  # a variant's new job may no longer price the step from the operators
            for name in OPERATOR_NUMBERS:
                numbers[name] = NEUTRAL_INPUTS[name]
    if missing:
        still_missing = [_missing(name) for name in missing if values[name] is None]
        if still_missing:  # nothing derived them
            raise input_error(owner, still_missing)
    if rules:
        try:
            check_together(values)
        except InputError as exc:
            raise exc.at(owner=owner) from None
    if older is None or not _DERIVED_FROM.isdisjoint(data):
        numbers.update(derived_numbers(values))
    else:
        older_numbers = older.numbers
        for name in _DERIVED_NUMBERS:
            numbers[name] = older_numbers[name]
    return CheckedInputs(values, numbers, job, given)


_DERIVED_FROM: Final = frozenset(DERIVED_FROM)

_DERIVATION_READS: Final = frozenset(
    {
        *PRESETS, *SOURCES, *DERIVABLE, *DERIVED_TARGETS, "workload", "per_device_batch", "recompute",
        "precision", "flash_attention", "memory_bandwidth", "matmul_format", "fused_elementwise", "assumptions",
        "power_limit", "cluster_file",
    }
)
"""The inputs :func:`~mlsysim.engine.inputs.derivation.resolve` reads (besides what the presets fill)."""


def _keeps_derivation(data: Mapping[str, object], values: Mapping[str, Value], job: Job) -> bool:
    """Whether the layer ``data`` leaves every input of the older scenario's derivation as it was.

    Then :func:`~mlsysim.engine.inputs.derivation.resolve` would derive the same values
    (a variant that changes ``nodes`` or a link keeps the activation memory).
    """
    for name in data:
        if name in _DERIVATION_READS or name in job.origins:
            return False
    for kind in PRESETS:
        entry = values[kind]
        if entry is not None and not preset_fills(kind, entry).isdisjoint(data):
            return False
    return True


def _reset(numbers: dict[str, float], name: str) -> None:
    """The number of ``name`` back to its default (nothing for an input without a number)."""
    default = _DEFAULT_NUMBERS.get(name)
    if default is not None:
        numbers[name] = default


def _check_layer(
    data: Mapping[str, object],
) -> tuple[dict[str, Value], dict[str, float | None], list[InputError]]:
    """Each value of a layer checked by its field: values, model numbers, and every error."""
    errors: list[InputError] = []
    values: dict[str, Value] = {}
    numbers: dict[str, float | None] = {}
    for name, value in data.items():
        f = FIELDS.get(name)
        if f is None:
            errors.append(_unknown(name, value))
            continue
        try:
            values[name], numbers[name] = f.normalize(value)
        except InputError as exc:
            errors.append(exc.with_input(value))
    return values, numbers, errors


def check_layer(data: Mapping[str, object], owner: str) -> dict[str, Value]:
    """The values of one layer, each checked by its field (every mistake reported at once)."""
    values, _, errors = _check_layer(data)
    if errors:
        errors.sort(key=lambda e: _ORDER.get(e.loc[0] if e.loc else "", 0))
        raise input_error(owner, errors)
    return values


def _unknown(name: str, value: object) -> InputError:
    return InputError(
        f"unknown field; {known(name, FIELDS)}", loc=(name,), input=value, type="extra_forbidden"
    )


def _missing(name: str) -> InputError:
    return InputError(
        "required field is missing" + _MISSING_HINTS.get(name, ""), loc=(name,), type="missing"
    )
