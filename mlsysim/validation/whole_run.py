"""Reproduce published whole-run figures through the public scenario: energy and emissions,
failures and checkpoints.

The figures are ``mlsysim/data/published_whole_run.json``, each with its
source and the row or sentence it was read from. Every predicted figure is
read from :attr:`TrainingScenario.result` of a scenario built
from the source's description; this module holds that mapping and the
comparison, and no model of its own (it imports nothing from
:mod:`mlsysim.physics`). Each :class:`Prediction` carries its scenario in
scenario-file form (:func:`mlsysim.engine.io.files.scenario_to_dict`), and its
figures are those of the scenario those very inputs build
(:func:`mlsysim.engine.io.files.scenario_from_dict`).

Energy and emissions. A published estimate is device-hours x power per
device x PUE, emissions = energy x grid intensity: a scenario of the
published devices (the chips of Patterson et al. 2021, Table 4; one device
for a row that prints device-hours only) whose failure-free training time
``T_s`` is the published time, with ``device_power``, ``pue`` and
``carbon_intensity``; its ``energy`` is ``PUE n T_s P`` (docs/whole_run.md).
The step inputs a scenario requires (:data:`STEP`) do not enter that figure:
they set the speedup, and the scenario's ``training_time`` input (one device)
is the published time times that speedup. A case has **given** inputs when
the source prints all of them (Patterson et al. 2021, Table 4: chips, days,
measured power, PUE and intensity; the LLaMA paper, Table 15 and section 6;
the BLOOM paper's dynamic consumption); the prediction must then come within
:data:`ENERGY_LIMIT` of the published energy and emissions. The Llama 2, 3
and 3.1 model cards print device-hours, the TDP and tCO2e but neither the PUE
nor the grid intensity: their inputs are **implicit**. For those the
comparison uses the LLaMA paper's PUE (1.1) and US-average intensity (385
g/kWh), which is what the Llama 2 table implies to four digits (0.4235 kg
CO2e per TDP-kWh = 1.1 x 0.385), and reports the factor each row implies.

Failures. Daly's three published optimum intervals are the scenario's
``checkpoint_interval`` (Daly's eq. 37, its default) for one device with
Daly's MTBF, write time and restart time, and the interval that minimises
the scenario's ``wall_clock_time`` (a golden-section search over the
``checkpoint_interval`` input); the Llama 3 405B snapshot (466 interruptions
in 54 days on up to 16K GPUs, "higher than 90% effective training time") is
turned into the longest mean ``restart_time`` for which the scenario's
``goodput`` stays at 90% (bisection); OPT-175B's logbook rate (about 2 of 128
machines lost a day) gives the scenario's ``interruptions`` over the paper's
and the logbook's wall-clock time, compared with their restart counts.

What the scenario cannot express is listed in :data:`NOT_EXPRESSED` (and
printed); no figure falls back to a formula of this module.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from mlsysim.core.units import Q_, Quantity
from mlsysim.engine.io.files import scenario_from_dict, scenario_to_dict
from mlsysim.engine.scenario_types import TrainingScenario
from mlsysim.models.types import Workload

ENERGY_LIMIT = 0.05
"""Largest relative error allowed on a published energy or emission figure whose inputs the
source gives in full."""

IMPLICIT_PUE = 1.1
"""PUE assumed where a model card leaves it implicit: the LLaMA paper's (section 6)."""
IMPLICIT_INTENSITY_G_PER_KWH = 385.0
"""Grid intensity assumed where a model card leaves it implicit: the LLaMA paper's US national
average (section 6), 0.385 kg CO2e/kWh."""

HOUR = 3600.0

FIGURE_UNITS: dict[str, str | None] = {
    "energy": "MWh",
    "emissions": "t",
    "job_mtbf": "hour",
    "checkpoint_size": "TB",
    "checkpoint_time": "s",
    "checkpoint_interval": "min",
    "wall_clock_time": "hour",
    "goodput": None,
    "interruptions": None,
}
"""The unit each figure of a :class:`Prediction` is reported in (None: a plain number)."""

STEP: dict[str, object] = {
    "precision": "bf16",
    "step_time": Q_(1.0, "s"),
    "per_device_batch": 1,
    "intra_bandwidth": Q_(100.0, "GB/s"),
}
"""Step inputs a scenario requires that no whole-run figure here reads: with ``training_time``
the published failure-free time times the scenario's speedup, they change the speedup only.
A scenario of several nodes adds :data:`STEP_INTER_BANDWIDTH`."""
STEP_INTER_BANDWIDTH = Q_(100.0, "Gbps")

NOT_EXPRESSED: tuple[str, ...] = (
    "Young's (1974) first-order interval sqrt(2 delta M) beside Daly's: the scenario applies "
    "Daly's eq. 37 (or a given checkpoint_interval) and has no input choosing Young's rule",
    "Llama 3 405B's storage ceiling (Tectonic's sustained 2 TB/s for the whole job): the "
    "scenario has a write bandwidth per node only, so the snapshot gives its one writer (a "
    "replicated state, zero_stage 0) the store's 2 TB/s: the same write time",
    "Patterson et al.'s measured power includes the host (CPU, memory, NIC, fans): the "
    "scenario has no node power input, so it is given as device_power, as the paper does",
    "rows without a single number for power or device-hours (a range of TDPs, a methodology "
    "note, five months of development on 2,048 GPUs) give no scenario and are not predicted",
)
"""What the scenario cannot express of the published whole runs, and how each is handled."""


def _magnitude(value: object, unit: str | None) -> float:
    if unit is None:
        return float(value)  # type: ignore[arg-type]  # a plain figure (goodput, interruptions)
    return float(value.to(unit).magnitude)  # type: ignore[attr-defined]  # a Quantity


@dataclass(frozen=True)
class Prediction:
    """Figures of one scenario's result and that scenario in scenario-file form.

    ``figures`` maps a result attribute to its value in :data:`FIGURE_UNITS`;
    ``scenario_from_dict(scenario).result`` gives them, read from those very
    inputs (``tests/validation/test_whole_run.py`` checks it for every case).
    """

    scenario: dict[str, object]
    figures: dict[str, float]

    def __getitem__(self, name: str) -> float:
        return self.figures[name]


def figure(scenario: TrainingScenario, name: str) -> float:
    """``scenario.result.<name>`` in :data:`FIGURE_UNITS` (an error where it is not modeled)."""
    value = getattr(scenario.result, name)
    if value is None:
        raise ValueError(f"{scenario.name}: result.{name} is not modeled by these inputs")
    return _magnitude(value, FIGURE_UNITS[name])


def predict(scenario: TrainingScenario, *names: str) -> Prediction:
    """The figures ``names`` of ``scenario.result``, read from its inputs in scenario-file form."""
    inputs = scenario_to_dict(scenario)
    result = scenario_from_dict(inputs).result
    return Prediction(inputs, {n: _magnitude(getattr(result, n), FIGURE_UNITS[n]) for n in names})


def _with_training_time(
    scenario: TrainingScenario, hours: float
) -> TrainingScenario:
    """``scenario`` whose failure-free training time (``result.training_time``) is ``hours``:
    the ``training_time`` input is one device's, the result's is it over the speedup."""
    return scenario.variant(training_time=Q_(hours * scenario.result.speedup, "hour"))


def _layout(devices: int, per_node: int) -> dict[str, object]:
    nodes = devices // per_node
    out: dict[str, object] = {**STEP, "devices_per_node": per_node, "nodes": nodes}
    if nodes > 1:
        out["inter_bandwidth"] = STEP_INTER_BANDWIDTH
    return out


@cache
def _data() -> dict[str, Any]:
    text = files("mlsysim.data").joinpath("published_whole_run.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


# -- energy and emissions --------------------------------------------------------------------

DEVICES_PER_HOST = {"TPU v2": 4, "TPU v3": 4}
"""Chips per host of a row that prints its chip count (Cloud TPU v2 and v3 hosts drive 4 chips);
8 for a GPU. The split enters no energy figure (the scenario has no node power)."""


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
    devices: int = 1
    """The published device count (Patterson et al.'s chips), else 1: the device-hours on one."""
    devices_per_node: int = 1


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
    prediction: Prediction


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
        devices, per_node = 1, 1
        if days is not None and chips is not None:
            hours = chips * days * 24.0  # Patterson et al. print chips and days
            devices = int(chips)
            per_node = DEVICES_PER_HOST.get(str(row.get("gpu")), 8)
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
                devices=devices,
                devices_per_node=per_node,
            )
        )
    return cases


def energy_scenario(case: EnergyCase) -> TrainingScenario:
    """The case as a scenario: its devices for the published time, its power, PUE and grid."""
    scenario = TrainingScenario(
        name=case.id,
        description=case.source,
        workload=Workload(name=case.id, parameters=Q_(1e9, "param")),
        training_time=Q_(case.device_hours / case.devices, "hour"),
        device_power=Q_(case.power_w, "W"),
        pue=case.pue,
        carbon_intensity=Q_(case.intensity_g_per_kwh, "g/kWh"),
        **_layout(case.devices, case.devices_per_node),
    )
    return _with_training_time(scenario, case.device_hours / case.devices)


def compare_energy(cases: list[EnergyCase] | None = None) -> list[EnergyComparison]:
    """Each case's scenario ``energy`` and ``emissions``, against the published figures."""
    out = []
    for case in energy_cases() if cases is None else cases:
        p = predict(energy_scenario(case), "energy", "emissions")
        mwh, tons = p["energy"], p["emissions"]
        device_kwh = case.device_hours * case.power_w / 1000.0
        out.append(
            EnergyComparison(
                case=case,
                energy_mwh=mwh,
                emissions_t=tons,
                energy_error=None if case.energy_mwh is None else mwh / case.energy_mwh - 1.0,
                emissions_error=tons / case.emissions_t - 1.0,
                implied_factor=case.emissions_t * 1000.0 / device_kwh,
                prediction=p,
            )
        )
    return out


# -- failures and checkpoints ----------------------------------------------------------------


def _one_device(name: str, description: str, parameters: float) -> dict[str, object]:
    return {
        "name": name,
        "description": description,
        "workload": Workload(name=name, parameters=Q_(parameters, "param")),
        **_layout(1, 1),
    }


@dataclass(frozen=True)
class DalyCase:
    """One of Daly's (2006) published optimum intervals and the scenario's."""

    mtbf_s: float
    delta_s: float
    printed_min: float
    daly_min: float
    """The scenario's ``checkpoint_interval`` (Daly's eq. 37, its default)."""
    numeric_min: float
    """The ``checkpoint_interval`` input that minimises the scenario's ``wall_clock_time``."""
    optimum: Prediction
    minimum: Prediction


def _minutes(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"min": 1.0, "h": 60.0}[unit]


DALY_BANDWIDTH = Q_(14.0, "GB/s")
"""The write bandwidth of Daly's cases: with 1e9 parameters per second of write time, the
scenario's 14-byte-per-parameter state takes Daly's delta to write."""


def daly_scenario(
    mtbf_min: float, delta_min: float, restart_min: float, solve_h: float
) -> TrainingScenario:
    """One device failing once per ``mtbf_min`` (M), a state written in ``delta_min``,
    restarts of ``restart_min`` (R), ``solve_h`` hours of failure-free work (T_s)."""
    return TrainingScenario(
        **_one_device("daly-2006", "Daly 2006, FGCS 22(3), Fig. 3", delta_min * 60.0 * 1e9),
        training_time=Q_(solve_h, "hour"),
        failure_rate=(Q_(1.0, "failure/device") / Q_(mtbf_min, "min")).to("failures/device/hour"),
        restart_time=Q_(restart_min, "min"),
        checkpoint_bandwidth=DALY_BANDWIDTH,
    )


def _argmin(f: Callable[[float], float], lo: float, hi: float) -> float:
    """The minimum of a unimodal ``f`` on [lo, hi] (golden-section search)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(200):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if f(a) < f(b):
            hi = b
        else:
            lo = a
    return 0.5 * (lo + hi)


def daly_cases() -> list[DalyCase]:
    """Daly's three published cases (delta = 5 min, R = 10 min, T_s = 500 h; M = 24 h, 6 h, 15 min)."""
    row = next(r for r in _data()["failures"] if r["id"] == "young-daly-checkpoint-interval")
    out = []
    for point in row["daly_test_points"]:
        mtbf, delta = _minutes(point["M"]), _minutes(point["delta"])
        scenario = daly_scenario(mtbf, delta, _minutes(point["R"]), _minutes(point["Ts"]) / 60.0)

        def wall(tau_min: float, s: TrainingScenario = scenario) -> float:
            return figure(s.variant(checkpoint_interval=Q_(tau_min, "min")), "wall_clock_time")

        best = _argmin(wall, 1e-3 * mtbf, 3.0 * mtbf)
        optimum = predict(scenario, "checkpoint_interval", "checkpoint_time", "job_mtbf")
        minimum = predict(
            scenario.variant(checkpoint_interval=Q_(best, "min")),
            "checkpoint_interval",
            "wall_clock_time",
        )
        out.append(
            DalyCase(
                mtbf_s=mtbf * 60.0,
                delta_s=delta * 60.0,
                printed_min=_minutes(point["tau_opt_printed"]),
                daly_min=optimum["checkpoint_interval"],
                numeric_min=minimum["checkpoint_interval"],
                optimum=optimum,
                minimum=minimum,
            )
        )
    return out


LLAMA3_NODES, LLAMA3_GPUS_PER_NODE = 2048, 8
LLAMA3_GPUS = LLAMA3_NODES * LLAMA3_GPUS_PER_NODE
LLAMA3_DAYS = 54.0
LLAMA3_INTERRUPTIONS = 466
LLAMA3_PARAMETERS = 405e9
LLAMA3_STORAGE_BANDWIDTH = Q_(2.0, "TB/s")
"""Tectonic's sustainable throughput, 2 TB/s (Llama 3 paper, section 3.3.1; peak 7 TB/s)."""
LLAMA3_EFFECTIVE = 0.90
"""'higher than 90% effective training time' (Llama 3 paper, section 3.3.4)."""


@dataclass(frozen=True)
class Llama3Snapshot:
    """The Llama 3 405B snapshot through the scenario."""

    job_mtbf_s: float
    checkpoint_bytes: float
    checkpoint_time_s: float
    interval_s: float
    max_restart_s: float
    """The longest mean restart time for which the scenario's goodput stays at 90%."""
    snapshot: Prediction
    at_max_restart: Prediction


def llama3_scenario(restart_min: float = 10.0) -> TrainingScenario:
    """16,384 GPUs in 8-GPU servers, 466 interruptions in 54 days on them (per GPU), a
    405B-parameter state written at the store's sustained 2 TB/s, ``restart_min`` restarts
    (not published), 54 days of failure-free training."""
    scenario = TrainingScenario(
        name="llama3-405b-54day",
        description="Llama 3 paper (arXiv 2407.21783), sections 3.3.1 and 3.3.4",
        workload=Workload(name="Llama 3 405B", parameters=Q_(LLAMA3_PARAMETERS, "param")),
        training_time=Q_(LLAMA3_DAYS * 24.0, "hour"),
        failure_rate=Q_(LLAMA3_INTERRUPTIONS / LLAMA3_DAYS, "interruptions/day"),  # the job's, as published
        failure_rate_devices=LLAMA3_GPUS,
        restart_time=Q_(restart_min, "min"),
        checkpoint_bandwidth=LLAMA3_STORAGE_BANDWIDTH,
        **_layout(LLAMA3_GPUS, LLAMA3_GPUS_PER_NODE),
    )
    return _with_training_time(scenario, LLAMA3_DAYS * 24.0)


def llama3_snapshot() -> Llama3Snapshot:
    """MTBF, checkpoint and interval of the snapshot, and the restart time >90% goodput allows.

    Inputs as published: 466 interruptions in 54 days (planned ones stop the
    job too) on 16,384 GPUs; a 405B-parameter state of 14 bytes per parameter
    written to storage at its sustainable 2 TB/s. The restart time is not
    published: the figure is what the reported ">90%" implies, found by
    bisection on the scenario's ``restart_time``.
    """
    scenario = llama3_scenario()
    snap = predict(
        scenario, "job_mtbf", "checkpoint_size", "checkpoint_time", "checkpoint_interval"
    )
    lo, hi = 0.0, snap["job_mtbf"] * 60.0  # minutes
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        g = figure(scenario.variant(restart_time=Q_(mid, "min")), "goodput")
        lo, hi = (mid, hi) if g > LLAMA3_EFFECTIVE else (lo, mid)
    at = predict(scenario.variant(restart_time=Q_(lo, "min")), "goodput", "wall_clock_time")
    return Llama3Snapshot(
        snap["job_mtbf"] * HOUR,
        snap["checkpoint_size"] * 1e12,
        snap["checkpoint_time"],
        snap["checkpoint_interval"] * 60.0,
        lo * 60.0,
        snap,
        at,
    )


OPT_NODES_PER_DAY_LOST = 2.0
OPT_HOSTS = 128
OPT_GPUS_PER_HOST = 8
OPT_PAPER_NODES, OPT_PAPER_DAYS, OPT_PAPER_RESTARTS = 124, 60.0, 105
OPT_LOG_DAYS, OPT_LOG_RESTARTS = 57.0, 90
OPT_IDEAL_DAYS = 33.0
OPT_PARAMETERS = 175e9
OPT_RESTART_TIME = Q_(1.0, "hour")
"""Not published. The count of interruptions over a stated wall-clock time does not depend on it
(nor on :data:`OPT_CHECKPOINT_BANDWIDTH`): ``N_f = T_w / M``."""
OPT_CHECKPOINT_BANDWIDTH = Q_(2.0, "GB/s")
"""Not published (the chronicles give a 1.6 TB checkpoint in 992 files, not its write time)."""


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
    """(57 - 33) days over the logbook's ~90 restarts (derived from the published figures)."""
    paper: Prediction
    logbook: Prediction


def opt_scenario(
    nodes: int,
    wall_days: float,
    *,
    restart_time: Quantity = OPT_RESTART_TIME,
    checkpoint_bandwidth: Quantity = OPT_CHECKPOINT_BANDWIDTH,
) -> TrainingScenario:
    """OPT-175B on ``nodes`` 8-GPU hosts at the logbook's rate (2 of 128 hosts a day, per GPU),
    with the failure-free time whose wall-clock time is ``wall_days``."""
    scenario = TrainingScenario(
        name=f"opt-175b-{nodes}-hosts",
        description="OPT-175B chronicles and Zhang et al. 2022 (arXiv 2205.01068), section 2.4",
        workload=Workload(name="OPT-175B", parameters=Q_(OPT_PARAMETERS, "param")),
        training_time=Q_(wall_days * 24.0, "hour"),
        failure_rate=Q_(
            OPT_NODES_PER_DAY_LOST / (OPT_HOSTS * OPT_GPUS_PER_HOST * 24.0), "failures/device/hour"
        ),
        restart_time=restart_time,
        checkpoint_bandwidth=checkpoint_bandwidth,
        **_layout(nodes * OPT_GPUS_PER_HOST, OPT_GPUS_PER_HOST),
    )
    # T_w = T_s / goodput, and the goodput does not depend on T_s: T_s = wall x goodput
    return _with_training_time(scenario, wall_days * 24.0 * figure(scenario, "goodput"))


def opt_restarts() -> OptRestarts:
    """Restarts over the paper's ~60 days (124 nodes) and the logbook's ~57 days (128 hosts)."""
    paper = predict(
        opt_scenario(OPT_PAPER_NODES, OPT_PAPER_DAYS), "interruptions", "wall_clock_time"
    )
    log = predict(opt_scenario(OPT_HOSTS, OPT_LOG_DAYS), "interruptions", "wall_clock_time")
    lost_h = (OPT_LOG_DAYS - OPT_IDEAL_DAYS) * 24.0 / OPT_LOG_RESTARTS
    return OptRestarts(
        OPT_NODES_PER_DAY_LOST / (OPT_HOSTS * 24.0),
        paper["interruptions"],
        OPT_PAPER_RESTARTS,
        log["interruptions"],
        OPT_LOG_RESTARTS,
        OPT_IDEAL_DAYS / OPT_LOG_DAYS,
        lost_h,
        paper,
        log,
    )


def predictions() -> dict[str, Prediction]:
    """Every reported prediction by a name, each with the scenario it was read from."""
    out = {f"energy {c.case.id}": c.prediction for c in compare_energy()}
    for d in daly_cases():
        m = f"{d.mtbf_s / HOUR:g} h"
        out[f"daly M = {m}"] = d.optimum
        out[f"daly M = {m}, minimum"] = d.minimum
    snap, opt = llama3_snapshot(), opt_restarts()
    out["llama3-405b snapshot"] = snap.snapshot
    out["llama3-405b at the longest restart"] = snap.at_max_restart
    out["opt-175b paper"] = opt.paper
    out["opt-175b logbook"] = opt.logbook
    return out


# -- the report ------------------------------------------------------------------------------


def report() -> dict[str, object]:
    """Every comparison as plain values (for ``mlsysim validate published --json``), each
    prediction with its ``scenario`` (scenario-file form: ``mlsysim run`` reads it back)."""
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
                "scenario": c.prediction.scenario,
            }
            for c in energy
        ],
        "daly": [
            {
                "mtbf_h": d.mtbf_s / HOUR,
                "printed_min": d.printed_min,
                "model_min": d.daly_min,
                "numeric_min": d.numeric_min,
                "scenario": d.optimum.scenario,
                "scenario_numeric": d.minimum.scenario,
            }
            for d in daly_cases()
        ],  # fmt: skip
        "llama3_405b": {
            "job_mtbf_h": snap.job_mtbf_s / HOUR,
            "checkpoint_tb": snap.checkpoint_bytes / 1e12,
            "checkpoint_time_s": snap.checkpoint_time_s,
            "interval_min": snap.interval_s / 60.0,
            "max_restart_min_for_90pct": snap.max_restart_s / 60.0,
            "scenario": snap.snapshot.scenario,
            "scenario_max_restart": snap.at_max_restart.scenario,
        },
        "opt_175b": {
            "rate_per_node_hour": opt.rate_per_node_hour,
            "predicted_restarts_paper": opt.predicted_paper,
            "reported_restarts_paper": opt.reported_paper,
            "predicted_restarts_logbook": opt.predicted_log,
            "reported_restarts_logbook": opt.reported_log,
            "observed_goodput": opt.observed_goodput,
            "implied_loss_per_restart_h": opt.implied_loss_per_restart_h,
            "scenario_paper": opt.paper.scenario,
            "scenario_logbook": opt.logbook.scenario,
        },
        "not_expressed": list(NOT_EXPRESSED),
    }


def report_lines() -> list[str]:
    """The whole-run comparison as text lines (``mlsysim validate published``)."""
    lines = [
        "",
        "Whole run: energy and emissions (a scenario of the published devices and time: "
        "result.energy, result.emissions)",
    ]
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
    lines.append(
        "Whole run: checkpoint interval (Daly 2006, delta = 5 min, R = 10 min; "
        "result.checkpoint_interval, and the input minimising result.wall_clock_time)"
    )
    for d in daly_cases():
        lines.append(
            f"  M = {d.mtbf_s / HOUR:g} h: printed {d.printed_min:g} min, eq. 37 {d.daly_min:.2f}, "
            f"minimum of the model {d.numeric_min:.2f}"
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
    lines.append(
        "Whole run: every figure above is scenario.result of the inputs under whole_run in "
        "`mlsysim validate published --json`. Not expressed by the scenario:"
    )
    lines.extend(f"  - {text}" for text in NOT_EXPRESSED)
    return lines
