"""A picture of one optimizer update: per pipeline stage, what the device does when, in seconds.

:func:`timeline` turns a result into rows of :class:`Segment` (start, duration,
kind, label, figure): one row per pipeline stage (one row on the data-parallel
model), each tiling ``[0, update_time]`` with no gap and no overlap, idle time
included as a kind of its own. Every segment is a share of one figure that
``explain()`` prints (its ``figure``: ``compute_time``, ``tensor_parallel_time``,
``bubble_time``, ...), so the segments of a row with one ``figure`` add up to
that figure and the row adds up to ``update_time``
(``tests/engine/test_timeline.py``). Nothing is re-derived: the durations are
the model's own terms, split as the model splits them.

A parallel layout (docs/parallelism.md), with t_c and t_tp one micro-batch's
compute and tensor collectives on the stage, M = v m chunk-units of a
micro-batch on one of the device's v chunks, and S = T_p2p / (2 (M + p - 1))
one stage-to-stage transfer:

* a unit's forward is t_c / (3 v) of compute (the model's t_f = t_c / 3, as
  ZeRO-3's prefetch uses it) and 2 / c of t_tp / v (the forward's two
  all-reduces a layer of c), its backward the rest; under ZeRO-3 the forward's
  exposed gathers c_ag + (L_s - 1) max(0, c_ag - t_f) come before the forward,
  the rest of T_zero3 after the backward; each forward and backward ends with
  one transfer S;
* context parallelism's exposed ring transfers t_cp and expert parallelism's
  exposed all-to-alls t_ep are drawn after each unit's compute, split between
  the forward and the backward as their passes are (the ring: 1 of n_kv = 3, or 4
  with the attention recomputed, in the forward; the all-to-alls: 2 of 4, or 6
  under full recomputation); like t_tp they run in the bubble's slots too
  ((p-1)/v (t_c + t_tp + t_cp + t_ep)), so each row still sums to the update;
* the stages run Megatron-LM's schedule (:func:`schedule`; Narayanan et al.
  2021, section 2.2, Figure 4): 1F1B, or interleaved over the v chunks, each
  forward and backward starting when the unit it needs has ended on the
  neighbouring stage. Stage s waits s forwards for its first micro-batch and
  every stage waits (p - 1) forwards and (p - 1) backwards in all: the model's
  bubble (p - 1)/v (t_c + t_tp) and, in proportion, the 2 (p - 1) transfers of
  the critical path (so each row carries T_p2p = 2 (M + p - 1) S). ZeRO-3's
  exposed part lengthens each unit after the schedule is laid out (the model
  adds m T_zero3 outside the bubble, so a row's ops keep their order, not
  their alignment with the other stages');
* then the data-parallel reduction that is not hidden under the last backward
  (the hidden part is drawn apart, in ``hidden``: it adds nothing), the
  optimizer step, ZeRO-1/2's all-gather of the updated parameters, and the
  synchronisation cost (straggler wait, update overhead).

The data-parallel model: the A micro-steps of T1, the exposed AllReduce (inside
a node and across nodes; without overlap, the DDP first bucket too), the
opt-in costs (interference, bucket copies, the optimizer step) and the
synchronisation cost; with overlap, the hidden AllReduce is drawn under the
last micro-step's backward.

When the step is priced operator by operator (:mod:`mlsysim.physics.operators`),
each compute segment is split into the operator classes (kinds ``matmul``,
``attention``, ``cast``, ``elementwise``) in proportion to their times: the
layout's ``ComputeTerm.operators`` (t_c by class on the slowest stage) where
the layout prices t_c itself from the operators, else the job's
``Job.operators`` (T1 by class: t_c = T1 (L_s / L) / t keeps its shares). The
pieces keep the compute's ``figure`` (``compute_time``), so they still add up
to it. Phases longer than ``max_units`` micro-batches are drawn as one
segment per kind, so a 512-micro-batch update stays a few hundred segments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, NamedTuple

from mlsysim.physics.context_parallel import kv_passes
from mlsysim.physics.experts import all_to_alls_per_layer

if TYPE_CHECKING:
    from mlsysim.engine.reports.view import ResultView

KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "compute": "compute (forward and backward)",
        "matmul": "compute: matrix products of the linear layers",
        "attention": "compute: attention core",
        "cast": "compute: casts to the low-precision format",
        "elementwise": "compute: memory-bound element-wise work",
        "tensor": "tensor-parallel collectives",
        "context": "context-parallel ring (key/value blocks, exposed)",
        "experts": "expert-parallel all-to-alls (exposed)",
        "pipeline": "stage-to-stage transfers",
        "sharding": "ZeRO-3 gathers and reduce-scatters",
        "data": "data-parallel gradient reduction",
        "overhead": "interference and bucket copies",
        "optimizer": "optimizer step",
        "synchronization": "synchronisation (stragglers, overhead)",
        "idle": "idle (pipeline bubble)",
    }
)
"""Every kind of segment, in drawing order, with the words a legend shows."""

MAX_UNITS: Final = 24
"""Phases of more micro-batches than this are drawn as one segment per kind."""


class Segment(NamedTuple):
    """One stretch of a device's update, in seconds from the update's start."""

    start: float
    duration: float
    kind: str
    """One of :data:`KINDS`."""
    label: str
    """What the device does (``"forward, micro-batch 3"``)."""
    figure: str
    """The result figure (a :class:`~mlsysim.engine.model.equations.Figures` field) it is a share of."""

    @property
    def end(self) -> float:
        return self.start + self.duration


class Row(NamedTuple):
    """One pipeline stage's device (or the one device of the data-parallel model)."""

    label: str
    segments: tuple[Segment, ...]
    """Tiling [0, update_time] in order."""
    hidden: tuple[Segment, ...]
    """Communication hidden under compute: drawn over it, not added to the update."""


class Timeline(NamedTuple):
    """The rows of one update, with the update time they tile (seconds)."""

    rows: tuple[Row, ...]
    update_time: float
    stages: int
    """Pipeline stages of the layout (1 on the data-parallel model); ``rows`` may show fewer."""


Piece = tuple[float, str, str, str]  # duration, kind, label, figure

OPERATOR_KINDS: Final = (
    ("matmul", "matrix products"), ("attention", "attention core"), ("cast", "casts"),
    ("elementwise", "element-wise work"),
)
"""The kinds of the operator classes, in :class:`~mlsysim.physics.operators.OperatorTimes`' order, with
the words of their segments' labels."""


def operator_shares(result: ResultView) -> tuple[tuple[str, str, float], ...]:
    """(kind, words, share of the compute) of each operator class with time, or () where the step does not
    come from the operators (see the module docstring)."""
    f = result.figures
    ops = None
    if f.layout is not None:
        rates = f.layout.records.rates
        ceiling, given = float(rates.matmul_ceiling), float(rates.device_step_time)
        if ceiling == ceiling and given != given:  # the layout priced t_c from the operators itself
            ops = f.layout.terms.compute.operators
    job = result.job
    if ops is None and job is not None and job.operators is not None:
        ops = job.operators
    if ops is None:
        return ()
    times = [float(ops.matmul_time), float(ops.attention_time), float(ops.cast_time), float(ops.memory_time)]
    total = math.fsum(times)
    if not total > 0:
        return ()
    return tuple((kind, words, t / total) for (kind, words), t in zip(OPERATOR_KINDS, times, strict=True)
                 if t > 0)


def _compute_pieces(duration: float, label: str, shares: tuple[tuple[str, str, float], ...],
                    figure: str = "compute_time") -> list[Piece]:
    """One compute piece, or one per operator class in proportion to its share (the last takes the rest, so
    the pieces add up to ``duration``)."""
    if not shares:
        return [(duration, "compute", label, figure)]
    head, _, tail = label.partition(", ")
    out: list[Piece] = []
    left = duration
    for k, (kind, words, share) in enumerate(shares):
        piece = left if k == len(shares) - 1 else duration * share
        left -= piece
        out.append((piece, kind, f"{words} ({head}){', ' + tail if tail else ''}", figure))
    return out


def timeline(result: ResultView, *, max_units: int = MAX_UNITS, max_rows: int | None = None) -> Timeline:
    """The timeline of ``result``'s update (see the module's docstring).

    ``max_rows`` keeps that many stages at most (the first, the last and evenly
    spaced ones between: all stages' rows have the same terms).
    """
    f = result.figures
    if f.layout is None:
        rows = [_data_parallel_row(result, max_units)]
        stages = 1
    else:
        stages = int(float(f.layout.records.layout.pipeline_parallel))
        rows = _layout_rows(result, _shown_stages(stages, max_rows), max_units)
    return Timeline(tuple(rows), float(f.update_time), stages)


def _shown_stages(stages: int, max_rows: int | None) -> list[int]:
    if max_rows is None or stages <= max_rows:
        return list(range(stages))
    if max_rows <= 1:
        return [0]
    return sorted({round(i * (stages - 1) / (max_rows - 1)) for i in range(max_rows)})


def _laid(pieces: list[Piece]) -> tuple[Segment, ...]:
    """Pieces placed end to end from 0, those of zero duration left out."""
    out, start = [], 0.0
    for duration, kind, label, figure in pieces:
        if duration > 0:
            out.append(Segment(start, duration, kind, label, figure))
            start += duration
    return tuple(out)


def _phase(ops: list[list[Piece]], name: str, max_units: int, noun: str = "micro-batches") -> list[Piece]:
    """The pieces of a run of ops; more than ``max_units`` of them: one piece per kind of piece
    (its kind, figure and what it is: ``forward``, ``send activations ...``), in the order of the first op."""
    if len(ops) <= max_units:
        return [piece for op in ops for piece in op]
    totals: dict[tuple[str, str, str], float] = {}
    for op in ops:
        for duration, kind, label, figure in op:
            key = (kind, figure, label.split(", ")[0])
            totals[key] = totals.get(key, 0.0) + duration
    return [(d, kind, f"{what} ({name}: {len(ops)} {noun})", figure) for (kind, figure, what), d in totals.items()]


# -- the data-parallel model ----------------------------------------------------------------


def _data_parallel_row(r: ResultView, max_units: int) -> Row:
    f, x, c = r.figures, r.model_inputs, r.choices
    steps = int(round(float(x.accumulation_steps)))
    t1 = float(f.compute_time) / steps  # A x T1, as explain prints it
    shares = operator_shares(r)
    ops = [_compute_pieces(t1, f"forward and backward, micro-step {j + 1}", shares) for j in range(steps)]
    pieces = _phase(ops, "all micro-steps", max_units, "micro-steps")
    exposed, total = float(f.exposed_communication_time), float(f.communication_time)
    if c.overlap:
        pieces.append((exposed, "data", "gradient AllReduce not hidden (after the last backward)",
                       "exposed_communication_time"))
    else:
        pieces += [
            (float(f.intra_time), "data", "gradient AllReduce inside the node", "intra_time"),
            (float(f.inter_time), "data", "gradient AllReduce across nodes", "inter_time"),
            (float(f.first_bucket_time), "data", "DDP's first bucket (one more collective)", "first_bucket_time"),
        ]
    pieces += [
        (float(f.interference_time), "overhead", "compute slowed beside the hidden AllReduce", "interference_time"),
        (float(f.bucket_copy_time), "overhead", "gradients copied into DDP's buckets and back", "bucket_copy_time"),
        (float(f.optimizer_time), "optimizer", "optimizer step", "optimizer_time"),
        (float(f.synchronization_time), "synchronization", "straggler wait and update overhead",
         "synchronization_time"),
    ]
    segments = _laid(pieces)
    hidden: tuple[Segment, ...] = ()
    if c.overlap and total - exposed > 0:
        end = float(f.compute_time)
        length = min(total - exposed, end)
        hidden = (Segment(end - length, length, "data", "gradient AllReduce hidden under the backward",
                          "hidden_communication_time"),)
    return Row("device", segments, hidden)


# -- a parallel layout ----------------------------------------------------------------------


class _Unit(NamedTuple):
    """One chunk-unit's forward and backward: their pieces, and the durations the schedule runs on."""

    forward: float  # compute + tensor collectives + one transfer (ZeRO-3's exposed part is added after)
    backward: float
    wait_share: float  # of a wait, the share that is bubble (the rest: transfers of the critical path)
    pieces_f: tuple[Piece, ...]
    pieces_b: tuple[Piece, ...]


def _unit(r: ResultView) -> tuple[_Unit, int, int, int]:
    f = r.figures
    assert f.layout is not None
    q, a = f.layout.terms, f.layout.records.layout
    p, v = int(float(a.pipeline_parallel)), int(float(a.pipeline_chunks))
    m = int(round(float(a.micro_batches)))
    units = v * m
    t_c, t_tp = float(q.compute.micro_batch_time), float(q.tensor.micro_batch_time)
    c = float(q.tensor.collectives)
    compute_f = t_c / 3.0 / v  # the model's t_f = t_c / 3 (ShardingTerm.layer_forward_time x L_s)
    compute_b = t_c / v - compute_f
    tensor_f = t_tp * 2.0 / c / v if c else 0.0  # two of a layer's c all-reduces are the forward's
    tensor_b = t_tp / v - tensor_f
    recompute = str(a.recompute)
    t_cp, t_ep = float(q.context.micro_batch_time), float(q.experts.micro_batch_time)
    context_f = t_cp / kv_passes(recompute) / v  # one of the ring's n_kv passes is the forward's
    context_b = t_cp / v - context_f
    experts_f = t_ep * 2.0 / all_to_alls_per_layer(recompute) / v  # dispatch and combine of the forward
    experts_b = t_ep / v - experts_f
    zero3 = float(q.sharding.micro_step_time)
    gather, t_f, rest = float(q.sharding.layer_gather_time), float(q.sharding.layer_forward_time), float(q.stage.layers) - 1.0
    zero3_f = min(zero3, gather + rest * max(0.0, gather - t_f)) / v if zero3 > 0 else 0.0
    zero3_b = zero3 / v - zero3_f
    send = float(f.pipeline_transfer_time) / (2.0 * (units + p - 1))
    shares = operator_shares(r)
    pieces_f = (
        (zero3_f, "sharding", "ZeRO-3 gathers not hidden (forward)", "sharding_time"),
        *_compute_pieces(compute_f, "forward", shares),
        (tensor_f, "tensor", "tensor-parallel all-reduces (forward)", "tensor_parallel_time"),
        (context_f, "context", "context-parallel ring, exposed (forward)", "context_parallel_time"),
        (experts_f, "experts", "expert all-to-alls, exposed (forward: dispatch, combine)", "expert_parallel_time"),
        (send, "pipeline", "send activations to the next stage", "pipeline_transfer_time"),
    )
    pieces_b = (
        *_compute_pieces(compute_b, "backward", shares),
        (tensor_b, "tensor", "tensor-parallel all-reduces (backward)", "tensor_parallel_time"),
        (context_b, "context", "context-parallel ring, exposed (backward)", "context_parallel_time"),
        (experts_b, "experts", "expert all-to-alls, exposed (backward)", "expert_parallel_time"),
        (zero3_b, "sharding", "ZeRO-3 gathers and reduce-scatters not hidden (backward)", "sharding_time"),
        (send, "pipeline", "send gradients to the previous stage", "pipeline_transfer_time"),
    )
    slot = (t_c + t_tp + t_cp + t_ep) / v
    unit = _Unit(compute_f + tensor_f + context_f + experts_f + send, compute_b + tensor_b + context_b + experts_b + send,
                 slot / (slot + 2.0 * send) if slot > 0 else 1.0, pieces_f, pieces_b)
    return unit, p, v, m


class _Op(NamedTuple):
    backward: bool
    k: int  # the k-th forward (or backward) of the stage
    start: float


def schedule(stages: int, chunks: int, micro_batches: int, forward: float, backward: float) -> list[list[_Op]]:
    """Megatron-LM's pipeline schedule with every forward taking ``forward`` and every backward ``backward``.

    1F1B (``chunks`` = 1) and interleaved: stage s runs w = min(M, p - s - 1) forwards of its
    M = v m units first (interleaved: (p - s - 1) 2 + (v - 1) p), then one forward and one
    backward in turn, then the last w backwards; the k-th forward is micro-batch
    (k // (p v)) p + k % p on chunk (k % (p v)) // p, the backwards in the same order with the
    chunks reversed (Narayanan et al. 2021, section 2.2; ``forward_backward_pipelining_with(out)_interleaving``).
    A unit's forward starts when the previous stage's (the last stage's, for the next chunk) has
    ended, its backward when the next stage's has; the last stage's last chunk turns the
    forward into the backward. Every stage then ends within (M + p - 1)(forward + backward), and
    each is idle (p - 1)(forward + backward) in all (``tests/engine/test_timeline.py``).
    """
    p, v, units = stages, chunks, chunks * micro_batches
    forwards = [unit_of(k, p, v) for k in range(units)]
    backwards = [unit_of(k, p, v, backward=True) for k in range(units)]
    orders: list[list[tuple[bool, int]]] = []
    for s in range(p):
        warm = min(units, p - s - 1 if v == 1 else (p - s - 1) * 2 + (v - 1) * p)
        order = [(False, k) for k in range(warm)]
        for i in range(units - warm):
            order += [(False, warm + i), (True, i)]
        orders.append(order + [(True, k) for k in range(units - warm, units)])
    ends: dict[tuple[bool, int, int, int], float] = {}  # (backward, micro-batch, chunk, stage) -> end
    waiting: dict[tuple[bool, int, int, int], int] = {}  # an op not yet ended -> the stage waiting for it
    rows: list[list[_Op]] = [[] for _ in range(p)]
    clock = [0.0] * p
    ready = list(range(p - 1, -1, -1))
    while ready:
        s = ready.pop()
        order, row = orders[s], rows[s]
        while len(row) < len(order):
            backward_op, k = order[len(row)]
            mb, chunk = backwards[k] if backward_op else forwards[k]
            if not backward_op:
                dep = (False, mb, chunk, s - 1) if s > 0 else (False, mb, chunk - 1, p - 1) if chunk else None
            elif s < p - 1:
                dep = (True, mb, chunk, s + 1)
            else:
                dep = (True, mb, chunk + 1, 0) if chunk < v - 1 else (False, mb, chunk, s)
            start = clock[s]
            if dep is not None:
                end = ends.get(dep)
                if end is None:
                    waiting[dep] = s  # resumed when dep ends
                    break
                start = max(start, end)
            clock[s] = start + (backward if backward_op else forward)
            key = (backward_op, mb, chunk, s)
            ends[key] = clock[s]
            row.append(_Op(backward_op, k, start))
            resumed = waiting.pop(key, None)
            if resumed is not None and resumed != s:
                ready.append(resumed)
    if any(len(rows[s]) < len(orders[s]) for s in range(p)):  # pragma: no cover - cannot deadlock
        raise RuntimeError(f"pipeline schedule stuck: p={p} v={v} m={micro_batches}")
    return rows


def unit_of(k: int, stages: int, chunks: int, backward: bool = False) -> tuple[int, int]:
    """(micro-batch, chunk) of a stage's k-th forward (or backward), both from 0 (see :func:`schedule`)."""
    group, within = divmod(k, stages * chunks)
    chunk, offset = divmod(within, stages)
    return group * stages + offset, (chunks - 1 - chunk if backward else chunk)


def _op_name(k: int, p: int, v: int, backward: bool) -> str:
    mb, chunk = unit_of(k, p, v, backward)
    return f"micro-batch {mb + 1}" if v == 1 else f"micro-batch {mb + 1}, chunk {chunk + 1}"


def _op(pieces: tuple[Piece, ...], name: str) -> list[Piece]:
    return [(d, kind, f"{label}, {name}", figure) for d, kind, label, figure in pieces]


def _wait(unit: _Unit, length: float, why: str) -> list[Piece]:
    """Idle for ``length``: the bubble's share, and the stage-to-stage transfers of the critical path
    in flight meanwhile (each wait holds them in proportion: a stage waits (p - 1) forwards and
    (p - 1) backwards, each with its transfer)."""
    if length <= 0:
        return []
    idle = length * unit.wait_share
    return [(idle, "idle", why, "bubble_time"),
            (length - idle, "pipeline", f"{why}: transfers in flight", "pipeline_transfer_time")]


def _layout_rows(r: ResultView, shown: list[int], max_units: int) -> list[Row]:
    unit, p, v, m = _unit(r)
    rows = schedule(p, v, m, unit.forward, unit.backward)
    span = (v * m + p - 1) * (unit.forward + unit.backward)  # the model's m (t_c + t_tp + t_cp + t_ep) + bubble + T_p2p
    return [_stage_row(r, unit, rows[s], s, p, v, span, max_units) for s in shown]


def _stage_row(r: ResultView, unit: _Unit, ops: list[_Op], s: int, p: int, v: int, span: float,
               max_units: int) -> Row:
    noun = "micro-batches" if v == 1 else "micro-batch chunks"
    steps: list[list[Piece]] = []
    clock = 0.0
    last_backward = 0.0
    for op in ops:
        why = ("fill: waiting for the first micro-batch" if not steps
               else f"waiting for the next {'backward' if op.backward else 'forward'}")
        name = _op_name(op.k, p, v, op.backward)
        steps.append(_wait(unit, op.start - clock, why)
                     + _op(unit.pieces_b if op.backward else unit.pieces_f, name))
        clock = op.start + (unit.backward if op.backward else unit.forward)
        if op.backward:
            last_backward = clock - unit.pieces_b[-1][0]  # before its transfer
    warm = next(i for i, op in enumerate(ops) if op.backward) - 1  # forwards before the first pair
    cool = warm + 2 * (len(ops) // 2 - warm)  # after the last forward-backward pair
    pairs = [steps[i] + steps[i + 1] for i in range(warm, cool, 2)]
    pieces = (_phase(steps[:warm], "warm-up", max_units, noun)
              + _phase(pairs, "steady 1F1B", max_units, noun)
              + _phase(steps[cool:], "cool-down", max_units, noun)
              + _wait(unit, span - clock, "done: waiting for the last stage"))
    f = r.figures
    assert f.layout is not None
    q = f.layout.terms
    zero3_done = sum(d for d, kind, *_ in pieces if kind == "sharding")  # ZeRO-3's share shifts the row
    gather = float(q.data.scatter_time)  # ZeRO-1/2: the all-gather after the step, as long as the scatter
    pieces += [
        (float(f.data_parallel_time) - gather, "data", "gradient reduction not hidden", "data_parallel_time"),
        (float(f.optimizer_time), "optimizer", "optimizer step", "optimizer_time"),
        (gather, "data", "all-gather of the updated parameters (ZeRO-1/2)", "data_parallel_time"),
        (float(f.synchronization_time), "synchronization", "straggler wait and update overhead",
         "synchronization_time"),
    ]
    segments = _laid(pieces)
    hidden: tuple[Segment, ...] = ()
    hide = float(q.data.hidden_time)
    if hide > 0:
        end = last_backward + zero3_done  # the last backward's end, ZeRO-3's pieces before it included
        length = min(hide, end)
        hidden = (Segment(end - length, length, "data", "gradient reduction hidden under the last backward",
                          "hidden_time"),)
    return Row(f"stage {s + 1}" if p > 1 else "device", segments, hidden)


def figure_of(result: ResultView, name: str) -> float:
    """The value of a segment's ``figure`` (a Figures field, or the layout's ``hidden_time``)."""
    f = result.figures
    if name == "hidden_time":
        assert f.layout is not None
        return float(f.layout.terms.data.hidden_time)
    value = float(getattr(f, name))
    return 0.0 if math.isnan(value) else value
