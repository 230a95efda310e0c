"""Few-shot transfer of ``mlsysim validate mine`` (issue 41): calibrate on a family's smallest runs, predict the rest.

Run:

    python benchmarks/bench_few_shot.py            # every eligible family, a table per family and the totals
    python benchmarks/bench_few_shot.py --json     # the same as one JSON document (every run's errors)
    python benchmarks/bench_few_shot.py --family TorchTitan   # the families whose name contains the text

The method, as a user would do it, through the public path only:

1. The runs are the published model-parallel runs of ``mlsysim/data/published_parallel.json`` and
   ``published_frontier.json`` as :func:`mlsysim.validation.parallel.load_cases` reads them (the same
   :class:`~mlsysim.validation.parallel.ParallelCase` list ``mlsysim validate parallel`` predicts: every
   run the scenario can express, each as the inputs of a scenario file and its measured update time).
   A *family* is the runs of one ``ParallelCase.family`` on one GPU generation (one cluster, one
   software stack); a family is used when it has at least :data:`MIN_RUNS` runs at at least
   :data:`MIN_GPU_COUNTS` distinct GPU counts.
2. Calibration on the :data:`CALIBRATION_RUNS` smallest runs of a family by GPU count (ties by the
   order of the files): the runs are written as the rows of a layouts CSV (the columns of
   ``mlsysim init --layouts``: the scenario's inputs, the shape columns of the workload, the run's own
   settings as ``assumptions.NAME`` columns, ``measured_update_time`` in seconds), read by
   :func:`mlsysim.validation.mine.load_all` under the ``realistic`` preset and fitted by
   :func:`mlsysim.validation.mine_parallel.fit_layouts`: what ``mlsysim validate mine LAYOUTS.csv
   --out FIT.toml`` runs. A fit outside its physical bounds
   (:meth:`~mlsysim.validation.mine_parallel.LayoutFit.outside_bounds`: the command's exit status 2)
   is recorded as *refused* and its family's runs are not predicted by it; a file the command rejects
   is recorded as *rejected* with its one-line reason. Before fitting, each row read back from the CSV
   must price the same update (to 1e-9) and hold the same measurement as the reader's scenario: a row
   that does not is *not expressible as a row*, and its family is skipped.
3. Prediction: every run of the family outside the two smallest (the same runs for every variant), as
   its scenario file with the written assumptions file's ``[assumptions]`` table (read back by
   :func:`mlsysim.validation.mine.load_assumptions`) and the run's own settings over it (the
   assumptions table of a scenario file):
   ``scenario.result.update_time``. Variants: calibrated on the 2 smallest runs, on the smallest alone,
   and uncalibrated (the run's scenario under the ``realistic`` preset: the shipped in-training
   ceilings, ``mlsysim/data/matmul_ceilings.json``, which were fitted on these published runs, so the
   baseline is not held out). Also reported: the 2-run fit as ``mlsysim run --file RUN.toml
   --assumptions FIT.toml`` applies it (the file's assumptions *replace* the scenario's, so the run's
   own settings, e.g. an unoverlapped gradient reduction, are dropped).
4. The error of a run is that of ``mlsysim validate parallel``: predicted over measured throughput
   minus one, T_measured / T_predicted - 1. Per family and over all predicted runs (pooled): the
   median |error| of each variant.

Nothing is tuned here: the library's fit and scenario are used as they are. The figures measured are
in docs/calibration.md ("Few-shot transfer (issue 41)").
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import platform
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path

from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.assumptions import Assumptions, assumptions_of
from mlsysim.engine.io.files import _workload_table, assumptions_value, scenario_from_dict
from mlsysim.models.registry import Models
from mlsysim.validation.mine import assumptions_toml, load_all, load_assumptions
from mlsysim.validation.mine_parallel import SHAPE_COLUMNS, LayoutFit, LayoutRun, fit_layouts
from mlsysim.validation.parallel import (
    REGISTRY_WORKLOADS,
    ParallelCase,
    load_cases,
    load_entries,
    not_expressible,
)

PRESET = "realistic"
"""The preset ``mlsysim validate mine`` fits from by default (``--preset``), and the uncalibrated baseline's."""

CALIBRATION_RUNS = 2
"""Runs of a family the calibration is made on (the smallest by GPU count); the 1-run variant takes the first."""

MIN_RUNS = 3
"""A family is used with at least this many runs (two to calibrate on, one at least to predict)."""

MIN_GPU_COUNTS = 2
"""... at at least this many distinct GPU counts (a transfer across scale)."""

ROUND_TRIP = 1e-9
"""Relative agreement required between a run's update time read back from its CSV row and from its scenario."""

VARIANTS = ("2 runs", "1 run", "none", "2 runs, --assumptions")
"""Calibrated on the 2 smallest runs, on the smallest, not at all; the 2-run fit as ``--assumptions`` applies it."""

TARGETS = {"2 runs": 0.04, "1 run": 0.07}
"""Issue 41's "Done when": median |error| on the predicted runs at most 4% (2 runs), 7% (1 run)."""

DATA_FILES = ("published_parallel.json", "published_frontier.json")


# -- the runs and their families ----------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One published run: the reader's case and its GPU count."""

    case: ParallelCase
    gpus: int


def published_runs() -> list[Run]:
    """Every run ``mlsysim validate parallel`` predicts, in the files' order, with its GPU count."""
    gpus = {e["id"]: int(e["gpus"]) for e in load_entries()}
    return [Run(c, gpus[c.id]) for c in load_cases()]


def family_key(run: Run) -> str:
    """A family: one source family on one GPU generation (``"TorchTitan ... (H100 500 W)"``)."""
    return f"{run.case.family} ({run.case.generation})"


def families(runs: Sequence[Run]) -> tuple[dict[str, list[Run]], dict[str, str]]:
    """(the eligible families' runs in file order, the others with why they are skipped)."""
    grouped: dict[str, list[Run]] = {}
    for run in runs:
        grouped.setdefault(family_key(run), []).append(run)
    eligible: dict[str, list[Run]] = {}
    skipped: dict[str, str] = {}
    for key, members in grouped.items():
        counts = sorted({r.gpus for r in members})
        if len(members) < MIN_RUNS:
            skipped[key] = f"{len(members)} run(s), fewer than {MIN_RUNS}"
        elif len(counts) < MIN_GPU_COUNTS:
            skipped[key] = f"{len(members)} runs all at {counts[0]} GPUs (one GPU count)"
        else:
            eligible[key] = members
    return eligible, skipped


def smallest(runs: Sequence[Run], n: int) -> list[Run]:
    """The ``n`` runs with the fewest GPUs, ties in the files' order (a stable sort)."""
    return sorted(runs, key=lambda r: r.gpus)[:n]


# -- the layouts file a user writes -------------------------------------------------------------------


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _workload_columns(table: Mapping[str, object]) -> dict[str, str]:
    """A workload table as layout columns: ``workload`` (its name) and the shape columns; a registry model
    with some shape changed (:data:`~mlsysim.validation.parallel.REGISTRY_WORKLOADS`: the long-context runs)
    as its registry name and the changed columns. A table with fields no column gives is refused."""
    name = str(table.get("name", ""))
    for registry_name in REGISTRY_WORKLOADS.values():
        known = _workload_table(getattr(Models.Language, registry_name))
        if known.get("name") == name:
            changed = {k for k, v in table.items() if known.get(k) != v}
            if changed - set(SHAPE_COLUMNS):
                break
            return {"workload": registry_name, **{k: _cell(table[k]) for k in sorted(changed)}}
    extra = set(table) - {"kind", "name", *SHAPE_COLUMNS}
    if extra:
        raise InputError(f"the workload table has fields no layout column gives: {sorted(extra)}", loc=("workload",))
    return {"workload": name, **{k: _cell(v) for k, v in table.items() if k in SHAPE_COLUMNS}}


def layout_row(run: Run) -> dict[str, str]:
    """The run as a row of ``mlsysim init --layouts``'s CSV: the scenario's inputs, the workload as a
    registry name or its shape columns, the run's own settings as ``assumptions.NAME``, the measured time."""
    row: dict[str, str] = {}
    for key, value in run.case.inputs.items():
        if key == "workload" and isinstance(value, Mapping):
            row.update(_workload_columns(value))
        elif key == "assumptions" and isinstance(value, Mapping):
            row.update({f"assumptions.{k}": _cell(v) for k, v in value.items()})
        else:
            row[key] = _cell(value)
    row["measured_update_time"] = f"{run.case.measured_time!r} s"
    return row


def write_layouts(runs: Sequence[Run], path: Path) -> Path:
    """A layouts CSV of ``runs`` (the union of their columns; an empty cell is an absent field)."""
    rows = [layout_row(r) for r in runs]
    header = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return path


# -- predicting through the public scenario -----------------------------------------------------------


def _own(inputs: Mapping[str, object]) -> dict[str, object]:
    own = inputs.get("assumptions", {})
    return dict(own) if isinstance(own, Mapping) else {}


def scenario_inputs(inputs: Mapping[str, object], assumptions: Assumptions) -> dict[str, object]:
    """A run's scenario file with ``assumptions`` as its assumptions table, the run's own settings over it."""
    value = assumptions_value(assumptions)
    table: dict[str, object] = dict(value) if isinstance(value, dict) else {"preset": value}
    table.update(_own(inputs))
    return {**inputs, "assumptions": table}


def update_time(inputs: Mapping[str, object], assumptions: Assumptions) -> float:
    """``scenario.result.update_time`` (s) of the scenario file :func:`scenario_inputs`."""
    scenario = scenario_from_dict(scenario_inputs(inputs, assumptions))
    return float(scenario.result.update_time.to("s").magnitude)


def update_time_replaced(inputs: Mapping[str, object], assumptions: Assumptions) -> float:
    """The update time as ``mlsysim run --file RUN --assumptions FIT`` gives it: the file's assumptions
    replace the scenario's (the run's own settings dropped)."""
    scenario = scenario_from_dict(inputs).variant(assumptions=assumptions)
    return float(scenario.result.update_time.to("s").magnitude)


def error(measured: float, predicted: float) -> float:
    """Predicted over measured throughput minus one: T_measured / T_predicted - 1."""
    return measured / predicted - 1.0


# -- one calibration ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """One ``validate mine`` of a family's smallest runs, and the other runs predicted with it."""

    on: list[str]
    """The run ids calibrated on."""
    status: str
    """``fitted``, ``refused`` (a constant outside its bounds: exit status 2), ``rejected`` (the file)
    or ``not expressible as a row`` (a row read back prices another update than its scenario)."""
    reason: str = ""
    assumptions: dict[str, float] = field(default_factory=dict)
    """The fitted ``matmul_ceiling`` and ``attention_ceiling`` written to the assumptions file."""
    errors: dict[str, float] = field(default_factory=dict)
    """Run id -> error of its prediction (the run's own settings over the fitted assumptions)."""
    errors_replaced: dict[str, float] = field(default_factory=dict)
    """Run id -> error as ``--assumptions`` applies the fit (the run's own settings dropped)."""


def _round_trip(runs: Sequence[Run], layouts: Sequence[LayoutRun], base: Assumptions) -> str | None:
    """Why a row read back from the CSV is not its run (None: every row prices the same update)."""
    for run, layout in zip(runs, layouts, strict=True):
        if not math.isclose(layout.measured_update_time, run.case.measured_time, rel_tol=ROUND_TRIP):
            return f"{run.case.id}: measured {layout.measured_update_time} s read back, {run.case.measured_time} s"
        read, own = update_time(layout.case.inputs, base), update_time(run.case.inputs, base)
        if not math.isclose(read, own, rel_tol=ROUND_TRIP):
            return f"{run.case.id}: its row prices {read:.6g} s, its scenario {own:.6g} s"
    return None


def calibrate(on: Sequence[Run], predict: Sequence[Run], directory: Path, label: str) -> Calibration:
    """``validate mine`` on the runs ``on`` (their layouts CSV in ``directory``), the runs ``predict``
    predicted with the assumptions file it writes."""
    ids = [r.case.id for r in on]
    base = assumptions_of(PRESET)
    try:
        path = write_layouts(on, directory / f"{label}.csv")
    except InputError as exc:  # a run no layout row can say
        return Calibration(ids, "not expressible as a row", str(exc))
    try:
        loaded, layouts = load_all(path, base)
        if loaded or len(layouts) != len(on):
            return Calibration(ids, "rejected", f"read {len(loaded)} data-parallel and {len(layouts)} layout rows")
        mismatch = _round_trip(on, layouts, base)
        if mismatch is not None:
            return Calibration(ids, "not expressible as a row", mismatch)
        fit: LayoutFit = fit_layouts(layouts, base)
    except InputError as exc:  # ScenarioFileError too: what the command prints in one line, exit status 2
        return Calibration(ids, "rejected", str(exc))
    outside = fit.outside_bounds()
    if outside:
        return Calibration(ids, "refused", outside[0], dict(fit.assumptions))
    toml = directory / f"{label}.toml"
    toml.write_text(assumptions_toml(None, str(path), PRESET, [], fit, layouts), encoding="utf-8")
    fitted = load_assumptions(toml)
    errors, replaced = {}, {}
    for run in predict:
        errors[run.case.id] = error(run.case.measured_time, update_time(run.case.inputs, fitted))
        replaced[run.case.id] = error(run.case.measured_time, update_time_replaced(run.case.inputs, fitted))
    return Calibration(ids, "fitted", "", dict(fit.assumptions), errors, replaced)


# -- one family, and all ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FamilyResult:
    name: str
    runs: list[tuple[str, int]]
    """(run id, GPUs) of every run of the family, in the files' order."""
    predicted: list[str]
    """The runs predicted (the family's runs outside the calibration set)."""
    two: Calibration
    one: Calibration
    uncalibrated: dict[str, float]
    """Run id -> error of the run's scenario under the preset alone."""
    implementation_rate: str | None = None
    """The implementation rate ``validate parallel`` prices this family with (fitted on the family alone);
    ``validate mine`` fits none: the user's prediction takes the preset's."""

    @property
    def gpu_range(self) -> tuple[int, int]:
        counts = [g for _, g in self.runs]
        return min(counts), max(counts)


def family_result(name: str, runs: Sequence[Run], directory: Path) -> FamilyResult:
    """A family's 2-run and 1-run calibrations and its uncalibrated errors, on the same predicted runs."""
    on = smallest(runs, CALIBRATION_RUNS)
    predict = [r for r in runs if all(r is not c for c in on)]
    slug = "".join(ch if ch.isalnum() else "_" for ch in name)[:60]
    base = assumptions_of(PRESET)
    return FamilyResult(
        name=name,
        runs=[(r.case.id, r.gpus) for r in runs],
        predicted=[r.case.id for r in predict],
        two=calibrate(on, predict, directory, f"{slug}_2"),
        one=calibrate(on[:1], predict, directory, f"{slug}_1"),
        uncalibrated={r.case.id: error(r.case.measured_time, update_time(r.case.inputs, base)) for r in predict},
        implementation_rate=runs[0].case.rate,
    )


def _median_abs(values: Sequence[float]) -> float:
    return statistics.median(abs(v) for v in values) if values else math.nan


@dataclass(frozen=True)
class Measurement:
    families: list[FamilyResult]
    skipped_families: dict[str, str]
    not_predicted_runs: dict[str, str]
    """Runs of the files the reader cannot express or the source does not describe (never in a family)."""

    def errors(self, *, without_rates: bool = False) -> dict[str, dict[str, float]]:
        """Variant -> run id -> error, over every family (``without_rates``: not the families
        :data:`~mlsysim.validation.parallel.IMPLEMENTATION_RATES` prices with a rate ``validate mine`` does not fit)."""
        out: dict[str, dict[str, float]] = {v: {} for v in VARIANTS}
        for f in self.families:
            if without_rates and f.implementation_rate:
                continue
            out["2 runs"].update(f.two.errors)
            out["1 run"].update(f.one.errors)
            out["none"].update(f.uncalibrated)
            out["2 runs, --assumptions"].update(f.two.errors_replaced)
        return out

    def pooled(self, *, without_rates: bool = False) -> dict[str, dict[str, float | int]]:
        """Median |error| of each variant over the runs every variant predicts (``common``: the families
        whose fits were not refused), and over all the runs it predicts."""
        errors = self.errors(without_rates=without_rates)
        common = set.intersection(*(set(e) for e in errors.values()))
        return {
            v: {
                "common_runs": len(common),
                "median_abs_error_common": _median_abs([e[k] for k in common]),
                "runs": len(e),
                "median_abs_error": _median_abs(list(e.values())),
            }
            for v, e in errors.items()
        }

    def counts(self) -> dict[str, int]:
        calibrations = [c for f in self.families for c in (f.two, f.one)]
        return {
            "families": len(self.families),
            "families_skipped": len(self.skipped_families),
            "predicted_runs": sum(len(f.predicted) for f in self.families),
            "runs_not_predicted_by_the_reader": len(self.not_predicted_runs),
            **{f"calibrations_{s.replace(' ', '_')}": sum(c.status == s for c in calibrations)
               for s in ("fitted", "refused", "rejected", "not expressible as a row")},
        }


def measure(selected: str | None = None, directory: Path | None = None) -> Measurement:
    """Every eligible family (those whose name contains ``selected``, when given) calibrated and predicted."""
    runs = published_runs()
    eligible, skipped = families(runs)
    if selected is not None:
        eligible = {k: v for k, v in eligible.items() if selected.lower() in k.lower()}
    with tempfile.TemporaryDirectory() as scratch:
        where = directory if directory is not None else Path(scratch)
        results = [family_result(name, members, where) for name, members in eligible.items()]
    return Measurement(results, skipped, dict(not_expressible()))


# -- output -------------------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return "   -  " if value != value else f"{value:6.1%}"


def _status(c: Calibration) -> str:
    return "" if c.status == "fitted" else f" [{c.status}]"


def text(m: Measurement) -> str:
    """The table per family, the pooled medians and what was skipped."""
    lines = [
        f"{'family':62s} {'runs':>4s} {'GPUs':>11s} {'pred':>4s}  {'2 runs':>6s} {'1 run':>6s} {'none':>6s}  "
        "calibrated on (GPUs)"
    ]
    for f in m.families:
        gpus = dict(f.runs)
        low, high = f.gpu_range
        on = ", ".join(f"{i} ({gpus[i]})" for i in f.two.on)
        lines.append(
            f"{f.name[:62]:62s} {len(f.runs):4d} {f'{low}-{high}':>11s} {len(f.predicted):4d}  "
            f"{_pct(_median_abs(list(f.two.errors.values())))} {_pct(_median_abs(list(f.one.errors.values())))} "
            f"{_pct(_median_abs(list(f.uncalibrated.values())))}  {on}{_status(f.two)}{_status(f.one)}"
            + (f" (priced with {f.implementation_rate} in validate parallel)" if f.implementation_rate else "")
        )
    lines.append("")
    lines.append("fits (matmul_ceiling, attention_ceiling written; or why none):")
    for f in m.families:
        for label, c in (("2 runs", f.two), ("1 run", f.one)):
            what = (", ".join(f"{k} {v:.3f}" for k, v in c.assumptions.items()) if c.status == "fitted"
                    else f"{c.status}: {c.reason}")
            lines.append(f"  {f.name[:62]:62s} {label:6s} {what}")
    lines.append("")
    lines.append("pooled median |error| (predicted / measured throughput - 1), on the runs every variant predicts "
                 "(the families whose fits were refused left out) | on all the runs of the variant:")
    for title, without in (("every family", False), ("without the families priced with an implementation rate",
                                                      True)):
        lines.append(f" {title}:")
        for label, row in m.pooled(without_rates=without).items():
            target = TARGETS.get(label)
            lines.append(
                f"  {label:24s} {_pct(float(row['median_abs_error_common']))} on {row['common_runs']} runs | "
                f"{_pct(float(row['median_abs_error']))} on {row['runs']} runs"
                + (f"  (target <= {target:.0%})" if target is not None else "")
            )
    lines.append("")
    lines.append("skipped families:")
    lines += [f"  {k}: {why}" for k, why in m.skipped_families.items()]
    lines.append(f"runs the reader does not predict ({len(m.not_predicted_runs)}):")
    lines += [f"  {k}: {why[:110]}" for k, why in m.not_predicted_runs.items()]
    lines.append(f"counts: {m.counts()}")
    return "\n".join(lines)


def document(m: Measurement) -> dict[str, object]:
    """The measurement as plain values (``--json``)."""
    return {
        "method": "benchmarks/bench_few_shot.py (docstring)",
        "preset": PRESET,
        "data": {name: hashlib.sha256(files("mlsysim.data").joinpath(name).read_bytes()).hexdigest()
                 for name in DATA_FILES},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "targets": TARGETS,
        "pooled": m.pooled(),
        "pooled_without_implementation_rates": m.pooled(without_rates=True),
        "counts": m.counts(),
        "families": [
            {
                **asdict(f),
                "gpu_range": list(f.gpu_range),
                "median_abs_error": {
                    "2 runs": _median_abs(list(f.two.errors.values())),
                    "1 run": _median_abs(list(f.one.errors.values())),
                    "none": _median_abs(list(f.uncalibrated.values())),
                },
            }
            for f in m.families
        ],
        "skipped_families": m.skipped_families,
        "not_predicted_runs": m.not_predicted_runs,
    }


def _finite(value: object) -> object:
    """``value`` with every NaN as None (JSON has no NaN): a median of no runs."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    parser.add_argument("--family", help="only the families whose name contains this text")
    parser.add_argument("--keep", type=Path, help="write the layouts CSVs and assumptions files in this folder")
    args = parser.parse_args(argv)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    m = measure(args.family, args.keep)
    if args.json:
        print(json.dumps(_finite(document(m)), indent=2, allow_nan=False))
    else:
        print(text(m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
