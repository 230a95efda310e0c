"""A user's own kernel measurements in: fit each kind's constants, check their bounds, write a cluster file.

``mlsysim calibrate kernels FILE [FILE ...]`` reads the user's tables (:func:`read_user_tables`:
JSON in the kernel-table format of :mod:`mlsysim.kernels.tables`, CSV with ``--kind`` and
``--accelerator``, or an nccl-tests log), all of one accelerator, and fits, per kind, the
constants the shipped fits hold (:func:`calibrate`) with the same pure functions:

* matmul: :func:`mlsysim.validation.kernels_matmul.fit_matmul_constants` with the shipped fit as
  its base: the ceiling of each format the tables measure, and the accelerator's best measured
  efficiency (the cap of its ceilings); the launch latency, fill, epilogue share, memory
  efficiency and power exponent stay the shipped ones (one GPU's table cannot pin them);
* attention: :func:`mlsysim.kernels.attention_fit.fit_attention` (its floor from the user's
  memory fit, else the shipped one);
* memory: :func:`mlsysim.kernels.memory.fit_memory`;
* collective: :func:`mlsysim.kernels.collective_fit.fit_collectives` from the shipped constants,
  the size curve's shape (half size, sharpness) kept.

Tables of split ``holdout`` are priced (their errors shown) but never fitted on. Each fitted
constant is checked against its bound (:class:`Constant`): no efficiency, fraction or ceiling
above 1 (the datasheet's peak), no matmul ceiling above the best efficiency the user's own rows
measured, no floor below 0, every constant within the range its fit module states. A constant
outside is refused (:attr:`KernelCalibration.refused`); the command writes the file anyway only
with ``--force``, and the file then lists them (``forced``). The file's form is
:mod:`mlsysim.kernels.cluster`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.fileio import read_text
from mlsysim.core.text import printable
from mlsysim.kernels._accelerator import accelerator_entry, registry_accelerator
from mlsysim.kernels.attention import shipped_attention_fit
from mlsysim.kernels.attention_fit import HEAD_OVERHEAD_MAX, LOOP_OVERHEAD_MAX, fit_attention
from mlsysim.kernels.cluster import KINDS, cluster_document, table_entry
from mlsysim.kernels.collective_fit import BOUNDS as COLLECTIVE_BOUNDS
from mlsysim.kernels.collective_fit import fit_collectives
from mlsysim.kernels.collectives import CollectiveConstants, predict_table, shipped_constants
from mlsysim.kernels.collectives import Constant as CollectiveConstant
from mlsysim.kernels.fit_documents import FittedConstant, MemoryFit
from mlsysim.kernels.matmul import MatmulFit, shipped_fit
from mlsysim.kernels.memory import fit_memory, shipped_memory_fit
from mlsysim.kernels.tables import KernelTable, parse_csv_table, parse_json_table
from mlsysim.validation.kernels_attention import attention_errors, memory_errors
from mlsysim.validation.kernels_matmul import (
    CEILING_LOW,
    fit_matmul_constants,
    matmul_errors,
    measured_bests,
)

KEPT_COLLECTIVE = ("half_size", "sharpness")
"""The collective constants a user's logs do not refit: the size curve's shape, pinned by the many
shipped sweeps (a cluster's rates and latencies are what differ)."""

SLACK = 1e-4
"""Relative slack of a bound check: fitted values are stored rounded (4-6 significant digits)."""


@dataclass(frozen=True)
class Constant:
    """One fitted constant beside the shipped one, with its bound (``low`` <= value <= ``high``)."""

    kind: str
    name: str
    fitted: float
    shipped: float | None
    low: float
    high: float
    bound: str
    """The bound in words (where it comes from)."""
    unit: str = ""

    @property
    def outside(self) -> bool:
        """Whether the fitted value lies outside its bound (beyond the rounding slack)."""
        return not (self.low - SLACK * abs(self.low) <= self.fitted <= self.high + SLACK * abs(self.high))

    def refusal(self) -> str:
        """One line: the constant, its value and its bound."""
        return (f"{self.kind} {self.name} = {_number(self.fitted, self.unit)} is outside its bound "
                f"[{_number(self.low, self.unit)}, {_number(self.high, self.unit)}] ({self.bound})")


@dataclass(frozen=True)
class TableErrors:
    """One table's median and worst |model / measured - 1| under the shipped and the fitted constants
    (None where a fit does not cover it)."""

    table: KernelTable
    before: tuple[float, float] | None
    after: tuple[float, float] | None


@dataclass(frozen=True)
class KindFit:
    """One kind's fit: its constants, its tables' errors, and what the cluster file stores of it."""

    kind: str
    tables: tuple[KernelTable, ...]
    constants: tuple[Constant, ...]
    errors: tuple[TableErrors, ...]
    stored: Mapping[str, object]
    """The cluster file's entry of the kind (tables, fit)."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelCalibration:
    """Every kind fitted on one accelerator's tables (:func:`calibrate`)."""

    accelerator: str
    kinds: Mapping[str, KindFit]
    notes: tuple[str, ...] = ()

    @property
    def refused(self) -> tuple[Constant, ...]:
        """The constants outside their bounds."""
        return tuple(c for fit in self.kinds.values() for c in fit.constants if c.outside)

    def document(self, command: str, *, forced: bool = False) -> dict[str, object]:
        """The cluster file's JSON document (:mod:`mlsysim.kernels.cluster`); ``forced``: the refused
        constants are written anyway, and listed."""
        refused = [c.refusal() for c in self.refused] if forced else []
        return cluster_document(self.accelerator, {k: f.stored for k, f in self.kinds.items()}, command=command,
                                forced=refused)


# -- reading the user's files -----------------------------------------------------------------------


def read_user_tables(
    paths: Sequence[str | os.PathLike[str]], *, kind: str | None = None, accelerator: str | None = None,
    link: str | None = None, nic_rate: float | None = None,
) -> tuple[str, tuple[KernelTable, ...]]:
    """(the accelerator, the tables) of the user's files: ``.json`` a table in the kernel-table format,
    ``.csv`` one with ``kind`` and ``accelerator`` given, anything else an nccl-tests log (a collective
    table; ``accelerator`` given, ``link`` and ``nic_rate`` for a log across hosts). Every table must be
    of one accelerator (``accelerator``'s where given) and of a kind :data:`KINDS` names (``kind``'s
    where given); an empty or unreadable file, a table of another kind or accelerator is refused."""
    if kind is not None and kind not in KINDS:
        raise InputError(f"--kind: {kind!r} is not one of {', '.join(KINDS)}", field="kind")
    wanted = registry_accelerator(accelerator) if accelerator is not None else None
    found: list[KernelTable] = []
    for path in paths:
        table = _read_one(Path(path), kind, wanted, link, nic_rate)
        if table.kind not in KINDS:
            raise InputError(f"{table.name}: {_a(table.kind)} table; 'calibrate kernels' fits {', '.join(KINDS)}",
                             field="kind")
        if kind is not None and table.kind != kind:
            raise InputError(f"{table.name}: {_a(table.kind)} table, but --kind {kind}", field="kind")
        own = registry_accelerator(table.accelerator, f"{table.name}: accelerator")
        if wanted is not None and own != wanted:
            raise InputError(f"{table.name}: a table of {own}, but --accelerator {wanted}", field="accelerator")
        if any(t.name == table.name for t in found):
            raise InputError(f"{table.name}: two tables of this name; a cluster file names its tables by file "
                             "name, so rename one", field="tables")
        found.append(dataclasses.replace(table, accelerator=own))
    names = sorted({t.accelerator for t in found})
    if len(names) > 1:
        raise InputError(f"the tables measure {' and '.join(names)}: a cluster file holds one accelerator; give "
                         "each its own (--accelerator picks one)", field="accelerator")
    if not found:
        raise InputError("no table given; expected FILE [FILE ...]", field="tables")
    return names[0], tuple(found)


def _read_one(path: Path, kind: str | None, accelerator: str | None, link: str | None,
              nic_rate: float | None) -> KernelTable:
    name = printable(path.name)
    text = read_text(path, limit=256 * 2**20)
    if not text.strip():
        raise InputError(f"{name}: the file is empty", field="tables")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return parse_json_table(text, name)
    if suffix == ".csv":
        if kind is None or accelerator is None:
            need = " and ".join(o for o, v in (("--kind", kind), ("--accelerator", accelerator)) if v is None)
            raise InputError(f"{name}: a CSV table needs {need} (e.g. --kind matmul --accelerator A100)",
                             field="tables")
        return parse_csv_table(text, name, kind=kind, accelerator=accelerator, source=_own_source(path))
    if kind not in (None, "collective"):
        raise InputError(f"{name}: read as an nccl-tests log (neither .json nor .csv), a collective table, but "
                         f"--kind {kind}", field="kind")
    if accelerator is None:
        raise InputError(f"{name}: an nccl-tests log needs --accelerator (the GPUs it ran on, e.g. H100)",
                         field="accelerator")
    from mlsysim.calibrate.nccl_tests import kernel_table

    return kernel_table(path, accelerator=accelerator, link=link, nic_rate=nic_rate)


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _own_source(path: Path) -> dict[str, str]:
    return {"title": f"the user's measurements in {path.name}", "url": str(path), "date": "unknown",
            "hardware": "the user's cluster", "software": "unknown",
            "notes": "read from a user's CSV file by mlsysim calibrate kernels"}


# -- fitting ----------------------------------------------------------------------------------------


def calibrate(tables: Sequence[KernelTable], accelerator: str) -> KernelCalibration:
    """Fit every kind the ``tables`` (all of ``accelerator``) hold; the module docstring says how."""
    by_kind = {kind: tuple(t for t in tables if t.kind == kind) for kind in KINDS}
    kinds: dict[str, KindFit] = {}
    notes: list[str] = []
    memory_fit: MemoryFit | None = None
    for kind in ("memory", "matmul", "attention", "collective"):  # memory first: attention reads its floor
        given = by_kind[kind]
        if not given:
            continue
        fitted = [t for t in given if t.split == "fit"]
        if not fitted:
            notes.append(f"{kind}: every table is held out (split holdout), so nothing is fitted on them")
            continue
        if kind == "matmul":
            kinds[kind] = _matmul(given, fitted, accelerator)
        elif kind == "memory":
            kinds[kind] = _memory(given, fitted, accelerator)
            memory_fit = kinds[kind].stored["fit"]  # type: ignore[assignment]
        elif kind == "attention":
            kinds[kind] = _attention(given, fitted, accelerator, memory_fit)
        else:
            kinds[kind] = _collective(given, fitted)
    if not kinds:
        raise InputError("nothing to fit: every table given is held out (split holdout)", field="tables")
    return KernelCalibration(accelerator, {k: kinds[k] for k in KINDS if k in kinds}, tuple(notes))


def _summary(errors: np.ndarray) -> tuple[float, float] | None:
    finite = np.abs(errors[np.isfinite(errors)])
    return None if finite.size == 0 else (float(np.median(finite)), float(finite.max()))


def _table_errors(tables: Iterable[KernelTable], errors: Callable[[KernelTable, object], np.ndarray],
                  shipped: object, fitted: object) -> tuple[TableErrors, ...]:
    """Each table's errors under the shipped and the fitted constants (None where a fit does not cover it)."""
    out = []
    for table in tables:
        pair = []
        for fit in (shipped, fitted):
            try:
                pair.append(_summary(errors(table, fit)))
            except InputError:
                pair.append(None)
        out.append(TableErrors(table, pair[0], pair[1]))
    return tuple(out)


def _stored(tables: Sequence[KernelTable], fit: Mapping[str, object], **more: object) -> dict[str, object]:
    return {"tables": [table_entry(t) for t in tables], **more, "fit": dict(fit)}


def _holdout_notes(tables: Sequence[KernelTable]) -> tuple[str, ...]:
    return tuple(f"{t.name} is held out (split holdout): priced, never fitted on" for t in tables if t.split != "fit")


def _matmul(given: Sequence[KernelTable], fitted: Sequence[KernelTable], accelerator: str) -> KindFit:
    base = shipped_fit()
    fit = fit_matmul_constants(fitted, base=base)
    rows, group_best, device_best = measured_bests(fitted, fit.power_exponent)
    entry = accelerator_entry(accelerator)
    architecture = entry.architecture or entry.name
    constants: list[Constant] = []
    for (arch, fmt), best in zip(rows.groups, group_best, strict=True):
        constants.append(Constant(
            "matmul", f"ceiling {arch} {fmt}", fit.ceilings[arch][fmt], base.ceilings.get(arch, {}).get(fmt),
            CEILING_LOW, min(1.0, float(best)),
            f"from {CEILING_LOW:g} to the best efficiency your rows measured, at most 1 (the dense peak)"))
    for (device, tensor), best in zip(rows.devices, device_best, strict=True):
        constants.append(Constant(
            "matmul", f"best measured {accelerator} {tensor}", float(best),
            base.device_best.get(device, {}).get(tensor), 0.0, 1.0,
            "measured FLOP/s over the datasheet's dense peak; above 1 a row beat the peak"))
    formats = sorted({fmt for _, fmt in rows.groups})
    pruned = MatmulFit(
        *fit.structure, ceilings={architecture: dict(fit.ceilings.get(architecture, {}))},
        device_best={entry.name: dict(fit.device_best.get(entry.name, {}))},
        provenance={**fit.provenance, "about": (
            f"Matrix-product constants of {accelerator} fitted by mlsysim calibrate kernels on the user's tables "
            f"({', '.join(t.name for t in fitted)}): the ceilings of {', '.join(formats)} and the best measured "
            "efficiency are theirs; the structure (launch, fill, epilogue share, memory efficiency, power "
            "exponent) and the ceilings of other formats are the shipped fit's.")},
    )
    errors = _table_errors(given, lambda t, f: matmul_errors(t, f)[0], base, fit)  # type: ignore[arg-type]
    shipped_formats = sorted(set(pruned.ceilings[architecture]) - set(formats))
    notes = _holdout_notes(given) + ((f"the ceilings of {', '.join(shipped_formats)} on {architecture} stay the "
                                      "shipped ones (no table of yours measures them)",) if shipped_formats else ())
    return KindFit("matmul", tuple(given), tuple(constants), errors,
                   _stored(given, pruned.to_json(), fitted=formats), notes)


def _memory(given: Sequence[KernelTable], fitted: Sequence[KernelTable], accelerator: str) -> KindFit:
    fit = fit_memory(fitted)
    entry = fit["accelerators"][accelerator]
    shipped = shipped_memory_fit()["accelerators"].get(accelerator)
    best = float(entry["fraction"]["bound"][1])
    fastest = float(entry["floor"]["bound"][1])
    constants = (
        Constant("memory", f"bandwidth fraction {accelerator}", float(entry["fraction"]["value"]),
                 _value(None if shipped is None else shipped["fraction"]), 0.0, min(1.0, best),
                 "at most the best your rows measured and 1 (the datasheet's bandwidth)"),
        Constant("memory", f"floor {accelerator}", float(entry["floor"]["value"]),
                 _value(None if shipped is None else shipped["floor"]), 0.0, fastest, "from 0 to the shortest kernel your rows measured", "s"),
    )
    errors = _table_errors(given, lambda t, f: memory_errors([t], f)[0].errors, None, fit)  # type: ignore[arg-type]
    return KindFit("memory", tuple(given), constants, errors, _stored(given, fit), _holdout_notes(given))


def _attention(given: Sequence[KernelTable], fitted: Sequence[KernelTable], accelerator: str,
               memory_fit: MemoryFit | None) -> KindFit:
    floors = memory_fit if memory_fit is not None else shipped_memory_fit()
    fit = fit_attention(fitted, floors)
    architecture = str(accelerator_entry(accelerator).architecture)  # as fit_attention names it
    mine = fit["architectures"][architecture]
    shipped = shipped_attention_fit()["architectures"].get(architecture)
    constants = [
        Constant("attention", f"head overhead D_0 {architecture}", float(mine["head_overhead"]["value"]),
                 _value(None if shipped is None else shipped["head_overhead"]), 0.0, HEAD_OVERHEAD_MAX,
                 "the fit's search range, FLOPs per score"),
        Constant("attention", f"floor t_0 {architecture}", float(mine["floor"]["value"]),
                 _value(None if shipped is None else shipped["floor"]), 0.0, math.inf,
                 "at least 0 (the memory-bound fit's floor)", "s"),
    ]
    for group, values in mine["groups"].items():
        old = None if shipped is None else shipped["groups"].get(group)
        constants += [
            Constant("attention", f"{group} scale a", float(values["scale"]["value"]),
                     _value(None if old is None else old["scale"]), 0.0, 1.0, "an efficiency: at most 1"),
            Constant("attention", f"{group} loop overhead L_0", float(values["loop_overhead"]["value"]),
                     _value(None if old is None else old["loop_overhead"]), 0.0, LOOP_OVERHEAD_MAX,
                     "the fit's search range, key tiles"),
            Constant("attention", f"{group} ceiling c", float(values["ceiling"]["value"]),
                     _value(None if old is None else old["ceiling"]), 0.0, 1.0,
                     "the best efficiency your rows measured: above 1 a row beat the dense peak"),
        ]
    directions = {values["direction"] for values in mine["groups"].values()}
    notes = _holdout_notes(given)
    if "forward+backward" not in directions and not {"forward", "backward"} <= directions:
        notes += (f"your attention tables measure {', '.join(sorted(directions))} only: a training step needs the "
                  "forward and the backward pass, so a scenario with flash_attention on refuses this file's "
                  "attention",)
    errors = _table_errors(given, lambda t, f: attention_errors([t], f)[0].errors, None, fit)  # type: ignore[arg-type]
    stored = {**fit, "architectures": {architecture: mine}}
    return KindFit("attention", tuple(given), tuple(constants), errors, _stored(given, stored), notes)


def _collective(given: Sequence[KernelTable], fitted: Sequence[KernelTable]) -> KindFit:
    base = shipped_constants()
    fit = fit_collectives(fitted, start=base, keep=KEPT_COLLECTIVE)
    mine = {t.name for t in fitted}
    constants = []
    for kind, name, constant in _collective_constants(fit.constants):
        if not mine & set(constant.tables):
            continue  # kept as shipped
        low, high, _, bound = COLLECTIVE_BOUNDS[kind]
        old = dict((n, c) for k, n, c in _collective_constants(base) if k == kind).get(name)
        constants.append(Constant("collective", name, constant.value, None if old is None else old.value, low, high,
                                  bound.removeprefix("in "), constant.unit if constant.unit != "1" else ""))
    errors = _table_errors(given, lambda t, f: predict_table(t, f) / t.time - 1.0,  # type: ignore[arg-type]
                           base, fit.constants)
    notes = _holdout_notes(given) + tuple(
        f"{c.name} = {_number(c.fitted, c.unit)} sits at its bound: your tables push it there rather than pin it"
        for c in constants if min(abs(c.fitted - c.low), abs(c.fitted - c.high)) <= SLACK * max(abs(c.fitted), 1e-30)
    ) + (
        "collective constants are for the kernel API (mlsysim.kernels.collectives.collective(..., constants=...)); "
        "a scenario's links are its intra/inter_bandwidth and latency inputs",)
    stored = _stored(given, {"objective": round(fit.objective, 6), "constants": fit.constants.as_json()})
    return KindFit("collective", tuple(given), tuple(constants), errors, stored, notes)


def _collective_constants(constants: CollectiveConstants) -> Iterable[tuple[str, str, CollectiveConstant]]:
    """(kind of constant, name shown, constant) of every constant (kinds as the fit's ``BOUNDS`` names them)."""
    stored = {"common": {"step_latency": "step_latency", "half_size": "half_size", "sharpness": "sharpness"},
              "scale_up": {"ring_efficiency": "ring_efficiency", "base_latency": "base_latency"},
              "scale_out": {"efficiency": "out_efficiency", "step_latency": "out_step_latency"}}
    for name, constant in constants.common.items():
        yield stored["common"][name], f"{name} (NVLink, all GPUs)", constant
    for key, values in constants.scale_up.items():
        for name, constant in values.items():
            yield stored["scale_up"][name], f"{name} {key}", constant
    for key, constant in constants.nvls.items():
        yield "nvls_efficiency", f"nvls_efficiency {key}", constant
    for key, values in constants.scale_out.items():
        for name, constant in values.items():
            yield stored["scale_out"][name], f"{name} {key}", constant
    for key, constant in constants.harness.items():
        yield "harness_latency", f"harness_latency {key}", constant


def _value(shipped: FittedConstant | None) -> float | None:
    """A shipped constant's value (None: the shipped fit has none)."""
    return None if shipped is None else float(shipped["value"])


def _number(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1e6:.4g} us"
    if unit == "B":
        return f"{value:.4g} B"
    return f"{value:.4g}"


def constant_text(value: float | None, unit: str) -> str:
    """A constant as the command prints it (``-`` where there is none)."""
    return "-" if value is None else _number(value, unit)
