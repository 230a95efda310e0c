"""DataParallelScaleOutModel: validated inputs -> :func:`mlsysim.engine.model.evaluate` -> result."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity, nonnegative_canonical, positive_canonical
from mlsysim.core.validation import (
    check_nonnegative_int,
    check_positive_int,
    check_precision,
)
from mlsysim.engine.assumptions import Assumptions
from mlsysim.engine.model import BOTTLENECKS, Choices, Inputs, evaluate
from mlsysim.engine.results import DataParallelScaleOutResult
from mlsysim.hardware.types import Accelerator
from mlsysim.models.types import workload_of
from mlsysim.physics.collectives import ALGORITHMS
from mlsysim.physics.memory import ZERO_STAGES

_SEED_ASSUMPTIONS = Assumptions()


def _field(name: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except InputError as exc:
        raise type(exc)(f"{name}: {exc}", field=name) from None


def _si(kind: str, *, allow_zero: bool = False) -> Callable[[Any], float]:
    """A check returning the Quantity as a canonical SI float, finite and above (or at) zero."""
    if allow_zero:
        return lambda value: nonnegative_canonical(value, kind)
    return lambda value: positive_canonical(value, kind)


_time, _bandwidth, _rate, _data = _si("time"), _si("bandwidth"), _si("money_rate"), _si("data")
_latency, _size = _si("time", allow_zero=True), _si("data", allow_zero=True)


OPTIONAL_INPUTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "inter_bandwidth": ("inter_bandwidth", _bandwidth),
    "node_hour_rate": ("node_hour_rate", _rate),
    "nics_per_node": ("nics", check_positive_int),
    "intra_latency": ("intra_latency", _latency),
    "inter_latency": ("inter_latency", _latency),
    "activation_memory": ("activation_bytes", _size),
    "device_memory": ("device_memory", _data),
}
"""Optional scenario field -> (``Inputs`` attribute, check returning its canonical value).

An omitted field keeps the attribute's default in :class:`Inputs`, the value
that leaves the seed model unchanged (no inter link, no price, one NIC, ...).
"""


def _optional_inputs(**given: Any) -> dict[str, Any]:
    """The ``Inputs`` attributes of the optional fields that were given."""
    return {
        OPTIONAL_INPUTS[name][0]: _field(name, OPTIONAL_INPUTS[name][1], value)
        for name, value in given.items()
        if value is not None
    }


def check_device_memory(value: Any) -> Any:
    """A memory size, or an accelerator registry entry (its memory capacity is taken); text is read as either."""
    if isinstance(value, str):
        from mlsysim.engine.overrides import coerce_field

        value = coerce_field("device_memory", value)
    if isinstance(value, Accelerator):
        return value.memory.capacity
    _data(value)
    return value


def check_zero_stage(value: Any) -> int:
    stage = check_nonnegative_int(value)
    if stage not in ZERO_STAGES:
        raise InputError(f"expected a ZeRO stage in {ZERO_STAGES}, got {value!r}")
    return stage


def check_assumptions(value: Any) -> Assumptions:
    if value is None:
        return _SEED_ASSUMPTIONS
    if isinstance(value, Assumptions):
        return value
    raise InputError(
        f"expected a mlsysim.Assumptions (e.g. Assumptions.realistic()), got {value!r}"
    )


def check_inter_bandwidth_for_nodes(nodes: int, inter_bandwidth: Any) -> None:
    """Several nodes need a link between them."""
    if nodes > 1 and inter_bandwidth is None:
        raise InputError(
            f"inter_bandwidth: required when nodes > 1 (got nodes={nodes} and no inter_bandwidth); "
            "give the inter-node link, e.g. inter_bandwidth=Q_(100, 'Gbps')",
            field="inter_bandwidth",
        )


class DataParallelScaleOutModel:
    """Data-parallel training over ``nodes`` nodes of ``devices_per_node`` devices.

    Equations: SPEC section 4 (the seed model), implemented in
    :func:`mlsysim.engine.model.evaluate`; the keyword-only inputs and
    ``assumptions`` switch on the opt-in model (docs/model.md). With those at
    their defaults, results are the seed's exactly.
    """

    def solve(
        self,
        model: Any,
        precision: str,
        step_time: Quantity,
        training_time: Quantity,
        per_device_batch: int,
        devices_per_node: int,
        nodes: int,
        intra_bandwidth: Quantity,
        inter_bandwidth: Quantity | None = None,
        accumulation_steps: int = 1,
        node_hour_rate: Quantity | None = None,
        *,
        nics_per_node: int | None = None,
        intra_latency: Quantity | None = None,
        inter_latency: Quantity | None = None,
        assumptions: Assumptions | None = None,
        device_memory: Quantity | Accelerator | None = None,
        zero_stage: int = 0,
        activation_memory: Quantity | None = None,
    ) -> DataParallelScaleOutResult:
        """Evaluate one layout. ``model`` is the workload; see :class:`DataParallelScaleOutScenario` for each field."""
        workload = _field("workload", workload_of, model)
        key = _field("precision", check_precision, precision)
        d = _field("devices_per_node", check_positive_int, devices_per_node)
        big_n = _field("nodes", check_positive_int, nodes)
        a = _field("accumulation_steps", check_positive_int, accumulation_steps)
        batch = _field("per_device_batch", check_positive_int, per_device_batch)
        check_inter_bandwidth_for_nodes(big_n, inter_bandwidth)
        choices = _field("assumptions", check_assumptions, assumptions)
        stage = _field("zero_stage", check_zero_stage, zero_stage)
        if device_memory is not None:
            device_memory = _field("device_memory", check_device_memory, device_memory)
        x = Inputs(
            gradient_bytes=workload.gradient_bytes(key),
            parameters=workload.parameter_count(),
            devices_per_node=d,
            nodes=big_n,
            accumulation_steps=a,
            step_time=_field("step_time", _time, step_time),
            training_time=_field("training_time", _time, training_time),
            per_device_batch=batch,
            intra_bandwidth=_field("intra_bandwidth", _bandwidth, intra_bandwidth),
            **_optional_inputs(
                inter_bandwidth=inter_bandwidth,
                node_hour_rate=node_hour_rate,
                nics_per_node=nics_per_node,
                intra_latency=intra_latency,
                inter_latency=inter_latency,
                activation_memory=activation_memory,
                device_memory=device_memory,
            ),
        )
        c = choices_of(choices, stage)
        values = finish(evaluate(x, c), x, c)
        check_finite(values)
        inputs = {
            "workload": workload,
            "precision": key,
            "step_time": step_time,
            "training_time": training_time,
            "per_device_batch": batch,
            "devices_per_node": d,
            "nodes": big_n,
            "intra_bandwidth": intra_bandwidth,
            "inter_bandwidth": inter_bandwidth,
            "accumulation_steps": a,
            "node_hour_rate": node_hour_rate,
            "nics_per_node": nics_per_node,
            "intra_latency": intra_latency,
            "inter_latency": inter_latency,
            "assumptions": choices,
            "device_memory": device_memory,
            "zero_stage": stage,
            "activation_memory": activation_memory,
        }
        return DataParallelScaleOutResult(
            values, inputs, trace=lambda: constraint_trace(values, x, c)
        )


def choices_of(assumptions: Assumptions, zero_stage: int = 0) -> Choices:
    """The plain-value :class:`Choices` of an :class:`Assumptions` object and a ZeRO stage."""
    base = assumptions.choices
    return base if zero_stage == 0 else replace(base, zero_stage=zero_stage)


def check_finite(values: dict[str, Any]) -> None:
    """Every float figure must be finite: refuse the inputs instead of returning inf or NaN.

    With inputs inside :data:`mlsysim.core.units.PHYSICAL_RANGE` this never fires; it
    guards combinations (e.g. extreme integers) that the per-field ranges do not bound.
    """
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(
                f"the inputs give a non-finite {key} ({value}): an input is outside the "
                "range this model is meant for (step_time, bandwidths, nodes, devices_per_node)",
                field=key,
            )


def finish(values: dict[str, Any], x: Inputs, c: Choices) -> dict[str, Any]:
    """Scalar post-processing: Python ints, labels, optional figures as None, the constraint trace."""
    v = values
    v["n_devices"] = int(v["n_devices"])
    v["global_batch"] = int(v["global_batch"])
    cost = v["cost"]
    v["cost"] = None if cost != cost else cost
    v["device_memory"] = None if x.device_memory != x.device_memory else x.device_memory
    v["fits"] = None if v["device_memory"] is None else bool(v["fits"])
    inter = v["inter_algorithm"]
    inter_name = inter if isinstance(inter, str) else ALGORITHMS[int(inter)]
    v["algorithm"] = c.algorithm
    v["intra_algorithm"] = "ring" if x.devices_per_node > 1 else "none"
    v["inter_algorithm"] = inter_name if x.nodes > 1 else "none"
    v["bottleneck"] = BOTTLENECKS[int(v["bottleneck"])]
    return v


def constraint_trace(v: dict[str, Any], x: Inputs, c: Choices) -> tuple[str, ...]:
    """Short notes on what limits this layout and which choices applied."""
    notes = []
    if x.nodes == 1:
        notes.append("one node: no inter-node traffic")
    else:
        notes.append(
            f"inter-node AllReduce: {v['inter_algorithm']} over {x.nodes} nodes, {x.nics:g} NIC(s) per node"
        )
    if x.devices_per_node == 1:
        notes.append("one device per node: no intra-node traffic")
    comm = v["communication_time"]
    if comm > 0:
        inter_share = v["inter_time"] / comm
        notes.append(f"inter-node link carries {inter_share:.1%} of the communication time")
    notes.append(f"bottleneck: {v['bottleneck']}")
    if c.overlap:
        notes.append(
            f"overlap: {v['hidden_communication_time'] * 1e3:.4g} ms of {comm * 1e3:.4g} ms communication hidden under the backward pass"
        )
    if v["synchronization_time"] > 0:
        notes.append(f"synchronization adds {v['synchronization_time'] * 1e3:.4g} ms per update")
    if c.zero_stage:
        notes.append(
            f"ZeRO stage {c.zero_stage}: training state sharded over {v['n_devices']} devices"
        )
    if v["fits"] is not None:
        need, have = v["memory_per_device"] / 1e9, v["device_memory"] / 1e9
        verdict = "fits" if v["fits"] else "does NOT fit"
        notes.append(f"memory: {need:.4g} GB per device {verdict} in {have:.4g} GB")
    if v["efficiency"] < 0.5:
        notes.append(
            f"efficiency {v['efficiency']:.1%}: communication dominates; consider accumulation, a faster link or fewer nodes"
        )
    return tuple(notes)
