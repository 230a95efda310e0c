"""The whole run, not one step: failures, checkpoints and goodput; energy, emissions and their cost.

:class:`WholeRun` takes the failure-free training time (what the step model
predicts) and the cluster's reliability and power figures, as Quantities, and
returns :class:`WholeRunFigures`: the job's mean time between failures, the
checkpoint size, write time and interval, the expected time lost to
checkpoints, restarts and recomputed work, the goodput, and the run's energy,
emissions and energy cost. The formulas are those of
:mod:`mlsysim.physics.reliability` (Young 1974, Daly 2006) and
:mod:`mlsysim.physics.energy` (Patterson et al. 2021); :meth:`WholeRunFigures.explain`
prints each term with its equation.

>>> from mlsysim import Q_
>>> run = WholeRun(devices=16_384, training_time=Q_(54, "day"),
...                failure_rate=Q_(466 / (16_384 * 54 * 24), "failures/device/hour"),
...                restart_time=Q_(10, "min"), checkpoint_size=Q_(5.67, "TB"),
...                checkpoint_bandwidth=Q_(2, "TB/s"), checkpoint_writers=1)
>>> round(run.figures().job_mtbf.to("hour").magnitude, 2)
2.78
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import nonnegative_canonical, positive_canonical, quantity
from mlsysim.physics import energy as en
from mlsysim.physics import reliability as rel

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity

FAILURE_PARTS = ("device", "node")


def _positive(owner: WholeRun, name: str, kind: str) -> float | None:
    value = getattr(owner, name)
    if value is None:
        return None
    try:
        return positive_canonical(value, kind)
    except InputError as exc:
        raise InputError(exc.message, loc=(name,), owner="WholeRun") from None


def _nonnegative(owner: WholeRun, name: str, kind: str) -> float | None:
    value = getattr(owner, name)
    if value is None:
        return None
    try:
        return nonnegative_canonical(value, kind)
    except InputError as exc:
        raise InputError(exc.message, loc=(name,), owner="WholeRun") from None


def _rate_kind(owner: WholeRun) -> str:
    """``failure_rate``'s unit kind: per device (``failures/device/hour``), or per the part
    ``failure_rate_per`` names (``failures/hour``, a rate of one device or one node)."""
    from mlsysim.core.units import KINDS, Quantity

    value = owner.failure_rate
    per_device = isinstance(value, Quantity) and (
        value.dimensionality == KINDS["failure_rate"][0].dimensionality
    )
    if per_device and owner.failure_rate_per != "device":
        raise InputError(
            f"failure_rate ({value:~P}) is per device, but failure_rate_per is "
            f"{owner.failure_rate_per!r}: give failures/hour per {owner.failure_rate_per}",
            loc=("failure_rate",),
            owner="WholeRun",
        )
    return "failure_rate" if per_device else "event_rate"


def _count(owner: WholeRun, name: str, *, low: int = 1) -> int:
    value = getattr(owner, name)
    if type(value) is not int or not low <= value <= 10**15:
        raise InputError(
            f"expected a whole number from {low} to 1e15, got {value!r}",
            loc=(name,),
            owner="WholeRun",
        )
    return value


def _fraction(owner: WholeRun, name: str, low: float, high: float) -> float:
    value = getattr(owner, name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InputError(
            f"expected a number from {low:g} to {high:g}, got {value!r}",
            loc=(name,),
            owner="WholeRun",
        )
    return float(value)


@dataclass(frozen=True, kw_only=True)
class WholeRun:
    """Inputs of a whole training run (Quantities; ``None`` leaves a part of the model out).

    Reliability (all or none of ``failure_rate``, ``restart_time`` and a checkpoint):

    * ``failure_rate`` per device (``failures/device/hour``), or per ``failure_rate_per``
      (``"device"`` or ``"node"``) and hour when written without it (``failures/hour``),
      e.g. ``Q_(1.97e-5, "failures/hour")`` per device (Llama 3 405B, registry
      ``Infrastructure.Reliability``);
    * ``restart_time``: from a failure to training again (detect, reschedule, load);
    * ``checkpoint_size`` (data), or ``parameters`` (a count) times
      ``checkpoint_bytes_per_parameter`` (14: 16-bit weights + fp32 Adam state);
    * ``checkpoint_bandwidth`` per writing node, ``checkpoint_writers`` nodes
      (default: every node, a sharded checkpoint), ``storage_bandwidth`` the
      shared store's limit (default: none);
    * ``checkpoint_interval`` (compute time between checkpoints; default:
      Daly's optimum, :func:`mlsysim.physics.reliability.daly_interval`).

    Energy (with ``device_power``): ``comm_power`` and ``idle_power`` (default:
    ``device_power``, the convention of the published estimates),
    ``compute_share``/``comm_share``/``idle_share`` of the failure-free
    training time (default 1/0/0), ``node_power`` (host overhead per node),
    ``switches`` x ``switch_power``, ``pue``, ``carbon_intensity``,
    ``energy_price``, and optionally ``embodied_per_node`` (kg CO2e of making
    one node) amortised over ``hardware_lifetime``.
    """

    devices: int
    devices_per_node: int = 8
    training_time: Quantity
    failure_rate: Quantity | None = None
    failure_rate_per: str = "device"
    restart_time: Quantity | None = None
    checkpoint_size: Quantity | None = None
    parameters: Quantity | None = None
    checkpoint_bytes_per_parameter: float = rel.CHECKPOINT_BYTES_PER_PARAMETER
    checkpoint_bandwidth: Quantity | None = None
    checkpoint_writers: int | None = None
    storage_bandwidth: Quantity | None = None
    checkpoint_interval: Quantity | None = None
    device_power: Quantity | None = None
    comm_power: Quantity | None = None
    idle_power: Quantity | None = None
    compute_share: float = 1.0
    comm_share: float = 0.0
    idle_share: float = 0.0
    node_power: Quantity | None = None
    switches: int = 0
    switch_power: Quantity | None = None
    pue: float = 1.0
    carbon_intensity: Quantity | None = None
    energy_price: Quantity | None = None
    embodied_per_node: Quantity | None = None
    hardware_lifetime: Quantity | None = None

    def __post_init__(self) -> None:
        self._check()

    @property
    def nodes(self) -> int:
        """Nodes of the run: devices / devices per node, rounded up."""
        return -(-self.devices // self.devices_per_node)

    def _check(self) -> _Checked:
        devices = _count(self, "devices")
        per_node = _count(self, "devices_per_node")
        nodes = -(-devices // per_node)
        solve = _positive(self, "training_time", "time")
        if solve is None:
            raise InputError(
                "required: the failure-free training time", loc=("training_time",), owner="WholeRun"
            )
        rate = _positive(self, "failure_rate", _rate_kind(self))
        if self.failure_rate_per not in FAILURE_PARTS:
            raise InputError(
                f"expected one of {', '.join(FAILURE_PARTS)}, got {self.failure_rate_per!r}",
                loc=("failure_rate_per",),
                owner="WholeRun",
            )
        restart = _nonnegative(self, "restart_time", "time")
        size = _positive(self, "checkpoint_size", "data")
        params = _positive(self, "parameters", "count")
        per_param = _fraction(self, "checkpoint_bytes_per_parameter", 0.0, 1e3)
        if size is None and params is not None:
            size = float(rel.checkpoint_size(params, per_param))
        bandwidth = _positive(self, "checkpoint_bandwidth", "bandwidth")
        storage = _positive(self, "storage_bandwidth", "bandwidth")
        writers = nodes if self.checkpoint_writers is None else _count(self, "checkpoint_writers")
        interval = _positive(self, "checkpoint_interval", "time")
        if rate is not None:
            for name, value in (
                ("restart_time", restart),
                ("checkpoint_size", size),
                ("checkpoint_bandwidth", bandwidth if bandwidth is not None else storage),
            ):
                if value is None:
                    hint = " (or parameters)" if name == "checkpoint_size" else ""
                    hint += " (or storage_bandwidth)" if name == "checkpoint_bandwidth" else ""
                    raise InputError(
                        f"required with failure_rate{hint}: the model needs it to price a failure",
                        loc=(name,),
                        owner="WholeRun",
                    )
        power = _positive(self, "device_power", "power")
        comm = _positive(self, "comm_power", "power")
        idle = _nonnegative(self, "idle_power", "power")
        shares = [
            _fraction(self, n, 0.0, 1.0) for n in ("compute_share", "comm_share", "idle_share")
        ]
        if not math.isclose(sum(shares), 1.0, rel_tol=1e-9):
            raise InputError(
                f"compute_share + comm_share + idle_share must be 1, got {sum(shares):g}",
                loc=("compute_share",),
                owner="WholeRun",
            )
        node_power = _nonnegative(self, "node_power", "power") or 0.0
        switches = _count(self, "switches", low=0)
        switch_power = _nonnegative(self, "switch_power", "power") or 0.0
        pue = _fraction(self, "pue", 1.0, 10.0)
        intensity = _nonnegative(self, "carbon_intensity", "carbon_intensity")
        price = _nonnegative(self, "energy_price", "energy_price")
        embodied = _nonnegative(self, "embodied_per_node", "mass")
        lifetime = _positive(self, "hardware_lifetime", "time")
        if (embodied is None) != (lifetime is None):
            raise InputError(
                "embodied_per_node and hardware_lifetime go together: give both or neither",
                loc=("hardware_lifetime" if lifetime is None else "embodied_per_node",),
                owner="WholeRun",
            )
        part_rate = None
        if rate is not None:
            part_rate = rate / per_node if self.failure_rate_per == "node" else rate
        return _Checked(
            devices, nodes, solve, part_rate, restart, size, bandwidth, storage, writers,
            interval, power, comm, idle, shares, node_power, switches, switch_power, pue,
            intensity, price, embodied, lifetime,
        )  # fmt: skip

    def figures(self) -> WholeRunFigures:
        """The run's figures (:class:`WholeRunFigures`)."""
        c = self._check()
        solve = c.solve
        if c.rate is None or c.size is None or c.restart is None:
            mtbf = delta = interval = None
            ckpt = rework = restarts = failures = 0.0
            wall = solve
        else:
            # the rate is per device-second (a node's rate was divided by its devices);
            # the same composition as the scenario's (mlsysim.engine.model.equations)
            t = rel.run_terms(
                solve, c.rate, c.devices, c.size,
                c.bandwidth if c.bandwidth is not None else math.inf, c.writers, c.restart,
                c.interval if c.interval is not None else math.nan,
                c.storage if c.storage is not None else math.inf,
            )  # fmt: skip
            mtbf, delta, interval = float(t.mtbf), float(t.checkpoint_time), float(t.interval)
            ckpt, rework, restarts, failures = (
                float(v) for v in (t.checkpoints, t.rework, t.restarts, t.failures)
            )
            wall = float(t.wall_time)
            if not math.isfinite(wall):
                raise InputError(
                    f"the job fails every {mtbf:.3g} s on average, too often to finish: the "
                    f"checkpoint interval ({interval:.3g} s), write ({delta:.3g} s) and restart "
                    f"({c.restart:.3g} s) are hundreds of times longer; lower the failure rate or "
                    "the restart and checkpoint times",
                    loc=("failure_rate",),
                    owner="WholeRun",
                )
        energy = emitted = cost = embodied = it_avg = None
        if c.power is not None:
            comm = c.comm if c.comm is not None else c.power
            idle = c.idle if c.idle is not None else c.power
            f_compute, f_comm, f_idle = c.shares
            update_power = float(
                en.average_device_power(c.power, comm, idle, f_compute, f_comm, f_idle)
            )
            other = float(en.it_power(0, 0.0, c.nodes, c.node_power, c.switches, c.switch_power))
            joules = float(
                en.run_energy(
                    c.devices, solve, rework, ckpt + restarts, update_power, idle, c.pue, other, wall
                )
            )
            energy = joules
            it_avg = joules / c.pue / wall
            if c.intensity is not None:
                emitted = float(en.emissions(joules, c.intensity))
            if c.price is not None:
                cost = float(en.energy_cost(joules, c.price))
            if c.embodied is not None and c.lifetime is not None:
                embodied = float(en.embodied_share(c.embodied * c.nodes, wall, c.lifetime))
        q = quantity
        return WholeRunFigures(
            job_mtbf=None if mtbf is None else q(mtbf / 3600.0, "hour"),
            checkpoint_size=None if c.size is None else q(c.size / 1e12, "TB"),
            checkpoint_time=None if delta is None else q(float(delta), "s"),
            checkpoint_interval=None if interval is None else q(interval / 60.0, "min"),
            checkpoint_overhead=q(ckpt / 3600.0, "hour"),
            rework=q(rework / 3600.0, "hour"),
            restart_overhead=q(restarts / 3600.0, "hour"),
            interruptions=float(failures),
            training_time=q(solve / 3600.0, "hour"),
            wall_time=q(wall / 3600.0, "hour"),
            goodput=float(rel.goodput(solve, wall)),
            average_it_power=None if it_avg is None else q(it_avg / 1e6, "MW"),
            energy=None if energy is None else q(energy / en.JOULES_PER_KWH / 1000.0, "MWh"),
            emissions=None if emitted is None else q(emitted / 1000.0, "t"),
            energy_cost=None if cost is None else q(cost, "USD"),
            embodied_emissions=None if embodied is None else q(embodied / 1000.0, "t"),
            interval_given=c.interval is not None,
        )


@dataclass(frozen=True)
class _Checked:
    """The inputs in SI floats, checked once."""

    devices: int
    nodes: int
    solve: float
    rate: float | None
    restart: float | None
    size: float | None
    bandwidth: float | None
    storage: float | None
    writers: int
    interval: float | None
    power: float | None
    comm: float | None
    idle: float | None
    shares: list[float]
    node_power: float
    switches: int
    switch_power: float
    pue: float
    intensity: float | None
    price: float | None
    embodied: float | None
    lifetime: float | None


@dataclass(frozen=True)
class WholeRunFigures:
    """The figures of a whole run; physical ones are Quantities, ``None`` where not modelled.

    ``goodput`` = training_time / wall_time (a fraction); the cost of the run at
    a price per time grows by ``1 / goodput``. ``interruptions`` is the
    expected number of failures.
    """

    job_mtbf: Quantity | None
    checkpoint_size: Quantity | None
    checkpoint_time: Quantity | None
    checkpoint_interval: Quantity | None
    checkpoint_overhead: Quantity
    rework: Quantity
    restart_overhead: Quantity
    interruptions: float
    training_time: Quantity
    wall_time: Quantity
    goodput: float
    average_it_power: Quantity | None
    energy: Quantity | None
    emissions: Quantity | None
    energy_cost: Quantity | None
    embodied_emissions: Quantity | None
    interval_given: bool = False
    """Whether ``checkpoint_interval`` was an input (else Daly's optimum)."""

    @property
    def inflation(self) -> float:
        """``1 / goodput``: how much failures stretch the training time and its cost per time."""
        return 1.0 / self.goodput if self.goodput > 0.0 else math.inf

    def explain(self) -> str:
        """Each figure beside its equation (from the physics modules), one per line."""
        r, e = rel.EQUATIONS, en.EQUATIONS
        rows = [
            ("job_mtbf", self.job_mtbf, r["job_mtbf"]),
            ("checkpoint_size", self.checkpoint_size, r["checkpoint_size"]),
            ("checkpoint_time", self.checkpoint_time, r["checkpoint_time"]),
            (
                "checkpoint_interval",
                self.checkpoint_interval,
                "given" if self.interval_given else r["daly_interval"],
            ),
            ("checkpoint_overhead", self.checkpoint_overhead, r["checkpoint_overhead"]),
            ("rework", self.rework, r["rework"]),
            ("restart_overhead", self.restart_overhead, r["restart_overhead"]),
            ("interruptions", self.interruptions, r["interruptions"]),
            ("wall_time", self.wall_time, r["wall_time"]),
            ("goodput", self.goodput, r["goodput"]),
            ("energy", self.energy, e["run_energy"]),
            ("emissions", self.emissions, e["emissions"]),
            ("energy_cost", self.energy_cost, e["energy_cost"]),
            ("embodied_emissions", self.embodied_emissions, e["embodied_share"]),
        ]
        lines = []
        for name, value, equation in rows:
            if value is None or isinstance(value, bool):
                continue
            shown = (
                f"{value:.4g}"
                if isinstance(value, float)
                else f"{value.magnitude:.4g} {value.units:~P}"
            )
            lines.append(f"{name:20} {shown:>14}   {equation}")
        return "\n".join(lines)


WHOLE_RUN_FIELDS = tuple(f.name for f in fields(WholeRunFigures) if f.name != "interval_given")
"""The result fields a whole run adds (names scripts can rely on)."""
