"""Fit the matrix-product ceilings c_f of one accelerator to a table of measured matrix multiplies.

The operator model (:mod:`mlsysim.physics.matmul`) predicts a product of
(M x K)(K x N) in format f to run at

    R(M, N, K) = P_f e(M, N, K) = P_f c_f q_tile q_wave K / (K + K_0)

with P_f the accelerator's dense peak in f and c_f the one fitted constant
per format. A measured rate R_i gives one estimate of c_f,
``R_i / (P_f q_tile q_wave K / (K + K_0))`` (the shape factor computed by
:func:`~mlsysim.physics.matmul.matmul_efficiency` with the ceiling 1); the
fitted ceiling is their median, which a few noisy rows (a clock that had not
ramped, a shape that hit a slow kernel) do not drag. Each row is then
predicted by the median of the other rows of its format (leave one row out):
the median of ``|predicted / measured - 1|`` is the error to expect on a
shape not measured.

Table schema (CSV header, case-insensitive, or the keys of each JSON object;
a JSON file is a list of rows or ``{"accelerator": "H100", "rows": [...]}``,
what ``python -m mlsysim.calibrate.matmul_script`` writes):

* ``M``, ``N``, ``K``: the product's dimensions (positive integers);
* ``format``: one of :data:`~mlsysim.physics.matmul.MATMUL_FORMATS`;
* ``tflops``: the measured rate, 2 M N K / seconds, in TFLOP/s;
* ``accelerator`` (optional, the same on every row): the registry name of the
  accelerator measured (``H100``); else given on the command line.

Other columns (``seconds``, a label) are ignored; an empty line is skipped.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mlsysim.core.exceptions import InputError, ScenarioFileError
from mlsysim.core.fileio import read_text
from mlsysim.core.units import to_canonical
from mlsysim.physics.matmul import (
    CAST_BYTES,
    MATMUL_FORMATS,
    SIXTEEN_BIT,
    check_matmul_format,
    matmul_efficiency,
)

if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue
    from mlsysim.hardware.types import Accelerator

COLUMNS = ("M", "N", "K", "format", "tflops")
"""The columns every row gives."""

DIMENSIONS = ("M", "N", "K")


@dataclass(frozen=True)
class MatmulRow:
    """One measured product: (M x K)(K x N) in ``format`` at ``tflops`` TFLOP/s; ``line`` where it was read."""

    m: int
    n: int
    k: int
    format: str
    tflops: float
    line: int = 0


@dataclass(frozen=True)
class MatmulTable:
    """The rows of a measured table, and the accelerator it names (None when it names none)."""

    rows: tuple[MatmulRow, ...]
    accelerator: str | None
    path: str


@dataclass(frozen=True)
class FormatFit:
    """The fitted ceiling of one format, and how well it predicts its rows.

    ``predicted`` are the rows' rates (TFLOP/s) at the fitted ceiling,
    ``held_out`` each row's rate at the ceiling fitted without it (None with
    a single row), ``loo_median_error`` the median of ``|held_out / measured - 1|``.
    """

    format: str
    peak_tflops: float
    ceiling: float
    rows: tuple[MatmulRow, ...]
    predicted: tuple[float, ...]
    held_out: tuple[float, ...] | None
    loo_median_error: float | None

    def to_dict(self) -> dict[str, JSONValue]:
        held = self.held_out or (None,) * len(self.rows)
        return {
            "format": self.format,
            "peak": {"value": self.peak_tflops, "unit": "teraflop / second"},
            "ceiling": self.ceiling,
            "rows": len(self.rows),
            "loo_median_error": self.loo_median_error,
            "points": [
                {
                    "M": r.m, "N": r.n, "K": r.k,
                    "measured_tflops": r.tflops,
                    "fitted_tflops": p,
                    "held_out_tflops": h,
                    "held_out_error": None if h is None else h / r.tflops - 1.0,
                }
                for r, p, h in zip(self.rows, self.predicted, held, strict=True)
            ],
        }  # fmt: skip


@dataclass(frozen=True)
class MatmulFit:
    """Ceilings fitted per format for one accelerator (:func:`fit_matmul_ceilings`)."""

    accelerator: str
    architecture: str | None
    compute_units: float
    formats: dict[str, FormatFit]
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def linear_format(self, matmul_format: str | None = None) -> str:
        """The format whose ceiling becomes ``matmul_ceiling``: ``matmul_format`` when given, else
        the one low-precision format measured, else the 16-bit one (bf16 before fp16), else the
        only format measured."""
        if matmul_format is not None:
            name = check_matmul_format(matmul_format)
            if name not in self.formats:
                raise InputError(
                    f"--matmul-format: the table has no {name} rows; measured: {', '.join(self.formats)}",
                    field="matmul_format",
                )
            return name
        low = [f for f in self.formats if f in CAST_BYTES]
        sixteen = [f for f in SIXTEEN_BIT if f in self.formats]
        if len(low) == 1:
            return low[0]
        if not low and sixteen:
            return sixteen[0]
        if len(self.formats) == 1:
            return next(iter(self.formats))
        raise InputError(
            f"--matmul-format: the table measures {', '.join(self.formats)}; "
            "say which one the linear layers run in",
            field="matmul_format",
        )

    def assumptions(self, matmul_format: str | None = None) -> dict[str, float]:
        """``matmul_ceiling`` (the linear layers' format) and, when that format is not a 16-bit one
        and a 16-bit one was measured, ``attention_ceiling`` (the attention core and output layer)."""
        linear = self.linear_format(matmul_format)
        out = {"matmul_ceiling": self.formats[linear].ceiling}
        sixteen = next((f for f in SIXTEEN_BIT if f in self.formats), None)
        if linear not in SIXTEEN_BIT and sixteen is not None:
            out["attention_ceiling"] = self.formats[sixteen].ceiling
        return out

    def to_dict(self, matmul_format: str | None = None) -> dict[str, JSONValue]:
        return {
            "accelerator": self.accelerator,
            "architecture": self.architecture,
            "compute_units": None if math.isnan(self.compute_units) else self.compute_units,
            "formats": {name: fit.to_dict() for name, fit in self.formats.items()},
            "linear_format": self.linear_format(matmul_format),
            "assumptions": dict(self.assumptions(matmul_format)),
            "source": self.source,
            "notes": list(self.notes),
        }


# -- reading ---------------------------------------------------------------------------------


def read_matmul_table(path: str | os.PathLike[str]) -> MatmulTable:
    """The rows of a CSV or JSON table of measured products (schema in the module docstring)."""
    file = Path(os.path.expanduser(os.fspath(path)))
    text = read_text(file)
    suffix = file.suffix.lower()
    where = str(file)
    raw: list[tuple[int | None, str, dict[str, object]]] = []  # (line, label, row)
    accelerator: object = None
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None:
            raise ScenarioFileError(f"no header; expected the columns {', '.join(COLUMNS)}", path=where, line=1)
        for row in reader:
            if None in row:
                raise ScenarioFileError("more cells than columns in the header", path=where, line=reader.line_num)
            clean = {str(k).strip(): v.strip() for k, v in row.items() if v is not None and v.strip()}
            if clean:
                raw.append((reader.line_num, "", clean))
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioFileError(f"JSON syntax error: {exc.msg}", path=where, line=exc.lineno) from None
        items = data.get("rows") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ScenarioFileError('expected a list of rows or {"rows": [...]}', path=where, line=1)
        if isinstance(data, dict):
            accelerator = data.get("accelerator")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ScenarioFileError(f"expected an object (a row), got {item!r}", path=where, loc=(f"rows[{i}]",))
            raw.append((None, f"rows[{i}]", {str(k): v for k, v in item.items() if v not in (None, "")}))
    else:
        raise InputError(f"table: expected a .csv or .json file, got {where!r}", field="table")
    rows = []
    for line, label, row in raw:
        keyed = {k.lower(): (k, v) for k, v in row.items()}
        rows.append(_row(keyed, line, label, where))
        if "accelerator" in keyed:
            named = keyed["accelerator"][1]
            if accelerator is not None and named != accelerator:
                raise ScenarioFileError(
                    f"expected one accelerator for the whole table, got {accelerator!r} and {named!r}",
                    path=where, line=line, loc=(*((label,) if label else ()), "accelerator"),
                )
            accelerator = named
    if not rows:
        raise ScenarioFileError(f"no rows; expected the columns {', '.join(COLUMNS)}", path=where)
    if accelerator is not None and not isinstance(accelerator, str):
        raise ScenarioFileError(f"expected a registry name (text), got {accelerator!r}", path=where, field="accelerator")
    return MatmulTable(tuple(rows), accelerator, where)


def _row(keyed: dict[str, tuple[str, object]], line: int | None, label: str, path: str) -> MatmulRow:
    def fail(column: str, message: str) -> ScenarioFileError:
        return ScenarioFileError(message, path=path, line=line, loc=(*((label,) if label else ()), column))

    for column in COLUMNS:
        if column.lower() not in keyed:
            raise fail(column, f"missing; every row gives {', '.join(COLUMNS)}")
    dims = []
    for column in DIMENSIONS:
        value = keyed[column.lower()][1]
        number = _number(value)
        if number is None or not (number > 0 and number == int(number) and number < 2**40):
            raise fail(column, f"expected a positive whole number, got {value!r}")
        dims.append(int(number))
    value = keyed["format"][1]
    try:
        matmul_format = check_matmul_format(value)
    except InputError:
        raise fail("format", f"expected one of {', '.join(MATMUL_FORMATS)}, got {value!r}") from None
    value = keyed["tflops"][1]
    rate = _number(value)
    if rate is None or not rate > 0:
        raise fail("tflops", f"expected a measured rate in TFLOP/s above zero, got {value!r}")
    return MatmulRow(dims[0], dims[1], dims[2], matmul_format, rate, line or 0)


def _number(value: object) -> float | None:
    """A finite float from a number or its text, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]  # text or a number; anything else fails
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# -- the fit ---------------------------------------------------------------------------------


def fit_matmul_ceilings(
    rows: tuple[MatmulRow, ...] | list[MatmulRow], accelerator: object, *, source: str = ""
) -> MatmulFit:
    """The ceiling c_f of every format measured in ``rows`` on ``accelerator`` (a registry entry or name).

    >>> rows = [MatmulRow(8192, 8192, 8192, "bf16", 700.0), MatmulRow(4096, 4096, 4096, "bf16", 660.0)]
    >>> fit = fit_matmul_ceilings(rows, "H100")
    >>> round(fit.formats["bf16"].ceiling, 3), fit.assumptions()
    (0.725, {'matmul_ceiling': 0.7252})
    """
    from mlsysim.engine.inputs.presets import check_accelerator

    try:
        device = check_accelerator(accelerator)
    except InputError as exc:
        raise InputError(f"accelerator: {exc.message}", field="accelerator") from None
    units = float(device.compute_units.count) if device.compute_units is not None else math.nan
    by_format: dict[str, list[MatmulRow]] = {}
    for row in rows:
        by_format.setdefault(row.format, []).append(row)
    formats = {name: _fit_format(name, group, device, units) for name, group in by_format.items()}
    notes = []
    if math.isnan(units):
        notes.append(f"{device.name} states no compute-unit count: wave quantisation is off")
    return MatmulFit(device.name, device.architecture, units, formats, source, tuple(notes))


def _fit_format(name: str, rows: list[MatmulRow], device: Accelerator, units: float) -> FormatFit:
    peak_format = MATMUL_FORMATS[name]
    try:
        peak = to_canonical(device.peak_flops(peak_format), "compute_rate") / 1e12
    except InputError:
        raise InputError(
            f"format: {device.name} has no {peak_format} peak in the registry, got rows in {name}",
            field="format",
        ) from None
    m, n, k = (np.asarray([getattr(r, d) for r in rows], dtype=float) for d in ("m", "n", "k"))
    measured = np.asarray([r.tflops for r in rows])
    shape = np.asarray(matmul_efficiency(m, n, k, 1.0, units))  # the ceiling 1: q_tile q_wave K / (K + K_0)
    estimates = measured / (peak * shape)
    ceiling = float(np.median(estimates))
    if ceiling > 1.0:
        raise InputError(
            f"format: the {name} rows imply a ceiling of {ceiling:.3g}, above {device.name}'s {peak_format} "
            f"peak of {peak:.4g} TFLOP/s; expected at most 1 (check the accelerator and the tflops column)",
            field="format",
        )
    ceiling = float(f"{ceiling:.4g}")
    predicted = tuple(float(x) for x in ceiling * peak * shape)
    held_out: tuple[float, ...] | None = None
    loo: float | None = None
    if len(rows) > 1:
        held = [float(np.median(np.delete(estimates, i)) * peak * shape[i]) for i in range(len(rows))]
        held_out = tuple(held)
        loo = float(np.median(np.abs(np.asarray(held) / measured - 1.0)))
    return FormatFit(name, peak, ceiling, tuple(rows), predicted, held_out, loo)


def table_text(fit: MatmulFit, matmul_format: str | None = None) -> str:
    """The fit per format, then measured against fitted and held-out rate for every row."""
    units = "not stated" if math.isnan(fit.compute_units) else f"{fit.compute_units:.0f}"
    lines = [f"{fit.accelerator} ({fit.architecture or 'architecture not stated'}, compute units {units}); {fit.source}"]
    for name, f in fit.formats.items():
        loo = "n/a (one row)" if f.loo_median_error is None else f"{f.loo_median_error:.1%}"
        lines.append(
            f"  {name:<12} ceiling {f.ceiling:.4g} of {f.peak_tflops:.4g} TFLOP/s, {len(f.rows)} row(s), "
            f"leave-one-row-out median error {loo}"
        )
    lines += [f"  note: {note}" for note in fit.notes]
    lines.append("")
    lines.append(f"{'format':<12} {'M':>7} {'N':>7} {'K':>7}  {'measured':>9}  {'fitted':>9}  {'held out':>9}  {'error':>7}")
    for name, f in fit.formats.items():
        held = f.held_out or (math.nan,) * len(f.rows)
        for r, p, h in zip(f.rows, f.predicted, held, strict=True):
            error = "" if math.isnan(h) else f"{h / r.tflops - 1.0:+7.1%}"
            held_text = "" if math.isnan(h) else f"{h:.4g}"
            lines.append(
                f"{name:<12} {r.m:>7} {r.n:>7} {r.k:>7}  {r.tflops:>9.4g}  {p:>9.4g}  {held_text:>9}  {error:>7}"
            )
    return "\n".join(lines)
