"""Turn text and file values into scenario field values: ``"100 Gbps"``, ``"GPT2"``, ``"realistic"``.

Shared by the command line (``--set FIELD=VALUE``) and scenario files, so both
accept the same spellings and report the same errors.
"""

from __future__ import annotations

from typing import Any

from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.core.text import check_text, parse_float, parse_int
from mlsysim.core.units import parse_quantity

QUANTITY_KINDS = {
    "step_time": "time",
    "training_time": "time",
    "intra_bandwidth": "bandwidth",
    "inter_bandwidth": "bandwidth",
    "node_hour_rate": "money_rate",
    "intra_latency": "time",
    "inter_latency": "time",
    "device_memory": "data",
    "activation_memory": "data",
}
FABRIC_FIELDS = {
    "intra_bandwidth": "bandwidth",
    "inter_bandwidth": "bandwidth",
    "intra_latency": "latency",
    "inter_latency": "latency",
}
"""Fields that also take a fabric's registry name (``inter_bandwidth=InfiniBand_NDR``): its figure."""
INT_FIELDS = (
    "per_device_batch",
    "devices_per_node",
    "nodes",
    "accumulation_steps",
    "nics_per_node",
    "zero_stage",
)
OPTIONAL_FIELDS = (
    "inter_bandwidth",
    "node_hour_rate",
    "nics_per_node",
    "intra_latency",
    "inter_latency",
    "device_memory",
    "activation_memory",
    "name",
    "description",
)
ASSUMPTION_QUANTITIES = {"bucket_size": "data", "update_overhead": "time"}
ASSUMPTION_FLOATS = ("intra_efficiency", "inter_efficiency", "backward_fraction", "straggler_cv")


def _int(field: str, value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_int(value)
        except InputError as exc:
            raise InputError(f"{field}: {exc}", field=field) from None
    return value  # the validator reports what is wrong with it


def _float(field: str, value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_float(value)
        except InputError as exc:
            raise InputError(f"{field}: {exc}", field=field) from None
    return value


def _name(field: str, value: str) -> str:
    try:
        return check_text(value, what="a name")
    except InputError as exc:
        raise InputError(f"{field}: {exc}", field=field) from None


def _bool(field: str, value: Any) -> Any:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise InputError(f"{field}: expected true or false, got {value!r}", field=field)
    return value


def coerce_field(field: str, value: Any) -> Any:
    """The value a scenario field should receive for ``value`` given as text (or a TOML scalar).

    Quantities are parsed from strings with units, workloads and accelerators
    are looked up by registry name, link bandwidths and latencies also take a
    fabric's registry name (``InfiniBand_NDR``), ``assumptions`` takes ``seed`` or
    ``realistic`` (or a table of its fields), and ``none`` clears an optional
    field. Anything else goes to the scenario's validators unchanged, which
    report what is wrong with it.
    """
    if (
        isinstance(value, str)
        and value.strip().lower() in ("none", "null")
        and field in OPTIONAL_FIELDS
    ):
        return None
    if field == "workload":
        return workload_named(_name(field, value)) if isinstance(value, str) else value
    if field == "assumptions":
        return assumptions_from(value)
    if field == "device_memory" and isinstance(value, str):
        accelerator = _accelerator_named(value)
        if accelerator is not None:
            return accelerator
    if field in FABRIC_FIELDS and isinstance(value, str):
        fabric = _fabric_named(value)
        if fabric is not None:
            return getattr(fabric, FABRIC_FIELDS[field])
    if field in QUANTITY_KINDS and isinstance(value, str):
        try:
            return _quantity(field, value, QUANTITY_KINDS[field])
        except InputError as exc:
            if field not in FABRIC_FIELDS:
                raise
            from mlsysim.hardware.registry import Systems

            names = ", ".join(Systems.Fabrics.entries())
            raise InputError(f"{exc}; or name a fabric: {names}", field=field) from None
    if field in INT_FIELDS:
        return _int(field, value)
    return value


def _quantity(field: str, text: str, kind: str) -> Any:
    try:
        return parse_quantity(text, kind)
    except InputError as exc:
        raise InputError(f"{field}: {exc}", field=field) from None


def workload_named(name: str) -> Any:
    """A workload from the registry by name (``GPT2``, ``Language.GPT2``, case-insensitive)."""
    from mlsysim.models.registry import Models

    try:
        return Models.get(name.strip())
    except UnknownNameError as exc:
        raise UnknownNameError(f"workload: {exc}") from None


def _fabric_named(name: str) -> Any:
    """A fabric registry entry (``InfiniBand_NDR``, ``Fabrics.Ethernet_100G``), or None."""
    from mlsysim.hardware.registry import Systems

    try:
        return Systems.Fabrics.get(name.strip().removeprefix("Fabrics."))
    except UnknownNameError:
        return None


def _accelerator_named(name: str) -> Any:
    from mlsysim.hardware.registry import Hardware

    try:
        return Hardware.get(name.strip())
    except UnknownNameError:
        return None


def assumptions_from(value: Any) -> Any:
    """``"seed"``, ``"realistic"``, a mapping of Assumptions fields, or an Assumptions object."""
    from mlsysim.engine.assumptions import Assumptions

    if isinstance(value, Assumptions) or value is None:
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key in ("seed", "default"):
            return Assumptions()
        if key == "realistic":
            return Assumptions.realistic()
        raise InputError(
            f"assumptions: expected 'seed' or 'realistic', got {value!r}", field="assumptions"
        )
    if isinstance(value, dict):
        data = dict(value)
        preset = data.pop("preset", "seed")
        if not isinstance(preset, str):
            raise InputError(
                f"assumptions.preset: expected 'seed' or 'realistic', got {preset!r}",
                field="assumptions.preset",
            )
        base = assumptions_from(preset)
        return base.variant(**{k: coerce_assumption(k, v) for k, v in data.items()})
    return value


def coerce_assumption(field: str, value: Any) -> Any:
    """Text or TOML value for one :class:`Assumptions` field."""
    if field in ASSUMPTION_QUANTITIES and isinstance(value, str):
        return _quantity(f"assumptions.{field}", value, ASSUMPTION_QUANTITIES[field])
    if field in ASSUMPTION_FLOATS:
        return _float(f"assumptions.{field}", value)
    if field == "overlap":
        return _bool("assumptions.overlap", value)
    if field == "algorithm" and isinstance(value, str):
        return value.strip().lower()
    return value


def parse_assignment(text: str) -> tuple[str, str]:
    """Split ``FIELD=VALUE``; :class:`InputError` when there is no ``=``."""
    field, sep, value = text.partition("=")
    field = field.strip()
    if not sep or not field:
        raise InputError(f"--set expects FIELD=VALUE, got {text!r}")
    return field, value.strip()


def apply_overrides(scenario: Any, assignments: list[str]) -> Any:
    """``scenario.variant(...)`` with ``FIELD=VALUE`` texts; ``assumptions.FIELD=VALUE`` sets one choice."""
    if not assignments:
        return scenario
    changes: dict[str, Any] = {}
    assumption_changes: dict[str, Any] = {}
    known = type(scenario).model_fields
    for text in assignments:
        field, value = parse_assignment(text)
        if field.startswith("assumptions."):
            sub = field.split(".", 1)[1]
            assumption_changes[sub] = coerce_assumption(sub, value)
            continue
        if field not in known:
            raise InputError(
                f"unknown field {field!r}; known fields: {', '.join(known)}", field=field
            )
        changes[field] = coerce_field(field, value)
    if assumption_changes:
        base = changes.get("assumptions", scenario.assumptions)
        changes["assumptions"] = base.variant(**assumption_changes)
    if scenario.name and "name" not in changes:
        # a changed scenario is not the named one any more: say so in tables, JSON and plot titles
        changes["name"] = f"{scenario.name} [{', '.join(a.strip() for a in assignments)}]"
    return scenario.variant(**changes)
