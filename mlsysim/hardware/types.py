"""Types of hardware registry entries. Every entry carries ``source`` and ``note``."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator

from mlsysim.core.units import Quantity
from mlsysim.core.validation import (
    Validated,
    as_pydantic,
    check_nonnegative_quantity,
    check_positive_int,
    check_positive_quantity,
)


def _q(kind: str) -> Any:
    return Annotated[Quantity, PlainValidator(as_pydantic(check_positive_quantity(kind)))]


Bandwidth = _q("bandwidth")
DataSize = _q("data")
PositiveInt = Annotated[int, PlainValidator(as_pydantic(check_positive_int))]
ComputeRate = _q("compute_rate")
MoneyRate = _q("money_rate")
Latency = Annotated[Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("time")))]


class Sourced(Validated):
    """A registry entry: its figures, where they come from, and what exactly they are."""

    name: str
    source: str
    note: str


class Memory(Validated):
    """Device memory: capacity and peak bandwidth."""

    capacity: DataSize
    bandwidth: Bandwidth


class Interconnect(Sourced):
    """A scale-up link of one accelerator (NVLink, Infinity Fabric).

    ``bandwidth`` counts both directions together (as datasheets quote it);
    ``bandwidth_per_direction`` is what one direction carries, which is what a
    ring collective is limited by.
    """

    bandwidth: Bandwidth
    bandwidth_per_direction: Bandwidth


class Accelerator(Sourced):
    """One accelerator: memory, scale-up link and dense 16-bit peak compute."""

    memory: Memory
    nvlink: Interconnect
    peak_flops: ComputeRate


class Fabric(Sourced):
    """A link technology: per-port, per-direction line rate and a typical latency."""

    bandwidth: Bandwidth
    latency: Latency


class Node(Sourced):
    """A server: its accelerators, the link between them, and its network adapters.

    ``intra_node_bw`` is per accelerator, per direction. ``nic_bandwidth`` is per
    adapter (NIC), per direction; the node has ``nics_per_node`` of them.
    """

    accelerator: Accelerator
    accelerators_per_node: PositiveInt
    intra_node_bw: Bandwidth
    nics_per_node: PositiveInt
    nic_bandwidth: Bandwidth
    nic_fabric: Fabric | None = None


class Price(Sourced):
    """A price per unit of time."""

    rate: MoneyRate
