"""The result columns of a sweep, a plan and a Parquet file: which, of what type, written how.

One place for the three writers (the in-memory table, the streamed plan, the
Parquet file): each column is a declared result field
(:func:`mlsysim.engine.results.result_fields`), converted with its declared
unit, as the scalar result converts it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import DTypeLike

from mlsysim.engine.model.equations import Figures, Inputs
from mlsysim.engine.results import RESULT_NAMES, result_fields, text_labels

RESULT_COLUMNS = tuple(f for f in RESULT_NAMES if f != "constraint_trace")
"""Result fields a sweep reports (every scalar field of the result)."""

TEXT_LABELS: dict[str, tuple[str, ...]] = text_labels()
"""Labels of the text result columns, stored as codes into these tuples."""

Progress = Callable[[int, int], None]


def column_dtype(column: str) -> DTypeLike:
    kind = result_fields()[column].kind
    if kind == "int":
        return np.int64
    if kind == "bool":
        return bool
    if kind == "label":
        return np.int8
    return float


def write_column(column: str, out: np.ndarray, v: Figures, x: Inputs, algorithm: str) -> None:
    """Write one result column of a block into its place in the grid (``out`` is a view).

    Figures are converted with the factor of the result field's declared unit,
    as the scalar result converts them, so both give the same floats. Labels
    are stored as codes into :data:`TEXT_LABELS`; ``fits`` is True where the
    device memory is unknown (nothing is excluded for it).
    """
    spec = result_fields()[column]
    if column == "algorithm":
        out[...] = TEXT_LABELS["algorithm"].index(algorithm)
    elif column == "intra_algorithm":
        np.copyto(out, np.greater(x.devices_per_node, 1), casting="unsafe")
    elif column == "inter_algorithm":
        code = np.add(v.inter_algorithm, 1)
        np.copyto(out, np.where(np.greater(x.nodes, 1), code, 0), casting="unsafe")
    elif spec.kind == "quantity":
        np.multiply(getattr(v, column), spec.factor, out=out)
    else:
        np.copyto(out, getattr(v, column), casting="unsafe")
