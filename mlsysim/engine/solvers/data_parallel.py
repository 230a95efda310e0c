"""DataParallelScaleOutModel: checked inputs -> :func:`mlsysim.engine.model.equations.evaluate` -> result."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity
from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.inputs.checking import checked_inputs
from mlsysim.engine.inputs.derivation import Job, plain_job
from mlsysim.engine.inputs.fields import (
    FIELDS,
    MODEL_FIELDS,
    NUMERIC_FIELDS,
    SOLVE_ORDER,
    Value,
    derived_numbers,
)
from mlsysim.engine.model.equations import Choices, Figures, Inputs, evaluate, inputs_of
from mlsysim.engine.reports.notes import memory_note, origins_notes, sanity_notes
from mlsysim.engine.reports.whole_run_steps import whole_run_notes
from mlsysim.engine.results import DataParallelScaleOutResult


class DataParallelScaleOutModel:
    """Data-parallel training over ``nodes`` nodes of ``devices_per_node`` devices.

    Equations: :func:`mlsysim.engine.model.equations.evaluate` (the seed model, and the
    opt-in terms of docs/model.md); the keyword-only inputs and
    ``assumptions`` switch on the opt-in model. With those at their defaults,
    results are the seed's exactly. Each input is checked by its entry in the
    field table (:mod:`mlsysim.engine.inputs.fields`), the same check a scenario runs.
    """

    def solve(
        self,
        model: object,
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
        **opt_in: object,
    ) -> DataParallelScaleOutResult:
        """Evaluate one layout. ``model`` is the workload.

        The seed's inputs come first, by position or keyword, in the seed
        contract's order; every opt-in input of the scenario (``nics_per_node``,
        ``intra_latency``, ``inter_latency``, ``assumptions``, ``device_memory``,
        ``zero_stage``, ``activation_memory``, ...: the field table
        :data:`mlsysim.engine.inputs.fields.FIELDS`) is keyword-only. Each is checked
        as :class:`TrainingScenario` checks it.
        """
        given: dict[str, object] = {
            "workload": model,
            "precision": precision,
            "step_time": step_time,
            "training_time": training_time,
            "per_device_batch": per_device_batch,
            "devices_per_node": devices_per_node,
            "nodes": nodes,
            "intra_bandwidth": intra_bandwidth,
            "accumulation_steps": accumulation_steps,
        }
        # optional inputs left out are None already (their defaults)
        if inter_bandwidth is not None:
            given["inter_bandwidth"] = inter_bandwidth
        if node_hour_rate is not None:
            given["node_hour_rate"] = node_hour_rate
        for name, value in opt_in.items():
            if name in given or name not in OPT_IN:
                known = ", ".join(OPT_IN)
                raise InputError(
                    f"not an opt-in input of solve; the keyword-only inputs are: {known}",
                    loc=(name,),
                    owner=f"{type(self).__name__}.solve",
                )
            if value is not None:
                given[name] = value
        values, numbers, job, _ = checked_inputs(given, type(self).__name__ + ".solve")
        return solve_checked(values, numbers, job)


OPT_IN = tuple(name for name in MODEL_FIELDS if name not in SOLVE_ORDER)
"""The keyword-only inputs of :meth:`DataParallelScaleOutModel.solve`: the field table's
inputs beyond the seed contract's."""


def model_inputs(values: Mapping[str, Value], numbers: Mapping[str, float] | None = None) -> Inputs:
    """The numeric :class:`Inputs` of checked input values (canonical SI floats).

    ``numbers`` are the model numbers the check already computed; without them
    they are computed here. An input not given keeps its Inputs default, its
    neutral value.
    """
    if numbers is None:
        numbers = {
            name: FIELDS[name].to_model(value)
            for name in NUMERIC_FIELDS
            if (value := values.get(name)) is not None
        }
        numbers.update(derived_numbers(values))
    return inputs_of(numbers)


def choices_of(assumptions: Assumptions, zero_stage: int = 0) -> Choices:
    """The plain-value :class:`Choices` of an :class:`Assumptions` object and a ZeRO stage."""
    base = assumptions.choices
    return base if zero_stage == 0 else replace(base, zero_stage=zero_stage)


def solve_checked(
    values: Mapping[str, Value],
    numbers: Mapping[str, float] | None = None,
    job: Job | None = None,
) -> DataParallelScaleOutResult:
    """Evaluate checked inputs (a scenario's, or those :meth:`solve` checked): no check again.

    ``job`` says which inputs were derived (:mod:`mlsysim.engine.inputs.derivation`), for the notes and explain.
    """
    x = model_inputs(values, numbers)
    c = choices_of(values["assumptions"], values["zero_stage"])  # type: ignore[arg-type]
    figures = evaluate(x, c, job.kernels if job is not None else None)
    check_finite(figures)
    return DataParallelScaleOutResult(
        figures, values, c, x, trace=constraint_trace, job=job or plain_job(values)
    )


def check_finite(figures: Figures) -> None:
    """Every float figure must be finite: refuse the inputs instead of returning inf or NaN.

    With inputs inside :data:`mlsysim.core.units.PHYSICAL_RANGE` this never fires; it
    guards combinations (e.g. extreme integers) that the per-field ranges do not bound.
    ``cost`` and ``device_memory`` are NaN when not known (reported as None).
    """
    f = figures
    total = f.update_time + f.training_time + f.speedup + f.memory_per_device + f.communication_time
    if type(total) is float and math.isfinite(total):
        return  # the figures every other one is built from (or builds) are finite: the fast path
    for key, value in zip(figures._fields, figures, strict=True):
        if key in ("cost", "device_memory", "fits"):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(
                f"the inputs give a non-finite {key} ({value}): an input is outside the "
                "range this model is meant for (step_time, bandwidths, nodes, devices_per_node)",
                field=key,
            )


def constraint_trace(r: DataParallelScaleOutResult) -> tuple[str, ...]:
    """Short notes on what limits this layout and which choices applied."""
    from mlsysim.engine.reports.fit_range import fit_range_notes
    from mlsysim.engine.reports.notes import mfu_note, short_run_note

    v, x, c = r.figures, r.model_inputs, r.choices
    fitted = fit_range_notes(r, r.inputs["assumptions"]) + mfu_note(r) + short_run_note(r)  # type: ignore[arg-type]
    if v.layout is not None:
        from mlsysim.engine.reports.notes_layout import layout_notes

        return layout_notes(r) + fitted
    notes = []
    if x.nodes == 1:
        notes.append("one node: no inter-node traffic")
    else:
        nics = f"{x.nics_per_node:g} NIC{'s' if x.nics_per_node != 1 else ''} per node"
        n, d, big_n = int(v.n_devices), int(x.devices_per_node), int(x.nodes)
        over = {
            "ring": f"one flat ring over all {n} devices ({big_n} nodes x {d})",
            "hierarchical": f"hierarchical: each device's 1/{d} shard on a ring over the {big_n} nodes",
            "tree": f"double binary tree over the {big_n} nodes, each device's 1/{d} shard",
        }[r.inter_algorithm]
        notes.append(f"inter-node AllReduce: {over}, {nics}")
    if x.devices_per_node == 1:
        notes.append("one device per node: no intra-node traffic")
    comm = v.communication_time
    if comm > 0 and x.nodes > 1:
        inter_share = v.inter_time / comm
        notes.append(f"the inter-node stage takes {inter_share:.1%} of the communication time")
    notes.append(f"bottleneck: {r.bottleneck}")
    if c.overlap:
        notes.append(
            f"overlap: {v.hidden_communication_time * 1e3:.4g} ms of {comm * 1e3:.4g} ms communication hidden under the backward pass"
        )
    if v.synchronization_time > 0:
        notes.append(f"synchronization adds {v.synchronization_time * 1e3:.4g} ms per update")
    if c.zero_stage:
        notes.append(
            f"ZeRO stage {c.zero_stage}: training state sharded over {r.n_devices} devices"
        )
    if r.fits is not None:
        need, have = v.memory_per_device / 1e9, v.device_memory / 1e9
        verdict = "fits" if r.fits else "does NOT fit"
        notes.append(f"memory: {need:.4g} GB per device {verdict} in {have:.4g} GB")
    job = r.job
    notes.append(memory_note(job, c.zero_stage))
    notes.extend(origins_notes(job))
    notes.extend(sanity_notes(r.inputs, job))
    notes.extend(whole_run_notes(r))
    if v.efficiency < 0.5:
        notes.append(
            f"efficiency {v.efficiency:.1%}: communication dominates; consider accumulation, a faster link or fewer nodes"
        )
    notes.extend(fitted)
    return tuple(notes)
