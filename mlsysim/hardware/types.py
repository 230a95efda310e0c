"""Types of hardware registry entries. Every entry carries ``source`` and ``note``."""

from __future__ import annotations

from typing import Annotated, TypeAlias

from pydantic import PlainValidator, model_validator

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity
from mlsysim.core.validation import (
    Validated,
    as_pydantic,
    check_nonnegative_quantity,
    check_positive_int,
    check_positive_quantity,
)
from mlsysim.physics.precision import check_compute_format


def _positive(kind: str) -> PlainValidator:
    return PlainValidator(as_pydantic(check_positive_quantity(kind)))


Bandwidth: TypeAlias = Annotated[Quantity, _positive("bandwidth")]
DataSize: TypeAlias = Annotated[Quantity, _positive("data")]
PositiveInt: TypeAlias = Annotated[int, PlainValidator(as_pydantic(check_positive_int))]
ComputeRate: TypeAlias = Annotated[Quantity, _positive("compute_rate")]
MoneyRate: TypeAlias = Annotated[Quantity, _positive("money_rate")]
Latency: TypeAlias = Annotated[
    Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("time")))
]
Power: TypeAlias = Annotated[Quantity, _positive("power")]
CarbonIntensity: TypeAlias = Annotated[
    Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("carbon_intensity")))
]
FailureRateQ: TypeAlias = Annotated[Quantity, _positive("event_rate")]  # per the part `per` names


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


class DevicePower(Sourced):
    """An accelerator's power: the datasheet's thermal design power (TDP), per device.

    ``tdp`` is the sustained power the device is designed to dissipate, the
    power the Llama model cards and the LLaMA paper charge for every GPU-hour
    of training ("under load"); measured training draws less on average (the
    note says what is known). ``idle`` is the power of a device doing nothing,
    where a source gives it.
    """

    tdp: Power
    idle: Power | None = None


def _check_flops_table(value: object) -> dict[str, Quantity]:
    """A table of peak compute rates by number format (``{"bf16": Q_(989.4, "Tflop/s")}``)."""
    if not isinstance(value, dict):
        raise InputError(f"expected a table of compute rates by precision, got {value!r}")
    check = check_positive_quantity("compute_rate")
    out: dict[str, Quantity] = {}
    for key, rate in value.items():
        try:
            out[check_compute_format(key)] = check(rate)
        except InputError as exc:
            raise exc.at(str(key)) from None
    return out


class ComputeUnits(Sourced):
    """The accelerator's parallel compute units, the count a kernel's thread blocks fill in waves.

    ``name`` says which unit: streaming multiprocessors (SMs, NVIDIA) or
    compute units (CUs, AMD). ``count`` is the number enabled on the product,
    not on the full die.
    """

    count: PositiveInt


class Accelerator(Sourced):
    """One accelerator: memory, scale-up link, and dense peak compute per number format.

    ``dense_flops`` maps a number format (``fp32``, ``tf32``, ``fp16``,
    ``bf16``, ``fp8``, ``int8``; on Blackwell also ``mxfp8``, ``fp6``,
    ``fp4``, ``nvfp4``) to the datasheet's peak rate without structured
    sparsity; :meth:`peak_flops` reads it. ``compute_units`` (SMs or CUs) is
    there where a vendor document, or a cited measurement, states the count.

    >>> from mlsysim import Hardware
    >>> Hardware.Cloud.H100.peak_flops("bf16")
    <Quantity(989.4, 'teraflop / second')>
    >>> Hardware.Cloud.H100.compute_units.count
    132
    """

    memory: Memory
    nvlink: Interconnect
    dense_flops: Annotated[
        dict[str, Quantity], PlainValidator(as_pydantic(_check_flops_table))
    ] = {}
    power: DevicePower | None = None
    compute_units: ComputeUnits | None = None
    architecture: str | None = None
    """The vendor's name for the chip generation (``"Hopper"``): the fitted matrix-product ceilings
    (:mod:`mlsysim.physics.matmul`) are per architecture."""

    def peak_flops(self, precision: str) -> Quantity:
        """Dense peak compute rate in the number format ``precision`` (a Quantity in flop/s).

        Raises :class:`~mlsysim.InputError` naming the format and listing
        those this accelerator has figures for.
        """
        key = precision.lower() if isinstance(precision, str) else precision
        rate = self.dense_flops.get(key) if isinstance(key, str) else None
        if rate is None:
            known = ", ".join(self.dense_flops) or "none"
            raise InputError(
                f"{self.name} has no peak compute figure for precision {precision!r}; "
                f"supported: {known}",
                field="precision",
            )
        return rate


class Fabric(Sourced):
    """A link technology: per-port, per-direction line rate and a typical latency."""

    bandwidth: Bandwidth
    latency: Latency


class Price(Sourced):
    """A price per unit of time."""

    rate: MoneyRate


class Node(Sourced):
    """A server: its accelerators, the link between them, and its network adapters.

    ``intra_node_bw`` is per accelerator, per direction, over ``intra_fabric``
    (whose latency is ``intra_latency``). ``nic_bandwidth`` is per adapter
    (NIC), per direction; the node has ``nics_per_node`` of them, of the
    technology ``nic_fabric``. ``price`` is an hourly price of the whole node
    where one is published.

    ``scale_up_domain`` is the number of accelerators that share one scale-up
    (NVLink) domain, reaching each other at ``intra_node_bw`` through switches:
    None means the node itself (``accelerators_per_node``, as in a DGX H100);
    a GB200 NVL72 rack joins 18 nodes (compute trays) of 4 GPUs into one domain
    of 72. It is a whole number of nodes. :attr:`domain_size` is the effective
    value.
    """

    accelerator: Accelerator
    accelerators_per_node: PositiveInt
    intra_node_bw: Bandwidth
    nics_per_node: PositiveInt
    nic_bandwidth: Bandwidth
    nic_fabric: Fabric | None = None
    intra_fabric: Fabric | None = None
    intra_latency: Latency | None = None
    price: Price | None = None
    scale_up_domain: PositiveInt | None = None

    @model_validator(mode="after")
    def _domain_is_whole_nodes(self) -> Node:
        domain, per_node = self.scale_up_domain, self.accelerators_per_node
        if domain is not None and (domain < per_node or domain % per_node):
            raise InputError(
                f"scale_up_domain ({domain}) must be a multiple of accelerators_per_node "
                f"({per_node}), at least one node: a scale-up domain joins whole nodes",
                field="scale_up_domain",
            )
        return self

    @property
    def domain_size(self) -> int:
        """Accelerators in one scale-up (NVLink) domain: ``scale_up_domain``, or the node's own
        ``accelerators_per_node`` where none is stated."""
        if self.scale_up_domain is None:
            return self.accelerators_per_node
        return self.scale_up_domain

    @property
    def nodes_per_domain(self) -> int:
        """Nodes in one scale-up domain (``domain_size / accelerators_per_node``; 18 for an NVL72)."""
        return self.domain_size // self.accelerators_per_node


class GridIntensity(Sourced):
    """A grid's average carbon intensity (location-based), with the year it describes.

    ``intensity`` is a mass of CO2-equivalent per energy drawn (``"429 g/kWh"``).
    """

    intensity: CarbonIntensity
    year: int


FAILURE_PARTS = ("device", "node")
"""What a failure rate is counted per: one accelerator or one server."""


def _check_part(value: object) -> str:
    if value not in FAILURE_PARTS:
        raise InputError(f"expected one of {', '.join(FAILURE_PARTS)}, got {value!r}")
    return str(value)


class FailureRate(Sourced):
    """A failure rate observed on a large training run, per device-hour or per node-hour.

    ``rate`` is interruptions per hour of one part (``"1.97e-5 failures/hour"``);
    ``per`` says which part: ``"device"`` (one accelerator) or ``"node"`` (one
    server); ``devices_per_node`` converts between them.
    """

    rate: FailureRateQ
    per: Annotated[str, PlainValidator(as_pydantic(_check_part))]
    devices_per_node: PositiveInt
