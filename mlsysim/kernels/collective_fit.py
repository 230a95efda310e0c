"""Fitting the collective model's constants on measured tables (the shipped ones, or a user's nccl-tests log).

The objective is a robust mean of the log errors of the predicted times, each table weighing
the same (a 24-size sweep counts as much as a 5-size one):

    J = sum_T (1 / |T|) sum_{r in T} rho(ln(t_model(r) / t_measured(r))) / (number of tables),
    rho(e) = 2 c^2 (sqrt(1 + e^2 / c^2) - 1),  c = 0.2

(the "soft L1" loss of :mod:`mlsysim.kernels.least_squares`: squared for errors under about 20%,
linear beyond, so that a few rows a harness disturbed, such as a first call's warm-up of several
milliseconds, do not drag the rest).

It is minimised by Levenberg-Marquardt, each constant searched within its bound
(:data:`BOUNDS`; :mod:`mlsysim.kernels.least_squares`). The search is deterministic; the bound is where each
constant may lie (an efficiency at most 1: no achievable bandwidth above the link's nominal
rate). A constant whose value does not move J (no row depends on it: an NVLS efficiency where
NCCL never chose NVLS) is left out rather than reported at an arbitrary value.

Only tables with ``split == "fit"`` are accepted: a holdout table is refused (a user's own
tables are ``fit``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.kernels.collectives import (
    AUTO,
    NVLS_ARCHITECTURES,
    CollectiveConstants,
    Constant,
    Fabric,
    best_time,
    harness_key,
    table_arguments,
    table_fabrics,
)
from mlsysim.kernels.least_squares import (
    levenberg_marquardt,
    robust,
    round_constant,
    to_search,
    to_value,
)
from mlsysim.kernels.tables import KernelTable
from mlsysim.physics.collective_curves import Algorithm

BOUNDS: Mapping[str, tuple[float, float, str, str]] = {
    "ring_efficiency": (0.05, 1.0, "1", "in [0.05, 1]: no achievable bandwidth above the link's nominal rate"),
    "nvls_efficiency": (0.05, 1.0, "1", "in [0.05, 1]: no achievable wire bandwidth above the link's nominal rate"),
    "out_efficiency": (0.05, 1.0, "1", "in [0.05, 1]: no achievable bandwidth above the NICs' nominal rate"),
    "base_latency": (1e-7, 2e-4, "s", "in [0.1, 200] us, the search range"),
    "step_latency": (1e-8, 2e-5, "s", "in [0.01, 20] us, the search range"),
    "out_step_latency": (1e-8, 1e-4, "s", "in [0.01, 100] us, the search range"),
    "half_size": (2.0**16, 2.0**32, "B", "in [64 KiB, 4 GiB] per rank, the search range"),
    "sharpness": (0.02, 2.0, "1", "in [0.02, 2], the search range"),
    "harness_latency": (1e-8, 2e-4, "s", "in [0.01, 200] us, the search range"),
}
"""Each kind of constant: (low, high, unit, the bound as stated in the fits file)."""

START: Mapping[str, float] = {
    "ring_efficiency": 0.8, "nvls_efficiency": 0.6, "out_efficiency": 0.8, "base_latency": 1e-5,
    "step_latency": 1e-6, "out_step_latency": 5e-6, "half_size": 2.0**24, "sharpness": 0.2,
    "harness_latency": 1e-5,
}
"""Where a constant's search starts when no earlier value is given (order-of-magnitude guesses)."""

WHAT: Mapping[str, str] = {
    "ring_efficiency": "fraction of the NVLink rate per direction that ring and point-to-point copies reach on "
                       "large messages ({key} GPUs)",
    "nvls_efficiency": "fraction of the NVLink rate per direction that NVLink SHARP (NVLS) all-reduce reaches on "
                       "the wire, (n + 1) / n of the buffer per direction ({key})",
    "out_efficiency": "fraction of a rank's NIC share per direction reached across domains ({key})",
    "base_latency": "fixed start of a collective ({key} GPUs; includes the launch)",
    "step_latency": "latency of each algorithm step inside an NVLink domain (one NVLink hop; all GPUs)",
    "out_step_latency": "latency of each algorithm step across domains ({key})",
    "half_size": "per-rank size at which a collective reaches 2^-g of its large-message rate (g: sharpness)",
    "sharpness": "g, the power of the size curve's rise (x / (x + x_h))^g",
    "harness_latency": "per-call overhead of the measuring setup {key} beyond the collective's own time "
                       "(rows it measured only; never part of a prediction)",
}
"""What each kind of constant is, for the fits file (``{key}`` the architecture, level or link)."""


@dataclass(frozen=True)
class _Parameter:
    group: str  # "common", "scale_up", "nvls" or "scale_out"
    key: str  # the architecture, "Architecture/level", the link, or "all"
    name: str  # the constant's kind (a key of BOUNDS)


_SLOTS = {"ring": ("scale_up", "ring_efficiency"), "base": ("scale_up", "base_latency"),
          "step": ("common", "step_latency"), "nvls": ("nvls", "nvls_efficiency"),
          "out": ("scale_out", "out_efficiency"), "out_step": ("scale_out", "out_step_latency"),
          "half": ("common", "half_size"), "sharp": ("common", "sharpness"),
          "harness": ("harness", "harness_latency")}
_ARGUMENT = {"ring": "ring_efficiency", "base": "base_latency", "step": "step_latency", "nvls": "nvls_efficiency",
             "out": "out_efficiency", "out_step": "out_step_latency", "half": "half_size", "sharp": "sharpness", "harness": "harness_latency"}
_STORED = {"ring_efficiency": "ring_efficiency", "base_latency": "base_latency", "step_latency": "step_latency",
           "nvls_efficiency": "efficiency", "out_efficiency": "efficiency", "out_step_latency": "step_latency",
           "half_size": "half_size", "sharpness": "sharpness", "harness_latency": "latency"}


@dataclass(frozen=True)
class CollectiveFit:
    """The fitted constants, the tables they rest on, and the objective reached."""

    constants: CollectiveConstants
    tables: tuple[str, ...]
    objective: float
    iterations: int


def _slot_key(slot: str, fabric: Fabric) -> str | None:
    if slot in ("ring", "base"):
        return fabric.architecture
    if slot == "nvls":
        return f"{fabric.architecture}/{fabric.level}" if fabric.architecture in NVLS_ARCHITECTURES else None
    if slot in ("out", "out_step"):
        return fabric.out_link
    if slot == "harness":
        return None  # set per row from the table's library column
    return "all"


class _Problem:
    """The fit tables as arrays, and for every row the index of each constant it reads."""

    def __init__(self, tables: Sequence[KernelTable], start: CollectiveConstants | None):
        self.parameters: list[_Parameter] = []
        index: dict[_Parameter, int] = {}
        self.rows: dict[str, list[np.ndarray]] = {}
        columns: dict[str, list[np.ndarray]] = {s: [] for s in _SLOTS}
        arrays: dict[str, list[np.ndarray]] = {k: [] for k in ("op", "algorithm", "size", "group", "domain",
                                                                "up_rate", "out_rate")}
        measured, weights, owners = [], [], []
        self.users: dict[int, set[str]] = {}
        for table in tables:
            fabrics = table_fabrics(table)
            probe = table_arguments(table, _probe_constants(fabrics), fabrics=fabrics)
            algorithms = np.asarray(probe["algorithm"])
            for k in arrays:
                arrays[k].append(np.asarray(probe[k], dtype=float if k in ("size", "group", "domain", "up_rate",
                                                                            "out_rate") else int))
            for slot, (group, name) in _SLOTS.items():
                slot_index = np.full(len(table), -1)
                for i, fabric in enumerate(fabrics):
                    key = _harness_key(table, i) if slot == "harness" else _slot_key(slot, fabric)
                    if key is None:
                        continue
                    if slot == "nvls" and algorithms[i] not in (AUTO, Algorithm.NVLS, Algorithm.NVLS_TREE):
                        continue
                    parameter = _Parameter(group, key, name)
                    if parameter not in index:
                        index[parameter] = len(self.parameters)
                        self.parameters.append(parameter)
                    slot_index[i] = index[parameter]
                    self.users.setdefault(index[parameter], set()).add(table.name)
                columns[slot].append(slot_index)
            measured.append(table.time)
            weights.append(np.full(len(table), 1.0 / len(table)))
            owners.append(table.name)
        self.slots = {s: np.concatenate(v) for s, v in columns.items()}
        self.arrays = {k: np.concatenate(v) for k, v in arrays.items()}
        self.measured = np.concatenate(measured)
        self.weights = np.concatenate(weights) / len(tables)
        self.table_names = tuple(owners)
        self.theta = np.array([_start_value(p, start) for p in self.parameters])

    def residuals(self, theta: np.ndarray) -> np.ndarray:
        """sqrt(w) ln(t_model / t_measured) of every row (capped at 50 where a model time is infinite)."""
        arguments = {k: v for k, v in self.arrays.items() if k not in ("op", "algorithm", "size", "group", "domain")}
        defaults = {"nvls": np.nan, "out": 1.0, "out_step": 0.0, "harness": 0.0}
        for slot, rows in self.slots.items():
            if slot == "harness":
                continue
            arguments[_ARGUMENT[slot]] = np.where(rows >= 0, theta[np.maximum(rows, 0)], defaults.get(slot, np.nan))
        kernel, _ = best_time(self.arrays["op"], self.arrays["algorithm"], self.arrays["size"], self.arrays["group"],
                              self.arrays["domain"], **arguments)
        harness = np.where(self.slots["harness"] >= 0, theta[np.maximum(self.slots["harness"], 0)], 0.0)
        error = np.log((np.asarray(kernel.time) + harness) / self.measured)
        return robust(error, self.weights)

    def objective(self, theta: np.ndarray) -> float:
        r = self.residuals(theta)
        return float(r @ r)


def _harness_key(table: KernelTable, row: int) -> str | None:
    """``program @ table`` for a row measured by a program other than nccl-tests (its ``library``
    column): that setup's own per-call overhead (its timing around the call, on its machine) is a
    constant of its own; None for nccl-tests or no such column."""
    return harness_key(table, row)


def _probe_constants(fabrics: Sequence[Fabric]) -> CollectiveConstants:
    """Constants that cover every fabric of a table (values irrelevant: only the row arrays are read)."""
    def c(name: str) -> Constant:
        return Constant(START[name], BOUNDS[name][2], name)

    return CollectiveConstants(
        common={"half_size": c("half_size"), "sharpness": c("sharpness"), "step_latency": c("step_latency")},
        scale_up={f.architecture: {"ring_efficiency": c("ring_efficiency"), "base_latency": c("base_latency")}
                  for f in fabrics},
        nvls={}, scale_out={f.out_link: {"efficiency": c("out_efficiency"), "step_latency": c("out_step_latency")}
                            for f in fabrics if f.out_link is not None})


def _start_value(parameter: _Parameter, start: CollectiveConstants | None) -> float:
    if start is not None:
        stored = _STORED[parameter.name]
        found = {"common": start.common, "nvls": start.nvls}.get(parameter.group)
        if parameter.group == "scale_up":
            found = start.scale_up.get(parameter.key)
        elif parameter.group == "scale_out":
            found = start.scale_out.get(parameter.key)
        elif parameter.group in ("nvls", "harness"):
            value = (start.nvls if parameter.group == "nvls" else start.harness).get(parameter.key)
            return value.value if value is not None else START[parameter.name]
        if found is not None and stored in found:
            return found[stored].value
    return START[parameter.name]


def fit_collectives(
    tables: Iterable[KernelTable], *, start: CollectiveConstants | None = None, keep: Iterable[str] = (),
    max_iterations: int = 100,
) -> CollectiveFit:
    """Fit the constants that the rows of ``tables`` depend on (module docstring).

    ``start``: constants to start from (the shipped ones for a user's calibration); every constant
    of ``start`` that the tables do not reach is kept as it is, and so is every kind named in
    ``keep`` (``keep=("half_size", "sharpness")`` fits only a cluster's rates and latencies on a
    short log). Raises :class:`InputError` for a holdout table, a table of another kind, or none.
    """
    chosen = list(tables)
    if not chosen:
        raise InputError("no collective table to fit", field="tables")
    for table in chosen:
        if table.kind != "collective":
            raise InputError(f"{table.name}: a {table.kind} table cannot fit the collective model", field="tables")
        if table.split != "fit":
            raise InputError(f"{table.name}: a holdout table is kept apart to check the fit, never fitted on",
                             field="tables")
    problem = _Problem(chosen, start)
    kept = set(keep)
    low = np.array([BOUNDS[p.name][0] for p in problem.parameters])
    high = np.array([BOUNDS[p.name][1] for p in problem.parameters])
    free = np.array([i for i, p in enumerate(problem.parameters) if p.name not in kept], dtype=int)
    z0 = to_search(problem.theta, low, high)
    z, _, iterations = levenberg_marquardt(lambda z: problem.residuals(to_value(z, low, high)), z0, free,
                                           max_iterations)
    theta = to_value(z, low, high)
    theta[~np.isin(np.arange(theta.size), free)] = problem.theta[~np.isin(np.arange(theta.size), free)]
    theta = np.array([round_constant(v) for v in theta])
    return CollectiveFit(_constants(problem, theta, start, kept), problem.table_names, problem.objective(theta),
                         iterations)


def _constants(problem: _Problem, theta: np.ndarray, start: CollectiveConstants | None, kept: set[str]) -> CollectiveConstants:
    common: dict[str, Constant] = dict(start.common) if start else {}
    scale_up: dict[str, dict[str, Constant]] = {k: dict(v) for k, v in (start.scale_up if start else {}).items()}
    nvls: dict[str, Constant] = dict(start.nvls) if start else {}
    scale_out: dict[str, dict[str, Constant]] = {k: dict(v) for k, v in (start.scale_out if start else {}).items()}
    harness: dict[str, Constant] = dict(start.harness) if start else {}
    base = problem.objective(theta)
    for i, parameter in enumerate(problem.parameters):
        if parameter.name in kept:
            continue
        low, high, unit, bound = BOUNDS[parameter.name]
        if _inert(problem, theta, i, base, low, high):
            continue
        constant = Constant(float(theta[i]), unit, WHAT[parameter.name].format(key=parameter.key),
                            tuple(sorted(problem.users.get(i, ()))), bound)
        stored = _STORED[parameter.name]
        if parameter.group == "common":
            common[stored] = constant
        elif parameter.group == "scale_up":
            scale_up.setdefault(parameter.key, {})[stored] = constant
        elif parameter.group == "nvls":
            nvls[parameter.key] = constant
        elif parameter.group == "harness":
            harness[parameter.key] = constant
        else:
            scale_out.setdefault(parameter.key, {})[stored] = constant
    return CollectiveConstants(common=common, scale_up=scale_up, nvls=nvls, scale_out=scale_out, harness=harness)


def _inert(problem: _Problem, theta: np.ndarray, i: int, base: float, low: float, high: float) -> bool:
    """Whether constant i moves the objective at all across its bound (no row depends on it)."""
    for value in (low, high):
        trial = theta.copy()
        trial[i] = value
        if abs(problem.objective(trial) - base) > 1e-12 * max(base, 1e-30):
            return False
    return True

