"""``mlsysim.sweep``: every combination of some scenario fields, evaluated on numpy arrays.

The grid of ``len(axis_1) x ... x len(axis_k)`` layouts is never built as
rows: each numeric axis becomes an array along its own dimension, and
:func:`mlsysim.engine.model.equations.evaluate` (the scalar solve's equations) runs on
them with numpy broadcasting, so a term that depends on two axes is computed
on those two only. Categorical fields (workload, precision, assumptions,
zero_stage) take one ``evaluate`` call per combination of their values; large
grids are evaluated in blocks of about ``chunk_rows`` layouts, which keeps
the temporaries in cache and lets a caller show progress. C order of the grid
is the order of ``itertools.product`` over the axes as given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sized
from types import EllipsisType
from typing import TYPE_CHECKING, cast, overload

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity, ureg
from mlsysim.engine.inputs.fields import FIELDS, MODEL_FIELDS
from mlsysim.engine.model.equations import evaluate
from mlsysim.engine.results import field_unit
from mlsysim.planning.columns import (
    RESULT_COLUMNS,
    TEXT_LABELS,
    Progress,
    column_dtype,
    write_column,
)
from mlsysim.planning.space import Space
from mlsysim.planning.table import Axis, SweepTable

if TYPE_CHECKING:
    from mlsysim.engine.inputs.fields import Value
    from mlsysim.engine.scenario_types import TrainingScenario

DEFAULT_CHUNK_ROWS = 1 << 16
"""Layouts per ``evaluate`` call: small enough for the temporaries to stay in cache."""

@overload
def sweep(
    scenario: TrainingScenario,
    *,
    fields: Iterable[str] | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
    out: None = None,
    max_layouts: int | None = None,
    **axes: Iterable[object],
) -> SweepTable: ...


@overload
def sweep(
    scenario: TrainingScenario,
    *,
    fields: Iterable[str] | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
    out: str | os.PathLike[str],
    max_layouts: int | None = None,
    **axes: Iterable[object],
) -> str: ...


def sweep(
    scenario: TrainingScenario,
    *,
    fields: Iterable[str] | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
    out: str | os.PathLike[str] | None = None,
    max_layouts: int | None = None,
    **axes: Iterable[object],
) -> SweepTable | str:
    """Evaluate ``scenario`` at every combination of the values of ``axes``.

    ``axes`` maps a scenario field to the values it takes, e.g.
    ``nodes=range(1, 257)``, ``inter_bandwidth=[Q_(100, "Gbps"), Q_(400, "Gbps")]``,
    ``precision=["fp16", "fp8"]``, ``assumptions=[Assumptions(), Assumptions.realistic()]``.
    Rows follow ``itertools.product(*axes.values())``. Every value is checked
    once by the scenario's own validator; a combination the scenario would
    reject (several nodes and no ``inter_bandwidth``) raises an
    :class:`~mlsysim.core.exceptions.InputError` naming the offending values:
    nothing is dropped silently.

    ``fields`` limits the result columns (default: every scalar result
    field), ``chunk_rows`` sets the block size, and ``progress(done, total)``
    is called after each block.

    The table is held in memory: a sweep of more than ``max_layouts``
    layouts (default :data:`MAX_SWEEP_LAYOUTS`) is refused before anything is
    allocated, with the memory it would need. ``out="rows.parquet"`` streams
    the rows to a Parquet file instead, block by block (needs pyarrow:
    ``pip install "mlsysim[parquet]"``), in bounded memory and atomically (a
    temporary file renamed when complete), up to :data:`MAX_STREAM_LAYOUTS`
    by default; it returns the path written.

    >>> from mlsysim import Scenarios, Q_, sweep
    >>> table = sweep(Scenarios.Gpt2DataParallelOneNode, nodes=[1, 2, 4],
    ...               inter_bandwidth=[Q_(100, "Gbps"), Q_(400, "Gbps")])
    >>> len(table), table.units["update_time"]
    (6, 'millisecond')
    >>> table["nodes"].tolist()
    [1, 1, 2, 2, 4, 4]
    >>> table["efficiency"].round(4).tolist()
    [0.9936, 0.9936, 0.7959, 0.9355, 0.7906, 0.9337]
    """
    if chunk_rows < 1:
        raise InputError(f"chunk_rows: expected a positive integer, got {chunk_rows!r}")
    columns = _result_columns(fields)
    if out is not None:
        from mlsysim.planning.parquet import write_parquet

        limit = MAX_STREAM_LAYOUTS if max_layouts is None else max_layouts
        check_size(declared_size(axes), limit, what="sweep", columns=columns, to_file=True)
        space = prepare_space(scenario, axes)
        check_size(space.size, limit, what="sweep", columns=columns, to_file=True)
        return write_parquet(space, columns, out, chunk_rows=chunk_rows, progress=progress)
    return sweep_table(
        scenario,
        axes,
        columns=columns,
        chunk_rows=chunk_rows,
        progress=progress,
        max_layouts=max_layouts,
    )


def sweep_table(
    scenario: TrainingScenario,
    axes: Mapping[str, object],
    *,
    columns: tuple[str, ...] = RESULT_COLUMNS,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
    max_layouts: int | None = None,
) -> SweepTable:
    """The in-memory sweep of ``axes`` (a mapping, as :func:`sweep` takes them as keywords)."""
    limit = MAX_SWEEP_LAYOUTS if max_layouts is None else max_layouts
    check_size(declared_size(axes), limit, what="sweep", columns=columns)
    space = prepare_space(scenario, axes)
    check_size(space.size, limit, what="sweep", columns=columns)
    prepared = space.axes
    shape = space.shape
    size = space.size
    out_ = {c: np.empty(shape, dtype=column_dtype(c)) for c in columns}
    done = 0
    for block in space.blocks(chunk_rows):
        for sub in space.sub_blocks(block):
            values = evaluate(sub.inputs, sub.choices, sub.kernels)
            view: tuple[slice | EllipsisType, ...] = (
                *(slice(o, o + n) for o, n in zip(sub.offset, sub.shape, strict=True)),
                Ellipsis,
            )
            for column in columns:
                write_column(column, out_[column][view], values, sub.inputs, sub.algorithm)
        done += len(block)
        if progress is not None:
            progress(min(done, size), size)
    results = {c: out_[c].reshape(-1) for c in columns}
    units = {a.column: a.unit for a in prepared} | {c: field_unit(c) for c in columns}
    labels = {c: TEXT_LABELS[c] for c in columns if c in TEXT_LABELS}
    return SweepTable(base=scenario, axes=prepared, results=results, labels=labels, units=units)


MAX_SWEEP_LAYOUTS = 20_000_000
"""Default limit of an in-memory sweep (about 4 GiB with every column); raise it with ``max_layouts``."""

MAX_AXIS_VALUES = 1_000_000
"""Most values one axis may hold (each is validated on its own: about a second per million)."""

MAX_STREAM_LAYOUTS = 2_000_000_000
"""Default limit of a streamed sweep or plan (minutes on a few cores); raise it with ``max_layouts``."""

STREAM_RATE_PER_WORKER = 5e6
"""Layouts per second one worker streams (plan or Parquet), roughly: for the run-time estimate only."""


def prepare_space(scenario: TrainingScenario, axes: Mapping[str, object]) -> Space:
    """The checked axes of a sweep: every value validated, every combination possible."""
    space = Space(scenario, tuple(_axis(field, values) for field, values in axes.items()))
    space.check_rules()
    return space


def declared_size(axes: Mapping[str, object]) -> int:
    """The number of layouts, from the lengths of the axes that have one (before checking values)."""
    size = 1
    for values in axes.values():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sized):
            continue
        try:
            size *= len(values)
        except TypeError:
            continue
    return size


def bytes_per_row(columns: Iterable[str]) -> int:
    """Memory of one row of an in-memory sweep table (result columns, at their dtypes)."""
    return sum(np.dtype(column_dtype(c)).itemsize for c in columns)


def check_size(
    size: int,
    limit: int,
    *,
    what: str,
    columns: Iterable[str] = (),
    to_file: bool = False,
    workers: int = 1,
) -> None:
    """Refuse a sweep or plan of more than ``limit`` layouts, saying what it would cost.

    In memory the estimate is the table's size; streamed (a plan or a
    Parquet file) it is the run time at :data:`STREAM_RATE_PER_WORKER`.
    """
    if size <= limit:
        return
    if what == "sweep" and not to_file:
        need = size * bytes_per_row(columns)
        raise InputError(
            f"sweep: {size:,} layouts would need about {_bytes(need)} of memory "
            f"(more than the limit of {limit:,} layouts); write the rows to a file instead "
            "(out='rows.parquet', or --parquet FILE), keep fewer columns (fields=...), "
            "or raise the limit (max_layouts=..., or --max-layouts N)",
            field="max_layouts",
        )
    seconds = size / (STREAM_RATE_PER_WORKER * max(workers, 1))
    disk = f" and about {_bytes(size * bytes_per_row(columns))} of disk" if to_file else ""
    raise InputError(
        f"{what}: {size:,} layouts would take about {_duration(seconds)} "
        f"on {max(workers, 1)} worker(s){disk} (more than the limit of {limit:,} layouts); "
        "narrow the axes or raise the limit (max_layouts=..., or --max-layouts N)",
        field="max_layouts",
    )


def _bytes(n: float) -> str:
    if n < 1024:
        return f"{n:,.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            break
    return f"{n:,.3g} {unit}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 172800:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


# -- axes ------------------------------------------------------------------------------


def _axis(field: str, values: object) -> Axis:
    """Check an axis and every value on it; the values as the scenario holds them."""
    allowed = tuple(name for name in MODEL_FIELDS if FIELDS[name].kind != "text")  # a file is not an axis
    if field not in allowed:
        raise InputError(
            f"sweep: cannot sweep {field!r}; sweepable fields: {', '.join(allowed)}", field=field
        )
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InputError(
            f"sweep axis {field}: expected a list or range of values, got {values!r}", field=field
        )
    try:
        count = len(values)  # type: ignore[arg-type]
    except TypeError:
        count = 0
    if count > MAX_AXIS_VALUES:
        raise InputError(
            f"sweep axis {field}: {count:,} values, more than the {MAX_AXIS_VALUES:,} an axis "
            "may hold (each value is checked one by one); use a coarser step",
            field=field,
        )
    check = FIELDS[field].validate
    checked = []
    for value in _items(values):
        try:
            checked.append(check(value))
        except InputError as exc:
            raise InputError(f"sweep axis {field}, value {value!r}: {exc}", field=field) from None
    if not checked:
        raise InputError(f"sweep axis {field}: no values given", field=field)
    column = f"input_{field}" if field in RESULT_COLUMNS else field
    values_t = tuple(checked)
    f = FIELDS[field]
    if f.kinds.labelled:
        return Axis(field, column, values_t, labels=tuple(f.kinds.label(f, v) for v in values_t))
    return Axis(field, column, values_t, *_magnitudes(values_t))


def _items(values: Iterable[object]) -> Iterator[object]:
    if isinstance(values, Quantity) and np.ndim(values.magnitude) == 1:
        units = values.units
        return (ureg.Quantity(m, units) for m in values.magnitude.tolist())
    if isinstance(values, np.ndarray):
        return iter(values.tolist())
    return iter(values)


def _magnitudes(values: tuple[Value, ...]) -> tuple[str | None, np.ndarray]:
    """Numbers of a numeric axis: Quantities in the unit of the first one, None as NaN."""
    first = next((v for v in values if v is not None), None)
    if isinstance(first, Quantity):
        units = first.units
        # a checked quantity axis holds Quantities of one dimension (or None) only
        quantities = cast("tuple[Quantity | None, ...]", values)
        numbers = [math.nan if v is None else float(v.to(units).magnitude) for v in quantities]
        return f"{units}", np.asarray(numbers, dtype=float)
    if any(v is None for v in values):
        return None, np.asarray([math.nan if v is None else v for v in values], dtype=float)
    return None, np.asarray(values, dtype=np.int64)


def _text(value: object) -> str:
    return f"{value:~P}" if isinstance(value, Quantity) else str(value)


# -- evaluation ------------------------------------------------------------------------


def _result_columns(fields: Iterable[str] | None) -> tuple[str, ...]:
    if fields is None:
        return RESULT_COLUMNS
    chosen = tuple(fields) if not isinstance(fields, str) else (fields,)
    unknown = [f for f in chosen if f not in RESULT_COLUMNS]
    if unknown:
        raise InputError(
            f"sweep: unknown result field(s) {', '.join(unknown)}; known: {', '.join(RESULT_COLUMNS)}",
            field="fields",
        )
    return tuple(f for f in RESULT_COLUMNS if f in chosen)


def take_rows(space: Space, indices: Iterable[int] | np.ndarray) -> SweepTable:
    """A table of some layouts of ``space`` (sorted grid indices), every result column.

    The layouts are evaluated again, as 1-D arrays grouped by categorical
    values: the same ``evaluate`` and the same conversions as :func:`sweep`,
    so each row equals the row the full sweep would have.
    """
    rows = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
    rows = rows.astype(np.int64)
    columns = RESULT_COLUMNS
    results = {c: np.empty(rows.size, dtype=column_dtype(c)) for c in columns}
    for selected, sub in space.rows(rows):
        values = evaluate(sub.inputs, sub.choices, sub.kernels)
        for column in columns:
            part = np.empty(selected.size, dtype=column_dtype(column))
            write_column(column, part, values, sub.inputs, sub.algorithm)
            results[column][selected] = part
    units = {a.column: a.unit for a in space.axes} | {c: field_unit(c) for c in columns}
    labels = {c: TEXT_LABELS[c] for c in columns if c in TEXT_LABELS}
    return SweepTable(
        base=space.base, axes=space.axes, results=results, labels=labels, units=units, rows=rows
    )
