"""A cluster file: kernel constants fitted on a user's own measurements of one accelerator.

``mlsysim calibrate kernels FILE ... --out my_cluster.json`` writes it (:mod:`mlsysim.calibrate.kernels`);
a scenario reads it through its ``cluster_file`` input: when the step comes from the operators,
its fits replace the shipped ones for that accelerator (:func:`mlsysim.kernels.device.device_kernels`);
the kernel functions take its parts (``matmul(..., fit=fits.matmul)``,
``attention(..., fit=fits.attention)``, ``memory_kernel(..., fit=fits.memory)``,
``collective(..., constants=fits.collectives)``). JSON::

    {
      "format": "mlsysim cluster file",
      "version": 1,
      "accelerator": "A100",                # the registry's name of the accelerator measured
      "command": "mlsysim calibrate kernels gemms.csv --kind matmul --accelerator A100",
      "forced": [],                         # each constant --force wrote outside its bound, in words
      "kinds": {                            # any of matmul, attention, memory, collective
        "matmul": {
          "tables": [{"name": "gemms.csv", "kind": "matmul", "split": "fit", "rows": 24,
                      "source": {"title": ..., "url": ..., "date": ..., "hardware": ..., "software": ...,
                                 "notes": ...}}],
          "fitted": ["bf16"],               # matmul only: the formats the tables fitted (the rest shipped)
          "fit": {...}                      # kernel_fits/matmul.json's form, this accelerator's part
        },
        "attention": {"tables": [...], "fit": {...}},      # kernel_fits/attention.json's form
        "memory": {"tables": [...], "fit": {...}},         # kernel_fits/memory.json's form
        "collective": {"tables": [...], "fit": {"constants": {...}}}  # kernel_fits/collectives.json's
      }
    }

Every constant in a ``fit`` carries what it is, the tables it rests on and its bound, as in the
shipped fits files. A file that is not in this form is refused with an
:class:`~mlsysim.core.exceptions.InputError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from mlsysim.core.exceptions import InputError
from mlsysim.core.fileio import read_text
from mlsysim.core.text import printable
from mlsysim.hardware.types import Accelerator
from mlsysim.kernels._accelerator import accelerator_entry, accelerator_name
from mlsysim.kernels.collectives import CollectiveConstants
from mlsysim.kernels.fit_documents import AttentionFit, FittedConstant, MemoryFit
from mlsysim.kernels.matmul import MatmulFit
from mlsysim.kernels.tables import KernelTable

FORMAT = "mlsysim cluster file"
"""The ``format`` every cluster file names."""

VERSION = 1
"""The version this library writes and reads."""

KINDS = ("matmul", "attention", "memory", "collective")
"""The kinds a cluster file may hold, in the order they are fitted and shown."""

FIELD = "cluster_file"
"""The scenario input that reads a cluster file (errors are located there)."""


@dataclass(frozen=True, eq=False)
class ClusterFits:
    """A cluster file's fits (each None where the file holds none of that kind).

    ``matmul`` is a :class:`~mlsysim.kernels.matmul.MatmulFit`; ``attention`` and ``memory``
    are in the form of the shipped ``attention.json`` and ``memory.json``; ``collectives`` a
    :class:`~mlsysim.kernels.collectives.CollectiveConstants`. Compared by identity (a device's
    kernels are kept per fits object).
    """

    path: str
    accelerator: str
    matmul: MatmulFit | None
    matmul_formats: tuple[str, ...]
    """The formats the user's matrix-product tables fitted (the file's other ceilings are the shipped ones)."""
    attention: AttentionFit | None
    memory: MemoryFit | None
    collectives: CollectiveConstants | None
    forced: tuple[str, ...]
    """Each constant written outside its bound by ``--force``, in words (empty: none)."""

    def kinds(self) -> tuple[str, ...]:
        """The kinds the file holds."""
        held = {"matmul": self.matmul, "attention": self.attention, "memory": self.memory,
                "collective": self.collectives}
        return tuple(kind for kind in KINDS if held[kind] is not None)

    def describe(self) -> str:
        """What the file prices a scenario's operators with, in words (for explain's origins)."""
        used = []
        if self.matmul is not None:
            used.append(f"matmul {', '.join(self.matmul_formats)}")
        used += [kind for kind in ("attention", "memory") if getattr(self, kind) is not None]
        shipped = [kind for kind in ("attention", "memory") if getattr(self, kind) is None]
        text = f"cluster file {self.path}: {', '.join(used) or 'no operator kernels'}"
        if self.matmul is None:
            shipped.insert(0, "matmul")
        if shipped:
            text += f"; {', '.join(shipped)} shipped"
        if self.collectives is not None:
            text += "; its collective constants are not read by the scenario (links: intra/inter_bandwidth)"
        if self.forced:
            text += f"; {len(self.forced)} constant(s) forced outside their bounds"
        return text


def table_entry(table: KernelTable) -> dict[str, object]:
    """A table as a cluster file names it: its name, kind, split, rows and source."""
    source = table.source
    return {"name": table.name, "kind": table.kind, "split": table.split, "rows": len(table),
            "source": {"title": source.title, "url": source.url, "date": source.date, "hardware": source.hardware,
                       "software": source.software, "notes": source.notes}}


def cluster_document(accelerator: str, kinds: Mapping[str, Mapping[str, object]], *, command: str,
                     forced: Sequence[str] = ()) -> dict[str, object]:
    """A cluster file's JSON document (module docstring); ``kinds`` maps each kind to its
    ``tables``, ``fit`` (and, for matmul, ``fitted``)."""
    return {"format": FORMAT, "version": VERSION, "accelerator": accelerator, "command": command,
            "forced": list(forced), "kinds": {kind: dict(kinds[kind]) for kind in KINDS if kind in kinds}}


def _refuse(name: str, message: str) -> InputError:
    return InputError(f"{name}: {message}", loc=(FIELD,))


def _object(name: str, value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _refuse(name, f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def parse_cluster_file(text: str, name: str) -> ClusterFits:
    """The fits of a cluster file's text (``name`` says where it came from)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise _refuse(name, f"not JSON ({error.msg} at line {error.lineno}); a cluster file is written by "
                            "'mlsysim calibrate kernels FILE --out cluster.json'") from None
    document = _object(name, document, "the file")
    if document.get("format") != FORMAT:
        raise _refuse(name, f"not a cluster file (its format is {document.get('format')!r}, expected {FORMAT!r}); "
                            "write one with 'mlsysim calibrate kernels FILE --out cluster.json'")
    if document.get("version") != VERSION:
        raise _refuse(name, f"version {document.get('version')!r} is not one this mlsysim reads ({VERSION})")
    given = document.get("accelerator")
    if not isinstance(given, str):
        raise _refuse(name, "accelerator must name the registry's accelerator (e.g. 'A100')")
    try:
        accelerator = accelerator_name(accelerator_entry(given))
    except InputError as error:
        raise _refuse(name, f"accelerator: {error.message}") from None
    kinds = _object(name, document.get("kinds"), "kinds")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise _refuse(name, f"kind {unknown[0]!r} is not one of {', '.join(KINDS)}")
    forced = document.get("forced", [])
    if not isinstance(forced, list) or not all(isinstance(f, str) for f in forced):
        raise _refuse(name, "forced must be a list of texts")
    matmul: MatmulFit | None = None
    attention: AttentionFit | None = None
    memory: MemoryFit | None = None
    collectives: CollectiveConstants | None = None
    formats: tuple[str, ...] = ()
    for kind, part in kinds.items():
        entry = _object(name, part, f"kinds.{kind}")
        fit = _object(name, entry.get("fit"), f"kinds.{kind}.fit")
        try:
            if kind == "matmul":
                matmul = MatmulFit.from_json(fit)
                formats = tuple(str(f) for f in entry.get("fitted", ()))
                efficiencies = [v for table in (matmul.ceilings, matmul.device_best)
                                for values in table.values() for v in values.values()]
            elif kind == "collective":
                collectives = CollectiveConstants.from_json(_object(name, fit.get("constants"), "the constants"))
                efficiencies = []
            elif kind == "memory":
                memory = cast(MemoryFit, fit)  # read as the form it must have: a KeyError or TypeError refuses it
                efficiencies = _memory_values(memory, accelerator)
            else:
                attention = cast(AttentionFit, fit)
                efficiencies = _attention_values(attention, accelerator)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise _refuse(name, f"kinds.{kind}.fit is not in the form 'mlsysim calibrate kernels' writes "
                                f"({type(error).__name__}: {error})") from None
        wrong = [v for v in efficiencies if not 0.0 < v <= 1.0]
        if wrong and not forced:  # a hand-edited file: no efficiency above the peak unless --force wrote it
            raise _refuse(name, f"kinds.{kind}: an efficiency of {wrong[0]:g} is outside (0, 1] and the file lists "
                                "no forced constant; write it with 'mlsysim calibrate kernels'")
    return ClusterFits(path=name, accelerator=accelerator, matmul=matmul, matmul_formats=formats,
                       attention=attention, memory=memory, collectives=collectives, forced=tuple(forced))


def _value(constant: FittedConstant, key: str) -> float:
    """``constant["value"]`` (the fit's ``key``) as a finite number of at least 0 (a ValueError otherwise)."""
    value = float(constant["value"])
    if not 0.0 <= value < float("inf"):
        raise ValueError(f"{key} is {value!r}")
    return value


def _memory_values(fit: MemoryFit, accelerator: str) -> list[float]:
    """The fraction (an efficiency) of the file's accelerator in a memory fit, its floor checked."""
    entry = fit["accelerators"].get(accelerator)
    if entry is None:
        raise KeyError(f"no constants of {accelerator}, the file's accelerator")
    _value(entry["floor"], "floor")
    return [_value(entry["fraction"], "fraction")]


def _attention_values(fit: AttentionFit, accelerator: str) -> list[float]:
    """Every group's scale and ceiling (efficiencies) of an attention fit, its other constants checked."""
    out = []
    for architecture in fit["architectures"].values():
        _value(architecture["head_overhead"], "head_overhead")
        _value(architecture["floor"], "floor")
        for group in architecture["groups"].values():
            _value(group["loop_overhead"], "loop_overhead")
            out += [_value(group["scale"], "scale"), _value(group["ceiling"], "ceiling")]
    return out


def read_cluster_file(path: str | os.PathLike[str]) -> ClusterFits:
    """The fits of the cluster file at ``path``; the same object while the file is unchanged (by its
    path, modification time and size), so that a device's kernels computed from it are kept."""
    file = Path(os.path.expanduser(os.fspath(path)))
    name = printable(os.fspath(path))
    try:
        info = file.stat()
    except OSError as error:
        raise _refuse(name, f"cannot read the file ({error.strerror})") from None
    key = (str(file.resolve()), info.st_mtime_ns, info.st_size)
    found = _READ.get(key)
    if found is None or found.path != name:
        text = read_text(file)
        if not text.strip():
            raise _refuse(name, "the file is empty")
        found = parse_cluster_file(text, name)
        if len(_READ) > 64:
            _READ.clear()
        _READ[key] = found
    return found


_READ: dict[tuple[str, int, int], ClusterFits] = {}


def check_accelerator(fits: ClusterFits, accelerator: Accelerator) -> None:
    """Refuse the fits of a cluster file measured on another accelerator than ``accelerator``."""
    name = accelerator_name(accelerator)
    if name != fits.accelerator:
        raise InputError(f"{fits.path} was calibrated on {fits.accelerator}, but the scenario's accelerator is "
                         f"{name}; calibrate {name}'s kernels (mlsysim calibrate kernels FILE --accelerator {name}) "
                         "or clear it (cluster_file=none)", loc=(FIELD,))
