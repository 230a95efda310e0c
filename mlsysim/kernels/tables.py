"""Measured kernel timings with their provenance: one format for shipped tables and a user's own.

A table is one source's measurements of one kind of kernel on one accelerator
(``mlsysim/data/kernels/*.json``, shipped; or a user's file, JSON in the same format or
CSV, read by :func:`read_table`). JSON::

    {
      "kind": "matmul",                     # matmul | attention | collective | dispatch | memory
      "split": "fit",                       # fit: constants may be fitted on it; holdout: never
      "accelerator": "H100",                # the registry's accelerator name
      "source": {"title": "...", "url": "...", "date": "2024-05-01",
                 "hardware": "8x H100 SXM5 80GB (DGX H100)",
                 "software": "cuBLAS 12.4 (PyTorch 2.3.0)",
                 "notes": "what exactly each figure is (median of 50 runs, ...)"},
      "units": {"time": "us"},              # the unit of every column with a dimension
      "columns": ["m", "n", "k", "format", "time"],
      "rows": [[4096, 4096, 4096, "bf16", 190.1], ...]
    }

A CSV file carries the same columns in its header, a dimensioned one with its unit in
brackets (``time [us]``), and takes ``kind``, ``accelerator`` and the source from the
caller (``mlsysim calibrate kernels FILE --accelerator H100``).

Every table gives each row's ``time`` (seconds once read) or, for the kinds whose work
has one agreed count, a rate it is derived from (:data:`RATES`): a matrix product's
``tflops`` (2 m n k batch FLOPs); an attention call's ``tflops`` (FlashAttention's and
cuDNN's convention, :func:`mlsysim.physics.attention.attention_flops`: 2 (d + d_v) FLOPs
per query-key pair forward, 2 (3 d + 2 d_v) backward, the pairs above a causal diagonal
not counted; ``kv_len`` and ``head_dim_v`` default to ``seq_len`` and ``head_dim``); a
memory-bound kernel's ``bandwidth`` (its ``bytes`` read and written over its time, with
a unit such as GB/s); a collective's ``busbw`` as nccl-tests prints it (``bytes`` is
nccl-tests' size; time = bytes F / busbw, F the bus factor of the op over ``group`` ranks,
:func:`~mlsysim.physics.collective_curves.bus_factor`); an expert dispatch's ``bandwidth``
over the ``bytes`` it counts (time = bytes / bandwidth; the source's convention for what it
counts goes in ``notes``). An attention table's ``direction`` is ``forward``, ``backward`` or
``forward+backward``. A matrix product's ``batch``, where given, is the number of products,
or of groups of a grouped product, in one kernel. A row measured with the device held below
its default power gives it in ``power_limit`` (watts once read). The required columns of each kind are :data:`REQUIRED`; other
columns are kept as they are (numbers as floats, words as strings). The collective model
also reads ``domain`` (ranks per NVLink domain), ``gpus_per_node``, ``nic_rate`` (a GPU's
share of the NICs), ``algorithm`` and ``library`` (the measuring program, when not
nccl-tests); the dispatch model ``format``, ``kernel``, ``ranks_per_domain``,
``route_limit``, ``link`` and ``nic_rate`` (:mod:`mlsysim.kernels.collectives`,
:mod:`mlsysim.kernels.dispatch`); a collective's ``op`` is one of
:data:`~mlsysim.physics.collective_curves.OPS`. A table that lacks
a column, gives a word where a number belongs, a unit of the wrong dimension, an unknown
direction or a time that is not positive is refused with an
:class:`~mlsysim.core.exceptions.InputError` naming the file, the row and the column.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.fileio import read_text
from mlsysim.core.units import UnitsError, parse_unit, ureg
from mlsysim.physics.attention import DIRECTIONS, attention_flops
from mlsysim.physics.collective_curves import OPS, bus_factor

KINDS = ("matmul", "attention", "collective", "dispatch", "memory")
"""The kinds of kernel a table may hold."""

SPLITS = ("fit", "holdout")
"""``fit``: constants may be fitted on the table; ``holdout``: kept apart to check them, never fitted on."""

REQUIRED: Mapping[str, tuple[str, ...]] = {
    "matmul": ("m", "n", "k", "format"),
    "attention": ("batch", "heads", "seq_len", "head_dim", "causal", "format", "direction"),
    "collective": ("op", "bytes", "group", "link"),
    "dispatch": ("tokens", "hidden", "top_k", "experts", "ranks", "direction"),
    "memory": ("kernel", "bytes"),
}
"""Columns each kind must give, besides ``time`` (or the rate it is derived from)."""

RATES: Mapping[str, str] = {
    "matmul": "tflops", "attention": "tflops", "memory": "bandwidth", "collective": "busbw", "dispatch": "bandwidth",
}
"""The rate column a kind may give instead of ``time`` (see the module docstring)."""

WORD_COLUMNS = frozenset({"format", "direction", "op", "link", "algorithm", "library", "layout", "kernel", "note"})
"""Columns that hold words; every other column holds numbers (``causal``: 1 or 0, true or false)."""

DIMENSIONS: Mapping[str, tuple[str, str, str]] = {
    "time": ("s", "time", "us"),
    "bytes": ("byte", "data", "B"),
    "bandwidth": ("byte / s", "data per time", "GB/s"),
    "busbw": ("byte / s", "data per time", "GB/s"),
    "nic_rate": ("byte / s", "data per time", "GB/s"),
    "power_limit": ("W", "power", "W"),
}
"""Columns with a dimension: the canonical unit each is read into (a unit of the same dimension is
required), the dimension in words, and a unit to suggest."""

SOURCE_FIELDS = ("title", "url", "date", "hardware", "software", "notes")
"""What a table's ``source`` says: every field required, so that no figure ships without its origin."""


@dataclass(frozen=True)
class Source:
    """Where a table's figures come from: the publication, the machine and the software they were measured on."""

    title: str
    url: str
    date: str
    hardware: str
    software: str
    notes: str

    def cite(self) -> str:
        """One line: ``title (date), hardware, software: url``."""
        return f"{self.title} ({self.date}), {self.hardware}, {self.software}: {self.url}"


@dataclass(frozen=True)
class KernelTable:
    """One source's measured kernel times of one kind on one accelerator.

    ``columns`` maps each column name to a numpy array: floats for numbers (canonical SI
    for dimensioned columns), an object array of strings for words; ``time`` (seconds)
    is always there.
    """

    name: str
    kind: str
    split: str
    accelerator: str
    source: Source
    columns: Mapping[str, np.ndarray] = field(repr=False)

    @property
    def time(self) -> np.ndarray:
        """Measured seconds of each row."""
        return self.columns["time"]

    def __len__(self) -> int:
        return len(self.time)

    def where(self, **equal: object) -> KernelTable:
        """The rows whose columns equal the given values (``table.where(format="bf16")``)."""
        keep = np.ones(len(self), dtype=bool)
        for name, value in equal.items():
            keep &= self.columns[name] == value
        return KernelTable(self.name, self.kind, self.split, self.accelerator, self.source,
                           {name: column[keep] for name, column in self.columns.items()})


def _refuse(where: str, message: str, field: str = "kernel_table") -> InputError:
    return InputError(f"{where}: {message}", field=field)


def _column_unit(where: str, name: str, text: str | None) -> float:
    """Factor from the column's stated unit to canonical SI (1 for a column without a dimension)."""
    dimension = DIMENSIONS.get(name)
    if dimension is None:
        if text:
            raise _refuse(where, f"column {name!r} takes no unit, got {text!r}")
        return 1.0
    canonical, words, example = dimension
    if not text:
        raise _refuse(where, f"column {name!r} needs a unit (e.g. {example})")
    try:
        unit = parse_unit(text)
    except (UnitsError, InputError) as error:
        raise _refuse(where, f"column {name!r}: unit {text!r} is not understood ({error})") from None
    if ureg.Quantity(1.0, unit).dimensionality != ureg.Quantity(1.0, canonical).dimensionality:
        raise _refuse(where, f"column {name!r} needs a unit of {words}, got {text!r}")
    return float(ureg.Quantity(1.0, unit).to(canonical).magnitude)


def _number(where: str, row: int, name: str, value: object) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "yes"):
            return 1.0
        if word in ("false", "no"):
            return 0.0
        try:
            value = float(word)
        except ValueError:
            raise _refuse(where, f"row {row}, column {name!r}: expected a number, got {value!r}") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _refuse(where, f"row {row}, column {name!r}: expected a finite number, got {value!r}")
    return float(value)


def build_table(
    *,
    name: str,
    kind: str,
    split: str,
    accelerator: str,
    source: Mapping[str, object],
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    units: Mapping[str, str] | None = None,
) -> KernelTable:
    """A checked :class:`KernelTable` from its parts (see the module docstring); ``name`` says where it came from."""
    where = name
    if kind not in KINDS:
        raise _refuse(where, f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if split not in SPLITS:
        raise _refuse(where, f"split {split!r} is not one of {', '.join(SPLITS)}")
    if not isinstance(accelerator, str) or not accelerator:
        raise _refuse(where, "accelerator must name the registry's accelerator (e.g. 'H100')")
    missing = [f for f in SOURCE_FIELDS if not isinstance(source.get(f), str) or not str(source.get(f)).strip()]
    if missing:
        raise _refuse(where, f"source lacks {', '.join(missing)}: every table says where its figures come from")
    names = [str(c).strip() for c in columns]
    if len(set(names)) != len(names):
        raise _refuse(where, f"a column is named twice in {names}")
    lacking = [c for c in REQUIRED[kind] if c not in names]
    rate = RATES.get(kind)
    if "time" not in names and (rate is None or rate not in names):
        lacking.append("time" + (f" (or {rate})" if rate else ""))
    elif "time" not in names and rate == "bandwidth" and "bytes" not in names:
        lacking.append("bytes (the count its bandwidth is over)")
    if lacking:
        raise _refuse(where, f"a {kind} table needs the columns {', '.join(lacking)}")
    if not rows:
        raise _refuse(where, "the table has no rows")
    given_units = dict(units or {})
    factors = {c: _column_unit(where, c, given_units.pop(c, None)) for c in names}
    if given_units:
        raise _refuse(where, f"units given for columns the table lacks: {', '.join(given_units)}")
    data: dict[str, list[object]] = {c: [] for c in names}
    for number, row in enumerate(rows, 1):
        if len(row) != len(names):
            raise _refuse(where, f"row {number} has {len(row)} values for {len(names)} columns")
        for c, value in zip(names, row, strict=True):
            if c in WORD_COLUMNS:
                data[c].append(str(value).strip().lower())
            else:
                data[c].append(_number(where, number, c, value) * factors[c])
    out: dict[str, np.ndarray] = {
        c: np.array(v, dtype=object) if c in WORD_COLUMNS else np.array(v, dtype=float) for c, v in data.items()
    }
    if kind == "attention":
        unknown_direction = [d for d in out["direction"] if d not in DIRECTIONS]
        if unknown_direction:
            position = list(out["direction"]).index(unknown_direction[0]) + 1
            raise _refuse(where, f"row {position}, column 'direction': expected one of "
                                 f"{', '.join(DIRECTIONS)}, got {unknown_direction[0]!r}")
    if kind == "collective":
        unknown_op = [i for i, o in enumerate(out["op"]) if o not in OPS]
        if unknown_op:
            raise _refuse(where, f"row {unknown_op[0] + 1}, column 'op': {out['op'][unknown_op[0]]!r} is not one of "
                                 f"{', '.join(OPS)}")
    if "time" not in out:
        with np.errstate(divide="ignore", invalid="ignore"):
            out["time"] = _time_from_rate(kind, out)
    bad = np.flatnonzero(~((out["time"] > 0) & np.isfinite(out["time"])))
    if bad.size:
        raise _refuse(where, f"row {bad[0] + 1}: a time must be above zero and finite")
    return KernelTable(name, kind, split, accelerator, Source(**{f: str(source[f]) for f in SOURCE_FIELDS}), out)


def _time_from_rate(kind: str, out: Mapping[str, np.ndarray]) -> np.ndarray:
    """Seconds of each row from its rate column (:data:`RATES`)."""
    if kind in ("memory", "dispatch"):
        return out["bytes"] / out["bandwidth"]
    if kind == "collective":
        op = np.array([OPS.index(str(o)) for o in out["op"]])
        return np.asarray(out["bytes"] * bus_factor(op, out["group"]) / out["busbw"])
    if kind == "attention":
        direction = np.array([float(DIRECTIONS[d]) for d in out["direction"]])
        flops = attention_flops(out["batch"], out["heads"], out["seq_len"], out.get("kv_len", out["seq_len"]),
                                out["head_dim"], out.get("head_dim_v", out["head_dim"]), out["causal"] > 0,
                                direction)
        return np.asarray(flops / (out["tflops"] * 1e12))
    batch = out.get("batch", np.ones(len(out["tflops"])))  # a matrix product: 2 m n k batch FLOPs
    return 2.0 * out["m"] * out["n"] * out["k"] * batch / (out["tflops"] * 1e12)


def parse_json_table(text: str, name: str) -> KernelTable:
    """A table from the JSON format of the module docstring."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise _refuse(name, f"not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(document, dict):
        raise _refuse(name, "expected a JSON object with kind, split, accelerator, source, columns and rows")
    keys = ("kind", "split", "accelerator", "source", "columns", "rows")
    lacking = [k for k in keys if k not in document]
    if lacking:
        raise _refuse(name, f"the table lacks {', '.join(lacking)}")
    unknown = sorted(set(document) - {*keys, "units", "about"})
    if unknown:
        raise _refuse(name, f"unknown keys {', '.join(unknown)}")
    if not isinstance(document["source"], dict):
        raise _refuse(name, "source must be an object (title, url, date, hardware, software, notes)")
    return build_table(
        name=name, kind=document["kind"], split=document["split"], accelerator=document["accelerator"],
        source=document["source"], columns=document["columns"], rows=document["rows"], units=document.get("units"),
    )


def parse_csv_table(text: str, name: str, *, kind: str, accelerator: str, source: Mapping[str, object]) -> KernelTable:
    """A table from CSV: a header of column names (``time [us]``: the unit in brackets), then one row a line."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
        body = [r for r in reader if any(cell.strip() for cell in r)]
    except StopIteration:
        raise _refuse(name, "the file is empty") from None
    except csv.Error as error:  # a field beyond csv's limit, ...
        raise _refuse(name, f"not a readable CSV table (line {reader.line_num}: {error})") from None
    columns: list[str] = []
    units: dict[str, str] = {}
    for cell in header:
        label, _, rest = cell.partition("[")
        label = label.strip()
        columns.append(label)
        if rest:
            units[label] = rest.rstrip().rstrip("]").strip()
    return build_table(name=name, kind=kind, split="fit", accelerator=accelerator, source=source,
                       columns=columns, rows=body, units=units)


def read_table(
    path: str | Path, *, kind: str | None = None, accelerator: str | None = None,
    source: Mapping[str, object] | None = None,
) -> KernelTable:
    """A user's table: JSON in the shipped format, or CSV (``kind``, ``accelerator`` and ``source`` then given)."""
    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".json":
        return parse_json_table(text, path.name)
    if kind is None or accelerator is None:
        raise _refuse(path.name, "a CSV table needs its kind and accelerator (e.g. --kind matmul --accelerator H100)")
    return parse_csv_table(text, path.name, kind=kind, accelerator=accelerator,
                           source=source or _own_source(path))


def _own_source(path: Path) -> dict[str, str]:
    return {"title": f"the user's measurements in {path.name}", "url": str(path), "date": "unknown",
            "hardware": "the user's cluster", "software": "unknown", "notes": "read from a user's CSV file"}


@cache
def shipped_tables() -> tuple[KernelTable, ...]:
    """Every table shipped in ``mlsysim/data/kernels``, by file name."""
    folder = files("mlsysim.data").joinpath("kernels")
    if not folder.is_dir():
        return ()
    entries = sorted((e for e in folder.iterdir() if e.name.endswith(".json")), key=lambda e: e.name)
    return tuple(parse_json_table(e.read_text(encoding="utf-8"), e.name) for e in entries)


def tables(*, kind: str | None = None, split: str | None = None, accelerator: str | None = None) -> Iterator[KernelTable]:
    """The shipped tables of a kind, split and accelerator (each None: any)."""
    for table in shipped_tables():
        if (kind is None or table.kind == kind) and (split is None or table.split == split) and (
            accelerator is None or table.accelerator == accelerator
        ):
            yield table
