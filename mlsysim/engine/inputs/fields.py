"""The scenario's inputs, each declared once.

Every input of :class:`~mlsysim.TrainingScenario` is one
:class:`InputField` in :data:`FIELDS`: its kind, default, the canonical SI unit
it is computed in, the label and unit it is shown in, how text parses into it,
and how it enters the model (a numeric attribute of
:class:`~mlsysim.engine.model.equations.Inputs` of the same name, or a categorical
choice that selects one model evaluation per value). Everything else reads
this table: the scenario class (its pydantic fields), the solver, ``--set``,
scenario files, sweep axes, explain's input section and the JSON schema.

Adding an input is one entry here, plus its physics (an ``Inputs`` attribute of
the same name and the equations that use it).

Two doors lead in, and both end in the same check:

* :func:`check` takes a Python value (``Q_(100, "Gbps")``, a registry entry, or
  a text for the fields whose text cannot be mistaken for a number:
  ``"100 Gbps"``, ``"H100"``, ``"InfiniBand_NDR"``);
* :func:`from_text` takes text from the command line, a scenario file or a URL
  (``"4"`` for a count, ``"none"`` to clear an optional input).

Errors are :class:`~mlsysim.core.exceptions.InputError` located at the field
(``exc.loc == ("nodes",)``) with a bare message.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias, cast

from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.core.suggest import example, known, setting
from mlsysim.core.text import parse_bool, parse_float, parse_int, parse_name
from mlsysim.core.units import (
    FACTORS,
    KINDS,
    PHYSICAL_RANGE,
    Quantity,
    nonnegative_canonical,
    parse_quantity,
    positive_canonical,
    quantity,
    to_canonical,
)
from mlsysim.core.validation import (
    MAX_INT,
    check_nonnegative_int,
    check_nonnegative_quantity,
    check_positive_int,
    check_positive_quantity,
    describe,
)
from mlsysim.engine.inputs.assumptions import Assumptions, assumptions_of
from mlsysim.engine.inputs.input_kinds import InputKind, kind_of
from mlsysim.engine.inputs.presets import CHECKS as PRESET_CHECKS
from mlsysim.engine.inputs.presets import fabric_named
from mlsysim.engine.inputs.workload_figures import (
    check_mfu,
    parse_mfu,
    shape_numbers,
    workload_facts,
)
from mlsysim.models.types import Workload, workload_of
from mlsysim.physics.activations import RECOMPUTE_MODES, check_recompute
from mlsysim.physics.collectives import TRANSPORT_EFFICIENCY
from mlsysim.physics.energy import MAX_PUE
from mlsysim.physics.matmul import MATMUL_FORMATS, check_matmul_format
from mlsysim.physics.optimizer import OPTIMIZER_BYTES_PER_PARAMETER
from mlsysim.physics.precision import BYTES_PER_ELEMENT, check_precision
from mlsysim.physics.synchronization import INPUT_PIPELINE_JITTER

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator, Fabric, Node

Preset: TypeAlias = "Node | Fabric | Accelerator"
"""A registry entry that fills other inputs (``node``, ``fabric``, ``accelerator``)."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()
"""The default of an input that must be given."""

Value: TypeAlias = "Workload | Assumptions | Quantity | str | int | float | Preset | None"
"""A checked input value: what a scenario holds in a field."""

NONE_WORDS = ("none", "null")
"""Text that clears an optional input."""


@dataclass(frozen=True, slots=True)
class InputField:
    """One scenario input.

    ``check`` normalises a Python value (raising :class:`InputError` with a bare
    message); ``parse`` turns text into a Python value for ``check``.
    ``dimension`` names a unit kind of :data:`mlsysim.core.units.KINDS`;
    ``canonical`` turns a checked value into the float the model computes with
    (numeric inputs only). ``display_unit`` is the unit a person reads it in.
    """

    name: str
    label: str
    kind: str  # "count", "index", "quantity", "number", "factor", "choice", "workload", "assumptions", "preset", "text"
    check: Callable[[object], Value]
    parse: Callable[[str], object]
    default: Value | _Required = REQUIRED
    optional: bool = False
    dimension: str | None = None
    display_unit: str | None = None
    symbol: str | None = None
    numeric: bool = False
    seed: bool = False
    canonical: Callable[[Value], float] | None = None
    choices: tuple[str | int, ...] = ()
    checked_canonical: Callable[[Quantity], float] | None = None
    """For quantities: check and convert a Quantity in one step (the fast path of :meth:`normalize`)."""
    group: str = "scenario"
    """The input group (a key of :data:`GROUPS`): workload, cluster, layout, assumptions."""
    _factors: Mapping[object, float] = dataclasses.field(
        init=False, repr=False, compare=False, default_factory=dict
    )
    _low: float = dataclasses.field(init=False, repr=False, compare=False, default=math.inf)
    _high: float = dataclasses.field(init=False, repr=False, compare=False, default=-math.inf)
    _last: tuple[object, float] = dataclasses.field(
        init=False, repr=False, compare=False, default=(None, math.nan)
    )
    """The units last converted and their factor: pint hands out one units object per unit,
    so a run of inputs in the same unit is matched by identity (no hash of the units). The
    tuple keeps the object alive, so its identity stays its own."""

    def __post_init__(self) -> None:
        # the fast path of normalize: the unit factors to_canonical caches for this dimension
        # and the physical range (an empty range sends every value to the full check)
        if self.dimension is not None and self.checked_canonical is not None:
            object.__setattr__(self, "_factors", FACTORS[self.dimension])
            low, high, _ = PHYSICAL_RANGE.get(self.dimension, (0.0, math.inf, ""))
            object.__setattr__(self, "_low", low)
            object.__setattr__(self, "_high", high)

    @property
    def kinds(self) -> InputKind:
        """The kind of value it takes, as an object (:mod:`mlsysim.engine.inputs.input_kinds`)."""
        return kind_of(self)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def categorical(self) -> bool:
        """Selects one model evaluation per value (workload, precision, assumptions, ZeRO stage)."""
        return not self.numeric and self.kind != "text"

    def validate(self, value: object) -> Value:
        """The checked value of a Python value, or an :class:`InputError` located at this field."""
        if value is None and (self.optional or self.kind == "text"):
            return None
        try:
            return self.check(value)
        except InputError as exc:
            raise exc.at(self.name) from None
        except UnknownNameError as exc:
            raise InputError(str(exc), loc=(self.name,)) from None

    def from_text(self, text: str) -> Value:
        """The checked value of ``text`` as typed on the command line or in a file."""
        if self.optional and text.strip().lower() in NONE_WORDS:
            return None
        try:
            value = self.parse(text)
        except InputError as exc:
            raise exc.at(self.name) from None
        except UnknownNameError as exc:
            raise InputError(str(exc), loc=(self.name,)) from None
        return self.validate(value)

    def normalize(self, value: object) -> tuple[Value, float | None]:
        """``(checked value, model number)``: :meth:`validate` and :meth:`to_model` in one pass.

        The number is None for an input that is not numeric or not given.
        """
        kind = type(value)
        # (no typing.cast on this path: it is a function call, ~10 per solve)
        if kind is Quantity and self.checked_canonical is not None:
            q: Quantity = value  # type: ignore[assignment]
            magnitude = q._magnitude
            if type(magnitude) is float or (type(magnitude) is int and -MAX_INT <= magnitude <= MAX_INT):
                units, last = self._last
                factor: float | None = last
                if q._units is not units:
                    factor = self._factors.get(q._units)  # to_canonical's cache, read directly
                    if factor is not None:
                        object.__setattr__(self, "_last", (q._units, factor))
                if factor is not None:
                    x = magnitude * factor
                    if self._low <= x <= self._high:
                        return q, x
            try:  # a unit seen for the first time, or a value outside the physical range
                return q, self.checked_canonical(q)
            except InputError as exc:
                raise exc.at(self.name) from None
        if kind is int and self.kind == "count" and 0 < value <= MAX_INT:  # type: ignore[operator]
            return value, float(value)  # type: ignore[arg-type, return-value]
        checked = self.validate(value)
        if checked is None or not self.numeric:
            return checked, None
        return checked, self.to_model(checked)

    def to_model(self, value: Value) -> float:
        """The float the model computes with: the canonical value, or the neutral one when None."""
        if value is None:
            return _neutral(self.name)
        assert self.canonical is not None, f"{self.name} is not a numeric input"
        return self.canonical(value)


# -- parsers and checks, by kind ---------------------------------------------------------


def _count_number(value: Value) -> float:
    """The model number of a checked count."""
    return float(cast(int, value))


def _quantity_check(dimension: str, *, allow_zero: bool) -> Callable[[object], Value]:
    bounded = check_nonnegative_quantity if allow_zero else check_positive_quantity
    inner = bounded(dimension)

    def check(value: object) -> Value:
        if isinstance(value, str):
            value = parse_quantity(value, dimension)
        checked: Quantity = inner(value)
        return checked

    return check


def _quantity_parse(dimension: str) -> Callable[[str], object]:
    return lambda text: parse_quantity(text, dimension)


def _canonical(dimension: str) -> Callable[[Value], float]:
    return lambda value: to_canonical(value, dimension)


def _link(dimension: str, name: str, *, allow_zero: bool) -> tuple[Callable, Callable]:
    """Check and parse of a link figure: a Quantity or its text, never a fabric's name.

    A fabric stands for several figures (bandwidth and latency), so it is given
    as ``fabric=`` (the link between nodes) or through a ``node=``; named here it
    is an error that says so, instead of a bandwidth without its latency.
    """
    quantity_check = _quantity_check(dimension, allow_zero=allow_zero)

    def refuse_fabric(value: object) -> None:
        from mlsysim.hardware.types import Fabric

        fabric = value if isinstance(value, Fabric) else None
        if isinstance(value, str):
            fabric = fabric_named(value.strip().removeprefix("Fabrics."))
        if fabric is None:
            return
        label = _registry_key(value, fabric)
        if name.startswith("inter"):
            hint = f"give it as {setting('fabric', label)} (it sets inter_bandwidth and inter_latency)"
        else:
            hint = f"give the figure itself, or the node that has it ({setting('node', 'DGX_H100')})"
        raise InputError(f"{label} is a fabric, not a {dimension}: {hint}")

    def parse(text: str) -> Quantity:
        refuse_fabric(text)
        return parse_quantity(text, dimension)

    def check(value: object) -> Value:
        refuse_fabric(value)
        if isinstance(value, str):
            value = parse(value)
        return quantity_check(value)

    return check, parse


def _registry_key(value: object, fabric: object) -> str:
    from mlsysim.engine.inputs.presets import preset_name

    if isinstance(value, str):
        return value.strip().removeprefix("Fabrics.")
    return preset_name("fabric", fabric)


def _accelerator_or(
    dimension: str, figure: Callable[[Accelerator], Quantity], name: Callable[[str], str]
) -> tuple[Callable[[object], Value], Callable[[str], object]]:
    """Check and parse of an input that is a Quantity of ``dimension`` or an accelerator, by entry or
    by name (``name`` reads it from the text), whose ``figure`` is taken."""

    def parse(text: str) -> object:
        from mlsysim.hardware.registry import Hardware

        try:
            return Hardware.get(name(text))
        except UnknownNameError:
            return parse_quantity(text, dimension)

    def check(value: object) -> Value:
        from mlsysim.hardware.types import Accelerator

        if isinstance(value, str):
            value = parse(value)
        if isinstance(value, Accelerator):
            return figure(value)
        return check_positive_quantity(dimension)(value)

    return check, parse


def _workload(value: object) -> Workload:
    if isinstance(value, Workload):
        return value
    if isinstance(value, str):
        value = _workload_named(value)
    return workload_of(value)


def _workload_named(text: str) -> Workload:
    from mlsysim.models.registry import Models

    return Models.get(parse_name(text))


def _assumptions(value: object) -> Assumptions:
    return assumptions_of(value)


def _assumptions_text(text: str) -> object:
    return text


def _optimizer(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in OPTIMIZER_BYTES_PER_PARAMETER:
        return value.strip().lower()
    raise InputError(f"expected one of {', '.join(OPTIMIZER_BYTES_PER_PARAMETER)}, got {value!r}")


def _input_pipeline(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in INPUT_PIPELINE_JITTER:
        return value.strip().lower()
    raise InputError(f"expected one of {', '.join(INPUT_PIPELINE_JITTER)}, got {value!r}")


def _transport(value: object) -> str:
    if isinstance(value, str) and value.strip().lower() in TRANSPORT_EFFICIENCY:
        return value.strip().lower()
    raise InputError(f"expected one of {', '.join(TRANSPORT_EFFICIENCY)}, got {value!r}")


ZERO_STAGES: Final = (0, 1, 2, 3)


def _zero_stage(value: object) -> int:
    stage = check_nonnegative_int(value)
    if stage not in ZERO_STAGES:
        raise InputError(f"expected a ZeRO stage in {ZERO_STAGES}, got {value!r}")
    return stage


def _flag(value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    raise InputError(f"expected True or False (or 1/0), got {describe(value)}")


def _parse_flag(text: str) -> int:
    """A flag typed as text: true/false, yes/no, on/off or 1/0 (:func:`~mlsysim.core.text.parse_bool`)."""
    return int(parse_bool(text))


def _switch(name: str, label: str) -> InputField:
    """An optional on/off input of the layout (1 on, 0 off, or true/false words; None: its default)."""
    return InputField(
        name, label, "index", _flag, _parse_flag, default=None, optional=True, numeric=True,
        canonical=_count_number, choices=(0, 1),
    )


def _choice(
    name: str,
    label: str,
    check: Callable[[object], Value],
    choices: tuple[str, ...],
    *,
    default: str | None = None,
    seed: bool = False,
) -> InputField:
    """An input that takes one of ``choices`` (its text stripped); optional where the default is None."""
    return InputField(
        name, label, "choice", check, _stripped, default=default, optional=default is None, seed=seed,
        choices=choices,
    )


def _stripped(text: str) -> str:
    return text.strip()


def _layout_count(name: str, label: str, symbol: str) -> InputField:
    """A count of a parallel layout: optional, and the layout model's switch when given."""
    return InputField(
        name, label, "count", check_positive_int, parse_int, default=None, optional=True,
        symbol=symbol, numeric=True, canonical=_count_number,
    )


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    raise InputError(f"expected a text, got {value!r} ({type(value).__name__})")


def _pipeline_layout(value: object) -> str:
    """A pipeline layout text, its grammar checked (:func:`~mlsysim.physics.pipeline_layout.parse_pipeline_layout`;
    the layers and ranks it must match are checked with the scenario's layout)."""
    from mlsysim.physics.pipeline_layout import parse_pipeline_layout

    text = _text(value).strip()
    parse_pipeline_layout(text)
    return text


def _recompute_modules(value: object) -> str:
    """Megatron-Core module names, comma-separated (``core_attn, mlp``), in :data:`RECOMPUTE_MODULES`' order
    without repeats; a module the activation model cannot price yet is refused with the reason."""
    from mlsysim.physics.activations import RECOMPUTE_MODULES, UNPRICED_MODULES

    names = [n.strip().lower() for n in _text(value).replace(" ", ",").split(",") if n.strip()]
    if not names:
        raise InputError(f"expected one or more of {', '.join(RECOMPUTE_MODULES)}, comma-separated; got {value!r}")
    for name in names:
        if name in UNPRICED_MODULES:
            raise InputError(
                f"{name} ({UNPRICED_MODULES[name]}) is not priced yet: the activation model counts a GPT block's "
                f"tensors (Korthikanti et al. 2022), none of its own; give {', '.join(RECOMPUTE_MODULES)}")
        if name not in RECOMPUTE_MODULES:
            raise InputError(f"unknown module {name!r}; expected {', '.join(RECOMPUTE_MODULES)} (Megatron-Core's "
                             "--recompute-modules names)")
    return ",".join(m for m in RECOMPUTE_MODULES if m in names)


def recompute_modules_code(text: str | None) -> float:
    """The modules of a ``recompute_modules`` text as one number: the sum of 2^i over the modules given (i their
    index in :data:`~mlsysim.physics.activations.RECOMPUTE_MODULES`); NaN: none given."""
    from mlsysim.physics.activations import RECOMPUTE_MODULES

    if text is None:
        return math.nan
    return float(sum(2 ** i for i, m in enumerate(RECOMPUTE_MODULES) if m in text.split(",")))


def _cluster_file(value: object) -> str:
    """A cluster file's path (``~`` expanded), checked: the file exists and is one (its fits parse)."""
    from mlsysim.kernels.cluster import read_cluster_file

    path = os.path.expanduser(_text(value).strip())
    if not path:
        raise InputError("expected the path of a cluster file (mlsysim calibrate kernels FILE --out cluster.json)")
    try:
        read_cluster_file(path)
    except InputError as exc:
        raise InputError(exc.message) from None
    return path


def _count(
    name: str,
    label: str,
    symbol: str | None,
    *,
    default: Value | _Required = REQUIRED,
    seed: bool = True,
) -> InputField:
    return InputField(
        name,
        label,
        "count",
        check_positive_int,
        parse_int,
        default=default,
        symbol=symbol,
        numeric=True,
        seed=seed,
        canonical=_count_number,
    )


def _quantity(
    name: str,
    label: str,
    dimension: str,
    display_unit: str,
    symbol: str | None,
    *,
    default: Value | _Required = REQUIRED,
    optional: bool = False,
    allow_zero: bool = False,
    seed: bool = True,
    link: bool = False,
) -> InputField:
    if link:
        check, parse = _link(dimension, name, allow_zero=allow_zero)
    else:
        check = _quantity_check(dimension, allow_zero=allow_zero)
        parse = _quantity_parse(dimension)
    convert = nonnegative_canonical if allow_zero else positive_canonical
    return InputField(
        name,
        label,
        "quantity",
        check,
        parse,
        default=default,
        optional=optional,
        dimension=dimension,
        display_unit=display_unit,
        symbol=symbol,
        numeric=True,
        seed=seed,
        canonical=_canonical(dimension),
        checked_canonical=lambda value: convert(value, dimension),
    )


def _opt_in_quantity(
    name: str, label: str, dimension: str, display_unit: str, symbol: str | None, *, allow_zero: bool = False,
    link: bool = False,
) -> InputField:
    """A quantity of the opt-in model: optional, None (not modeled) by default, not a seed input."""
    return _quantity(
        name, label, dimension, display_unit, symbol, default=None, optional=True, allow_zero=allow_zero, seed=False,
        link=link,
    )


def _derivable(f: InputField) -> InputField:
    """A required input that a preset or a derivation may supply (:mod:`mlsysim.engine.inputs.derivation`).

    It may be left out or cleared (None, ``none`` on the command line); the
    scenario reports it missing only when nothing derives it.
    """
    return dataclasses.replace(f, optional=True)


def _fraction_number(value: Value) -> float:
    """The model number of a checked fraction (``mfu``): the float itself."""
    return float(cast(float, value))


COUNT_UNITS: Final = {"tokens": "token", "samples": "sample"}
"""The unit of a count that a bare number means (``training_tokens=1e12`` is 1e12 tokens)."""


def _counted(f: InputField) -> InputField:
    """``f``, a count of tokens or samples, also given as a bare number of them (typed ``1e12`` or passed as
    ``1e12``): a count has one unit, so a number without it cannot mean anything else."""
    unit = COUNT_UNITS[cast(str, f.dimension)]
    check, parse = f.check, f.parse

    def bare(value: object) -> object:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return quantity(value, unit)
        return value

    def counted_parse(text: str) -> object:
        try:
            return bare(parse_float(text))
        except InputError:
            return parse(text)

    return dataclasses.replace(f, check=lambda value: check(bare(value)), parse=counted_parse)


def _preset(name: str, label: str) -> InputField:
    """A registry entry that fills other inputs (:mod:`mlsysim.engine.inputs.presets`), given as itself or by name."""
    check = cast("Callable[[object], Value]", PRESET_CHECKS[name])
    return InputField(
        name, label, "preset", check, _stripped, default=None, optional=True
    )


# -- the whole run: inputs a registry entry may stand for ------------------------------------



def _pue(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1.0 <= value <= MAX_PUE:
        raise InputError(f"expected a number from 1 to {MAX_PUE:g}, got {value!r}")
    return float(value)


def _failure_rate_kind(value: object) -> str:
    """``"failure_rate"`` for a rate per device (failures/device/hour), ``"event_rate"`` for a
    rate of a whole job (interruptions/day: with ``failure_rate_devices``); else an error."""
    if isinstance(value, Quantity):
        dimensionality = value.dimensionality
        for kind in ("failure_rate", "event_rate"):
            if KINDS[kind][0].dimensionality == dimensionality:
                return kind
        got = "a dimensionless number" if value.dimensionless else f"units of {value.units:~P}"
    else:
        got = f"{value!r} without units"
    raise InputError(
        f"expected a failure rate per device ({example('2e-5', 'failures/device/hour')}) or a "
        f"whole job's rate with failure_rate_devices ({example('8.6', 'interruptions/day')}), "
        f"got {got}"
    )


def _failure_rate_field(f: InputField) -> InputField:
    """The failure rate: per device, or of a whole job of ``failure_rate_devices`` devices.

    Both are rates in canonical units (per device-second, per second); the job's is
    divided by its devices where the model uses it (:mod:`mlsysim.engine.model.equations`),
    and a job's rate without its devices is refused (:mod:`mlsysim.engine.inputs.rules`).
    """

    def check(value: object) -> Value:
        if isinstance(value, str):
            value = parse_quantity(value)
        checked: Quantity = check_nonnegative_quantity(_failure_rate_kind(value))(value)
        return checked

    def canonical(value: Value) -> float:
        return nonnegative_canonical(value, _failure_rate_kind(value))

    return dataclasses.replace(
        f, check=check, parse=parse_quantity, canonical=canonical, checked_canonical=canonical
    )


def _failure_rate_entry(value: object) -> object:
    """A run of ``Infrastructure.Reliability`` (or its name) as a rate per device-hour, else None.

    A rate per node-hour is divided by the entry's devices per node.
    """
    from mlsysim.hardware.registry import Infrastructure
    from mlsysim.hardware.types import FailureRate

    if isinstance(value, str):
        try:
            value = Infrastructure.Reliability.get(parse_name(value).split(".")[-1])
        except UnknownNameError:
            return None
    if not isinstance(value, FailureRate):
        return None
    per_device = value.rate if value.per == "device" else value.rate / value.devices_per_node
    return per_device / quantity(1, "device")


def _device_power_entry(value: object) -> object:
    """An accelerator (or its name) as its datasheet TDP, else None."""
    from mlsysim.hardware.registry import Hardware
    from mlsysim.hardware.types import Accelerator

    if isinstance(value, str):
        try:
            value = Hardware.get(parse_name(value))
        except UnknownNameError:
            return None
    if not isinstance(value, Accelerator):
        return None
    if value.power is None:
        raise InputError(f"{value.name} has no power in the registry; give device_power in W")
    return value.power.tdp


def _grid_entry(value: object) -> object:
    """A grid of ``Infrastructure.Grid`` (or its name) as its carbon intensity, else None."""
    from mlsysim.hardware.registry import Infrastructure
    from mlsysim.hardware.types import GridIntensity

    if isinstance(value, str):
        try:
            value = Infrastructure.Grid.get(parse_name(value).split(".")[-1])
        except UnknownNameError:
            return None
    return value.intensity if isinstance(value, GridIntensity) else None


def _registry_quantity(f: InputField, entry: Callable[[object], object]) -> InputField:
    """``f``, also given as a registry entry or its name (``entry`` maps it to a Quantity, or None)."""
    check, parse = f.check, f.parse

    def registry_check(value: object) -> Value:
        if not isinstance(value, Quantity):
            found = entry(value)
            if found is not None:
                value = found
        return check(value)

    def registry_parse(text: str) -> object:
        found = entry(text)
        return found if found is not None else parse(text)

    return dataclasses.replace(f, check=registry_check, parse=registry_parse)


# -- the table ---------------------------------------------------------------------------

GROUPS: Final[Mapping[str, str]] = {
    "workload": "Workload",
    "cluster": "Cluster",
    "layout": "Execution layout",
    "assumptions": "Model assumptions",
    "scenario": "Scenario",
}
"""The groups of inputs as the domain is (after Calculon's split into application,
execution and system), each with its title: the workload (the model, its data, the job's
size and a one-device profile); the cluster (node, devices, nodes, links, fabric, NICs,
memory, prices); the execution layout (batch, accumulation, precision, recompute,
sharding); the modeling assumptions; and the scenario's name and description."""


def _in(group: str, f: InputField) -> InputField:
    """``f`` in the input group ``group`` (a key of :data:`GROUPS`)."""
    return dataclasses.replace(f, group=group)


_TABLE: tuple[InputField, ...] = (
    _in(
        "workload",
        InputField(
            "workload",
            "the model trained",
            "workload",
            _workload,
            _workload_named,
            seed=True,
        ),
    ),
    _in(
        "layout",
        _choice(
            "precision",
            "number format of the gradients",
            check_precision,
            tuple(BYTES_PER_ELEMENT),
            default="fp16",
            seed=True,
        ),
    ),
    _in(
        "workload",
        _derivable(_quantity("step_time", "one device, one local step", "time", "s", "T1")),
    ),
    _in(
        "workload",
        _derivable(
            _quantity("training_time", "one device, the whole run", "time", "hour", "T_train")
        ),
    ),
    _in("layout", _count("per_device_batch", "samples per device per step", "b")),
    _in("cluster", _derivable(_count("devices_per_node", "devices in each node", "d"))),
    _in("cluster", _count("nodes", "nodes", "N", default=1)),
    _in(
        "cluster",
        _derivable(
            _quantity(
                "intra_bandwidth",
                "link inside a node, per direction",
                "bandwidth",
                "GB/s",
                "B_intra",
                link=True,
            )
        ),
    ),
    _in(
        "cluster",
        _quantity(
            "inter_bandwidth",
            "link between nodes, per direction (a fabric comes through fabric=)",
            "bandwidth",
            "Gbps",
            "B_inter",
            default=None,
            optional=True,
            link=True,
        ),
    ),
    _in("layout", _count("accumulation_steps", "micro-steps per optimizer update", "A", default=1)),
    _in(
        "cluster",
        _quantity(
            "node_hour_rate",
            "price of one node for one hour",
            "money_rate",
            "USD/hour",
            None,
            default=None,
            optional=True,
        ),
    ),
    _in(
        "cluster",
        InputField(
            "nics_per_node",
            "inter-node NICs per node (None: one link of inter_bandwidth)",
            "count",
            check_positive_int,
            parse_int,
            default=None,
            optional=True,
            symbol="k",
            numeric=True,
            canonical=_count_number,
        ),
    ),
    _in(
        "cluster",
        InputField(
            "scale_up_domain",
            "devices of one NVLink (scale-up) domain, when larger than a node: an NVL72 rack (None: the node)",
            "count",
            check_positive_int,
            parse_int,
            default=None,
            optional=True,
            symbol="D",
            numeric=True,
            canonical=_count_number,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "intra_latency",
            "startup time of one ring step inside a node",
            "time",
            "us",
            "alpha_intra",
            allow_zero=True,
            link=True,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "inter_latency",
            "startup time of one ring step between nodes",
            "time",
            "us",
            "alpha_inter",
            allow_zero=True,
            link=True,
        ),
    ),
    _in(
        "assumptions",
        InputField(
            "assumptions",
            "modeling choices (seed or realistic, or their values)",
            "assumptions",
            _assumptions,
            _assumptions_text,
            default=Assumptions(),
        ),
    ),
    _in(
        "cluster",
        InputField(
            "device_memory",
            "memory of one device (a size or an accelerator)",
            "quantity",
            *_accelerator_or("data", lambda a: a.memory.capacity, parse_name),
            default=None,
            optional=True,
            dimension="data",
            display_unit="GB",
            numeric=True,
            canonical=_canonical("data"),
        ),
    ),
    _in(
        "layout",
        InputField(
            "zero_stage",
            "ZeRO stage of the training state (0: none)",
            "index",
            _zero_stage,
            parse_int,
            default=0,
            choices=ZERO_STAGES,
        ),
    ),
    # a parallel layout (docs/parallelism.md): given, the layout model prices the update
    _in("layout", _layout_count("tensor_parallel", "tensor-parallel size (None: 1, the data-parallel model)", "t")),
    _in("layout", _layout_count("pipeline_parallel", "pipeline stages (None: 1)", "p")),
    _in("layout", _layout_count("pipeline_chunks", "layer chunks per device, interleaved schedule (None: 1)", "v")),
    _in(
        "layout",
        _layout_count(
            "context_parallel", "context-parallel size: devices each sequence is split over, ring attention (None: 1)",
            "cp",
        ),
    ),
    _in(
        "layout",
        _layout_count(
            "expert_parallel", "expert-parallel size: devices a MoE layer's experts are spread over (None: 1)", "ep",
        ),
    ),
    _in(
        "layout",
        _layout_count(
            "expert_tensor_parallel", "expert tensor-parallel size: devices each expert's matrices are split over "
            "(None: 1)", "etp",
        ),
    ),
    _in(
        "layout",
        _switch(
            "tensor_overlap",
            "tensor-parallel collectives decomposed and overlapped with the products that depend on them (async "
            "TP): 1 on, 0 off (None: off)",
        ),
    ),
    _in(
        "layout",
        _switch(
            "expert_overlap",
            "expert all-to-alls overlapped with another micro-batch's compute (DualPipe, DeepEP): 1 on, 0 off "
            "(None: off)",
        ),
    ),
    _in(
        "layout",
        _switch(
            "context_all_gather",
            "context parallelism by an all-gather of the keys and values before the local queries' attention "
            "(Llama 3, TorchTitan's default), overlapped only with the local block: 1 on, 0 off (None: off, a "
            "ring overlapped with the attention)",
        ),
    ),
    _in(
        "layout",
        _switch(
            "hierarchical_dispatch",
            "expert all-to-alls that cross the NICs once per remote domain holding any of a token's experts, "
            "then NVLink (DeepEP, HybridEP, DeepSeek-V3): 1 on, 0 off (None: off, a flat all-to-all)",
        ),
    ),
    _in(
        "layout",
        _layout_count("shard_group", "HSDP shard group: ranks the ZeRO state is sharded over (None: all of d)", "k"),
    ),
    _in("layout", _switch("sequence_parallel", "sequence parallelism with tensor parallelism: 1 on, 0 off (None: off)")),
    _in(
        "layout",
        _layout_count(
            "first_stage_layers",
            "layers on the first pipeline stage, for uneven stages (None: the balanced cut)",
            "L_first",
        ),
    ),
    _in(
        "layout",
        _layout_count(
            "last_stage_layers",
            "layers on the last pipeline stage, for uneven stages (None: the balanced cut)",
            "L_last",
        ),
    ),
    _in(
        "layout",
        InputField(
            "pipeline_layout",
            "the layers of each virtual pipeline stage, Megatron-Core's --pipeline-model-parallel-layout "
            "(E embedding, t layer, m MTP layer, L loss, '|' between stages, e.g. 'Et*3|(tt|)*29,m|L'; "
            "sets pipeline_chunks; None: the even cut)",
            "text", _pipeline_layout, _stripped, default=None, optional=True,
        ),
    ),
    _in(
        "layout",
        _switch(
            "flash_attention",
            "fused attention kernels (FlashAttention): the s x s attention matrices never stored: 1 on, 0 off "
            "(None: on, today's practice)",
        ),
    ),
    _in(
        "layout",
        _switch(
            "fused_elementwise",
            "element-wise kernels fused (torch.compile): 1 on, 0 off (None: off); read by a step from the operators",
        ),
    ),
    _in(
        "layout",
        _choice(
            "matmul_format",
            "number format of the linear layers' matrix products (None: the precision); "
            "fp8 scales per tensor, fp8_rowwise per row",
            check_matmul_format,
            tuple(MATMUL_FORMATS),
        ),
    ),
    _in(
        "layout",
        _switch(
            "reshard_after_forward",
            "ZeRO-3/FSDP frees gathered parameters after the forward and gathers them again in the "
            "backward: 1 on, 0 off (None: on, FSDP's default)",
        ),
    ),
    _in(
        "layout",
        _opt_in_quantity(
            "activation_memory",
            "activation memory per device",
            "data",
            "GB",
            None,
            allow_zero=True,
        ),
    ),
    _in(
        "layout",
        _choice(
            "gradient_precision",
            "number format of the gradients on the wire (None: the precision's)",
            check_precision,
            tuple(BYTES_PER_ELEMENT),
        ),
    ),
    _in(
        "layout",
        _choice(
            "optimizer",
            "optimizer whose step is timed at memory_bandwidth (None: no step time)",
            _optimizer,
            tuple(OPTIMIZER_BYTES_PER_PARAMETER),
        ),
    ),
    _in(
        "layout",
        _opt_in_quantity(
            "optimizer_step_time",
            "time of one optimizer step, when given instead of optimizer",
            "time",
            "ms",
            "t_opt",
            allow_zero=True,
        ),
    ),
    _in(
        "cluster",
        InputField(
            "memory_bandwidth",
            "memory bandwidth of one device (a bandwidth or an accelerator)",
            "quantity",
            *_accelerator_or("bandwidth", lambda a: a.memory.bandwidth, str.strip),
            default=None,
            optional=True,
            dimension="bandwidth",
            display_unit="GB/s",
            symbol="B_mem",
            numeric=True,
            canonical=_canonical("bandwidth"),
        ),
    ),
    _in(
        "cluster",
        _choice(
            "inter_transport",
            "transport between nodes: rdma or tcp (None: rdma)",
            _transport,
            tuple(TRANSPORT_EFFICIENCY),
        ),
    ),
    _in(
        "workload",
        _choice(
            "input_pipeline",
            "where the inputs are prepared: real (a data loader on the host), device (decoded "
            "and augmented on the accelerator, e.g. DALI on the GPU) or synthetic (made on the "
            "device); device and synthetic bring no loader jitter (None: real)",
            _input_pipeline,
            tuple(INPUT_PIPELINE_JITTER),
        ),
    ),
    _in(
        "cluster",
        _preset(
            "node", "a server of the registry: devices, links, NICs, accelerator, memory, price"
        ),
    ),
    _in(
        "cluster",
        _preset(
            "fabric", "the link between nodes, from the registry: inter_bandwidth and inter_latency"
        ),
    ),
    _in("cluster", _preset("accelerator", "the device, from the registry: peak FLOPs and memory")),
    _in(
        "workload",
        InputField(
            "mfu",
            "model FLOPs utilisation of one device's step (0-1, as Megatron-LM, NeMo and the PaLM paper "
            "report it): step_time = batch x model FLOPs / (peak x mfu), nothing added; the job's MFU is a "
            "result (the matrix products' fraction of peak is assumptions.matmul_ceiling)",
            "number",
            check_mfu,
            parse_mfu,
            default=None,
            optional=True,
            symbol="u",
            numeric=True,
            canonical=_fraction_number,
        ),
    ),
    _in(
        "workload",
        _counted(
            _opt_in_quantity(
                "training_tokens",
                "tokens to train on (a bare number counts tokens), from which training_time is derived",
                "tokens",
                "token",
                "D",
            )
        ),
    ),
    _in(
        "workload",
        _counted(
            _opt_in_quantity(
                "training_samples",
                "samples to train on (a bare number counts samples), from which training_time is derived",
                "samples",
                "sample",
                "S",
            )
        ),
    ),
    _in(
        "layout",
        _choice(
            "recompute",
            "activation recomputation: none, selective (default: the attention core) or full",
            check_recompute,
            RECOMPUTE_MODES,
            default="selective",
        ),
    ),
    _in(
        "layout",
        InputField(
            "recompute_modules",
            "what selective recomputation reruns, Megatron-Core's --recompute-modules: core_attn, mlp, "
            "layernorm, comma-separated (needs recompute=selective; None: core_attn)",
            "text", _recompute_modules, _stripped, default=None, optional=True,
        ),
    ),
    # the whole run (docs/whole_run.md): failures, checkpoints, energy and emissions
    _in(
        "cluster",
        _registry_quantity(
            _failure_rate_field(
                _opt_in_quantity(
                    "failure_rate",
                    "failures per device (failures/device/hour), a whole job's rate with "
                    "failure_rate_devices (interruptions/day), or a run of "
                    "Infrastructure.Reliability; None: the assumptions' (none in the seed)",
                    "failure_rate",
                    "failures/device/hour",
                    "lambda",
                    allow_zero=True,
                )
            ),
            _failure_rate_entry,
        ),
    ),
    _in(
        "cluster",
        InputField(
            "failure_rate_devices",
            "devices of the job a failure_rate of a whole job was observed on (Llama 3: "
            "16384); the rate per device is failure_rate / failure_rate_devices",
            "count",
            check_positive_int,
            parse_int,
            default=None,
            optional=True,
            symbol="n_obs",
            numeric=True,
            canonical=_count_number,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "restart_time",
            "from a failure to training again (detect, reschedule, load the checkpoint)",
            "time",
            "min",
            "R",
            allow_zero=True,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "checkpoint_bandwidth",
            "checkpoint write bandwidth per node (the nodes of one replica write a replicated state, "
            "every node a ZeRO-sharded one)",
            "bandwidth",
            "GB/s",
            "B_ckpt",
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "checkpoint_interval",
            "compute time between checkpoints (None: Daly's optimum)",
            "time",
            "min",
            "tau",
        ),
    ),
    _in(
        "cluster",
        _registry_quantity(
            _opt_in_quantity(
                "device_power",
                "power of one device under load (or an accelerator: its TDP)",
                "power",
                "W",
                "P",
            ),
            _device_power_entry,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "idle_power",
            "power of one device while it waits: exposed communication, stragglers, pipeline bubble, "
            "checkpoints, restarts (None: device_power)",
            "power",
            "W",
            "P_idle",
            allow_zero=True,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "power_limit",
            "power limit of each device (nvidia-smi -pl), at most its TDP: compute-bound kernels slow below the "
            "power they need (None: the TDP its kernels were measured at)",
            "power",
            "W",
            "P_lim",
        ),
    ),
    _in(
        "cluster",
        InputField(
            "cluster_file",
            "kernel fits of your own measurements ('mlsysim calibrate kernels --out'): they replace the shipped "
            "ones of its accelerator in a step from the operators (None: the shipped fits)",
            "text",
            _cluster_file,
            str,
            default=None,
            optional=True,
        ),
    ),
    _in(
        "cluster",
        InputField(
            "pue",
            "power usage effectiveness of the data centre, >= 1 (None: 1)",
            "factor",
            _pue,
            parse_float,
            default=None,
            optional=True,
            symbol="PUE",
            numeric=True,
            canonical=_fraction_number,
        ),
    ),
    _in(
        "cluster",
        _registry_quantity(
            _opt_in_quantity(
                "carbon_intensity",
                "grid carbon intensity, location-based (or a grid of Infrastructure.Grid)",
                "carbon_intensity",
                "g/kWh",
                "I",
                allow_zero=True,
            ),
            _grid_entry,
        ),
    ),
    _in(
        "cluster",
        _opt_in_quantity(
            "energy_price",
            "price of the energy drawn",
            "energy_price",
            "USD/kWh",
            None,
            allow_zero=True,
        ),
    ),
    _in(
        "scenario",
        InputField("name", "scenario name", "text", _text, str, default=None, optional=True),
    ),
    _in(
        "scenario",
        InputField("description", "what it is", "text", _text, str, default=None, optional=True),
    ),
)

FIELDS: Final[Mapping[str, InputField]] = {f.name: f for f in _TABLE}
"""Every scenario input by name, in declaration order."""

MODEL_FIELDS: Final = tuple(f.name for f in _TABLE if f.group != "scenario")
"""The inputs the model reads (all but ``name`` and ``description``)."""

NUMERIC_FIELDS: Final = tuple(f.name for f in _TABLE if f.numeric)
"""Inputs that enter :class:`~mlsysim.engine.model.equations.Inputs` as numbers (and can be array axes)."""

CATEGORICAL_FIELDS: Final = tuple(f.name for f in _TABLE if f.categorical)
"""Inputs that select one model evaluation per value."""

SOLVE_ORDER: Final = (
    "workload",
    "precision",
    "step_time",
    "training_time",
    "per_device_batch",
    "devices_per_node",
    "nodes",
    "intra_bandwidth",
    "inter_bandwidth",
    "accumulation_steps",
    "node_hour_rate",
)
"""The seed contract's positional order of ``solve`` (``workload`` is passed as ``model``)."""


def field(name: str) -> InputField:
    """The field named ``name``, or an :class:`InputError` listing the known ones."""
    try:
        return FIELDS[name]
    except KeyError:
        raise InputError(f"unknown field; {known(name, FIELDS)}", loc=(name,)) from None


def _neutral(name: str) -> float:
    """The :class:`Inputs` default of a numeric input: its value when the field is not given."""
    neutral = _neutrals().get(name)
    if neutral is None:
        raise InputError("a value is required", loc=(name,))
    return neutral


@functools.cache
def _neutrals() -> dict[str, float]:
    from mlsysim.engine.model.equations import Inputs

    return {
        f.name: float(f.default)
        for f in dataclasses.fields(Inputs)
        if f.default is not dataclasses.MISSING
    }


def derived_numbers(values: Mapping[str, Value]) -> Mapping[str, float]:
    """Model numbers derived from several inputs: the gradient bytes and the parameter count,
    the optimizer's bytes per parameter, the transport's factor and the input pipeline's
    share of the host jitter (and the workload's shape, :func:`shape_numbers`).

    G = parameters x bytes_per_element(gradient_precision or precision), or the
    stated 16-bit model size (:meth:`~mlsysim.Workload.gradient_bytes`).

    Kept per workload object and choice of the other inputs (all immutable): the
    same mapping for every scenario that shares them, not to be changed.
    """
    # the values are checked: a Workload, precision names, the optimizer's and transport's names
    get = values.get
    workload = values["workload"]
    wire = get("gradient_precision") or values["precision"]
    key = (id(workload), wire, get("optimizer"), get("inter_transport"), get("input_pipeline"), values["recompute"])
    found = _DERIVED.get(key)
    if found is not None and found[0] is workload:
        out = found[1]
    else:
        out = _derived_numbers(values)
        if len(_DERIVED) > 1024:
            _DERIVED.clear()
        _DERIVED[key] = (workload, out)  # the entry keeps the object, so its id stays its own
    text = get("pipeline_layout")
    modules = get("recompute_modules")
    if text is None and modules is None:
        return out
    out = dict(out)
    if text is not None:
        out.update(pipeline_layout_numbers(text, get("pipeline_parallel"), _mtp_weight(out)))  # type: ignore[arg-type]
    if modules is not None:
        out["recompute_modules_code"] = recompute_modules_code(modules)  # type: ignore[arg-type]
    return out


LAYOUT_NUMBERS: Final = ("layout_stages", "layout_ranks", "layout_chunks", "layout_stage_layers",
                         "recompute_modules_code")
"""The model numbers of a custom pipeline layout (:func:`pipeline_layout_numbers`) and of the modules selective
recomputation reruns (:func:`recompute_modules_code`); NaN without them."""

_NO_LAYOUT: Final = dict.fromkeys(LAYOUT_NUMBERS, math.nan)


def pipeline_layout_numbers(text: str, pipeline_parallel: int | None, mtp_weight: float = 1.0) -> dict[str, float]:
    """The model numbers of a custom pipeline layout (checked against the scenario by the layout rules):
    its virtual stages n, the ranks p it is read at, v = n / p chunks per rank (the layout sets
    ``pipeline_chunks``) and the layers of its fullest rank, an MTP layer ``m`` as ``mtp_weight`` of them
    (:func:`~mlsysim.physics.pipeline_layout.stage_layers`)."""
    from mlsysim.physics.pipeline_layout import parse_pipeline_layout, stage_layers

    layout = parse_pipeline_layout(text)
    p = pipeline_parallel or 1
    n = len(layout.stages)
    return {"layout_stages": float(n), "layout_ranks": float(p), "layout_chunks": float(n // p),
            "layout_stage_layers": float(stage_layers(layout, p, mtp_weight))}


def _mtp_weight(numbers: Mapping[str, float]) -> float:
    """w of one MTP module in the workload's average layers (:func:`~mlsysim.physics.multi_token.mtp_layer_weight`;
    1 where the shape does not say)."""
    from mlsysim.physics.multi_token import attention_width, mtp_layer_weight

    active = numbers["active_parameters"]
    active = numbers["parameters"] if active != active else active
    nope = numbers["qk_nope_head_dim"]
    latent = None if nope != nope else (nope, numbers["qk_rope_head_dim"], numbers["v_head_dim"])
    weight = float(mtp_layer_weight(active, numbers["layers"], numbers["hidden"], numbers["vocab"],
                                    numbers["seq_len"], attention_width(numbers["hidden"], numbers["heads"], latent)))
    return weight if weight == weight and weight > 0 else 1.0


_DERIVED: dict[tuple[object, ...], tuple[object, Mapping[str, float]]] = {}


def _derived_numbers(values: Mapping[str, Value]) -> Mapping[str, float]:
    get = values.get
    workload: Workload = values["workload"]  # type: ignore[assignment]
    facts = workload_facts(workload)
    wire: str = get("gradient_precision") or values["precision"]  # type: ignore[assignment]
    optimizer: str | None = get("optimizer")  # type: ignore[assignment]
    transport: str | None = get("inter_transport")  # type: ignore[assignment]
    pipeline: str | None = get("input_pipeline")  # type: ignore[assignment]
    out = shape_numbers(workload, values["recompute"])  # type: ignore[arg-type]
    out["gradient_bytes"] = facts.gradient_bytes[wire]
    out["parameters"] = facts.parameters
    # docs/model.md section 2.9: the optimizer's bytes per parameter, the transport's factor
    out["optimizer_bytes"] = 0.0 if optimizer is None else OPTIMIZER_BYTES_PER_PARAMETER[optimizer]
    out["inter_transport"] = 1.0 if transport is None else TRANSPORT_EFFICIENCY[transport]
    out["input_pipeline"] = 1.0 if pipeline is None else INPUT_PIPELINE_JITTER[pipeline]
    out.update(_NO_LAYOUT)  # no custom pipeline layout (derived_numbers adds one's numbers)
    return out  # a plain dict (dict.update copies it fastest); read-only by contract


DERIVED_FROM: Final = (
    "workload",
    "precision",
    "gradient_precision",
    "optimizer",
    "inter_transport",
    "input_pipeline",
    "recompute",
    "pipeline_layout",
    "pipeline_parallel",
    "recompute_modules",
)
"""The inputs :func:`derived_numbers` reads: a change to one of them derives them again."""
