"""``SweepTable``: the columns of a sweep, one row per combination of the axes."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import numpy as np

from mlsysim.core.exceptions import InputError, MissingDependencyError

if TYPE_CHECKING:
    import pandas as pd

    from mlsysim.engine.inputs.fields import Value
    from mlsysim.engine.scenario_types import TrainingScenario


def row_scenario(base: TrainingScenario, changes: dict[str, Value]) -> TrainingScenario:
    """The scenario of a sweep's row: ``base.variant(**changes)``, a switch that does nothing on this row off.

    A sweep keeps a row where a switch is on but does nothing (``sequence_parallel=1`` at
    ``tensor_parallel=1``) when other rows need it (the rule's ``inert``); the scalar solve refuses it,
    and the row's figures are those with the switch off (None).
    """
    from mlsysim.engine.inputs.rules import RULES

    inert = {rule.loc for rule in RULES if rule.inert}
    while True:
        try:
            return base.variant(**changes)
        except InputError as exc:
            switch = exc.loc[-1] if exc.loc else None
            if exc.type != "rule" or switch not in inert or changes.get(switch, True) is None:
                raise
            changes = {**changes, str(switch): None}


@dataclass(frozen=True, eq=False)
class Axis:
    """One swept field: its validated values and how they show in the table.

    ``magnitudes`` holds the values as numbers (Quantities in ``unit``, the
    unit of the first value given; None as NaN), or ``labels`` holds them as
    text (workload names, precisions, assumption presets).
    """

    field: str
    column: str
    values: tuple[Value, ...]
    unit: str | None = None
    magnitudes: np.ndarray | None = None
    labels: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.values)


class SweepTable:
    """A table of sweep results: ``len(table)`` rows, ``table[column]`` a numpy array.

    Rows come in the order of ``itertools.product`` over the axes as given.
    Columns: one per swept field (named after it, or ``input_<field>`` when a
    result field has the same name, as ``training_time``), then every scalar
    result field of :class:`~mlsysim.engine.results.DataParallelScaleOutResult`
    in the unit the result reports it (``table.units``): times in millisecond,
    ``training_time`` in hour, bytes in byte, ``cost`` in US dollars (NaN when
    no node price is given), ``device_memory`` in byte (NaN when unknown).
    ``fits`` is False only where ``memory_per_device`` exceeds a known
    ``device_memory`` (the scalar result says None when the memory is unknown;
    so do ``row``, ``to_csv`` (an empty cell), ``to_pandas`` (NA) and Parquet (null)).
    Text columns (workload, precision, bottleneck, the algorithms) are object
    arrays of ``str``.

    ``table.scenario(i)`` rebuilds the scenario of row ``i`` (its ``.result``
    equals the row), ``table.row(i)`` gives the row as a dict, ``take`` selects
    rows, ``to_pandas`` and ``to_csv`` export.
    """

    def __init__(
        self,
        *,
        base: TrainingScenario,
        axes: tuple[Axis, ...],
        results: dict[str, np.ndarray],
        labels: dict[str, tuple[str, ...]],
        units: dict[str, str | None],
        rows: np.ndarray | None = None,
    ) -> None:
        self.base = base
        """The scenario the axes vary."""
        self.axes = axes
        """The swept fields, in the order given."""
        self._results = results  # flat arrays; coded text columns hold int codes into labels
        self._labels = labels
        self.units: dict[str, str | None] = units
        """Unit of each column (None for counts, ratios and text)."""
        self.shape = tuple(len(a) for a in axes)
        """Number of values of each axis."""
        self._rows = rows  # flat grid index of each row; None for the full grid in order
        self._cache: dict[str, np.ndarray] = {}

    # -- shape and columns -------------------------------------------------------------

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        return math.prod(self.shape)

    @property
    def columns(self) -> tuple[str, ...]:
        """Input axis columns first, then the result fields."""
        return (*(a.column for a in self.axes), *self._results)

    def __contains__(self, column: object) -> bool:
        return column in self.columns

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    @overload
    def __getitem__(self, column: str) -> np.ndarray: ...

    @overload
    def __getitem__(self, column: slice) -> SweepTable: ...

    def __getitem__(self, column: str | slice) -> np.ndarray | SweepTable:
        """A column by name (a numpy array), or rows by a slice (``plan.top[:3]``: a table)."""
        if isinstance(column, slice):
            return self.take(np.arange(len(self))[column])
        if not isinstance(column, str):
            raise KeyError(
                f"expected a column name or a slice of rows (table[:3]), got {column!r}; "
                "one row: table.row(i) or table.scenario(i)"
            )
        cached = self._cache.get(column)
        if cached is not None:
            return cached
        if column in self._results:
            data = self._results[column]
            if column in self._labels:
                data = np.asarray(self._labels[column], dtype=object)[data]
        else:
            data = self._axis_column(column)
        self._cache[column] = data
        return data

    def _axis_column(self, column: str) -> np.ndarray:
        for position, axis in enumerate(self.axes):  # noqa: B007 - used after the loop
            if axis.column == column:
                break
        else:
            raise KeyError(f"no column {column!r}; columns: {', '.join(self.columns)}")
        index = self.axis_indices(position)
        if axis.magnitudes is not None:
            return axis.magnitudes[index]
        return np.asarray(axis.labels, dtype=object)[index]

    def axis_indices(self, position: int) -> np.ndarray:
        """For each row, the index into ``axes[position].values``."""
        if self._rows is not None:
            return np.unravel_index(self._rows, self.shape)[position]
        shape = [1] * len(self.shape)
        shape[position] = self.shape[position]
        grid = np.arange(self.shape[position]).reshape(shape)
        return np.broadcast_to(grid, self.shape).reshape(-1)

    def nodes(self) -> np.ndarray:
        """The number of nodes N of every row: n_devices over the devices per node (the
        swept ``devices_per_node`` where it is an axis, else the base scenario's)."""
        per_node = np.full(len(self), float(self.base.devices_per_node))
        if "devices_per_node" in self.columns:
            swept = np.asarray(self["devices_per_node"], dtype=float)
            per_node = np.where(np.isfinite(swept), swept, per_node)
        return np.asarray(self["n_devices"], dtype=float) / per_node

    def grid_index(self, i: int) -> int:
        """Index of row ``i`` in the full ``itertools.product`` order."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"row {i} out of range for a table of {n} rows")
        i %= n
        return int(self._rows[i]) if self._rows is not None else i

    # -- rows --------------------------------------------------------------------------

    def axis_values(self, i: int) -> dict[str, Value]:
        """The swept field values of row ``i`` (validated values, as the scenario holds them)."""
        flat = self.grid_index(i)
        index = np.unravel_index(flat, self.shape) if self.shape else ()
        return {axis.field: axis.values[int(j)] for axis, j in zip(self.axes, index, strict=True)}

    def scenario(self, i: int) -> TrainingScenario:
        """The scenario of row ``i``: ``base.variant(**axis_values(i))`` (see :func:`row_scenario`)."""
        return row_scenario(self.base, self.axis_values(i))

    def row(self, i: int) -> dict[str, object]:
        """Row ``i`` as plain Python values, column by column; NaN (a figure not given) as None,
        and ``fits`` None where the device memory is unknown (as the scalar result says)."""
        self.grid_index(i)  # bounds check
        row = {column: _python(self[column][i]) for column in self.columns}
        if "fits" in row and self.unknown_fit()[i]:
            row["fits"] = None
        return row

    def unknown_fit(self) -> np.ndarray:
        """Boolean mask of the rows whose ``fits`` is unknown (no ``device_memory``): the
        array says True there (nothing is excluded for it); exports write None or an empty cell."""
        if "device_memory" not in self.columns:
            return np.zeros(len(self), dtype=bool)
        return np.isnan(np.asarray(self["device_memory"], dtype=float))

    def export_column(self, column: str, start: int = 0, stop: int | None = None) -> list[object]:
        """Rows ``start:stop`` of ``column`` as Python values for a file: ``fits`` None where unknown."""
        values = self[column][start:stop].tolist()
        if column == "fits":
            unknown = self.unknown_fit()[start:stop]
            values = [None if u else v for v, u in zip(values, unknown.tolist(), strict=True)]
        return values

    def take(self, indices: Sequence[int] | np.ndarray) -> SweepTable:
        """A table of the selected rows (integer indices or a boolean mask), in that order."""
        index = np.asarray(indices)
        if index.dtype == bool:
            if index.shape != (len(self),):
                raise InputError(f"a row mask needs {len(self)} entries, got {index.shape}")
            index = np.flatnonzero(index)
        rows = self._rows[index] if self._rows is not None else index.astype(np.int64)
        return SweepTable(
            base=self.base,
            axes=self.axes,
            results={k: v[index] for k, v in self._results.items()},
            labels=self._labels,
            units=self.units,
            rows=rows,
        )

    # -- export ------------------------------------------------------------------------

    def with_columns(
        self, columns: dict[str, np.ndarray], units: dict[str, str | None]
    ) -> SweepTable:
        """A copy with more result columns (one value per row), e.g. prediction intervals."""
        for name, values in columns.items():
            if name in self.columns or np.shape(values) != (len(self),):
                raise ValueError(f"with_columns: {name!r} is taken or not one value per row")
        return SweepTable(
            base=self.base,
            axes=self.axes,
            results={**self._results, **columns},
            labels=self._labels,
            units={**self.units, **{name: units.get(name) for name in columns}},
            rows=self._rows,
        )

    def to_pandas(self) -> pd.DataFrame:
        """A pandas DataFrame of every column; ``df.attrs["units"]`` holds the units."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingDependencyError(
                "SweepTable.to_pandas needs pandas: pip install pandas"
            ) from None
        frame = pd.DataFrame({c: self[c] for c in self.columns})
        if "fits" in frame:  # unknown where the device memory is: pandas' nullable boolean
            fits = pd.array(self["fits"], dtype="boolean")
            fits[self.unknown_fit()] = pd.NA
            frame["fits"] = fits
        frame.attrs["units"] = dict(self.units)
        return frame

    def header(self) -> list[str]:
        """Column names with their units, as in :meth:`to_csv`: ``update_time [millisecond]``."""
        return [f"{c} [{self.units[c]}]" if self.units.get(c) else c for c in self.columns]

    def to_csv(self, path: str | os.PathLike[str], *, chunk_rows: int = 65536) -> None:
        """Write every row as CSV (header ``name [unit]``); atomic: never a half-written file."""
        from mlsysim.engine.io.files import atomic_writer

        columns = self.columns
        with atomic_writer(path, newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(self.header())
            for start in range(0, len(self), chunk_rows):
                block = [self.export_column(c, start, start + chunk_rows) for c in columns]
                writer.writerows(zip(*block, strict=True))

    def __repr__(self) -> str:
        axes = ", ".join(f"{a.field}[{len(a)}]" for a in self.axes) or "no axes"
        label = getattr(self.base, "name", None) or "unnamed"
        return f"<SweepTable {label!r}: {len(self)} rows over {axes}; {len(self.columns)} columns>"


def _python(value: object) -> object:
    value = value.item() if isinstance(value, np.generic) else value
    return None if isinstance(value, float) and math.isnan(value) else value
