"""Scenario types: validated, immutable bundles of inputs, evaluated by a solver."""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any

from pydantic import PlainValidator

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity
from mlsysim.core.validation import (
    Validated,
    as_pydantic,
    check_nonnegative_quantity,
    check_positive_int,
    check_positive_quantity,
    check_precision,
)
from mlsysim.engine.assumptions import Assumptions
from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.engine.solvers.data_parallel import (
    DataParallelScaleOutModel,
    check_assumptions,
    check_device_memory,
    check_inter_bandwidth_for_nodes,
    check_memory_bandwidth,
    check_optimizer,
    check_optimizer_inputs,
    check_transport,
    check_zero_stage,
)
from mlsysim.models.types import Workload, workload_of


def _v(check: Any) -> PlainValidator:
    return PlainValidator(as_pydantic(check))


def _optional(check: Any) -> PlainValidator:
    return PlainValidator(as_pydantic(lambda v: None if v is None else check(v)))


PositiveInt = Annotated[int, _v(check_positive_int)]
Time = Annotated[Quantity, _v(check_positive_quantity("time"))]
Bandwidth = Annotated[Quantity, _v(check_positive_quantity("bandwidth"))]
OptionalBandwidth = Annotated[Quantity | None, _optional(check_positive_quantity("bandwidth"))]
OptionalRate = Annotated[Quantity | None, _optional(check_positive_quantity("money_rate"))]
OptionalLatency = Annotated[Quantity | None, _optional(check_nonnegative_quantity("time"))]
OptionalData = Annotated[Quantity | None, _optional(check_nonnegative_quantity("data"))]

_SOLVER = DataParallelScaleOutModel()


class DataParallelScaleOutScenario(Validated):
    """A data-parallel job of ``workload`` on ``nodes`` nodes, from a one-device profile.

    Construct with keyword inputs; every input is checked here, and a bad one
    raises an :class:`~mlsysim.core.exceptions.InputError` (a ``ValueError``)
    naming the field. ``variant(**changes)`` returns a checked copy;
    ``result`` evaluates it through
    :meth:`mlsysim.solvers.DataParallelScaleOutModel.solve`.

    Seed inputs (SPEC section 3): ``workload``, ``precision`` (default fp16),
    ``step_time`` and ``training_time`` (one device), ``per_device_batch``,
    ``devices_per_node``, ``nodes`` (default 1), ``intra_bandwidth`` (per
    direction), ``inter_bandwidth`` (required when nodes > 1),
    ``accumulation_steps`` (default 1), ``node_hour_rate`` (optional).

    Opt-in inputs (defaults keep the seed's results): ``nics_per_node``
    (None = one inter-node link of inter_bandwidth), ``intra_latency`` and
    ``inter_latency`` (per-step startup alpha, default none = 0 s),
    ``assumptions`` (:class:`mlsysim.Assumptions`), ``device_memory`` (a size
    or an accelerator entry), ``zero_stage`` (0-3), ``activation_memory``,
    ``gradient_precision`` (the gradient's dtype on the wire; default: the
    seed's rule from ``precision``), ``optimizer`` (``sgd``, ``adam``,
    ``lamb``; its step's bytes at ``memory_bandwidth``, a bandwidth or an
    accelerator entry) or ``optimizer_step_time`` (given), and
    ``inter_transport`` (``rdma``, the default, or ``tcp``).

    >>> from mlsysim import Scenarios
    >>> case = Scenarios.Gpt2DataParallelOneNode
    >>> type(case.result).__name__
    'DataParallelScaleOutResult'
    """

    workload: Annotated[Workload, _v(workload_of)]
    precision: Annotated[str, _v(check_precision)] = "fp16"
    step_time: Time
    training_time: Time
    per_device_batch: PositiveInt
    devices_per_node: PositiveInt
    nodes: PositiveInt = 1
    intra_bandwidth: Bandwidth
    inter_bandwidth: OptionalBandwidth = None
    accumulation_steps: PositiveInt = 1
    node_hour_rate: OptionalRate = None
    nics_per_node: Annotated[int | None, _optional(check_positive_int)] = None
    intra_latency: OptionalLatency = None
    inter_latency: OptionalLatency = None
    assumptions: Annotated[Assumptions, _v(check_assumptions)] = Assumptions()
    device_memory: Annotated[Quantity | None, _optional(check_device_memory)] = None
    zero_stage: Annotated[int, _v(check_zero_stage)] = 0
    activation_memory: OptionalData = None
    gradient_precision: Annotated[str | None, _optional(check_precision)] = None
    optimizer: Annotated[str | None, _optional(check_optimizer)] = None
    optimizer_step_time: OptionalLatency = None
    memory_bandwidth: Annotated[Quantity | None, _optional(check_memory_bandwidth)] = None
    inter_transport: Annotated[str | None, _optional(check_transport)] = None
    name: str | None = None
    description: str | None = None

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        try:
            check_inter_bandwidth_for_nodes(self.nodes, self.inter_bandwidth)
            check_optimizer_inputs(self.optimizer, self.optimizer_step_time, self.memory_bandwidth)
        except InputError as exc:
            raise InputError(f"{type(self).__name__}.{exc}", field=exc.field) from None

    def inputs(self) -> dict[str, Any]:
        """The solver's inputs (every field but ``name`` and ``description``)."""
        data = self.fields()
        del data["name"], data["description"]
        return data

    @cached_property
    def result(self) -> DataParallelScaleOutResult:
        """Evaluate this scenario through :meth:`mlsysim.solvers.DataParallelScaleOutModel.solve`."""
        return _SOLVER.solve(
            self.workload,
            self.precision,
            self.step_time,
            self.training_time,
            self.per_device_batch,
            self.devices_per_node,
            self.nodes,
            self.intra_bandwidth,
            self.inter_bandwidth,
            self.accumulation_steps,
            self.node_hour_rate,
            nics_per_node=self.nics_per_node,
            intra_latency=self.intra_latency,
            inter_latency=self.inter_latency,
            assumptions=self.assumptions,
            device_memory=self.device_memory,
            zero_stage=self.zero_stage,
            activation_memory=self.activation_memory,
            gradient_precision=self.gradient_precision,
            optimizer=self.optimizer,
            optimizer_step_time=self.optimizer_step_time,
            memory_bandwidth=self.memory_bandwidth,
            inter_transport=self.inter_transport,
        )

    def explain(self, format: str = "text") -> str:
        """The derivation of this scenario's result (see :meth:`DataParallelScaleOutResult.explain`)."""
        from mlsysim.engine.explain import explain_result

        return explain_result(
            self.result, format=format, title=self.name, description=self.description
        )

    def __repr__(self) -> str:
        label = f"{self.name!r}" if self.name else "unnamed"
        return f"<DataParallelScaleOutScenario {label}: {self.workload.name}, {self.nodes} x {self.devices_per_node} devices>"
