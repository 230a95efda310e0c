"""``sweep(..., out="rows.parquet")``: every row of a sweep streamed to a Parquet file.

The grid is written in contiguous blocks (:meth:`Space.blocks`), each filled
the way the in-memory sweep fills its table (the same ``_write`` of the
same ``evaluate`` figures), so the file holds exactly the rows and columns
:func:`mlsysim.sweep` would return, in the same order, in memory bounded by
one block. Text columns are dictionary-encoded; each column's unit is in its
field metadata (``unit``) and in the schema metadata (``units``, JSON).

The file appears under its name only when complete: it is written to a
temporary file in the same folder and renamed at the end; an error or
Ctrl-C removes the temporary file.
"""

from __future__ import annotations

import json
import os
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from mlsysim.core.exceptions import MissingDependencyError
from mlsysim.engine.results import field_unit
from mlsysim.planning.space import Block, Space, figures

if TYPE_CHECKING:
    import pyarrow

    from mlsysim.planning.columns import Progress


def _pyarrow() -> tuple[ModuleType, ModuleType]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError(
            'writing a sweep to Parquet needs pyarrow: pip install "mlsysim[parquet]"'
        ) from None
    return pa, pq


def schema(space: Space, columns: tuple[str, ...]) -> pyarrow.Schema:
    """The Parquet schema: the axis columns, then the result columns, with units."""
    from mlsysim.planning.columns import TEXT_LABELS, column_dtype

    pa, _ = _pyarrow()
    fields, units = [], {}
    for axis in space.axes:
        if axis.labels is not None:
            kind = pa.dictionary(pa.int32(), pa.string())
        else:
            kind = pa.from_numpy_dtype(axis.magnitudes.dtype)  # type: ignore[union-attr]
        fields.append(_field(pa, axis.column, kind, axis.unit))
        units[axis.column] = axis.unit
    for column in columns:
        if column in TEXT_LABELS:
            kind = pa.dictionary(pa.int8(), pa.string())
        else:
            kind = pa.from_numpy_dtype(np.dtype(column_dtype(column)))
        fields.append(_field(pa, column, kind, field_unit(column)))
        units[column] = field_unit(column)
    return pa.schema(fields, metadata={"units": json.dumps(units)})


def _field(pa: ModuleType, name: str, kind: pyarrow.DataType, unit: str | None) -> pyarrow.Field:
    return pa.field(name, kind, metadata={"unit": unit} if unit else None)


def block_table(
    space: Space, block: Block, columns: tuple[str, ...], arrow_schema: pyarrow.Schema
) -> pyarrow.Table:
    """The rows of one block as a ``pyarrow.Table``, in sweep order."""
    from mlsysim.planning.columns import TEXT_LABELS, column_dtype, write_column

    pa, _ = _pyarrow()
    starts = [s.indices(n)[0] for s, n in zip(block.index, space.shape, strict=True)]
    shape = tuple(len(range(*s.indices(n))) for s, n in zip(block.index, space.shape, strict=True))
    out = {c: np.empty(shape, dtype=column_dtype(c)) for c in columns}
    memory = np.empty(shape if "fits" in columns else (), dtype=float)  # for fits' nulls
    for sub in space.sub_blocks(block):
        values = figures(sub)
        view: tuple[slice, ...] = tuple(
            slice(o - s, o - s + n) for o, s, n in zip(sub.offset, starts, sub.shape, strict=True)
        )
        for column in columns:
            write_column(column, out[column][view + (Ellipsis,)], values, sub.inputs, sub.algorithm)
        if "fits" in columns:
            write_column(
                "device_memory", memory[view + (Ellipsis,)], values, sub.inputs, sub.algorithm
            )
    arrays = []
    for position, axis in enumerate(space.axes):
        index = _axis_index(shape, position, starts[position])
        if axis.labels is not None:
            labels = pa.array(list(axis.labels), type=pa.string())
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), labels))
        else:
            arrays.append(pa.array(axis.magnitudes[index]))  # type: ignore[index]
    for column in columns:
        data = out[column].reshape(-1)
        if column == "fits":  # null where the device memory is unknown, as the scalar result
            arrays.append(pa.array(data, mask=np.isnan(memory.reshape(-1))))
        elif column in TEXT_LABELS:
            labels = pa.array(list(TEXT_LABELS[column]), type=pa.string())
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(data, pa.int8()), labels))
        else:
            arrays.append(pa.array(data))
    return pa.Table.from_arrays(arrays, schema=arrow_schema)


def _axis_index(shape: tuple[int, ...], position: int, start: int) -> np.ndarray:
    """For each row of a block (C order), the index into the axis at ``position``."""
    dims = [1] * len(shape)
    dims[position] = shape[position]
    grid = (np.arange(shape[position]) + start).reshape(dims)
    return np.broadcast_to(grid, shape).reshape(-1)


def write_parquet(
    space: Space,
    columns: tuple[str, ...],
    path: str | os.PathLike[str],
    *,
    chunk_rows: int,
    progress: Progress | None = None,
) -> str:
    """Stream every row of ``space`` to the Parquet file ``path``; returns the path."""
    from mlsysim.engine.io.files import atomic_writer

    _, pq = _pyarrow()
    arrow_schema = schema(space, columns)
    done, total = 0, space.size
    with atomic_writer(path, binary=True) as handle:
        writer = pq.ParquetWriter(handle, arrow_schema, compression="zstd")
        try:
            for block in space.blocks(chunk_rows):
                writer.write_table(block_table(space, block, columns, arrow_schema))
                done += len(block)
                if progress is not None:
                    progress(done, total)
        finally:
            writer.close()
    return str(path)
