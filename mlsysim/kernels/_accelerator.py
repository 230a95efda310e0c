"""A registry accelerator given as itself or by name, and the datasheet figures kernel models read (SI)."""

from __future__ import annotations

from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.hardware.registry import Hardware
from mlsysim.hardware.types import Accelerator


def accelerator_entry(accelerator: Accelerator | str) -> Accelerator:
    """The registry accelerator ``accelerator`` names (``"H100"`` or ``Hardware.Cloud.H100``)."""
    if isinstance(accelerator, Accelerator):
        return accelerator
    if not isinstance(accelerator, str):
        raise InputError(f"expected a registry accelerator or its name (e.g. 'H100'), got {accelerator!r}",
                         field="accelerator")
    try:
        entry = Hardware.get(accelerator.strip().split(".")[-1])
    except UnknownNameError as error:
        raise InputError(str(error), field="accelerator") from None
    if not isinstance(entry, Accelerator):
        raise InputError(f"{accelerator!r} is not an accelerator", field="accelerator")
    return entry


def registry_accelerator(name: str, where: str = "--accelerator") -> str:
    """An accelerator's name as the registry spells it (``a100`` -> ``A100``); ``where`` starts the error."""
    entries = Hardware.Cloud.entries()
    found = next((key for key in entries if key.lower() == name.strip().lower()), None)
    if found is None:
        raise InputError(f"{where}: {name!r} is not a registry accelerator; expected one of {', '.join(entries)}",
                         field="accelerator")
    return found


def accelerator_name(accelerator: Accelerator) -> str:
    """The registry's short name of an entry (``"H100"``), as tables name it."""
    for path, entry in Hardware.walk():
        if entry is accelerator or entry == accelerator:  # a copy (unpickled in a worker process) too
            return str(path).rsplit(".", 1)[-1]
    return accelerator.name


def peak_flops(accelerator: Accelerator, fmt: str) -> float:
    """The datasheet's dense peak in format ``fmt``, FLOP/s (InputError naming the formats it has)."""
    return float(accelerator.peak_flops(fmt).to("flop / s").magnitude)


def memory_bandwidth(accelerator: Accelerator) -> float:
    """The memory's peak bandwidth, B/s."""
    return float(accelerator.memory.bandwidth.to("B / s").magnitude)


def nvlink_rate(accelerator: Accelerator) -> float:
    """A rank's nominal NVLink rate per direction, B/s (the registry's ``nvlink.bandwidth_per_direction``)."""
    return float(accelerator.nvlink.bandwidth_per_direction.to("B / s").magnitude)


def compute_unit_count(accelerator: Accelerator) -> float:
    """SMs (or CUs) where the registry states the count; 1 where it does not (wave quantisation off)."""
    units = accelerator.compute_units
    return float(units.count) if units is not None else 1.0
