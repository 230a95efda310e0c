"""Fit the matrix-product model's constants on measured kernel tables; write ``kernel_fits/matmul.json``.

``python -m mlsysim.validation.kernels_matmul`` fits on the shipped tables of split
``fit`` (``mlsysim/data/kernels/matmul_*.json``; the ``holdout`` ones are never read here)
and writes ``mlsysim/data/kernel_fits/matmul.json``; ``--check`` compares instead of
writing. :func:`fit_matmul_constants` is the pure function behind it, for a user's own
tables as well.

What is fitted (:mod:`mlsysim.physics.gemm` says what each constant is):

* t_L, t_F, phi, eta and the power exponent alpha: one set for every GPU, by
  Nelder-Mead on the weighted mean absolute log error of every fitted row (each row
  weighs 1/sqrt(rows of its table), so that a 375-row sweep does not drown a one-row
  table); t_L within [0.2, 10] us, t_F within [0, 10] us, phi within [0, 1], eta within
  [0.3, 1], alpha within the physical [1, 3] of :mod:`mlsysim.physics.clocks`;
* c_f per architecture and format: for each (t_L, t_F, phi, eta, alpha), the value that
  minimises the same error over that architecture's rows of that format (a grid, then a
  golden-section search), within [0.05, its bound]; the bound is the best efficiency the
  architecture's rows measured on the same tensor cores (every FP8 scaling runs on the
  FP8 ones) at the default power limit: no ceiling above the best measured kernel (where
  no row is at the default limit, the best scaled to it by the sustained fraction);
* each GPU's own best on those tensor cores (``device_best``), the cap of its ceiling, is
  that best alone (a GB200's kernels, measured at 73% of its peak, are not priced at a
  B200's 78%).

Given ``base`` (a fit already made), only the ceilings are fitted, the rest kept: what a
user's small table of one GPU can support.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import quantity, to_canonical
from mlsysim.kernels.matmul import (
    SPLITS,
    STRUCTURE_BOUNDS,
    TILES,
    MatmulFit,
    MatmulStructure,
    accelerator_entry,
    check_matmul_format,
    format_figures,
    matmul_kernel_time,
    matmul_params,
    modelled_time,
    sustained_fraction,
)
from mlsysim.kernels.tables import KernelTable, tables

FIT_FILE = Path(__file__).resolve().parent.parent / "data" / "kernel_fits" / "matmul.json"
"""Where the shipped fit is written."""

CEILING_LOW = 0.05
START = MatmulStructure(launch=2.0e-6, fill=2.0e-6, epilogue_share=0.5, memory_efficiency=0.8, power_exponent=1.2)
"""Where the search starts; each constant is searched within its bounds (``STRUCTURE_BOUNDS``)."""


@dataclass(frozen=True)
class Rows:
    """Every fitted row's shape, device figures and measured time, as arrays (SI)."""

    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    batch: np.ndarray
    time: np.ndarray
    peak: np.ndarray
    units: np.ndarray
    bandwidth: np.ndarray
    in_bytes: np.ndarray
    out_bytes: np.ndarray
    power_ratio: np.ndarray
    """The row's power limit over its device's TDP (1 at the default limit)."""
    weight: np.ndarray
    group: np.ndarray
    """Index into ``groups``: the (architecture, format) whose ceiling prices the row."""
    family: np.ndarray
    """Index into ``families``: the (architecture, tensor-core format) whose best measured kernel bounds the
    row's ceiling (fp8, fp8_rowwise and fp8_blockwise all run on the fp8 tensor cores)."""
    device: np.ndarray
    """Index into ``devices``: the (accelerator name, tensor-core format) of the row."""
    groups: tuple[tuple[str, str], ...]
    families: tuple[tuple[str, str], ...]
    devices: tuple[tuple[str, str], ...]
    names: dict[tuple[str, str], tuple[str, ...]]
    """The tables behind each group."""

    @property
    def efficiency(self) -> np.ndarray:
        """Measured FLOP/s over the format's dense peak."""
        return 2.0 * self.m * self.n * self.k * self.batch / (self.time * self.peak)


def gather(fit_tables: Iterable[KernelTable]) -> Rows:
    """The rows of the matmul tables of split ``fit`` among ``fit_tables``, with their devices' figures."""
    columns: dict[str, list[np.ndarray]] = {key: [] for key in (
        "m", "n", "k", "batch", "time", "peak", "units", "bandwidth", "in_bytes", "out_bytes", "power_ratio", "weight")}
    group_keys: list[tuple[str, str]] = []
    family_keys: list[tuple[str, str]] = []
    device_keys: list[tuple[str, str]] = []
    names: dict[tuple[str, str], list[str]] = {}
    group_index: list[np.ndarray] = []
    family_index: list[np.ndarray] = []
    device_index: list[np.ndarray] = []
    for table in fit_tables:
        if table.kind != "matmul" or table.split != "fit":
            continue
        device = accelerator_entry(table.accelerator)
        if device.compute_units is None:
            raise InputError(f"{table.name}: {device.name} has no SM count (compute_units) in the registry",
                             field="accelerator")
        tdp = None if device.power is None else to_canonical(device.power.tdp, "power")
        size = len(table)
        figures = [format_figures(device, f) for f in table.columns["format"]]
        formats = [check_matmul_format(f) for f in table.columns["format"]]
        limit = table.columns.get("power_limit")
        if limit is not None and tdp is None:
            raise InputError(f"{table.name}: {device.name} has no TDP to scale its power_limit rows by",
                             field="power_limit")
        columns["m"].append(table.columns["m"])
        columns["n"].append(table.columns["n"])
        columns["k"].append(table.columns["k"])
        columns["batch"].append(table.columns.get("batch", np.ones(size)))
        columns["time"].append(table.time)
        columns["peak"].append(np.array([f[1] for f in figures]))
        columns["units"].append(np.full(size, float(device.compute_units.count)))
        columns["bandwidth"].append(np.full(size, to_canonical(device.memory.bandwidth, "bandwidth")))
        columns["in_bytes"].append(np.array([f[2] for f in figures]))
        columns["out_bytes"].append(np.array([f[3] for f in figures]))
        columns["power_ratio"].append(np.ones(size) if limit is None or tdp is None else np.minimum(1.0, limit / tdp))
        columns["weight"].append(np.full(size, 1.0 / math.sqrt(size)))
        architecture = device.architecture or device.name
        for keys, index, labels in (
            (group_keys, group_index, [(architecture, f) for f in formats]),
            (family_keys, family_index, [(architecture, f[0]) for f in figures]),
            (device_keys, device_index, [(device.name, f[0]) for f in figures]),
        ):
            keys.extend(key for key in dict.fromkeys(labels) if key not in keys)
            index.append(np.array([keys.index(key) for key in labels]))
        for f in set(formats):
            names.setdefault((architecture, f), [])
            if table.name not in names[(architecture, f)]:
                names[(architecture, f)].append(table.name)
    if not group_keys:
        raise InputError("no matmul table of split 'fit' to fit on; supply one (m, n, k, format, time)",
                         field="kernel_table")
    arrays = {key: np.concatenate(value) for key, value in columns.items()}
    return Rows(**arrays, group=np.concatenate(group_index), family=np.concatenate(family_index),
                device=np.concatenate(device_index), groups=tuple(group_keys), families=tuple(family_keys),
                devices=tuple(device_keys),
                names={key: tuple(value) for key, value in names.items()})


def predict(rows: Rows, ceiling: np.ndarray, structure: MatmulStructure) -> np.ndarray:
    """Each row's modelled seconds, its ceiling given per row."""
    return np.asarray(modelled_time(
        structure, ceiling, m=rows.m, n=rows.n, k=rows.k, batch=rows.batch, peak=rows.peak, compute_units=rows.units,
        bandwidth=rows.bandwidth, in_bytes=rows.in_bytes, out_bytes=rows.out_bytes, power_ratio=rows.power_ratio,
    ))


def _best(index: np.ndarray, size: int, efficiency: np.ndarray, default: np.ndarray, scaled: np.ndarray,
          cap: float) -> np.ndarray:
    """Per index, the best efficiency of its rows at the default power; of all its rows scaled there if none is."""
    measured = np.zeros(size)
    np.maximum.at(measured, index[default], efficiency[default])
    fallback = np.zeros(size)
    np.maximum.at(fallback, index, scaled)
    return np.minimum(np.where(measured > 0.0, measured, fallback), cap)


def _bests(rows: Rows, exponent: float, cap: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The bound of each group's ceiling and each device's cap: the best efficiency measured at the default power
    in the tensor-core format (its architecture's, its own); where no row is at the default power, the best
    scaled to it by the sustained fraction; at most ``cap`` (the dense peak; ``inf``: as measured)."""
    efficiency = rows.efficiency
    default = rows.power_ratio >= 1.0
    scaled = efficiency / sustained_fraction(rows.power_ratio, 1.0, exponent)
    family = _best(rows.family, len(rows.families), efficiency, default, scaled, cap)
    group_family = np.zeros(len(rows.groups), dtype=int)
    group_family[rows.group] = rows.family
    device = _best(rows.device, len(rows.devices), efficiency, default, scaled, cap)
    return family[group_family], device


def measured_bests(fit_tables: Iterable[KernelTable], exponent: float) -> tuple[Rows, np.ndarray, np.ndarray]:
    """The rows of ``fit_tables``, and the best efficiency they measured per group (each ceiling's bound) and per
    device and tensor-core format, as measured: above 1 where a row beat the dense peak (a measurement to
    doubt; the fit caps the bounds at 1)."""
    rows = gather(fit_tables)
    group_best, device_best = _bests(rows, exponent, cap=math.inf)
    return rows, group_best, device_best


def matmul_errors(table: KernelTable, fit: MatmulFit | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per row of a matmul table: the relative error model / measured - 1 under ``fit`` (None: the shipped one;
    NaN where it covers not the row's format), the FLOPs, and the formats it does not cover."""
    columns = table.columns
    size = len(table)
    batch = columns.get("batch", np.ones(size))
    limit = columns.get("power_limit", np.full(size, np.nan))
    error = np.full(size, np.nan)
    missing: list[str] = []
    for fmt, watts in sorted({(str(f), float(w)) for f, w in zip(columns["format"], limit, strict=True)}):
        take = (columns["format"] == fmt) & (limit == watts if watts == watts else np.isnan(limit))
        try:
            params = matmul_params(table.accelerator, fmt, power_limit=None if watts != watts else
                                   quantity(watts, "W"), fit=fit)
        except InputError:
            missing.append(fmt)
            continue
        time = matmul_kernel_time(params, columns["m"][take], columns["n"][take], columns["k"][take], batch[take])
        error[take] = np.asarray(time.time) / table.time[take] - 1.0
    flops = 2.0 * columns["m"] * columns["n"] * columns["k"] * batch
    return error, flops, sorted(set(missing))


GRID = 16
GOLDEN_STEPS = 18


def fit_ceilings(rows: Rows, structure: MatmulStructure) -> tuple[np.ndarray, float]:
    """The ceiling of each group minimising its rows' weighted |log error| (within [0.05, its bound]), and the loss."""
    group_best, device_best = _bests(rows, structure.power_exponent)
    low = np.log(CEILING_LOW)
    high = np.log(np.maximum(group_best, CEILING_LOW * 1.0001))
    cap = device_best[rows.device]
    logged_time = np.log(rows.time)

    def losses(log_ceiling: np.ndarray) -> np.ndarray:
        per_row = np.minimum(np.exp(log_ceiling)[rows.group], cap)
        error = np.abs(np.log(predict(rows, per_row, structure)) - logged_time)
        return np.bincount(rows.group, weights=rows.weight * error, minlength=len(rows.groups))

    grid = [low + (high - low) * i / (GRID - 1) for i in range(GRID)]
    values = np.array([losses(g) for g in grid])
    best = np.argmin(values, axis=0)
    span = (high - low) / (GRID - 1)
    centre = low + (high - low) * best / (GRID - 1)
    a, b = np.maximum(centre - span, low), np.minimum(centre + span, high)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(GOLDEN_STEPS):
        x1, x2 = b - ratio * (b - a), a + ratio * (b - a)
        left = losses(x1) <= losses(x2)
        b = np.where(left, x2, b)
        a = np.where(left, a, x1)
    chosen = (a + b) / 2.0
    return np.exp(chosen), float(losses(chosen).sum() / rows.weight.sum())


def nelder_mead(f: Callable[[np.ndarray], float], start: Sequence[float] | np.ndarray, step: Sequence[float],
                iterations: int = 400, tolerance: float = 1e-7) -> np.ndarray:
    """The point of least ``f`` found by the Nelder-Mead simplex (reflect, expand, contract, shrink)."""
    simplex = [np.asarray(start, dtype=float)]
    for i, size in enumerate(step):
        point = simplex[0].copy()
        point[i] += size
        simplex.append(point)
    values = [f(p) for p in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        if values[-1] - values[0] < tolerance:
            break
        centre = np.mean(simplex[:-1], axis=0)
        reflected = centre + (centre - simplex[-1])
        f_reflected = f(reflected)
        if f_reflected < values[0]:
            expanded = centre + 2.0 * (centre - simplex[-1])
            f_expanded = f(expanded)
            simplex[-1], values[-1] = (expanded, f_expanded) if f_expanded < f_reflected else (reflected, f_reflected)
        elif f_reflected < values[-2]:
            simplex[-1], values[-1] = reflected, f_reflected
        else:
            contracted = centre + 0.5 * (simplex[-1] - centre)
            f_contracted = f(contracted)
            if f_contracted < values[-1]:
                simplex[-1], values[-1] = contracted, f_contracted
            else:
                for i in range(1, len(simplex)):
                    simplex[i] = simplex[0] + 0.5 * (simplex[i] - simplex[0])
                    values[i] = f(simplex[i])
    return simplex[int(np.argmin(values))]


def _structure(x: np.ndarray) -> MatmulStructure:
    """The shared constants from the search's unbounded coordinates (each mapped into its bounds)."""
    bounds = [STRUCTURE_BOUNDS[name] for name in MatmulStructure._fields]
    low, high = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    values = low + (high - low) / (1.0 + np.exp(-np.asarray(x, dtype=float)))
    return MatmulStructure(*(round(float(v), 10) for v in values))


def _unsquash(value: float, bounds: tuple[float, float]) -> float:
    share = (value - bounds[0]) / (bounds[1] - bounds[0])
    return math.log(share / (1.0 - share))


def fit_matmul_constants(fit_tables: Iterable[KernelTable], *, base: MatmulFit | None = None) -> MatmulFit:
    """The constants of :mod:`mlsysim.physics.gemm` fitted on ``fit_tables`` (those of split ``fit``).

    ``base``: keep its launch latency, fill, epilogue share, memory efficiency and power exponent and fit
    the ceilings only (a user's table of one GPU). The result's ceilings cover the
    (architecture, format) pairs the tables measure; with ``base``, its other ceilings are kept.
    """
    listed = list(fit_tables)
    rows = gather(listed)
    if base is None:
        start = np.array([_unsquash(getattr(START, name), STRUCTURE_BOUNDS[name]) for name in MatmulStructure._fields])
        structure = _structure(nelder_mead(lambda x: fit_ceilings(rows, _structure(x))[1], start, [0.5] * len(START)))
    else:
        structure = base.structure
    ceilings, loss = fit_ceilings(rows, structure)
    group_best, device_best = _bests(rows, structure.power_exponent)
    fitted: dict[str, dict[str, float]] = {a: dict(f) for a, f in (base.ceilings.items() if base else ())}
    for (architecture, fmt), value in zip(rows.groups, ceilings, strict=True):
        fitted.setdefault(architecture, {})[fmt] = round(float(value), 4)
    bests: dict[str, dict[str, float]] = {d: dict(f) for d, f in (base.device_best.items() if base else ())}
    for (device, peak_format), value in zip(rows.devices, device_best, strict=True):
        bests.setdefault(device, {})[peak_format] = round(float(value), 4)
    used = sorted({t.name for t in listed if t.kind == "matmul" and t.split == "fit"})
    provenance = {
        "about": ABOUT,
        "fitted_on": used,
        "weighted_mean_abs_log_error": round(loss, 4),
        "structure_fitted_on": "every table above" if base is None else "the base fit (kept)",
        "launch_s": {"what": "t_L: launch latency, paid by every kernel", "bounds": list(STRUCTURE_BOUNDS["launch"])},
        "fill_s": {"what": "t_F: the pipeline's fill (first tile's prologue) and drain (last epilogue), paid once by "
                           "a tiled kernel; t_L + t_F is the per-kernel floor", "bounds": list(STRUCTURE_BOUNDS["fill"])},
        "epilogue_share": {"what": "phi: share of each wave's epilogue (the tile written out) the next K-loop does "
                                   "not hide", "bounds": list(STRUCTURE_BOUNDS["epilogue_share"])},
        "memory_efficiency": {"what": "eta: fraction of peak memory bandwidth a streaming kernel reaches",
                              "bounds": list(STRUCTURE_BOUNDS["memory_efficiency"])},
        "power_exponent": {"what": "alpha of s(P) = min(1, (P / P_TDP) ** (1 / alpha)); rests on the rows with a "
                                   "power_limit", "bounds": list(STRUCTURE_BOUNDS["power_exponent"])},
        "tiles": [list(t) for t in TILES],
        "splits": list(SPLITS),
        "ceilings": {
            f"{architecture} {fmt}": {
                "value": round(float(value), 4), "bound": round(float(bound), 4), "tables": list(rows.names[(architecture, fmt)]),
                "rows": int(np.count_nonzero(rows.group == i)),
            }
            for i, ((architecture, fmt), value, bound) in enumerate(zip(rows.groups, ceilings, group_best, strict=True))
        },
    }
    return MatmulFit(*structure, ceilings=fitted, device_best=bests, provenance=provenance)


ABOUT = (
    "Constants of the matrix-product kernel model (mlsysim.physics.gemm), fitted by python -m "
    "mlsysim.validation.kernels_matmul on the shipped matmul tables of split 'fit' (mlsysim/data/kernels); the "
    "held-out tables are never read. structure: one launch latency, pipeline fill, epilogue share, memory efficiency "
    "and power exponent for every GPU; ceilings: per architecture and format, each within its bound (the best efficiency its rows measured, "
    "scaled to the default power); device_best: each GPU's own best per format, the cap of its ceiling."
)


def write(path: Path = FIT_FILE) -> MatmulFit:
    """Fit on the shipped tables and write the JSON file; returns the fit."""
    fit = fit_matmul_constants(tables(kind="matmul", split="fit"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fit.to_json(), indent=1) + "\n", encoding="utf-8")
    return fit


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlsysim.validation.kernels_matmul", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare a fresh fit with the shipped file; exit 1 if they differ")
    args = parser.parse_args(argv)
    if args.check:
        fresh = fit_matmul_constants(tables(kind="matmul", split="fit")).to_json()
        shipped = json.loads(FIT_FILE.read_text(encoding="utf-8"))
        same = json.loads(json.dumps(fresh)) == shipped
        print("the shipped fit is current" if same else "the shipped fit differs from a fresh fit: run without --check")
        return 0 if same else 1
    fit = write()
    print(f"wrote {FIT_FILE} (launch {fit.launch * 1e6:.2f} us, fill {fit.fill * 1e6:.2f} us, epilogue share "
          f"{fit.epilogue_share:.3f}, memory efficiency {fit.memory_efficiency:.3f}, power exponent "
          f"{fit.power_exponent:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
