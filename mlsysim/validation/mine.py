"""Your own runs: fit a cluster's constants to measured updates, and intervals from them.

``mlsysim validate mine RUNS`` reads a CSV or JSON file of measured runs, one
layout per row, and fits the constants of the cluster that ran them (the
achieved fractions of line rate of its links and a fixed cost per update) to
the measured update times. Each run is then predicted by a fit made without it
(leave one out), which gives the error to expect on a run not yet made and the
residuals the cluster's prediction intervals are built from. The result is an
assumptions file that ``mlsysim run --assumptions FILE`` (or
:func:`load_assumptions`) loads.

Row schema (CSV header, or the keys of each JSON object; a JSON file is a list
of objects or ``{"runs": [...]}``):

* the scenario's inputs as a scenario file spells them (text with units,
  registry names): ``workload``, ``precision``, ``step_time`` (one device,
  one micro-step, measured), ``per_device_batch``, ``devices_per_node``,
  ``nodes``, ``intra_bandwidth``, ``inter_bandwidth`` (when nodes > 1) and any
  other field (``nics_per_node``, ``accumulation_steps``, ``node``,
  ``fabric``, ``optimizer``, ...). ``training_time`` is not needed (1 hour is
  used when no training size is given: it does not change the update time).
* the measurement, one of: ``measured_update_time`` (one optimizer update of
  the whole job, with its unit: ``"412 ms"``) or ``measured_throughput``
  (samples per second of the whole job: ``"5120 sample/s"`` or a number).
* ``name`` (optional): a label for the run.

A row that gives neither ``step_time`` nor ``mfu`` is a model-parallel *layout* priced from
the operators: it fits the matrix-product ceiling instead (:func:`load_all`,
:mod:`mlsysim.validation.mine_parallel`).

An empty cell is an absent field. A bad row raises
:class:`~mlsysim.core.exceptions.ScenarioFileError` naming ``file:line`` and the
field.

The fit (least squares on log update time: Levenberg 1944, Marquardt 1963,
with forward-difference derivatives, from the base assumptions' values and from
:data:`EXTRA_STARTS`, the best kept) moves only the constants the runs can
tell apart: ``intra_efficiency`` when some run has more than one device per
node, ``inter_efficiency`` when some run has more than one node,
``update_overhead`` when some run has more than one device. One run tells one
constant apart: that of the slowest link it crosses (``inter_efficiency`` across
nodes, else ``intra_efficiency``); it is fitted, not left out (no leave-one-out
error, no interval scores of its own). Everything else stays as in the base
assumptions (the realistic preset by default).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from mlsysim.core.exceptions import InputError, ScenarioFileError
from mlsysim.core.fileio import read_text
from mlsysim.core.units import parse_quantity, quantity
from mlsysim.engine.inputs.assumptions import Assumptions, assumptions_of
from mlsysim.engine.model.equations import Choices, Inputs, evaluate
from mlsysim.engine.reports.fit_range import (
    RANGE_FIGURES,
    FitRange,
    range_figures,
    register_fit_range,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.validation.mine_parallel import LayoutFit, LayoutRun

MEASURED_FIELDS = ("measured_update_time", "measured_throughput")
"""The measurement of a run: one of these columns."""

CONSTANTS = ("intra_efficiency", "inter_efficiency", "update_overhead")
"""The constants a cluster's runs fit (names of :class:`~mlsysim.Assumptions` fields)."""

OVERHEAD_SCALE = 1e-3
"""The fit moves the per-update overhead in units of 1 ms (seconds per unit)."""

RUNS_TEMPLATE = """\
name,workload,precision,step_time,per_device_batch,devices_per_node,nodes,intra_bandwidth,inter_bandwidth,nics_per_node,accumulation_steps,measured_update_time,measured_throughput
one-node,Llama2_7B,bf16,820 ms,4,8,1,450 GB/s,,,1,,
two-nodes,Llama2_7B,bf16,820 ms,4,8,2,450 GB/s,400 Gbps,8,1,,
"""
"""What ``mlsysim init --runs FILE.csv`` writes: the columns, and two rows to fill in (give
``measured_update_time`` with its unit, or ``measured_throughput`` in samples per second)."""


ROW_COLUMNS = {
    "name": "the run's name (printed whole in the report)",
    "measured_update_time": "one optimizer update as measured, with its unit: '412 ms', '9.2 s'",
    "measured_throughput": "samples per second of the whole job: '1250', '1250 sample/s'",
    "measured_tflops_per_gpu": "model teraFLOP/s per GPU under the scenario's count, 6 N + 12 L h s per token "
    "(a framework's count with the recomputed forward reports more: give its iteration time instead): "
    "'412', '412 TFLOP/s'",
    "global_batch": "samples per update, instead of accumulation_steps (a multiple of per_device_batch x the "
    "data-parallel ranks)",
    "step_time": "one device's measured step (forward, backward) on its per_device_batch, with its unit: "
    "a data-parallel run; without it (and mfu) the row is a layout priced from the operators",
}
"""The columns of a runs file that are not scenario fields (the scenario's are documented by its field
table, :data:`mlsysim.engine.inputs.fields.FIELDS`)."""


def column_docs(header: Sequence[str]) -> list[tuple[str, str]]:
    """(column, what it holds, with its unit) for each column of a runs file's ``header``: :data:`ROW_COLUMNS`,
    else the scenario field's label and unit, else a transformer shape column's."""
    from mlsysim.engine.inputs.fields import FIELDS

    out = []
    for column in header:
        field = FIELDS.get(column)
        if column in ROW_COLUMNS:
            text = ROW_COLUMNS[column]
        elif field is not None:
            text = field.label + (f" (in {field.display_unit}, or any unit of its kind)" if field.display_unit else "")
        else:
            text = f"the transformer's {column.replace('_', ' ')} (beside a registry workload: changes its shape)"
        out.append((column, text))
    return out


@dataclass(frozen=True)
class Run:
    """One measured run: its scenario, the measured update time (s) and where it was read."""

    name: str
    scenario: TrainingScenario
    measured_update_time: float
    line: int


@dataclass(frozen=True)
class Fit:
    """Constants fitted to runs, and how well they predict runs left out."""

    assumptions: Assumptions
    fitted: dict[str, float]  # constant -> value (efficiencies; overhead in seconds)
    predicted: np.ndarray  # in-sample update times (s)
    held_out: np.ndarray  # each run predicted by the fit made without it (s)
    measured: np.ndarray
    scores: np.ndarray  # normalised leave-one-out residuals of efficiency
    refits: dict[str, list[float]]  # constant -> its leave-one-out refits

    @property
    def relative_errors(self) -> np.ndarray:
        """Leave-one-out predicted / measured - 1, per run."""
        return self.held_out / self.measured - 1.0

    @property
    def in_sample_errors(self) -> np.ndarray:
        return self.predicted / self.measured - 1.0


# -- reading ---------------------------------------------------------------------------------


def _rows(path: Path) -> list[tuple[int, dict[str, object]]]:
    """(line, row) of every run of a CSV or JSON file; empty values dropped."""
    text = read_text(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        rows = []
        for row in reader:
            clean: dict[str, object] = {}
            for key, value in row.items():
                if key is None:
                    raise ScenarioFileError(
                        "more cells than columns in the header", path=str(path), line=reader.line_num
                    )
                if value is not None and value.strip():
                    clean[key.strip()] = value.strip()
            if clean:
                rows.append((reader.line_num, clean))
        return rows
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioFileError(f"JSON syntax error: {exc.msg}", path=str(path), line=exc.lineno) from None
        items = data.get("runs") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ScenarioFileError(
                'expected a list of runs or {"runs": [...]}', path=str(path), line=1
            )
        lines = _object_lines(text)
        out = []
        for k, item in enumerate(items):
            line = lines[k] if k < len(lines) else None
            if not isinstance(item, dict):
                raise ScenarioFileError(
                    f"expected an object (a run), got {item!r}", path=str(path), line=line
                )
            out.append((line or 0, {str(key): v for key, v in item.items() if v not in (None, "")}))
        return out
    raise InputError(f"runs: expected a .csv or .json file, got {str(path)!r}", field="runs")


def _object_lines(text: str) -> list[int]:
    """The line on which each object of the runs list starts (JSON)."""
    start = text.find("[", text.find('"runs"') if '"runs"' in text else 0)
    lines: list[int] = []
    depth = 0
    in_string = escaped = False
    for i in range(start + 1, len(text)):
        ch = text[i]
        if in_string:
            escaped = not escaped and ch == "\\"
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            if depth == 0:
                lines.append(text.count("\n", 0, i) + 1)
            depth += 1
        elif ch in "}]":
            if depth == 0:
                break
            depth -= 1
    return lines


def _measured(row: dict[str, object], global_batch: int) -> float:
    """The measured update time (s) of a row, from either measurement column."""
    given = [k for k in MEASURED_FIELDS if k in row]
    if len(given) != 1:
        raise InputError(
            f"expected one of {' or '.join(MEASURED_FIELDS)}, got "
            f"{', '.join(given) if given else 'neither'}",
            loc=(MEASURED_FIELDS[0],),
        )
    key = given[0]
    value = row[key]
    if key == "measured_update_time":
        try:
            seconds = parse_quantity(str(value), "time").to("s").magnitude
        except InputError as exc:
            raise exc.at(key) from None
    else:
        text = str(value).strip()
        for unit in ("sample/s", "samples/s", "/s"):
            text = text.removesuffix(unit).strip()
        try:
            rate = float(text)
        except ValueError:
            raise InputError(
                f"expected samples per second (a number or 'N sample/s'), got {value!r}",
                loc=(key,),
            ) from None
        if not (math.isfinite(rate) and rate > 0):
            raise InputError(f"expected a positive number, got {value!r}", loc=(key,))
        seconds = global_batch / rate
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"expected a positive time, got {value!r}", loc=(key,))
    return float(seconds)


def load_runs(path: str | os.PathLike[str], base: Assumptions | None = None) -> list[Run]:
    """The measured data-parallel runs of a CSV or JSON file (schema in the module docstring):
    every row that gives ``step_time`` or ``mfu``; the others are layouts priced from the
    operators (:func:`load_all`, :mod:`mlsysim.validation.mine_parallel`)."""
    file = Path(os.path.expanduser(os.fspath(path)))
    return _data_parallel_runs(_rows(file), file, base)


def load_all(
    path: str | os.PathLike[str], base: Assumptions
) -> tuple[list[Run], list[LayoutRun]]:
    """The data-parallel runs (rows with ``step_time`` or ``mfu``; none, or at least 2) and the
    layout runs (rows with neither, priced from the operators; none, or at least 2) of a file.
    The layouts are read under ``base``; :func:`mlsysim.validation.mine_parallel.fit_layouts`
    takes the assumptions the data-parallel runs fit."""
    from mlsysim.validation.mine_parallel import is_layout_row, load_layout_runs

    file = Path(os.path.expanduser(os.fspath(path)))
    rows = _rows(file)
    layouts = load_layout_runs(rows, file, base)
    if layouts and not any(not is_layout_row(row) for _, row in rows):
        return [], layouts
    return _data_parallel_runs(rows, file, base), layouts


def _data_parallel_runs(
    rows: Sequence[tuple[int, dict[str, object]]], file: Path, base: Assumptions | None
) -> list[Run]:
    from mlsysim.engine.io.files import scenario_from_dict
    from mlsysim.validation.mine_parallel import is_layout_row

    runs = []
    for line, row in rows:
        if is_layout_row(row):
            continue
        data = dict(row)
        name = str(data.pop("name", f"line {line}"))
        measured = {k: data.pop(k) for k in MEASURED_FIELDS if k in data}
        if not {"training_time", "training_tokens", "training_samples"} & set(data):
            data["training_time"] = "1 hour"
        try:
            scenario = scenario_from_dict(data)
            if base is not None:
                scenario = scenario.variant(assumptions=base)
            seconds = _measured(measured, scenario.result.global_batch)
        except InputError as exc:
            raise ScenarioFileError(exc.message, path=str(file), line=line, loc=exc.loc) from None
        runs.append(Run(name, scenario, seconds, line))
    if not runs:
        raise InputError(
            f"runs: expected at least 1 run in {str(file)!r}, got {len(runs)}"
            + (" with step_time (the rows without it are layouts priced from the operators)"
               if len(runs) < len(rows) else ""),
            field="runs",
        )
    return runs


# -- the fit ---------------------------------------------------------------------------------


def _model_inputs(run: Run) -> tuple[Inputs, Choices]:
    from mlsysim.engine.solvers.data_parallel import choices_of, model_inputs

    s = run.scenario
    return model_inputs(s.inputs()), choices_of(s.assumptions, s.zero_stage or 0)


def free_constants(runs: Sequence[Run]) -> tuple[str, ...]:
    """The constants the runs can tell apart (see the module docstring)."""
    d = [r.scenario.devices_per_node for r in runs]
    n = [r.scenario.nodes for r in runs]
    if len(runs) == 1:  # one measurement pins one constant: the slowest link's
        return ("inter_efficiency",) if n[0] > 1 else ("intra_efficiency",) if d[0] > 1 else ()
    out = []
    if any(x > 1 for x in d):
        out.append("intra_efficiency")
    if any(x > 1 for x in n):
        out.append("inter_efficiency")
    if any(a * b > 1 for a, b in zip(d, n, strict=True)):
        out.append("update_overhead")
    return tuple(out)


def _to_params_value(name: str, value: float) -> float:
    """One unbounded parameter: logit of an efficiency in (0.01, 1], log of the overhead in ms."""
    if name == "update_overhead":
        return math.log(max(value / OVERHEAD_SCALE, 1e-3))
    x = min(max((value - 0.01) / 0.99, 1e-6), 1 - 1e-6)
    return math.log(x / (1 - x))


def _to_params(choices: Choices, names: tuple[str, ...]) -> np.ndarray:
    """Unbounded parameters of ``names`` at the values of ``choices`` (:func:`_to_params_value`)."""
    return np.asarray([_to_params_value(n, float(getattr(choices, n))) for n in names])


def _from_params(params: np.ndarray, names: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for name, p in zip(names, params, strict=True):
        if name == "update_overhead":
            out[name] = math.exp(float(np.clip(p, -30, 30))) * OVERHEAD_SCALE
        else:
            out[name] = 0.01 + 0.99 / (1 + math.exp(-float(np.clip(p, -30, 30))))
    return out


def _predict(
    models: Sequence[tuple[Inputs, Choices]], constants: dict[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """(update time, efficiency) of each run under ``constants``."""
    u, e = [], []
    for x, c in models:
        f = evaluate(x, replace(c, **constants))  # type: ignore[arg-type]  # float fields
        u.append(float(f.update_time))
        e.append(float(f.efficiency))
    return np.asarray(u), np.asarray(e)


def _least_squares(
    models: Sequence[tuple[Inputs, Choices]],
    measured: np.ndarray,
    names: tuple[str, ...],
    start: np.ndarray,
    iterations: int = 100,
) -> np.ndarray:
    """Levenberg-Marquardt on r(p) = log U(p) - log U_measured (forward differences)."""
    if not names:
        return start

    def residual(p: np.ndarray) -> np.ndarray:
        return np.log(_predict(models, _from_params(p, names))[0]) - np.log(measured)

    p = start.astype(float)
    r = residual(p)
    damping = 1e-3
    for _ in range(iterations):
        jac = np.empty((r.size, p.size))
        for k in range(p.size):
            step = np.zeros_like(p)
            step[k] = 1e-6 * max(1.0, abs(p[k]))
            jac[:, k] = (residual(p + step) - r) / step[k]
        g = jac.T @ jac
        improved = False
        for _ in range(20):
            delta = np.linalg.solve(g + damping * np.diag(np.diag(g) + 1e-12), -jac.T @ r)
            candidate = residual(p + delta)
            if candidate @ candidate < r @ r:
                p, r = p + delta, candidate
                damping = max(damping / 10, 1e-12)
                improved = True
                break
            damping *= 10
        if not improved or np.max(np.abs(delta)) < 1e-10:
            break
    return p


EXTRA_STARTS: tuple[tuple[float, float], ...] = ((0.35, 8e-3), (0.7, 0.5e-3))
"""Further starting points of the fit besides the base assumptions' own values: (every
efficiency, the update overhead in seconds). An efficiency driven to the bound of 1 sits on
the flat end of its logistic parameter, where Levenberg-Marquardt cannot bring it back; the
fit keeps the start whose result has the smallest sum of squared residuals."""


def _fit_from_starts(
    models: Sequence[tuple[Inputs, Choices]],
    measured: np.ndarray,
    names: tuple[str, ...],
    start: np.ndarray,
) -> np.ndarray:
    """The least-squares fit from ``start`` and from each of :data:`EXTRA_STARTS`, the best."""
    starts = [start]
    for efficiency, overhead in EXTRA_STARTS:
        values = {n: (overhead if n == "update_overhead" else efficiency) for n in names}
        starts.append(
            np.asarray([_to_params_value(n, values[n]) for n in names], dtype=float)
        )
    best, best_cost = start, math.inf
    for p0 in starts:
        p = _least_squares(models, measured, names, p0)
        r = np.log(_predict(models, _from_params(p, names))[0]) - np.log(measured)
        cost = float(r @ r)
        if cost < best_cost:
            best, best_cost = p, cost
    return best


def fit_runs(
    runs: Sequence[Run], base: Assumptions | None = None, *, leave_one_out: bool = True
) -> Fit:
    """Fit the cluster's constants to ``runs``; predict each run without it (leave one out).

    The normalised residuals z_i = (e_measured - e_i) / s_i (e_i the efficiency
    predicted without run i, e_measured = e_i U_i / U_measured, s_i its
    difficulty, :func:`mlsysim.engine.reports.bands.difficulty`) are the scores
    intervals under the fitted assumptions are built from. ``leave_one_out=False``
    skips those refits (``held_out`` and ``scores`` are then NaN).
    """
    from mlsysim.engine.reports.bands import difficulty

    a = base if base is not None else runs[0].scenario.assumptions
    runs = [replace(r, scenario=r.scenario.variant(assumptions=a)) for r in runs]
    models = [_model_inputs(r) for r in runs]
    measured = np.asarray([r.measured_update_time for r in runs])
    names = free_constants(runs)
    start = _to_params(models[0][1], names)
    constants = _from_params(_fit_from_starts(models, measured, names, start), names)
    predicted = _predict(models, constants)[0]
    held_out = np.full(len(runs), np.nan)
    scores = np.full(len(runs), np.nan)
    refits: dict[str, list[float]] = {name: [] for name in names}
    for i in range(len(runs) if leave_one_out and len(runs) > 1 else 0):
        others = [m for k, m in enumerate(models) if k != i]
        kept = np.delete(measured, i)
        loo_names = free_constants([r for k, r in enumerate(runs) if k != i])
        loo = _from_params(
            _fit_from_starts(others, kept, loo_names, _to_params(models[0][1], loo_names)),
            loo_names,
        )
        for name in names:
            refits[name].append(loo.get(name, float(getattr(models[0][1], name))))
        u, e = _predict([models[i]], loo)
        held_out[i] = u[0]
        e_measured = e[0] * u[0] / measured[i]
        scores[i] = (e_measured - e[0]) / float(difficulty(e[0], runs[i].scenario.nodes))
    changes: dict[str, object] = {
        name: quantity(value if value >= 1e-9 else 0.0, "s")
        if name == "update_overhead"
        else round(value, 6)
        for name, value in constants.items()
    }
    return Fit(
        assumptions=a.variant(**changes),
        fitted=constants,
        predicted=predicted,
        held_out=held_out,
        measured=measured,
        scores=scores,
        refits=refits,
    )


def interval_widths(
    runs: Sequence[Run], fit: Fit, base: Assumptions, level: float = 0.8
) -> tuple[float, float]:
    """Median width of the ``level`` efficiency interval over the runs' layouts (several
    devices only): (from the published residuals under ``base``, from the runs' own
    leave-one-out scores under the fitted assumptions)."""
    from mlsysim.engine.reports.bands import (
        LOWEST_EFFICIENCY,
        conformal_band,
        difficulty,
        efficiency_interval_of,
        result_nodes,
    )

    z_lo, z_hi = conformal_band(fit.scores, level)
    published, own = [], []
    for run in runs:
        if run.scenario.devices_per_node * run.scenario.nodes == 1:
            continue
        r = run.scenario.variant(assumptions=base).result
        low, high = efficiency_interval_of(base, r.efficiency, result_nodes(r), level)
        published.append(float(high - low))
        m = run.scenario.variant(assumptions=fit.assumptions).result
        s = float(difficulty(m.efficiency, result_nodes(m)))
        ends = np.clip([m.efficiency + z_lo * s, m.efficiency + z_hi * s], LOWEST_EFFICIENCY, 1)
        own.append(float(ends[1] - ends[0]))
    if not published:
        return math.nan, math.nan
    return float(np.median(published)), float(np.median(own))


# -- the assumptions file --------------------------------------------------------------------


def fit_range(runs: Sequence[Run], source: str, layouts: Sequence[LayoutRun] = ()) -> FitRange:
    """The envelope of the runs a fit was made on (:mod:`mlsysim.engine.reports.fit_range`),
    the layout runs' too."""
    from mlsysim.validation.mine_parallel import layout_scenario

    scenarios = [run.scenario for run in runs] + [layout_scenario(r) for r in layouts]
    figures = [range_figures(s.result) for s in scenarios]
    bounds = {
        name: (min(f[name] for f in figures), max(f[name] for f in figures))
        for name, _ in RANGE_FIGURES
    }
    return FitRange(source, len(scenarios), bounds)


def assumptions_toml(
    fit: Fit | None,
    runs_path: str,
    base_name: str,
    runs: Sequence[Run] = (),
    layouts: LayoutFit | None = None,
    layout_runs: Sequence[LayoutRun] = (),
) -> str:
    """The assumptions file of a fit: the ``[assumptions]`` table (the base preset, the fitted
    constants and, given the ``layouts`` fit, ``matmul_ceiling`` and ``attention_ceiling``),
    the ``[interval]`` scores and ``[fit]`` of the data-parallel runs, the ``[layouts]`` fit
    and, given the runs, their ``[range]`` (devices, nodes, parameters, tensor and pipeline
    ranks: a layout outside it gets a note when the file is loaded), as TOML."""
    import tomli_w

    from mlsysim.engine.reports.bands import DIFFICULTY_FORMULA

    table: dict[str, object] = {"preset": base_name}
    for name, value in (fit.fitted if fit is not None else {}).items():
        if name == "update_overhead":
            table[name] = f"{value * 1e3:.6g} ms" if value >= 1e-9 else "0 ms"
        else:
            table[name] = round(value, 6)
    document: dict[str, object] = {"assumptions": table}
    if fit is not None and len(fit.measured) > 1:
        errors = fit.relative_errors
        document["interval"] = {
            "source": f"{len(fit.measured)} runs of {Path(runs_path).name}, each predicted "
            "by a fit made without it (leave one out)",
            "difficulty": DIFFICULTY_FORMULA,
            "scores": [round(float(z), 8) for z in fit.scores],
        }
        document["fit"] = {
            "runs": len(fit.measured),
            "median_abs_relative_error": round(float(np.median(np.abs(errors))), 6),
            "worst_abs_relative_error": round(float(np.max(np.abs(errors))), 6),
        }
    if layouts is not None:
        from mlsysim.validation.mine_parallel import finite, layout_scores_of

        table.update(layouts.assumptions)
        table.update({name: f"{rate / 1e9:.6g} GB/s" for name, rate in layouts.rates.items()})
        held = [abs(e) for e in finite(layouts.relative_errors)]
        layout_scores = layout_scores_of(layouts)
        document["layouts"] = {
            "runs": len(layouts.measured),
            "architecture": layouts.architecture,
            "linear_format": layouts.linear,
            "ceilings": {g: round(c, 6) for g, c in layouts.ceilings.items()},
            "source": f"the median of each format's runs' exact ceilings (rows of "
            f"{Path(runs_path).name} without step_time, priced from the operators)",
            **(
                {
                    "median_abs_relative_error": round(float(np.median(held)), 6),
                    "worst_abs_relative_error": round(float(np.max(held)), 6),
                }
                if held
                else {}
            ),
            **(
                {
                    "scores": [round(z, 8) for z in layout_scores],
                    "scores_source": f"{len(layout_scores)} layout runs of {Path(runs_path).name}, each "
                    "predicted with the ceiling fitted without it: T_measured / T_predicted - 1",
                }
                if len(layout_scores) >= 2
                else {}
            ),
        }
    if runs or layout_runs:
        document["range"] = {
            name: [_whole(low), _whole(high)]
            for name, (low, high) in fit_range(runs, "", layout_runs).bounds.items()
        }
    held_out = [name for name, held in (("[fit]", "fit" in document), ("[layouts]", layouts is not None
                and "median_abs_relative_error" in cast("dict[str, object]", document["layouts"]))) if held]
    header = (
        f"# Constants of the cluster that ran {Path(runs_path).name}, fitted by\n"
        f"# 'mlsysim validate mine' ("
        + (f"leave-one-out errors in {' and '.join(held_out)}" if held_out else "one run each: no leave-one-out error")
        + "). Load with\n"
        "#   mlsysim run NAME --assumptions THIS_FILE\n"
        "# The [assumptions] table also works in a scenario file (without the interval).\n"
    )
    return header + tomli_w.dumps(document)


def load_assumptions(path: str | os.PathLike[str]) -> Assumptions:
    """The assumptions of a file ``mlsysim validate mine`` wrote (or one written by hand):
    its ``[assumptions]`` table; its ``[interval]`` scores, when present, become the source
    of the intervals of results under these assumptions. The scores are residuals over the
    difficulty of :mod:`mlsysim.engine.reports.bands`; a file that names another difficulty (written
    by a version that normalised them otherwise) is refused: fit its runs again."""
    from mlsysim.core.tomlfile import parse_toml
    from mlsysim.engine.reports.bands import DIFFICULTY_FORMULA

    file = Path(os.path.expanduser(os.fspath(path)))
    data, lines = parse_toml(read_text(file), file)
    table = data.get("assumptions")
    if not isinstance(table, dict):
        raise ScenarioFileError(
            "expected an [assumptions] table", path=str(file), line=1, loc=("assumptions",)
        )
    try:
        assumptions = assumptions_of(dict(table))
    except InputError as exc:
        loc = ("assumptions", *exc.loc)
        raise ScenarioFileError(exc.message, path=str(file), line=lines.get(loc), loc=loc) from None
    fitted = data.get("fit")
    runs = fitted.get("runs") if isinstance(fitted, dict) else None
    count = runs if isinstance(runs, int) and not isinstance(runs, bool) else 0
    layouts = data.get("layouts")
    layout_runs = layouts.get("runs") if isinstance(layouts, dict) else None
    if isinstance(layout_runs, int) and not isinstance(layout_runs, bool):
        count += layout_runs
    interval = data.get("interval")
    if isinstance(interval, dict) and "scores" in interval:
        named = interval.get("difficulty", DIFFICULTY_FORMULA)
        if named != DIFFICULTY_FORMULA:
            raise ScenarioFileError(
                f"the scores are residuals over the difficulty {named!r}; this version builds "
                f"intervals over {DIFFICULTY_FORMULA!r}: run 'mlsysim validate mine' on the "
                "runs again",
                path=str(file),
                line=lines.get(("interval", "difficulty")),
                loc=("interval", "difficulty"),
            )
        scores = interval["scores"]
        if not isinstance(scores, list) or not all(
            isinstance(z, (int, float)) and not isinstance(z, bool) for z in scores
        ):
            raise ScenarioFileError(
                "expected a list of numbers",
                path=str(file),
                line=lines.get(("interval", "scores")),
                loc=("interval", "scores"),
            )
        try:
            assumptions = assumptions.with_interval_scores(scores, str(interval.get("source", file.name)))
        except InputError as exc:
            raise ScenarioFileError(
                exc.message, path=str(file), line=lines.get(("interval", "scores")),
                loc=("interval", "scores"),
            ) from None
    if isinstance(layouts, dict) and "scores" in layouts:
        where = ("layouts", "scores")
        try:
            assumptions = assumptions.with_layout_scores(
                cast("list[float]", layouts["scores"]), str(layouts.get("scores_source", file.name)))
        except InputError as exc:
            raise ScenarioFileError(exc.message, path=str(file), line=lines.get(where), loc=where) from None
    _register_range(data.get("range"), count, assumptions, file, lines)  # the loaded object's
    return assumptions


def _whole(value: float) -> int | float:
    """An integral figure as an integer in the file (``devices = [2, 64]``)."""
    return int(value) if value == int(value) and abs(value) < 2**53 else value


def _register_range(
    table: object,
    runs: int,
    assumptions: Assumptions,
    file: Path,
    lines: Mapping[tuple[str, ...], int],
) -> None:
    """A file's ``[range]`` (each figure ``[low, high]``) tied to its assumptions, for the note
    on layouts outside it; a malformed entry is an error naming its line."""
    if table is None:
        return
    if not isinstance(table, dict):
        raise ScenarioFileError(
            "expected a [range] table", path=str(file), line=lines.get(("range",)), loc=("range",)
        )
    bounds: dict[str, tuple[float, float]] = {}
    for name, value in table.items():
        ok = (
            name in dict(RANGE_FIGURES)
            and isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
            and 0 < value[0] <= value[1]
        )
        if not ok:
            raise ScenarioFileError(
                f"expected [low, high] of one of {', '.join(n for n, _ in RANGE_FIGURES)}, "
                f"got {name} = {value!r}",
                path=str(file),
                line=lines.get(("range", name)),
                loc=("range", name),
            )
        bounds[name] = (float(value[0]), float(value[1]))
    register_fit_range(assumptions, FitRange(file.name, runs, bounds))
