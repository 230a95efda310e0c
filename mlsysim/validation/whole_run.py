"""Reproduce published whole-run figures: energy and emissions, failures and checkpoints.

The figures are ``mlsysim/data/published_whole_run.json``, each with its
source and the row or sentence it was read from.

Energy and emissions. Every published estimate uses the same accounting
(:mod:`mlsysim.physics.energy`): energy = device-hours x power per device x
PUE, emissions = energy x grid intensity. A case has **given** inputs when
the source prints all of them (Patterson et al. 2021, Table 4: chips, days,
measured power, PUE and intensity; the LLaMA paper, Table 15 and section 6;
the BLOOM paper's dynamic consumption); the prediction must then come within
:data:`ENERGY_LIMIT` of the published energy and emissions. The Llama 2, 3
and 3.1 model cards print device-hours, the TDP and tCO2e but neither the PUE
nor the grid intensity: their inputs are **implicit**. For those the
comparison uses the LLaMA paper's PUE (1.1) and US-average intensity (385
g/kWh), which is what the Llama 2 table implies to four digits (0.4235 kg
CO2e per TDP-kWh = 1.1 x 0.385), and reports the factor each row implies.

Failures. Young/Daly's optimum interval is checked against Daly's three
published cases; the Llama 3 405B snapshot (466 interruptions in 54 days on
up to 16K GPUs, "higher than 90% effective training time") is turned into
the longest mean restart time for which the model keeps goodput at 90%;
OPT-175B's logbook rate (about 2 of 128 machines lost a day) is compared
with the restart counts of the logbook and the paper.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from mlsysim.physics import energy as en
from mlsysim.physics import reliability as rel

ENERGY_LIMIT = 0.05
"""Largest relative error allowed on a published energy or emission figure whose inputs the
source gives in full."""

IMPLICIT_PUE = 1.1
"""PUE assumed where a model card leaves it implicit: the LLaMA paper's (section 6)."""
IMPLICIT_INTENSITY_G_PER_KWH = 385.0
"""Grid intensity assumed where a model card leaves it implicit: the LLaMA paper's US national
average (section 6), 0.385 kg CO2e/kWh."""

HOUR = 3600.0
DAY = 86400.0


@cache
def _data() -> dict[str, Any]:
    text = files("mlsysim.data").joinpath("published_whole_run.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@dataclass(frozen=True)
class EnergyCase:
    """One published energy/emission figure and the inputs it is computed from."""

    id: str
    family: str
    source: str
    device_hours: float
    power_w: float
    pue: float
    intensity_g_per_kwh: float
    energy_mwh: float | None
    emissions_t: float
    inputs: str
    """``"given"`` (the source prints every input) or ``"implicit"`` (PUE and intensity assumed)."""


@dataclass(frozen=True)
class EnergyComparison:
    """A case, the predicted energy (MWh) and emissions (t CO2e), and their relative errors."""

    case: EnergyCase
    energy_mwh: float
    emissions_t: float
    energy_error: float | None
    emissions_error: float
    implied_factor: float
    """kg CO2e per kWh of device power at the stated power per device: PUE x intensity
    as the published figures imply them."""


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def energy_cases() -> list[EnergyCase]:
    """Every published energy case with numeric inputs, in the file's order.

    Rows without a numeric power or device-hours (a range of powers, a
    methodology note, a total over five months of development) are left out.
    """
    cases = []
    for row in _data()["energy"]:
        power = _number(row.get("power_w"))
        hours = _number(row.get("gpu_hours"))
        days, chips = _number(row.get("training_days")), _number(row.get("gpus"))
        if days is not None and chips is not None:
            hours = chips * days * 24.0  # Patterson et al. print chips and days
        tons = _number(row.get("emissions_tco2e"))
        if power is None or hours is None or tons is None:
            continue
        pue = _number(row.get("pue"))
        intensity = _number(row.get("carbon_intensity_g_per_kwh"))
        given = pue is not None and intensity is not None
        cases.append(
            EnergyCase(
                id=row["id"],
                family=row["family"],
                source=row["source"],
                device_hours=hours,
                power_w=power,
                pue=pue if pue is not None else IMPLICIT_PUE,
                intensity_g_per_kwh=intensity
                if intensity is not None
                else IMPLICIT_INTENSITY_G_PER_KWH,
                energy_mwh=_number(row.get("energy_mwh")),
                emissions_t=tons,
                inputs="given" if given else "implicit",
            )
        )
    return cases


def compare_energy(cases: list[EnergyCase] | None = None) -> list[EnergyComparison]:
    """Predict each case with :mod:`mlsysim.physics.energy` and compare with the published figures."""
    out = []
    for case in energy_cases() if cases is None else cases:
        joules = float(en.device_hours_energy(case.device_hours, case.power_w, case.pue))
        kg = float(en.emissions(joules, case.intensity_g_per_kwh / 1000.0 / en.JOULES_PER_KWH))
        mwh, tons = joules / en.JOULES_PER_KWH / 1000.0, kg / 1000.0
        device_kwh = case.device_hours * case.power_w / 1000.0
        out.append(
            EnergyComparison(
                case=case,
                energy_mwh=mwh,
                emissions_t=tons,
                energy_error=None if case.energy_mwh is None else mwh / case.energy_mwh - 1.0,
                emissions_error=tons / case.emissions_t - 1.0,
                implied_factor=case.emissions_t * 1000.0 / device_kwh,
            )
        )
    return out


# -- failures and checkpoints ----------------------------------------------------------------


@dataclass(frozen=True)
class DalyCase:
    """One of Daly's (2006) published optimum intervals and the model's."""

    mtbf_s: float
    delta_s: float
    printed_min: float
    daly_min: float
    young_min: float
    numeric_min: float
    """The minimum of :func:`mlsysim.physics.reliability.wall_time` found numerically."""


def _minutes(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"min": 1.0, "h": 60.0}[unit]


def _argmin_interval(delta: float, restart: float, mtbf: float) -> float:
    """The interval minimising the expected wall-clock time (golden-section search)."""
    lo, hi = 1e-3 * mtbf, 3.0 * mtbf
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(200):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if rel.wall_time(1.0, a, delta, restart, mtbf) < rel.wall_time(
            1.0, b, delta, restart, mtbf
        ):
            hi = b
        else:
            lo = a
    return 0.5 * (lo + hi)


def daly_cases() -> list[DalyCase]:
    """Daly's three published cases (delta = 5 min, R = 10 min; M = 24 h, 6 h, 15 min)."""
    row = next(r for r in _data()["failures"] if r["id"] == "young-daly-checkpoint-interval")
    out = []
    for point in row["daly_test_points"]:
        mtbf, delta = _minutes(point["M"]) * 60.0, _minutes(point["delta"]) * 60.0
        restart = _minutes(point["R"]) * 60.0
        out.append(
            DalyCase(
                mtbf_s=mtbf,
                delta_s=delta,
                printed_min=_minutes(point["tau_opt_printed"]),
                daly_min=float(rel.daly_interval(delta, mtbf)) / 60.0,
                young_min=float(rel.young_interval(delta, mtbf)) / 60.0,
                numeric_min=_argmin_interval(delta, restart, mtbf) / 60.0,
            )
        )
    return out


LLAMA3_GPUS = 16_384
LLAMA3_DAYS = 54.0
LLAMA3_INTERRUPTIONS = 466
LLAMA3_PARAMETERS = 405e9
LLAMA3_STORAGE_BANDWIDTH = 2e12
"""Tectonic's sustainable throughput, 2 TB/s (Llama 3 paper, section 3.3.1; peak 7 TB/s)."""
LLAMA3_EFFECTIVE = 0.90
"""'higher than 90% effective training time' (Llama 3 paper, section 3.3.4)."""


@dataclass(frozen=True)
class Llama3Snapshot:
    """The Llama 3 405B snapshot through the model."""

    job_mtbf_s: float
    checkpoint_bytes: float
    checkpoint_time_s: float
    interval_s: float
    max_restart_s: float
    """The longest mean restart time for which the model's goodput stays at 90%."""


def llama3_snapshot() -> Llama3Snapshot:
    """MTBF, checkpoint and interval of the snapshot, and the restart time >90% goodput allows.

    Inputs as published: 466 interruptions in 54 days (planned ones stop the
    job too) on 16,384 GPUs; a 405B-parameter state of 14 bytes per parameter
    written to storage at its sustainable 2 TB/s. The restart time is not
    published: the figure is what the reported ">90%" implies.
    """
    mtbf = LLAMA3_DAYS * DAY / LLAMA3_INTERRUPTIONS
    size = float(rel.checkpoint_size(LLAMA3_PARAMETERS))
    delta = float(rel.checkpoint_write_time(size, math.inf, 1.0, LLAMA3_STORAGE_BANDWIDTH))
    tau = float(rel.daly_interval(delta, mtbf))
    lo, hi = 0.0, mtbf
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        g = rel.goodput(1.0, rel.wall_time(1.0, tau, delta, mid, mtbf))
        lo, hi = (mid, hi) if g > LLAMA3_EFFECTIVE else (lo, mid)
    return Llama3Snapshot(mtbf, size, delta, tau, lo)


OPT_NODES_PER_DAY_LOST = 2.0
OPT_HOSTS = 128
OPT_PAPER_NODES, OPT_PAPER_DAYS, OPT_PAPER_RESTARTS = 124, 60.0, 105
OPT_LOG_DAYS, OPT_LOG_RESTARTS = 57.0, 90
OPT_IDEAL_DAYS = 33.0


@dataclass(frozen=True)
class OptRestarts:
    """OPT-175B: restarts predicted from the logbook's failure rate, and what was reported."""

    rate_per_node_hour: float
    predicted_paper: float
    reported_paper: int
    predicted_log: float
    reported_log: int
    observed_goodput: float
    """33 days of failure-free training over about 57 days of wall-clock time (derived)."""
    implied_loss_per_restart_h: float


def opt_restarts() -> OptRestarts:
    """Restarts over the paper's ~60 days (124 nodes) and the logbook's ~57 days (128 hosts)."""
    rate = OPT_NODES_PER_DAY_LOST / (OPT_HOSTS * 24.0)
    paper = rate * OPT_PAPER_NODES * OPT_PAPER_DAYS * 24.0
    log = rate * OPT_HOSTS * OPT_LOG_DAYS * 24.0
    lost_h = (OPT_LOG_DAYS - OPT_IDEAL_DAYS) * 24.0 / OPT_LOG_RESTARTS
    return OptRestarts(
        rate,
        paper,
        OPT_PAPER_RESTARTS,
        log,
        OPT_LOG_RESTARTS,
        OPT_IDEAL_DAYS / OPT_LOG_DAYS,
        lost_h,
    )


# -- the report ------------------------------------------------------------------------------


def report() -> dict[str, object]:
    """Every comparison as plain values (for ``mlsysim validate published --json``)."""
    energy = compare_energy()
    given = [c for c in energy if c.case.inputs == "given"]
    worst = max(max(abs(c.emissions_error), abs(c.energy_error or 0.0)) for c in given)
    snap, opt = llama3_snapshot(), opt_restarts()
    return {
        "energy_limit": ENERGY_LIMIT,
        "energy_worst_given": worst,
        "energy": [
            {
                "id": c.case.id,
                "inputs": c.case.inputs,
                "published_mwh": c.case.energy_mwh,
                "predicted_mwh": c.energy_mwh,
                "published_tco2e": c.case.emissions_t,
                "predicted_tco2e": c.emissions_t,
                "energy_error": c.energy_error,
                "emissions_error": c.emissions_error,
                "implied_kg_per_device_kwh": c.implied_factor,
            }
            for c in energy
        ],
        "daly": [
            {
                "mtbf_h": d.mtbf_s / HOUR,
                "printed_min": d.printed_min,
                "model_min": d.daly_min,
                "numeric_min": d.numeric_min,
                "young_min": d.young_min,
            }
            for d in daly_cases()
        ],  # fmt: skip
        "llama3_405b": {
            "job_mtbf_h": snap.job_mtbf_s / HOUR,
            "checkpoint_tb": snap.checkpoint_bytes / 1e12,
            "checkpoint_time_s": snap.checkpoint_time_s,
            "interval_min": snap.interval_s / 60.0,
            "max_restart_min_for_90pct": snap.max_restart_s / 60.0,
        },
        "opt_175b": {
            "rate_per_node_hour": opt.rate_per_node_hour,
            "predicted_restarts_paper": opt.predicted_paper,
            "reported_restarts_paper": opt.reported_paper,
            "predicted_restarts_logbook": opt.predicted_log,
            "reported_restarts_logbook": opt.reported_log,
            "observed_goodput": opt.observed_goodput,
            "implied_loss_per_restart_h": opt.implied_loss_per_restart_h,
        },
    }


def report_lines() -> list[str]:
    """The whole-run comparison as text lines (``mlsysim validate published``)."""
    lines = ["", "Whole run: energy and emissions (published inputs -> energy x PUE x intensity)"]
    lines.append(
        f"  {'case':34} {'inputs':8} {'MWh pub':>9} {'pred':>9} {'err':>7} "
        f"{'tCO2e pub':>10} {'pred':>9} {'err':>7} {'kg/kWh*':>8}"
    )
    for c in compare_energy():
        mwh = "" if c.case.energy_mwh is None else f"{c.case.energy_mwh:.6g}"
        err = "" if c.energy_error is None else f"{c.energy_error:+.1%}"
        lines.append(
            f"  {c.case.id:34} {c.case.inputs:8} {mwh:>9} {c.energy_mwh:>9.4g} {err:>7} "
            f"{c.case.emissions_t:>10.6g} {c.emissions_t:>9.4g} {c.emissions_error:>+7.1%} "
            f"{c.implied_factor:>8.4f}"
        )
    lines.append(
        f"  (*) kg CO2e per kWh of device power, as published; implicit inputs assume "
        f"PUE {IMPLICIT_PUE} and {IMPLICIT_INTENSITY_G_PER_KWH:g} g/kWh (LLaMA paper): "
        f"0.4235 kg/kWh. Limit for given inputs: {ENERGY_LIMIT:.0%}."
    )
    lines.append("")
    lines.append("Whole run: checkpoint interval (Daly 2006, delta = 5 min, R = 10 min)")
    for d in daly_cases():
        lines.append(
            f"  M = {d.mtbf_s / HOUR:g} h: printed {d.printed_min:g} min, eq. 37 {d.daly_min:.2f}, "
            f"minimum of the model {d.numeric_min:.2f}, Young {d.young_min:.2f}"
        )
    snap, opt = llama3_snapshot(), opt_restarts()
    lines.append("")
    lines.append(
        f"Whole run: Llama 3 405B, 466 interruptions in 54 days on 16,384 GPUs: job MTBF "
        f"{snap.job_mtbf_s / HOUR:.2f} h; checkpoint {snap.checkpoint_bytes / 1e12:.2f} TB at "
        f"2 TB/s = {snap.checkpoint_time_s:.1f} s; interval {snap.interval_s / 60:.1f} min; "
        f">90% effective training time holds for a mean restart up to "
        f"{snap.max_restart_s / 60:.1f} min (not published)"
    )
    lines.append(
        f"Whole run: OPT-175B, ~2 of 128 machines lost a day = {opt.rate_per_node_hour:.3g} per "
        f"node-hour: predicted {opt.predicted_paper:.0f} restarts in ~60 days on 124 nodes "
        f"(paper: {opt.reported_paper}+), {opt.predicted_log:.0f} in ~57 days (logbook: "
        f"~{opt.reported_log}); observed goodput ~{opt.observed_goodput:.2f} (33 of ~57 days) "
        f"implies ~{opt.implied_loss_per_restart_h:.1f} h lost per restart"
    )
    return lines
