"""The design space of a sweep, cut into contiguous blocks that any process can evaluate alone.

A :class:`Space` is a scenario and its checked axes; its grid has
``prod(len(axis))`` layouts in ``itertools.product`` order (C order). A
:class:`Block` is a contiguous run of that order which is also a box of the
grid: single indices on the leading dimensions, a range on one dimension and
the trailing dimensions whole, so a block is described by a few integers and
can be sent to a worker process or a Dask worker as it is.

Inside a block, each combination of categorical values (workload, precision,
assumptions, zero_stage) is one :func:`mlsysim.engine.model.equations.evaluate` call on
numpy arrays: the numeric axes enter as arrays along their own dimensions and
broadcast, so a term that depends on two axes is computed on those two only.
These are the equations of the scalar solve; nothing here repeats them.
"""

from __future__ import annotations

import itertools
import math
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.formatting import fmt_given
from mlsysim.core.units import to_canonical
from mlsysim.engine.inputs.derivation import derive_inputs, sweep_base
from mlsysim.engine.inputs.fields import CATEGORICAL_FIELDS, FIELDS
from mlsysim.engine.inputs.rules import RULES
from mlsysim.engine.model.equations import Choices, Figures, Inputs, evaluate
from mlsysim.engine.solvers.data_parallel import choices_of, model_inputs
from mlsysim.physics.records import KernelConstants, LayoutRecords
from mlsysim.planning.table import Axis

if TYPE_CHECKING:
    from mlsysim.engine.inputs.fields import Value
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.physics._array import Num


@dataclass(frozen=True)
class Block:
    """Layouts ``start <= i < stop`` of the grid; ``index`` is the same box as one slice per axis."""

    start: int
    stop: int
    index: tuple[slice, ...]

    def __len__(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class SubBlock:
    """One ``evaluate`` call inside a block: fixed categorical values, numeric ranges.

    ``offset`` and ``shape`` place it in the grid (one entry per axis); the
    arrays ``figures`` returns broadcast to ``shape``.
    """

    offset: tuple[int, ...]
    shape: tuple[int, ...]
    choices: Choices
    algorithm: str
    inputs: Inputs
    kernels: KernelConstants | None = None
    """The device's measured kernels of the group's scenario (a step from the operators)."""
    rows: np.ndarray | None = None
    """Where only the layouts that obey the layout rules are evaluated (:meth:`Space.sub_blocks`): their
    grid indices, in grid order (``shape`` is then ``(len(rows),)``); None for a box of the grid."""
    box: int = -1
    """How many layouts of the grid the sub-block stands for: its box, those it does not evaluate included
    (-1: ``size``)."""

    @property
    def size(self) -> int:
        """Layouts evaluated."""
        return math.prod(self.shape)

    @property
    def layouts(self) -> int:
        """Layouts of the grid it covers (evaluated or broken by a layout rule)."""
        return self.size if self.box < 0 else self.box

    def grid_index(self, positions: np.ndarray, grid_shape: tuple[int, ...]) -> np.ndarray:
        """Flat grid indices of flat (C order) positions inside this sub-block."""
        if self.rows is not None:
            return self.rows[np.asarray(positions, dtype=np.int64)]
        if not self.shape:
            return np.zeros(np.shape(positions), dtype=np.int64)
        local = np.unravel_index(np.asarray(positions, dtype=np.int64), self.shape)
        coords = tuple(c + o for c, o in zip(local, self.offset, strict=True))
        return np.ravel_multi_index(coords, grid_shape).astype(np.int64)


_Group = tuple[dict[str, "Num"], Choices, str, KernelConstants | None]
"""A combination of categorical values: its base inputs, choices, algorithm and measured kernels."""


class _Rows:
    """The layouts of one combination of categorical values that obey the rules, gathered box by box."""

    def __init__(self, group: _Group) -> None:
        self.group = group
        self.fixed: dict[str, Num] = {}
        """The inputs that do not vary from row to row, once derived."""
        self.parts: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []
        self.count = 0
        """Rows gathered and not yet taken."""
        self.broken = 0
        """Layouts of the boxes gathered that break a rule, not yet counted in a call."""

    def add_box(
        self, kept: np.ndarray, arrays: dict[str, Num], box: tuple[tuple[int, ...], tuple[int, ...]],
        grid_shape: tuple[int, ...], most: int,
    ) -> Iterator[SubBlock]:
        """Gather the layouts ``kept`` (flat positions) of a box (its offset and shape in the grid), the rest
        broken; yield calls of ``most`` rows as they fill. The inputs are derived on the box (each figure
        over the axes it reads), then taken row by row, a call's worth at a time."""
        offset, shape = box  # the box's place in the grid
        varying: dict[str, np.ndarray] = {}
        if kept.size:
            inputs = derived(Inputs(**arrays), self.group[3])
            for name in Inputs.__dataclass_fields__:
                value = getattr(inputs, name)
                if np.ndim(value):
                    varying[name] = value
                else:
                    self.fixed[name] = value  # the same in every box of the group
        self.broken += math.prod(shape) - kept.size
        strides = np.cumprod((1, *grid_shape[:0:-1]))[::-1]  # of the grid, in C order
        first = int(np.dot(offset, strides))
        spans = [d for d, n in enumerate(shape) if n > 1]
        for start in range(0, kept.size, most):
            coords = np.unravel_index(kept[start : start + most], shape)
            at = sum((coords[d] * int(strides[d]) for d in spans), np.full(coords[0].shape, first, dtype=np.int64))
            self.parts.append((at, {name: _take(value, coords) for name, value in varying.items()}))
            self.count += coords[0].size
            yield from self.take(most)

    def take(self, most: int) -> Iterator[SubBlock]:
        """``evaluate`` calls of ``most`` rows each while that many are gathered (all of them when ``most`` is 0);
        the first carries the layouts the rules broke (one with no rows: only those)."""
        if not self.count or self.count < most:
            if not most and self.broken:
                yield self._sub_block(np.empty(0, dtype=np.int64), {})
            return
        base_rows = np.concatenate([r for r, _ in self.parts]).astype(np.int64)
        columns = {k: np.concatenate([c[k] for _, c in self.parts]) for k in self.parts[0][1]}
        cut = base_rows.size if not most else most * (base_rows.size // most)
        for start in range(0, cut, most or cut):
            stop = start + (most or cut)
            yield self._sub_block(base_rows[start:stop], {k: v[start:stop] for k, v in columns.items()})
        self.parts = [(base_rows[cut:], {k: v[cut:] for k, v in columns.items()})] if cut < base_rows.size else []
        self.count = base_rows.size - cut

    def _sub_block(self, rows: np.ndarray, columns: dict[str, np.ndarray]) -> SubBlock:
        base, choices, algorithm, kernels = self.group
        box, self.broken = rows.size + self.broken, 0
        inputs = Inputs(**{**base, **self.fixed, **columns})
        return SubBlock((), (rows.size,), choices, algorithm, inputs, kernels, rows, box)


@dataclass
class Space:
    """A scenario and its checked axes: the grid a sweep or a plan walks through.

    Build it with :func:`mlsysim.planning.sweep.prepare_space` (which checks
    every value); it pickles, so worker processes and Dask workers rebuild
    the same blocks from it.
    """

    base: TrainingScenario
    axes: tuple[Axis, ...]
    _groups: dict[tuple[int, ...], _Group] = field(
        default_factory=dict, repr=False, compare=False
    )
    _canonical: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _scenarios: dict[tuple[int, ...], TrainingScenario] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        layout = getattr(self.base, "pipeline_layout", None)
        swept = [a.field for a in self.axes if a.field in ("pipeline_parallel", "pipeline_chunks")]
        if layout is not None and swept:  # the layout text places the layers for its own p and v only
            raise InputError(
                f"an axis over {swept[0]} with pipeline_layout ({layout}) given: the layout places the layers "
                "on its own pipeline ranks; leave pipeline_layout out to vary the pipeline, or give one layout "
                "per run", field=swept[0],
            )

    def __reduce__(self) -> tuple[Callable[[bytes], Space], tuple[bytes]]:
        # caches are rebuilt where used; Quantities must come back in mlsysim's registry
        return _restore_space, (pickle.dumps((self.base, self.axes)),)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def axis_values(self) -> dict[str, tuple[Value, ...]]:
        """The axes as ``field -> values``, as :func:`mlsysim.sweep` takes them."""
        return {a.field: a.values for a in self.axes}

    # -- blocks --------------------------------------------------------------------------

    def blocks(self, target: int) -> list[Block]:
        """The grid in contiguous blocks of at most about ``target`` layouts, in order."""
        return list(_contiguous_blocks(self.shape, target))

    def sub_blocks(self, block: Block) -> Iterator[SubBlock]:
        """The ``evaluate`` calls of a block: one per combination of its categorical values."""
        for picks in self._picks(block):
            offset, shape, arrays, (_, choices, algorithm, kernels) = self._box(block.index, picks)
            yield SubBlock(offset, shape, choices, algorithm, derived(Inputs(**arrays), kernels), kernels)

    def layout_sub_blocks(self, blocks: Iterable[Block], rows: int) -> Iterator[SubBlock]:
        """The ``evaluate`` calls of some blocks of a space of parallel layouts: only the layouts that obey
        the layout rules, as rows.

        The rules (:func:`~mlsysim.physics.layout.layout_mask`) run first, on each box's arrays of the axes
        they read (devices, t, cp, p, v, ep, etp, m: nothing is priced); the layouts they keep are gathered
        per combination of categorical values, across blocks, into calls of about ``rows`` layouts (the
        last of each combination fewer; one with none stands for the layouts its boxes held, all broken).
        """
        if not self.shape:  # nothing swept: one layout, as a box
            for block in blocks:
                yield from self.sub_blocks(block)
            return
        from mlsysim.engine.model.equations import layout_records
        from mlsysim.physics.layout import layout_mask

        pending: dict[tuple[int, ...], _Rows] = {}
        for block in blocks:
            masks: dict[tuple[object, ...], np.ndarray] = {}  # the combinations often share the rules' inputs
            for picks in self._picks(block):
                offset, shape, arrays, group = self._box(block.index, picks)
                rules = _rules_arguments(layout_records(Inputs(**arrays), group[1], group[3]))
                key = tuple((v.shape, v.tobytes()) if isinstance(v, np.ndarray) else repr(v) for v in rules.values())
                if key not in masks:
                    masks[key] = np.flatnonzero(np.broadcast_to(layout_mask(**rules), shape))
                gathered = pending.setdefault(tuple(picks[p] for p in sorted(picks)), _Rows(group))
                yield from gathered.add_box(masks[key], arrays, (offset, shape), self.shape, rows)
        for gathered in pending.values():
            yield from gathered.take(0)

    def _picks(self, block: Block) -> Iterator[dict[int, int]]:
        """The combinations of categorical values of a block, as {axis position: value index}."""
        categorical = [p for p, a in enumerate(self.axes) if a.field in CATEGORICAL_FIELDS]
        ranges = [range(*block.index[p].indices(self.shape[p])) for p in categorical]
        for picks in itertools.product(*ranges):
            yield dict(zip(categorical, picks, strict=True))

    def _box(
        self, index: tuple[slice, ...], picks: dict[int, int]
    ) -> tuple[tuple[int, ...], tuple[int, ...], dict[str, Num], _Group]:
        """A box of the grid with fixed categorical values: its offset and shape in the grid, its inputs (the
        numeric axes as arrays along their own dimensions, the group's values elsewhere) and its group."""
        key = tuple(picks[p] for p in sorted(picks))
        group = self._group(key, picks)
        base = group[0]
        arrays = dict(base)
        ndim = len(self.axes)
        offset, shape = [], []
        for p, axis in enumerate(self.axes):
            if p in picks:
                offset.append(picks[p])
                shape.append(1)
                continue
            start, stop, _ = index[p].indices(self.shape[p])
            values = _given_or(self._numeric(p)[start:stop], base[axis.field])
            dims = [1] * ndim
            dims[p] = len(values)
            arrays[axis.field] = values.reshape(dims)
            offset.append(start)
            shape.append(stop - start)
        return tuple(offset), tuple(shape), arrays, group

    def group_inputs(self) -> Iterator[dict[str, Num]]:
        """The base inputs of every combination of categorical values (one ``evaluate`` group each)."""
        categorical = [p for p, a in enumerate(self.axes) if a.field in CATEGORICAL_FIELDS]
        for picks in itertools.product(*(range(self.shape[p]) for p in categorical)):
            yield self._group(picks, dict(zip(categorical, picks, strict=True)))[0]

    def group_scenario(self, picks: dict[int, int]) -> TrainingScenario:
        """The scenario of one combination of categorical values, every axis its newest layer.

        The axes are laid over the base as ``variant`` lays its changes (later
        words win): a categorical axis with its value, a numeric axis with one
        of its values (None where the axis has it: derive there), so a swept
        input replaces what the base said for it and a swept source (``mfu``)
        derives what it fills, exactly as the scalar ``variant`` of each row.
        The rules between inputs are checked over the grid (:meth:`check_rules`).
        """
        key = tuple(picks[p] for p in sorted(picks))
        found = self._scenarios.get(key)
        if found is None:
            changes: dict[str, object] = {}
            for p, axis in enumerate(self.axes):
                if p in picks:
                    changes[axis.field] = axis.values[picks[p]]
                else:
                    changes[axis.field] = None if None in axis.values else axis.values[0]
            found = self._scenarios[key] = self.base._layered(changes, rules=False)
        return found

    def _group(self, key: tuple[int, ...], picks: dict[int, int]) -> _Group:
        found = self._groups.get(key)
        if found is None:
            group = self.group_scenario(picks)
            choices = choices_of(group.assumptions, group.zero_stage)
            job = group.job
            found = ({**base_inputs(group), **sweep_base(job)}, choices, choices.algorithm, job.kernels)
            self._groups[key] = found
        return found

    def check_rules(self) -> None:
        """The rules between inputs over the whole grid; an error counts the layouts that break one.

        Each group (a combination of categorical values) is resolved once, for the
        rules and for the blocks alike (:meth:`group_scenario` keeps it); the
        rule's ``broken`` runs on the numeric axes as arrays along their own
        dimensions (the same expression the scalar check evaluates).
        """
        categorical = [p for p, a in enumerate(self.axes) if a.field in CATEGORICAL_FIELDS]
        numeric = {a.field: p for p, a in enumerate(self.axes) if p not in categorical}
        ndim = len(self.axes)
        groups = [
            self.group_scenario(dict(zip(categorical, picks, strict=True))).fields()
            for picks in itertools.product(*(range(self.shape[p]) for p in categorical))
        ]
        for rule in RULES:
            broken_count, on_count, example, example_values = 0, 0, None, groups[0]
            for values in groups:
                operands = []
                for name, read in zip(rule.fields, rule.reads, strict=True):
                    p = numeric.get(name)
                    if p is None:
                        operands.append(np.asarray(read(values.get(name))))
                        continue
                    shape = [1] * ndim
                    shape[p] = self.shape[p]
                    column = [read(values.get(name) if v is None else v) for v in self.axes[p].values]
                    operands.append(np.asarray(column).reshape(shape))
                broken = np.asarray(rule.broken(*operands), dtype=bool)
                rest = math.prod(
                    self.shape[p]
                    for p in range(ndim)
                    if p not in categorical and self.axes[p].field not in rule.fields
                )
                grid = np.broadcast_shapes(broken.shape, *(np.shape(o) for o in operands))
                if rule.inert:  # the combinations that give the input at all
                    on_count += int(np.broadcast_to(np.asarray(operands[0], dtype=bool), grid).sum()) * rest
                if not broken.any():
                    continue
                full = np.broadcast_to(broken, grid)
                broken_count += int(full.sum()) * rest
                if example is None:
                    where = np.argwhere(full)[0] if full.ndim else ()
                    example = _example(rule.fields, values, self.axes, numeric, where)
                    example_values = {  # the example's own row: its message names its figures
                        **values, **{name: self.axes[p].values[int(where[p])] for name, p in numeric.items()
                                     if name in rule.fields and len(where)},
                    }
            if broken_count and not (rule.inert and broken_count < on_count):
                raise InputError(
                    f"sweep: {broken_count} of {self.size} combinations have {rule.phrase} "
                    f"(e.g. {example}): {rule.message(example_values)}",
                    field=rule.loc,
                    type="rule",
                    ctx={"fields": rule.fields, "layouts": broken_count},
                )
        self._check_steps_within_peak(categorical, numeric)

    def _check_steps_within_peak(self, categorical: list[int], numeric: dict[str, int]) -> None:
        """Refuse the combinations whose given step time is shorter than their model FLOPs at the peak (a model
        FLOPs utilisation b F / (P T1) above 1), as the scalar solve refuses one
        (:mod:`mlsysim.engine.inputs.derivation`): the steps and batches of the axes over each group's FLOPs
        and peak."""
        ndim = len(self.axes)
        count, example = 0, ""
        for picks in itertools.product(*(range(self.shape[p]) for p in categorical)):
            group = self.group_scenario(dict(zip(categorical, picks, strict=True)))
            job = group.job
            if not job.flops_per_sample > 0 or not job.peak_flops > 0:
                continue
            operands = []
            for name, unit in (("step_time", "s"), ("per_device_batch", None)):
                p = numeric.get(name)
                if p is None:
                    value = getattr(group, name)
                    if name == "step_time" and job.derives("step_time"):
                        value = None
                    operands.append(np.asarray(_number(value, unit)))
                    continue
                shape = [1] * ndim
                shape[p] = self.shape[p]
                operands.append(np.asarray([_number(v, unit) for v in self.axes[p].values]).reshape(shape))
            step, batch = operands
            implied = batch * job.flops_per_sample / (job.peak_flops * step)
            over = np.broadcast_to(implied > 1.0, np.broadcast_shapes(step.shape, batch.shape))
            if not over.any():
                continue
            rest = math.prod(
                self.shape[p] for p in range(ndim)
                if p not in categorical and self.axes[p].field not in ("step_time", "per_device_batch")
            )
            count += int(over.sum()) * rest
            if not example:
                where = np.argwhere(over)[0] if over.ndim else ()
                picked = {p: self.axes[p].values[int(where[p])] for p in numeric.values()
                          if len(where) and self.axes[p].field in ("step_time", "per_device_batch")}
                shown = ", ".join(f"{self.axes[p].field}={fmt_given(v)}" for p, v in picked.items())
                example = f"{shown + ' on ' if shown else ''}{job.peak_flops / 1e12:g} Tflop/s"
        if count:
            raise InputError(
                f"sweep: {count} of {self.size} combinations have a step_time shorter than one step's model FLOPs "
                f"at the accelerator's peak (e.g. {example}): a model FLOPs utilisation above 1; give a step_time "
                "measured at each batch and node, or mfu",
                field="step_time",
                type="rule",
                ctx={"fields": ("step_time", "per_device_batch"), "layouts": count},
            )

    def _numeric(self, position: int) -> np.ndarray:
        values = self._canonical.get(position)
        if values is None:
            axis = self.axes[position]
            values = np.asarray([axis_number(axis.field, v) for v in axis.values])
            self._canonical[position] = values
        return values

    # -- single rows ---------------------------------------------------------------------

    def rows(
        self, grid_indices: Sequence[int] | np.ndarray
    ) -> Iterator[tuple[np.ndarray, SubBlock]]:
        """``(positions, sub-block)`` evaluating the given layouts, grouped by categorical values.

        Each sub-block holds its layouts as 1-D arrays (no broadcasting), so
        its figures come back in the order of ``grid_indices[positions]``.
        """
        flat = np.asarray(grid_indices, dtype=np.int64)
        if flat.size == 0:
            return
        coords = np.unravel_index(flat, self.shape) if self.shape else ()
        categorical = [p for p, a in enumerate(self.axes) if a.field in CATEGORICAL_FIELDS]
        keys = np.stack([coords[p] for p in categorical], axis=1) if categorical else None
        groups = np.unique(keys, axis=0) if keys is not None else [()]
        for key in groups:
            selected = (
                np.flatnonzero((keys == key).all(axis=1))
                if keys is not None
                else np.arange(flat.size)
            )
            picks = {p: int(i) for p, i in zip(categorical, key, strict=True)}
            base, choices, algorithm, kernels = self._group(tuple(picks[p] for p in sorted(picks)), picks)
            arrays = dict(base)
            for p, axis in enumerate(self.axes):
                if p not in picks:
                    arrays[axis.field] = _given_or(self._numeric(p)[coords[p][selected]], base[axis.field])
            yield (
                selected,
                SubBlock((), (len(selected),), choices, algorithm, derived(Inputs(**arrays), kernels), kernels),
            )


def _rules_arguments(records: LayoutRecords) -> dict[str, Num]:
    """The keyword arguments of :func:`~mlsysim.physics.layout.layout_mask` for the layout of ``records``
    (floats, or arrays that broadcast over a box): its structure only, nothing priced."""
    shape, cluster, layout = records.shape, records.cluster, records.layout
    return dict(
        devices=cluster.devices, tensor_parallel=layout.tensor_parallel,
        pipeline_parallel=layout.pipeline_parallel, heads=shape.heads, layers=shape.layers,
        micro_batches=layout.micro_batches, pipeline_chunks=layout.pipeline_chunks,
        context_parallel=layout.context_parallel, seq_len=shape.seq_len,
        experts=0.0 if shape.moe is None else shape.moe.experts, expert_parallel=layout.expert_parallel,
        expert_tensor_parallel=layout.expert_tensor_parallel, shard_group=layout.shard_group,
        first_stage_layers=layout.first_stage_layers, last_stage_layers=layout.last_stage_layers,
        layout_stages=layout.layout_stages, layout_ranks=layout.layout_ranks,
    )


def _take(values: np.ndarray, coords: tuple[np.ndarray, ...]) -> np.ndarray:
    """The entries of ``values`` (an array that broadcasts over a box) at the box's positions ``coords``, as rows."""
    values = np.asarray(values)
    shape = (1,) * (len(coords) - values.ndim) + values.shape
    taken = values.reshape(shape)[tuple(c if n > 1 else 0 for c, n in zip(coords, shape, strict=True))]
    return np.broadcast_to(taken, coords[0].shape)


def _number(value: object, unit: str | None) -> float:
    """A step time in seconds or a batch as a float; NaN where not given (None: derived)."""
    if value is None:
        return math.nan
    if unit is None:
        return float(value)  # type: ignore[arg-type]
    return float(to_canonical(value, "time"))


def _example(
    fields: tuple[str, ...],
    values: dict[str, Value],
    axes: tuple[Axis, ...],
    numeric: dict[str, int],
    where: np.ndarray | tuple[()],
) -> str:
    """``nodes=4, inter_bandwidth=None``: a layout that breaks a rule."""
    parts = []
    for name in fields:
        p = numeric.get(name)
        value = values.get(name) if p is None or not len(where) else axes[p].values[int(where[p])]
        parts.append(f"{name}={'None' if value is None else fmt_given(value)}")
    return ", ".join(parts)


def _restore_space(payload: bytes) -> Space:
    """Unpickle a :class:`Space` with its Quantities in mlsysim's unit registry.

    pint rebuilds a pickled Quantity in its *application* registry, which does
    not know mlsysim's units (``param``); it is set to mlsysim's for the load
    only (in a worker process or on a Dask worker) and restored after.
    """
    import pint

    from mlsysim.core.units import ureg

    previous = pint.application_registry.get()
    pint.application_registry.set(ureg)
    try:
        base, axes = pickle.loads(payload)
    finally:
        pint.application_registry.set(previous)
    return Space(base, axes)


def figures(sub: SubBlock) -> Figures:
    """The figures of a sub-block: :func:`mlsysim.engine.model.equations.evaluate`, the scalar solve's equations."""
    return evaluate(sub.inputs, sub.choices, sub.kernels)


def figure(values: Figures, name: str) -> Num:
    """One figure out of what :func:`figures` returned (a :class:`Figures` tuple)."""
    figure_value: Num = getattr(values, name)
    return figure_value


def base_inputs(scenario: TrainingScenario) -> dict[str, Num]:
    """The scenario's inputs in canonical units, as the scalar solve builds them."""
    x = model_inputs(scenario.inputs())
    return {name: getattr(x, name) for name in Inputs.__dataclass_fields__}


def axis_number(field: str, value: Value) -> float:
    """The model number of an axis value; None (left out) is NaN: the group's value is taken there."""
    if value is None:
        return math.nan
    return FIELDS[field].to_model(value)


def _given_or(values: np.ndarray, group_value: Num) -> np.ndarray:
    """An axis's numbers, with the group's number where the axis says None.

    The group is resolved with None for such an axis (:meth:`Space.group_scenario`),
    so its number is what ``variant(field=None)`` gives: a preset's figure, the
    input's neutral value, or NaN where the layout derives it.
    """
    missing = np.isnan(values)
    if not missing.any():
        return values
    return np.where(missing, group_value, values)


def derived(x: Inputs, kernels: KernelConstants | None = None) -> Inputs:
    """:func:`~mlsysim.engine.inputs.derivation.derive_inputs`; a time left to derive with nothing to derive it from is an error."""
    derive_inputs(x, kernels)
    for name in ("step_time", "training_time"):
        if np.isnan(getattr(x, name)).any():
            raise InputError(
                f"sweep: {name}=none on an axis, and the scenario has nothing to derive it from "
                "(step_time: mfu with a node or accelerator, or no step_time in the scenario itself to "
                "price it from the operators; training_time: training_tokens or training_samples)",
                field=name,
            )
    return x


def _contiguous_blocks(shape: tuple[int, ...], target: int) -> Iterator[Block]:
    """Boxes of the grid that are also contiguous runs of its C order, each about ``target``.

    The trailing dimensions whose product fits in ``target`` are taken whole,
    the one before them in steps, and any earlier ones one index at a time.
    """
    m = len(shape)
    if m == 0:
        yield Block(0, 1, ())
        return
    if math.prod(shape) == 0:
        return
    inner, k = 1, m
    while k > 0 and inner * shape[k - 1] <= target:
        k -= 1
        inner *= shape[k]
    if k == 0:
        yield Block(0, inner, tuple(slice(0, s) for s in shape))
        return
    j = k - 1
    step = max(1, target // inner)
    whole = tuple(slice(0, s) for s in shape[j + 1 :])
    stride = inner * shape[j]
    for number, prefix in enumerate(itertools.product(*(range(s) for s in shape[:j]))):
        head = tuple(slice(i, i + 1) for i in prefix)
        for start in range(0, shape[j], step):
            stop = min(start + step, shape[j])
            first = number * stride + start * inner
            yield Block(first, first + (stop - start) * inner, (*head, slice(start, stop), *whole))
