"""The result of a data-parallel scale-out solve: an immutable, typed value.

Each result field is declared once in the body of
:class:`DataParallelScaleOutResult`, with the unit it is reported in. The
figures are held as a :class:`~mlsysim.engine.model.equations.Figures` of floats in
canonical SI units and turned into Quantities when read (and cached), so a
solve costs no more pint work than the fields a caller actually reads. The
sweep's columns use the same declarations (:func:`result_fields`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Generic, TypeVar, cast, overload

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity, quantity, ureg
from mlsysim.engine.inputs.fields import MODEL_FIELDS
from mlsysim.engine.model.equations import BOTTLENECKS, Figures
from mlsysim.physics.collectives import ALGORITHMS

if TYPE_CHECKING:
    from mlsysim.engine.inputs.derivation import Job


if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue
    from mlsysim.engine.inputs.fields import Value
    from mlsysim.engine.model.equations import Choices, Inputs

T = TypeVar("T")

_object_setattr = object.__setattr__

_CANONICAL = {
    "byte": "byte",
    "millisecond": "second",
    "hour": "second",
    "USD": "USD",
    "second": "second",
    "minute": "second",
    "megawatt_hour": "joule",
    "metric_ton": "kilogram",
}


class ResultField(Generic[T]):
    """One declared result field: the one place that says what it is and how it is shown.

    ``unit`` is the unit a physical figure is reported in (``"millisecond"``),
    or None for a plain number; ``factor`` converts the canonical SI value into
    it (taken from the unit registry, not typed by hand). ``seed``: part of the
    seed contract; ``doc``: what it means.

    How it is shown (read by the run table, the sweep and plan tables, CSV and
    Parquet headers, the JSON schema and the page): ``label`` on the run table
    (``{n}`` and ``{nodes}`` are filled in), ``row`` its place there (None: not
    a row), ``opt_in`` shown only when the opt-in model is on, ``header`` the
    short column title of a sweep table, ``display`` how a value is written
    (``"fixed"``, ``"percent"``, ``"times"``, ``"ratio"``, ``"yes_no"``,
    ``"money"``, ``"count"``, ``"text"``), ``interval`` its place among the
    fields with a prediction interval (None: it has none), ``layout_label`` its
    run-table label when the result is a parallel layout (default: ``label``).
    """

    kind = "float"
    display = "ratio"
    nullable = False
    """Whether the field reads None where its figure is not known or not modeled."""

    def __init__(
        self,
        unit_name: str | None = None,
        *,
        seed: bool = False,
        doc: str = "",
        label: str = "",
        layout_label: str | None = None,
        row: int | None = None,
        opt_in: bool = False,
        header: str | None = None,
        display: str | None = None,
        interval: int | None = None,
    ) -> None:
        self.unit = unit_name
        self.seed = seed
        self.__doc__ = doc
        self.doc = doc
        self.label = label
        self.layout_label = layout_label or label
        """The run-table label when the result is a parallel layout (the figure then sums
        every stage, or is the first stage's)."""
        self.row = row
        self.opt_in = opt_in
        self._header = header
        if display is not None:
            self.display = display
        self.interval = interval
        self.name = ""
        self._factor: float | None = None

    @property
    def header(self) -> str:
        """The short title of a sweep table's column (the field's name unless declared)."""
        return self._header or self.name

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        declared = owner.__dict__.get("_declared")
        if declared is not None:
            declared.append(name)

    @property
    def factor(self) -> float:
        """Canonical SI value x factor = the value in ``unit``."""
        if self._factor is None:
            if self.unit is None or self.unit == "USD":
                self._factor = 1.0
            else:
                canonical = _CANONICAL[self.unit]
                self._factor = float(ureg.Quantity(1.0, canonical).to(self.unit).magnitude)
        return self._factor

    @overload
    def __get__(self, obj: None, owner: type) -> ResultField[T]: ...

    @overload
    def __get__(self, obj: DataParallelScaleOutResult, owner: type) -> T: ...

    def __get__(self, obj: DataParallelScaleOutResult | None, owner: type) -> T | ResultField[T]:
        if obj is None:
            return self
        return self.read(obj)

    def read(self, result: DataParallelScaleOutResult) -> T:
        return cast(T, float(getattr(result.figures, self.name)))


class QuantityField(ResultField[Quantity]):
    kind = "quantity"
    display = "fixed"

    def read(self, result: DataParallelScaleOutResult) -> Quantity:
        cache = result._cache
        q = cache.get(self.name)
        if q is None:
            raw = getattr(result.figures, self.name)
            q = cache[self.name] = quantity(raw * self.factor, self.unit or "")
        return cast(Quantity, q)


class OptionalQuantityField(ResultField["Quantity | None"]):
    kind = "quantity"
    display = "fixed"
    nullable = True

    def read(self, result: DataParallelScaleOutResult) -> Quantity | None:
        raw = getattr(result.figures, self.name)
        if raw != raw:
            return None
        return quantity(raw * self.factor, self.unit or "")


class OptionalFloatField(ResultField["float | None"]):
    """A plain number of an opt-in model, or None where it is not modeled (NaN)."""

    nullable = True

    def read(self, result: DataParallelScaleOutResult) -> float | None:
        raw = float(getattr(result.figures, self.name))
        return None if math.isnan(raw) else raw
class OptionalCountField(ResultField["int | None"]):
    """A count of a parallel layout (t, p, d): None on the data-parallel model (NaN)."""

    kind = "float"
    display = "count"
    nullable = True

    def read(self, result: DataParallelScaleOutResult) -> int | None:
        raw = float(getattr(result.figures, self.name))
        return None if raw != raw else int(raw)


class IntField(ResultField[int]):
    kind = "int"
    display = "count"

    def read(self, result: DataParallelScaleOutResult) -> int:
        return int(getattr(result.figures, self.name))


class MoneyField(ResultField["float | None"]):
    """The seed's ``cost``: a float in US dollars, or None without a node price."""

    kind = "money"
    display = "money"

    def read(self, result: DataParallelScaleOutResult) -> float | None:
        raw = float(getattr(result.figures, self.name))
        return None if math.isnan(raw) else raw


class LabelField(ResultField[str]):
    """A code of the model shown as its label (``"inter-node link"``)."""

    kind = "label"
    display = "text"

    def __init__(
        self,
        read: Callable[[DataParallelScaleOutResult], str],
        labels: tuple[str, ...],
        *,
        doc: str,
        label: str,
        row: int,
        opt_in: bool = False,
    ) -> None:
        super().__init__(doc=doc, label=label, row=row, opt_in=opt_in)
        self._read = read
        self.labels = labels
        """Every label it can take: a sweep stores the code (index) of each."""

    def read(self, result: DataParallelScaleOutResult) -> str:
        return self._read(result)


class FitsField(ResultField["bool | None"]):
    kind = "bool"
    display = "yes_no"

    def read(self, result: DataParallelScaleOutResult) -> bool | None:
        if result.figures.device_memory != result.figures.device_memory:
            return None  # unknown device memory: no verdict
        return bool(result.figures.fits)


class ValidField(ResultField[bool]):
    kind = "bool"
    display = "yes_no"

    def read(self, result: DataParallelScaleOutResult) -> bool:
        return bool(result.figures.layout_valid)


class TraceField(ResultField["tuple[str, ...]"]):
    kind = "notes"
    display = "text"

    def read(self, result: DataParallelScaleOutResult) -> tuple[str, ...]:
        trace = result._cache.get("constraint_trace")
        if trace is None:
            trace = result._cache["constraint_trace"] = tuple(result._trace())
        return cast("tuple[str, ...]", trace)


def _inter_algorithm(r: DataParallelScaleOutResult) -> str:
    return ALGORITHMS[int(r.figures.inter_algorithm)] if cast(int, r._values["nodes"]) > 1 else "none"


class DataParallelScaleOutResult:
    """Figures of one data-parallel layout.

    Physical fields are Quantities (bytes in ``byte``, times in ``millisecond``,
    ``training_time`` in ``hour``); ratios are floats; ``cost`` is a float in
    US dollars, or None when no node price was given. The opt-in model adds
    exposed/hidden communication, synchronisation, the algorithm per level,
    the bottleneck, memory per device and a ``constraint_trace`` of notes.

    ``inputs`` holds the checked inputs that produced it, ``figures`` the
    canonical figures (for :meth:`explain` and the sweep).
    """

    __slots__ = ("figures", "_values", "_inputs", "choices", "model_inputs", "job", "_cache", "_trace_of")

    job: Job
    """The :class:`mlsysim.engine.inputs.derivation.Job` of the scenario: which inputs were derived, and from what."""

    _declared: list[str] = []
    figures: Figures
    _values: Mapping[str, Value]
    _inputs: Mapping[str, Value] | None
    choices: Choices
    model_inputs: Inputs
    _cache: dict[str, object]
    _trace_of: Callable[[DataParallelScaleOutResult], tuple[str, ...]]

    # the seed's result fields, in the order of the seed contract
    n_devices = IntField(
        seed=True, doc="n = devices_per_node x nodes", label="devices, n = d x N", row=0,
        header="devices",
    )
    gradient_bytes = QuantityField(
        "byte", seed=True, doc="G: bytes of one gradient", label="gradient bytes (G)", row=19
    )
    intra_bytes = QuantityField(
        "byte", seed=True, doc="bytes each device sends inside its node",
        label="bytes sent per device inside a node", row=20,
        layout_label="bytes sent per device inside a node (all stages)",
    )
    inter_bytes = QuantityField(
        "byte", seed=True, doc="bytes each device sends across nodes",
        label="bytes sent per device across nodes", row=21,
        layout_label="bytes sent per device across nodes (all stages)",
    )
    intra_time = QuantityField(
        "millisecond", seed=True, doc="AllReduce time inside a node", label="  inside each node", row=4,
        layout_label="  exposed inside a node",
    )
    inter_time = QuantityField(
        "millisecond", seed=True, doc="AllReduce time across nodes", label="  across nodes", row=5,
        layout_label="  exposed across nodes",
    )
    communication_time = QuantityField(
        "millisecond", seed=True, doc="intra_time + inter_time",
        label="gradient AllReduce per update", row=3, header="comm.",
        layout_label="communication per update (every stage)",
    )
    compute_time = QuantityField(
        "millisecond", seed=True, doc="A x T1 per update", label="compute per update (A x T1)", row=2,
        layout_label="compute per update (m t_c)",
    )
    update_time = QuantityField(
        "millisecond", seed=True, doc="time of one optimizer update", label="update time", row=1,
        header="update", interval=3,
    )
    communication_overhead = ResultField[float](
        seed=True, doc="communication / compute", label="communication / compute", row=15
    )
    compute_share = ResultField[float](seed=True, doc="compute / update")
    communication_share = ResultField[float](seed=True, doc="exposed communication / update")
    speedup = ResultField[float](
        seed=True, doc="n x compute / update", label="speedup over one device", row=12,
        display="times", interval=2,
    )
    efficiency = ResultField[float](
        seed=True, doc="speedup / n", label="scaling efficiency", row=13, display="percent",
        header="eff.", interval=1,
    )
    global_batch = IntField(
        seed=True, doc="per_device_batch x n x A", label="global batch", row=16,
        header="global batch",
    )
    training_time = QuantityField(
        "hour", seed=True, doc="the whole run on the cluster", label="training time on {n} devices",
        row=17, header="training", interval=4,
    )
    cost = MoneyField(
        "USD", seed=True, doc="US dollars, or None without a node price", label="cost on {nodes}",
        row=18, interval=5,
    )
    # the opt-in model's fields
    exposed_communication_time = QuantityField(
        "millisecond", doc="communication not hidden", label="AllReduce not hidden (exposed)",
        row=6, opt_in=True,
    )
    hidden_communication_time = QuantityField(
        "millisecond", doc="communication under backward", label="AllReduce hidden under backward",
        row=7, opt_in=True,
    )
    synchronization_time = QuantityField(
        "millisecond", doc="straggler wait + update overhead", label="synchronization per update",
        row=8, opt_in=True,
    )
    synchronization_share = ResultField[float](doc="synchronization / update")
    extra_share = ResultField[float](doc="(optimizer + interference + bucket copies) / update")
    optimizer_time = QuantityField(
        "millisecond", doc="one optimizer step per update", label="optimizer step per update",
        row=9, opt_in=True,
    )
    interference_time = QuantityField(
        "millisecond", doc="compute slowed beside communication",
        label="compute slowed beside the AllReduce", row=10, opt_in=True,
    )
    bucket_copy_time = QuantityField(
        "millisecond", doc="DDP's gradient copies into buckets and back",
        label="DDP bucket copies per update", row=11, opt_in=True,
    )
    algorithm = LabelField(
        lambda r: r.choices.algorithm, ("ring", "hierarchical", "tree", "auto"),
        doc="the AllReduce choice asked for", label="AllReduce algorithm asked", row=25,
        opt_in=True,
    )
    intra_algorithm = LabelField(
        lambda r: "ring" if r.devices_per_node > 1 else "none", ("none", "ring"),
        doc="inside a node", label="AllReduce inside a node", row=26,
    )
    inter_algorithm = LabelField(
        _inter_algorithm, ("none", *ALGORITHMS), doc="across nodes (auto: the one picked)",
        label="AllReduce across nodes", row=27,
    )
    bottleneck = LabelField(
        lambda r: BOTTLENECKS[int(r.figures.bottleneck)], BOTTLENECKS,
        doc="largest term of the update time", label="bottleneck", row=28,
    )
    # a parallel layout (docs/parallelism.md): None on the data-parallel model, so not shown there
    tensor_ranks = OptionalCountField(
        doc="t: tensor-parallel size", label="layout: tensor-parallel size t", row=29, header="t"
    )
    pipeline_stages = OptionalCountField(
        doc="p: pipeline stages", label="layout: pipeline stages p", row=30, header="p"
    )
    data_parallel = OptionalCountField(
        doc="d = n / (t p): data-parallel replicas", label="layout: data-parallel size d", row=31, header="d"
    )
    tensor_parallel_time = OptionalQuantityField(
        "millisecond", doc="m t_tp: tensor-parallel collectives per update (exposed)",
        label="  tensor-parallel collectives", row=32, header="tensor",
    )
    pipeline_transfer_time = OptionalQuantityField(
        "millisecond", doc="stage-to-stage transfers per update (exposed)", label="  pipeline stage transfers",
        row=33, header="p2p",
    )
    context_parallel_time = OptionalQuantityField(
        "millisecond", doc="m t_cp: ring attention's key/value transfers per update beyond the attention they overlap",
        label="  context-parallel ring (exposed)", row=34, header="context",
    )
    expert_parallel_time = OptionalQuantityField(
        "millisecond", doc="m t_ep: expert parallelism's token all-to-alls per update (exposed)",
        label="  expert all-to-alls (exposed)", row=35, header="experts",
    )
    sharding_time = OptionalQuantityField(
        "millisecond", doc="m T_zero3: exposed per-layer ZeRO-3/FSDP gathers and reduce-scatters",
        label="  ZeRO-3/FSDP gathers (exposed)", row=36, header="sharding",
    )
    data_parallel_time = OptionalQuantityField(
        "millisecond", doc="exposed gradient synchronisation across data-parallel ranks, once per update",
        label="  data-parallel gradient sync (exposed)", row=37, header="data",
    )
    bubble_time = OptionalQuantityField(
        "millisecond", doc="(p-1)/v (t_c + t_tp): the pipeline's fill and drain", label="pipeline bubble",
        row=38, header="bubble",
    )
    bubble_fraction = OptionalFloatField(
        doc="the pipeline bubble's share of the update: bubble_time / update_time (the schedule's (p-1)/(v m) "
        "is the bubble over the compute, above 1 when there are fewer micro-batches than stages)",
        label="bubble, share of the update", row=39, display="percent", header="bubble %",
    )
    state_memory = OptionalQuantityField(
        "byte", doc="weights, gradients and optimizer state on one device (sharded)",
        label="  training state per device", row=40,
    )
    stage_activation_memory = OptionalQuantityField(
        "byte", doc="activations the first pipeline stage holds for its micro-batches in flight",
        label="  activations (first stage)", row=41,
    )
    layout_valid = ValidField(
        doc="the layout obeys the layout rules (t p divides the devices, heads by t, layers by p v, m >= p); "
        "a single scenario refuses one that does not, a sweep marks it, a plan drops it",
        header="valid",
    )
    gather_buffer_memory = OptionalQuantityField(
        "byte", doc="unsharded parameters and gradients of the layers in flight (ZeRO-3)",
        label="  ZeRO-3 gather buffers", row=42,
    )
    memory_per_device = QuantityField(
        "byte", doc="training state + activations per device", label="memory per device", row=22,
        layout_label="memory per device (first stage)",
    )
    device_memory = OptionalQuantityField(
        "byte", doc="memory of one device, when known", label="device memory", row=23
    )
    fits = FitsField(
        doc="memory_per_device <= device_memory, None when unknown", label="fits in device memory",
        row=24,
    )
    # the whole run (docs/whole_run.md): failures, checkpoints, energy; None where not modeled
    job_mtbf = OptionalQuantityField(
        "hour", doc="the job's mean time between failures, M = 1 / (lambda n)",
        label="job mean time between failures", row=43, header="MTBF",
    )
    checkpoint_size = OptionalQuantityField(
        "byte", doc="one checkpoint of the training state, 14 B per parameter",
        label="checkpoint size", row=44, header="ckpt size",
    )
    checkpoint_time = OptionalQuantityField(
        "second", doc="time to write one checkpoint", label="checkpoint write time", row=45,
        header="ckpt write",
    )
    checkpoint_interval = OptionalQuantityField(
        "minute", doc="compute time between checkpoints (given, or Daly's optimum)",
        label="checkpoint interval", row=46, header="ckpt every",
    )
    checkpoint_overhead = OptionalQuantityField(
        "hour", doc="time spent writing checkpoints over the run",
        label="  spent writing checkpoints", row=48,
    )
    rework_time = OptionalQuantityField(
        "hour", doc="work lost to failures and recomputed", label="  spent redoing lost work",
        row=49,
    )
    restart_overhead = OptionalQuantityField(
        "hour", doc="time spent restarting after failures", label="  spent restarting", row=50,
    )
    interruptions = OptionalFloatField(
        doc="expected failures over the run, N_f = T_w / M", label="expected interruptions",
        row=51, header="interrupts",
    )
    goodput = OptionalFloatField(
        doc="share of wall-clock time that advances training, training_time / wall_clock_time",
        label="goodput", row=52, display="percent",
    )
    wall_clock_time = OptionalQuantityField(
        "hour", doc="training_time with checkpoints, restarts and lost work (training_time / goodput)",
        label="wall-clock time with failures", row=47, header="wall clock",
    )
    energy = OptionalQuantityField(
        "megawatt_hour", doc="energy drawn by the facility over the run (PUE included)",
        label="energy", row=53,
    )
    emissions = OptionalQuantityField(
        "metric_ton", doc="operational emissions, tonnes of CO2e (location-based)",
        label="emissions (CO2e)", row=54, header="CO2e",
    )
    energy_cost = MoneyField(
        "USD", doc="US dollars of the energy, or None without an energy price",
        label="energy cost", row=55, header="energy cost",
    )
    total_cost = MoneyField(
        "USD", doc="node-hours over the wall-clock time plus the energy, where priced",
        label="cost of the whole run", row=56, header="total cost",
    )
    achieved_mfu = OptionalFloatField(
        doc="the job's model FLOPs utilisation: model FLOPs per second per device over the peak "
        "(Chowdhery et al. 2022; recomputation not counted), None where the FLOPs or the peak are "
        "unknown; the input mfu is one device's step alone (one device achieves it), this the whole job's",
        label="MFU achieved by the job (model FLOPs / peak)", row=14, display="percent",
        header="MFU",
    )
    constraint_trace = TraceField(doc="notes on what limits this layout")

    def __init__(
        self,
        figures: Figures,
        inputs: Mapping[str, Value],
        choices: Choices,
        model_inputs: Inputs,
        *,
        trace: Callable[[DataParallelScaleOutResult], tuple[str, ...]],
        job: Job | None = None,
    ) -> None:
        set_ = _object_setattr
        set_(self, "figures", figures)
        set_(self, "_values", inputs)  # a scenario's or a solve's checked values
        set_(self, "_inputs", None)
        set_(self, "choices", choices)
        set_(self, "model_inputs", model_inputs)
        set_(self, "job", job)  # mlsysim.engine.inputs.derivation.Job: what was derived
        set_(self, "_cache", {})
        set_(self, "_trace_of", trace)

    @property
    def inputs(self) -> Mapping[str, Value]:
        """The checked inputs that produced it: every model input, given, default or derived.

        Made on first read (a solve or a ``variant(...).result`` that is not asked
        for its inputs does not copy ~60 of them).
        """
        inputs = self._inputs
        if inputs is None:
            values = self._values
            inputs = MappingProxyType({name: values[name] for name in MODEL_FIELDS})
            object.__setattr__(self, "_inputs", inputs)
        return inputs

    @property
    def devices_per_node(self) -> int:
        return cast(int, self._values["devices_per_node"])

    def _trace(self) -> tuple[str, ...]:
        return self._trace_of(self)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(
            f"{type(self).__name__} is immutable; use scenario.variant(...) to change inputs"
        )

    __delattr__ = __setattr__  # type: ignore[assignment]

    def _key(self) -> tuple[object, ...]:
        return tuple(_hashable(getattr(self, name)) for name in RESULT_NAMES if name != "constraint_trace")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataParallelScaleOutResult):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        f = self.figures
        return (
            f"DataParallelScaleOutResult(n_devices={self.n_devices}, "
            f"update_time={f.update_time * 1e3:.6g} ms, speedup={f.speedup:.6g}, "
            f"efficiency={f.efficiency:.6g}, training_time={f.training_time / 3600:.6g} h, "
            f"cost={self.cost!r})"
        )

    def raw(self, name: str) -> float:
        """A figure's value as a float in canonical SI units (seconds, bytes)."""
        return getattr(self.figures, name)

    def to_dict(self, *, seed_only: bool = False) -> dict[str, JSONValue]:
        """Plain Python values in the project's JSON encoding (``{"value": x, "unit": u}``)."""
        from mlsysim.core.jsonio import encode

        names = SEED_FIELDS if seed_only else RESULT_NAMES
        return {name: encode(getattr(self, name), unit=field_unit(name)) for name in names}

    def interval(self, name: str, level: float = 0.8) -> tuple[Quantity | float, Quantity | float]:
        """The (low, high) central prediction interval of ``efficiency``, ``speedup``,
        ``update_time``, ``training_time`` or ``cost`` at ``level`` (default 80%).

        Conformal, from the model's residuals on the published cases under these
        same assumptions (:mod:`mlsysim.engine.reports.bands`). The seed model
        has none: use ``Assumptions.realistic()``.
        """
        from mlsysim.engine.reports.bands import interval

        if name not in INTERVAL_FIELDS:
            raise InputError(
                f"interval: expected one of {', '.join(INTERVAL_FIELDS)}, got {name!r}", field="name"
            )

        return interval(self, name, level)

    def to_json(self, *, indent: int | None = None, sort_keys: bool = False) -> str:
        """:meth:`to_dict` as strict JSON (no NaN or Infinity); ``indent`` and ``sort_keys`` as
        :func:`json.dumps`."""
        from mlsysim.core.jsonio import dumps

        return dumps(self.to_dict(), indent=indent, sort_keys=sort_keys)

    def explain(self, format: str = "text") -> str:
        """The derivation of every figure, equation by equation with numbers and units.

        ``format`` is ``"text"`` or ``"markdown"``.
        """
        from mlsysim.engine.reports.explain import explain_result

        return explain_result(self, format=format)


def _hashable(value: object) -> object:
    if isinstance(value, Quantity):
        return (float(value.magnitude), str(value.units))
    return value


RESULT_NAMES: tuple[str, ...] = tuple(DataParallelScaleOutResult._declared)
"""Every result field: the seed's, then those of the opt-in model."""

_RESULT_FIELDS: dict[str, ResultField[object]] = {
    name: DataParallelScaleOutResult.__dict__[name] for name in RESULT_NAMES
}

SEED_FIELDS: tuple[str, ...] = tuple(n for n in RESULT_NAMES if _RESULT_FIELDS[n].seed)
"""The seed contract's result fields, in its order."""


def result_fields() -> Mapping[str, ResultField[object]]:
    """Every declared result field by name, in declaration order."""
    return MappingProxyType(_RESULT_FIELDS)


def run_rows() -> tuple[ResultField[object], ...]:
    """The result fields the run table shows, in its order (the answer first)."""
    shown = [f for f in _RESULT_FIELDS.values() if f.row is not None]
    return tuple(sorted(shown, key=lambda f: cast(int, f.row)))


def text_labels() -> dict[str, tuple[str, ...]]:
    """Every label a text result column can take, by field: a sweep stores the index."""
    return {
        name: f.labels for name, f in _RESULT_FIELDS.items() if isinstance(f, LabelField)
    }


INTERVAL_FIELDS: tuple[str, ...] = tuple(
    sorted((n for n, f in _RESULT_FIELDS.items() if f.interval), key=lambda n: _RESULT_FIELDS[n].interval or 0)
)
"""Result fields with a prediction interval."""


def field_unit(name: str) -> str | None:
    """The unit a field is reported in (``"millisecond"``, ``"USD"`` for cost), or None."""
    return _RESULT_FIELDS[name].unit
