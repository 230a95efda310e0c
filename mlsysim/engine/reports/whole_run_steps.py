"""The whole run in ``explain()`` and the notes: failures, checkpoints, goodput, energy, emissions.

Each step is ``(what, equation in symbols, equation with numbers, value)``, the
shape of the rows of :mod:`mlsysim.engine.reports.explain`. The symbolic equations are
those of :mod:`mlsysim.physics.reliability` and :mod:`mlsysim.physics.energy`
(docs/whole_run.md); the values are the figures
:func:`mlsysim.engine.model.equations.evaluate` computed, never re-derived here;
``tests/engine/test_explain.py`` recomputes every printed right-hand side from
its printed operands. Steps appear only for the parts of the model in use: the
failure steps where failures are priced, the energy steps where a device power
is known.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mlsysim.core.formatting import fmt_bytes, fmt_num, fmt_rate, fmt_time
from mlsysim.physics import energy, reliability

if TYPE_CHECKING:
    from mlsysim.engine.reports.view import ResultView
    from mlsysim.physics._array import Num

Step = tuple[str, str, str, str]

SECONDS_PER_HOUR = 3600.0
JOULES_PER_MWH = 3.6e9


def _s(seconds: Num) -> str:
    """Seconds with ten significant digits: operands of formulas that subtract close numbers."""
    return f"{float(seconds):.10g} s"


def _h(seconds: Num) -> str:
    return f"{float(seconds) / SECONDS_PER_HOUR:.6g} h"


def failure_rate_in_effect(r: ResultView) -> tuple[float, str]:
    """(failures per device-second, where it comes from): the scenario's, else the assumptions'."""
    given = float(r.model_inputs.failure_rate)
    observed = float(r.model_inputs.failure_rate_devices)
    if given == given and observed == observed:
        return given / observed, "a whole job's failure_rate / failure_rate_devices"
    if given == given:
        return given, "failure_rate"
    return r.choices.failure_rate, "the assumptions' failure_rate"


def _given(value: object) -> float:
    """A layout input as a float, 1 where it is not given (NaN)."""
    number = float(value)  # type: ignore[arg-type]
    return number if number == number else 1.0


def whole_run_steps(r: ResultView) -> list[Step]:
    """The steps of the whole run of ``r`` (none when neither failures nor energy are modeled)."""
    f, x = r.figures, r.model_inputs
    steps: list[Step] = []
    add = steps.append
    n, t_s = float(f.n_devices), float(f.training_time)
    on = f.goodput == f.goodput
    if on:
        rate, origin = failure_rate_in_effect(r)
        m, delta, tau = float(f.job_mtbf), float(f.checkpoint_time), float(f.checkpoint_interval)
        restart = float(x.restart_time)
        observed = float(x.failure_rate_devices)
        if observed == observed:  # a whole job's rate, made one per device
            job = float(x.failure_rate)
            add((
                "failure rate per device",
                "lambda = lambda_job / n_obs  (a job's rate over the devices it was observed on)",
                f"{job * 86400.0:.6g} per day / {observed:g} devices",
                f"{rate * SECONDS_PER_HOUR:.6g} per device-hour",
            ))
        add((
            "job MTBF",
            f"{reliability.EQUATIONS['job_mtbf']}; lambda = {rate * SECONDS_PER_HOUR:.6g} "
            f"per device-hour ({origin})",
            f"1 / ({rate:.10g} x {n:g})",
            _h(m),
        ))
        tp = _given(x.tensor_parallel) * _given(x.pipeline_parallel)
        writers = float(
            reliability.checkpoint_writers(
                float(x.nodes), float(x.devices_per_node), tp, bool(r.choices.zero_stage)
            )
        )
        add((
            "checkpoint size",
            reliability.EQUATIONS["checkpoint_size"],
            f"{reliability.CHECKPOINT_BYTES_PER_PARAMETER:g} x {float(x.parameters):.10g} B",
            fmt_bytes(f.checkpoint_size),
        ))
        if r.choices.zero_stage:
            who = "every node writes its shard (ZeRO)"
        elif writers > 1:
            who = f"the nodes of one replica of t x p = {tp:g} devices, each its shards"
        else:
            who = "one replica writes it"
        add((
            "checkpoint write",
            f"delta = S / (w B_ckpt)  (w = {writers:g}: {who}; "
            f"{reliability.EQUATIONS['checkpoint_writers']})",
            f"{fmt_bytes(f.checkpoint_size)} / ({writers:g} x {fmt_rate(x.checkpoint_bandwidth)})",
            fmt_time(delta),
        ))
        given = float(x.checkpoint_interval)
        if given == given:
            add(("checkpoint interval", "tau = checkpoint_interval (given)", "", fmt_time(tau)))
        elif delta < 2.0 * m:
            half = f"{_s(delta)} / (2 x {_s(m)})"
            add((
                "checkpoint interval",
                reliability.EQUATIONS["daly_interval"],
                f"sqrt(2 x {_s(delta)} x {_s(m)}) x (1 + sqrt({half}) / 3 + {half} / 9) - {_s(delta)}",
                fmt_time(tau),
            ))
        else:
            add(("checkpoint interval", "tau = M  (delta >= 2M: Daly 2006)", "", fmt_time(tau)))
        segment = f"(exp(({_s(tau)} + {_s(delta)}) / {_s(m)}) - 1)"
        runs = f"({_s(t_s)} / {_s(tau)})"
        add((
            "wall-clock time",
            reliability.EQUATIONS["wall_time"],
            f"{_s(m)} x exp({_s(restart)} / {_s(m)}) x {segment} x {_s(t_s)} / {_s(tau)}",
            _h(f.wall_clock_time),
        ))
        add((
            "writing checkpoints",
            reliability.EQUATIONS["checkpoint_overhead"],
            f"{runs} x {_s(delta)}",
            _h(f.checkpoint_overhead),
        ))
        add((
            "redoing lost work",
            reliability.EQUATIONS["rework"],
            f"{runs} x ({_s(m)} x {segment} - ({_s(tau)} + {_s(delta)}))",
            _h(f.rework_time),
        ))
        add((
            "restarting",
            reliability.EQUATIONS["restart_overhead"],
            f"{runs} x {_s(m)} x {segment} x (exp({_s(restart)} / {_s(m)}) - 1)",
            _h(f.restart_overhead),
        ))
        add((
            "interruptions",
            reliability.EQUATIONS["interruptions"],
            f"{_s(f.wall_clock_time)} / {_s(m)}",
            fmt_num(f.interruptions),
        ))
        add((
            "goodput",
            reliability.EQUATIONS["goodput"],
            f"{_s(t_s)} / {_s(f.wall_clock_time)}",
            fmt_num(f.goodput),
        ))
    if f.energy == f.energy:
        power, pue = float(x.device_power), float(x.pue)
        idle_given = float(x.idle_power) == float(x.idle_power)
        idle = float(x.idle_power) if idle_given else power
        update = float(f.update_power)
        if idle_given:
            exposed, sync = float(f.exposed_communication_time), float(f.synchronization_time)
            bubble = float(f.bubble_time)
            sync += bubble if bubble == bubble else 0.0  # the pipeline's bubble is idle too
            busy = float(f.update_time) - exposed - sync
            add((
                "power over an update",
                energy.EQUATIONS["average_device_power"]
                + "  (P_compute = device_power, P_comm = P_idle = idle_power; "
                "t_idle = synchronization + pipeline bubble)",
                f"({power:.10g} W x {_s(busy)} + {idle:.10g} W x {_s(exposed)} + "
                f"{idle:.10g} W x {_s(sync)}) / ({_s(busy)} + {_s(exposed)} + {_s(sync)})",
                f"{update:.10g} W",
            ))
        if on:
            numbers = (
                f"{pue:g} x {n:g} x (({_s(t_s)} + {_s(f.rework_time)}) x {update:.10g} W + "
                f"({_s(f.checkpoint_overhead)} + {_s(f.restart_overhead)}) x {idle:.10g} W)"
            )
            equation = (
                "E = PUE n ((T_s + T_rework) P_update + (T_ckpt + T_restart) P_idle)"
            )
        else:
            numbers = f"{pue:g} x {n:g} x {_s(t_s)} x {update:.10g} W"
            equation = "E = PUE n T_s P_update  (every device for training_time T_s)"
        if not idle_given:
            equation += (
                "  (every state at device_power: the published convention, "
                "Patterson et al. 2021; no idle_power given)"
            )
        add(("energy", equation, numbers, f"{f.energy / JOULES_PER_MWH:.6g} MWh"))
        e_mwh = f"{f.energy / JOULES_PER_MWH:.10g} MWh"
        if f.emissions == f.emissions:
            add((
                "emissions",
                energy.EQUATIONS["emissions"],
                f"{e_mwh} x {float(x.carbon_intensity) * 3.6e9:.10g} g/kWh",
                f"{f.emissions / 1000.0:.6g} t",
            ))
        if f.energy_cost == f.energy_cost:
            add((
                "energy cost",
                energy.EQUATIONS["energy_cost"],
                f"{e_mwh} x {float(x.energy_price) * 3.6e6:.10g} USD/kWh",
                f"{f.energy_cost:.6g} USD",
            ))
    if f.total_cost == f.total_cost:
        wall = float(f.wall_clock_time) if on else t_s
        parts_sym, parts_num = [], []
        rate_h = float(x.node_hour_rate)  # canonical: USD per hour
        if rate_h == rate_h:
            parts_sym.append(f"{'T_w' if on else 'T_s'} N node_hour_rate")
            parts_num.append(f"{_h(wall)} x {float(x.nodes):g} x {rate_h:.10g} USD/h")
        if f.energy_cost == f.energy_cost:
            parts_sym.append("energy_cost")
            parts_num.append(f"{float(f.energy_cost):.10g} USD")
        add((
            "cost of the whole run",
            "total_cost = " + " + ".join(parts_sym),
            " + ".join(parts_num),
            f"{f.total_cost:.6g} USD",
        ))
    return steps


def whole_run_headline(r: ResultView) -> str:
    """The whole run on the first line, where modeled: ``; goodput 92.0%, wall-clock 58.7 days,
    17,780 MWh, 6,845 t CO2e`` (empty when neither failures nor energy are modeled)."""
    f = r.figures
    parts = []
    if f.goodput == f.goodput:
        hours = float(f.wall_clock_time) / SECONDS_PER_HOUR
        wall = f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.2f} h"
        parts.append(f"goodput {f.goodput:.1%}, wall-clock {wall}")
    if f.energy == f.energy:
        parts.append(f"{f.energy / JOULES_PER_MWH:,.4g} MWh")
    if f.emissions == f.emissions:
        parts.append(f"{f.emissions / 1000.0:,.4g} t CO2e")
    return "; " + ", ".join(parts) if parts else ""


def whole_run_notes(r: ResultView) -> list[str]:
    """Notes on the whole run: the failures priced (or why not), and what the energy assumes."""
    f, x = r.figures, r.model_inputs
    notes = []
    rate, origin = failure_rate_in_effect(r)
    if f.goodput == f.goodput:
        notes.append(
            f"failures ({origin}, {rate * SECONDS_PER_HOUR:.3g} per device-hour): one every "
            f"{f.job_mtbf / SECONDS_PER_HOUR:.3g} h on {r.n_devices} devices; a checkpoint "
            f"every {f.checkpoint_interval / 60:.3g} min ({f.checkpoint_time:.3g} s to write); "
            f"goodput {f.goodput:.1%}"
        )
        if not math.isfinite(f.wall_clock_time):
            notes.append("the job fails too often to finish: goodput 0")
    elif rate > 0:
        missing = [
            name
            for name in ("checkpoint_bandwidth", "restart_time")
            if float(getattr(x, name)) != float(getattr(x, name))
        ]
        notes.append(
            f"failures not priced: {origin} ({rate * SECONDS_PER_HOUR:.3g} per device-hour) "
            f"needs {' and '.join(missing)}"
        )
    if f.energy == f.energy:
        origin_p = r.job.origins.get("device_power") if r.job is not None else None
        idle = float(x.idle_power)
        waits = (
            f", {idle:.4g} W while waiting ({float(f.update_power):.4g} W over an update)"
            if idle == idle
            else " in every state (no idle_power)"
        )
        notes.append(
            f"energy: {float(x.device_power):.4g} W per device"
            + (f" ({origin_p})" if origin_p else "")
            + f"{waits}, PUE {float(x.pue):.3g}; host and network power not counted"
        )
    return notes
