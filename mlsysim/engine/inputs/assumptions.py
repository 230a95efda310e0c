"""Modeling choices beyond the seed, bundled in one immutable, validated object.

``Assumptions()`` is the seed's model exactly: a flat ring, full line rate, no
overlap with the backward pass, no synchronisation cost. Every other value is
opt-in; :meth:`Assumptions.realistic` is the project's best preset.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from math import inf, isfinite
from numbers import Real
from typing import Annotated, ClassVar, Literal, get_origin

from pydantic import PlainValidator, PrivateAttr

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Quantity, kind_of, quantity, to_canonical
from mlsysim.core.validation import (
    Validated,
    as_pydantic,
    check_fraction,
    check_nonnegative_float,
    check_nonnegative_quantity,
    check_positive_quantity,
)
from mlsysim.engine.model.equations import Choices

MIN_EFFICIENCY = 0.01
"""Lowest link efficiency accepted: below 1% of its line rate a link is broken, not modeled."""
MAX_STRAGGLER_CV = 10.0
"""Highest straggler coefficient of variation accepted (1000% of the step time)."""


def _check_efficiency(value: object) -> float:
    x = check_fraction(value)
    if x < MIN_EFFICIENCY:
        raise InputError(f"expected a number in [{MIN_EFFICIENCY:g}, 1], got {value!r}")
    return x


def _check_straggler_cv(value: object) -> float:
    x = check_nonnegative_float(value)
    if x > MAX_STRAGGLER_CV:
        raise InputError(f"expected a number in [0, {MAX_STRAGGLER_CV:g}], got {value!r}")
    return x


Fraction = Annotated[float, PlainValidator(as_pydantic(_check_efficiency))]


def _check_ceiling(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise InputError(f"expected a fraction of the peak in [0, 1] (0: the fitted ceiling), got {value!r}")


Ceiling = Annotated[float, PlainValidator(as_pydantic(_check_ceiling))]


def _scores(scores: Iterable[float], what: str, expected: str, lowest: float = -inf) -> tuple[float, ...]:
    """At least 2 finite numbers above ``lowest``, as floats; else an InputError naming ``what``."""
    values = [] if isinstance(scores, (str, bytes)) else list(scores)
    if len(values) < 2 or not all(
        isinstance(z, Real) and not isinstance(z, bool) and isfinite(z) and z > lowest for z in values
    ):
        raise InputError(f"{what}: expected at least 2 {expected}, got {scores!r}", field="scores")
    return tuple(float(z) for z in values)

MAX_IMBALANCE = 64.0
"""Highest expert load imbalance accepted (the busiest device 64 times the mean)."""


def _check_imbalance(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 1.0 <= float(value) <= MAX_IMBALANCE:
        return float(value)
    raise InputError(
        f"expected the busiest expert device's load over the mean, a number in [1, {MAX_IMBALANCE:g}] "
        f"(1: balanced routing), got {value!r}"
    )


Imbalance = Annotated[float, PlainValidator(as_pydantic(_check_imbalance))]
NonNegative = Annotated[float, PlainValidator(as_pydantic(_check_straggler_cv))]


def _check_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise InputError(f"expected True or False, got {value!r} ({type(value).__name__})")


def _check_backward_fraction(value: object) -> float:
    x = check_fraction(value)
    if x >= 1.0:
        raise InputError(f"expected a number in (0, 1), got {value!r}")
    return x


Algorithm = Literal["ring", "hierarchical", "tree", "auto"]
Collectives = Literal["links", "measured"]

LINKS = ("intra", "inter")


def _check_measured_links(value: object) -> tuple[str, ...]:
    """Link names (``intra``, ``inter``), as a list, a tuple or a comma-separated text."""
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, list | tuple) and all(isinstance(v, str) for v in items):
        names = tuple(dict.fromkeys(v.strip().lower() for v in items if v.strip()))
        if all(n in LINKS for n in names):
            return tuple(n for n in LINKS if n in names)
    raise InputError(f"expected link names among intra and inter, got {value!r}")

NO_FAILURES = quantity(0, "failures/device/hour")
"""The seed's failure rate: no failures."""


DEFAULT_BUCKET_SIZE = quantity(25, "MiB")
"""PyTorch DDP's default ``bucket_cap_mb=25`` (MiB), torch.nn.parallel.DistributedDataParallel."""

BACKWARD_FRACTION = 2.0 / 3.0
"""Backward share of a training step: the backward pass costs about twice the
forward pass in FLOPs (Kaplan et al. 2020, "Scaling Laws for Neural Language
Models", section 2.1: C_backward ~ 2 C_forward; Narayanan et al. 2021,
"Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", section 5.1)."""


INTERFERENCE = 0.19
"""Slowdown of compute overlapped with communication: 18.9% on average, measured on A100,
H100, MI210 and MI250 ("Characterizing Compute-Communication Overlap in GPU-Accelerated
Distributed Deep Learning: Performance and Power Implications", arXiv 2507.03114, 2025)."""

LLAMA3_FAILURE_RATE = quantity(466 / (16_384 * 54 * 24), "failures/device/hour")
"""Failures per device-hour of the realistic preset: 466 interruptions (419 unexpected, 47
planned) in a 54-day snapshot of Llama 3 405B pre-training on up to 16,384 H100 GPUs (Llama
Team 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, section 3.3.4): 466 / (16,384 x
1,296 h) = 2.19e-5, a lower bound per GPU (the job did not always hold 16,384). The registry
entry ``Infrastructure.Reliability.Llama3_405B_all``."""

REALISTIC_STRAGGLER_CV = 0.01
"""Proportional straggler CV of the realistic preset: the largest round value the published
measurements allow. The straggler term alone caps a job of n devices and A micro-steps per
update at e <= 1 / (1 + c sqrt(2 ln n) / sqrt(A)) relative to one device; the best measured
runs of one micro-step on 8 GPUs (MXNet ResNet-50: 0.979 on DGX A100 TF32, 0.978 on DGX-1
FP32) need c <= 0.0105. The preset's earlier 0.03 put 13 of the 52 one-GPU-baseline cases
above that ceiling (docs/model.md, section 3)."""

REALISTIC_HOST_JITTER = quantity(15.2, "ms")
"""Host jitter of the realistic preset (a job whose host prepares its inputs): fitted so that
the mean signed error over the published cases it applies to (the 99 of 111 whose inputs
are prepared on the host) is zero (:func:`mlsysim.validation.published.fit_host_jitter`,
rounded to 0.1 ms); refitted without each of the 20 families in turn it lies within
13.7-17.2 ms, and the leave-one-family-out errors are reported in docs/model.md. A form that
grows with the step (noise accumulating over the step, j ~ sqrt(T1)) was tried and predicts
families left out worse (on the 67 cases of the time: median 5.1 points against 4.2), so the
fixed form stays."""


class Assumptions(Validated):
    """Modeling choices. The defaults reproduce the seed model bit for bit.

    Fields:

    * ``algorithm``: AllReduce across nodes. ``ring`` (the seed: a second flat
      ring over all devices), ``hierarchical`` (reduce-scatter in the node,
      AllReduce of each shard across nodes over the NIC rails, all-gather in
      the node), ``tree`` (double binary tree across nodes, as NCCL), or
      ``auto`` (the fastest of the three for the message size).
    * ``intra_efficiency``, ``inter_efficiency``: achieved fraction of the line
      rate on each link (nccl-tests bus bandwidth / line rate).
    * ``overlap``: reduce gradient buckets of ``bucket_size`` during the
      backward pass, which takes ``backward_fraction`` of a step.
    * ``update_overhead``: fixed time added to every distributed update.
    * ``straggler_cv``: coefficient of variation of one device's step time;
      the update waits for the slowest of n devices.
    * ``host_jitter``: absolute standard deviation of a micro-step from the
      host (OS noise, Python loop, data loader); adds to ``straggler_cv`` in
      quadrature, so fast steps lose most. A scenario's ``input_pipeline``
      scales it (``device`` and ``synthetic``: none).
    * ``interference``: fractional slowdown of compute that runs beside
      communication (applied to the hidden communication time).
    * ``bucket_copies``: DDP copies gradients into its buckets and back, 4 G
      bytes of memory traffic at the scenario's ``memory_bandwidth``.
    * ``first_bucket_size``: DDP caps its first bucket (1 MiB): one more
      collective startup, exposed when the AllReduce is not overlapped.
    * ``measured_links``: the links (``intra``, ``inter``) whose bandwidth is a
      measured, achieved figure (written by ``mlsysim calibrate``): their
      efficiency is not applied again (taken as 1).
    * ``failure_rate``: failures per device-hour when the scenario gives none
      (0: no failures). It is applied where the scenario gives what a
      failure costs (``checkpoint_bandwidth`` and ``restart_time``); only the
      whole-run figures (goodput, wall-clock time, energy) depend on it.
    * ``sharding_rate``: the achieved rate, per rank, of an implementation's ZeRO/FSDP
      all-gathers and reduce-scatters (0: the links' ring rate, the physics). A
      framework's collectives can run far below what the links carry: DeepSpeed's
      ZeRO-3 of 2021 reached about 16 GB/s per A100 where the links carry 25
      (docs/parallelism.md). A named assumption of one implementation, fitted on its
      own published runs (``mlsysim validate parallel`` reports it leave-one-run-out).
    * ``pipeline_rate``: the achieved rate of one device's stage-to-stage
      transfers of an implementation (0: the links' rate), as ``sharding_rate``
      (DeepSpeed's pipeline engine of 2021, MT-NLG 530B).
    * ``matmul_ceiling``: the fraction of the format's peak the linear layers' large
      matrix products reach, for a step priced from the operators (0: the ceiling
      fitted for the accelerator's architecture and format,
      ``mlsysim/data/matmul_ceilings.json``); ``attention_ceiling`` the same for the
      16-bit products (the attention core, the output layer; 0: fitted, or
      ``matmul_ceiling`` when the linear layers run in 16 bits too). What ``mlsysim
      calibrate matmuls`` fits to products timed on your GPU.
    * ``expert_ceiling``: the same for a mixture of experts' routed experts (their grouped
      products; 0: the ceiling fitted on the architecture's published mixtures of experts,
      else ``matmul_ceiling``). What a mixture of experts loses beyond its products' shapes
      (grouped kernels over ragged token counts, the tokens' permutation, the router) is
      priced there; its attention, dense and shared layers keep the dense ceilings.
    * ``kernel_share``: the share of the best measured kernel of each format that the matrix
      products keep inside a training step (0: the architecture's in-training ceiling over its
      best measured 16-bit kernel, the share fitted on its published runs). Every format runs at
      that share of its own best measured kernel, so the formats keep the kernels' relative speed;
      ``matmul_ceiling`` and ``attention_ceiling``, when given, win. What ``mlsysim validate mine``
      writes when it fits 16-bit runs: calibrated on bf16, an fp8 job is priced at the fp8 kernels.
    * ``expert_imbalance``: the load of the busiest expert-parallel device over the
      mean, rho >= 1 (1: balanced routing, as Megatron-Core's force-balanced benchmarks;
      a capacity factor, or a measured imbalance): the routed experts' compute of every
      device waits for it.

    >>> Assumptions()
    Assumptions(algorithm='ring', intra_efficiency=1.0, inter_efficiency=1.0, overlap=False, bucket_size=<Quantity(25, 'mebibyte')>, backward_fraction=0.6666666666666666, update_overhead=<Quantity(0, 'second')>, straggler_cv=0.0, interference=0.0, host_jitter=<Quantity(0, 'second')>, bucket_copies=False, first_bucket_size=<Quantity(0, 'byte')>, measured_links=(), failure_rate=<Quantity(0, 'failure / device / hour')>, sharding_rate=<Quantity(0, 'gigabyte / second')>, pipeline_rate=<Quantity(0, 'gigabyte / second')>, matmul_ceiling=0.0, attention_ceiling=0.0, expert_ceiling=0.0, expert_imbalance=1.0, kernel_share=0.0, collectives='links')
    """

    algorithm: Algorithm = "ring"
    intra_efficiency: Fraction = 1.0
    inter_efficiency: Fraction = 1.0
    overlap: Annotated[bool, PlainValidator(as_pydantic(_check_bool))] = False
    bucket_size: Annotated[
        Quantity, PlainValidator(as_pydantic(check_positive_quantity("data")))
    ] = DEFAULT_BUCKET_SIZE
    backward_fraction: Annotated[float, PlainValidator(as_pydantic(_check_backward_fraction))] = (
        BACKWARD_FRACTION
    )
    update_overhead: Annotated[
        Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("time")))
    ] = quantity(0, "s")
    straggler_cv: NonNegative = 0.0
    interference: NonNegative = 0.0
    host_jitter: Annotated[
        Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("time")))
    ] = quantity(0, "s")
    bucket_copies: Annotated[bool, PlainValidator(as_pydantic(_check_bool))] = False
    first_bucket_size: Annotated[
        Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("data")))
    ] = quantity(0, "B")
    measured_links: Annotated[
        tuple[str, ...], PlainValidator(as_pydantic(_check_measured_links))
    ] = ()
    failure_rate: Annotated[
        Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("failure_rate")))
    ] = NO_FAILURES
    sharding_rate: Annotated[
        Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("bandwidth")))
    ] = quantity(0, "GB/s")
    pipeline_rate: Annotated[
        Quantity, PlainValidator(as_pydantic(check_nonnegative_quantity("bandwidth")))
    ] = quantity(0, "GB/s")
    matmul_ceiling: Ceiling = 0.0
    attention_ceiling: Ceiling = 0.0
    expert_ceiling: Ceiling = 0.0
    expert_imbalance: Imbalance = 1.0
    kernel_share: Ceiling = 0.0
    collectives: Collectives = "links"
    _own_scores: tuple[tuple[float, ...], str] | None = PrivateAttr(default=None)
    _own_layout_scores: tuple[tuple[float, ...], str] | None = PrivateAttr(default=None)

    WHOLE_RUN_FIELDS: ClassVar[tuple[str, ...]] = ("failure_rate",)
    """Fields that change only the whole run's figures (goodput, wall-clock time, energy),
    never the update's: the prediction intervals do not depend on them."""
    IMPLEMENTATION_FIELDS: ClassVar[tuple[str, ...]] = (
        "sharding_rate", "pipeline_rate", "matmul_ceiling", "attention_ceiling", "expert_ceiling",
        "expert_imbalance", "kernel_share",
    )
    """Achieved rates of one implementation's collectives: at their default (0, the physics)
    they name no choice, so a stored set of residuals does not depend on them."""

    @classmethod
    def seed(cls) -> Assumptions:
        """The seed model's choices (the same as ``Assumptions()``)."""
        return cls()

    @classmethod
    def realistic(cls) -> Assumptions:
        """The project's best preset. Each value and its source:

        * ``algorithm="auto"``: NCCL picks ring or tree per message size and
          topology (NCCL documentation, NCCL_ALGO; NCCL 2.4 blog, 2019); on
          multi-node jobs the traffic is hierarchical over the NIC rails.
        * ``intra_efficiency=0.80``: nccl-tests AllReduce bus bandwidth inside
          one node reaches about 80% of the NVLink line rate: H100 NVLink4
          ~370 of 450 GB/s (NVIDIA/nccl-tests issue 212), A100 NVLink3 ~230-240
          of 300 GB/s (NVIDIA/nccl-tests issue 149).
        * ``inter_efficiency=0.90``: measured inter-node bus bandwidth over
          InfiniBand reaches 96% of line rate in the best case (DGX A100 8x HDR:
          192 of 200 GB/s, NVIDIA/nccl issue 812; one HDR NIC: ~24 of 25 GB/s,
          NVIDIA/nccl issue 412; NDR: 48-49 of 50 GB/s, NVIDIA/nccl-tests issue
          267), and 16 of 25 GB/s (64%) with a badly placed NIC (nccl issue
          412); 0.90 sits between a tuned fabric and an ordinary one.
        * ``overlap=True`` with 25 MiB buckets: PyTorch DDP's default
          (Li et al. 2020, VLDB, section 3.2.3), as every published DDP and
          Horovod run does.
        * ``backward_fraction=2/3``: backward ~ 2x forward (Kaplan et al. 2020).
        * ``update_overhead=1 ms``: per-update work of a distributed step that a
          one-device run does not do: DDP's bucket bookkeeping (Li et al. 2020,
          section 3.2.3), a collective launch and stream synchronisation per
          bucket and the final wait on the communication stream. Each costs
          tens of microseconds; 1 ms is an order-of-magnitude assumption for
          the sum, not fitted to any validation case.
        * ``straggler_cv=0.01``: step times of identical GPUs in a synchronous
          job differ (clock and thermal variation); the cost of waiting for the
          slowest of many: Dean and Barroso 2013, "The Tail at Scale". 1% is the
          largest round value the published measurements allow: the term
          alone caps 8 GPUs at one micro-step per update at 1 / (1 + 2.04 c),
          and MXNet's ResNet-50 measured 0.979 (:data:`REALISTIC_STRAGGLER_CV`);
          not fitted to the errors. Measure your own with ``mlsysim calibrate``.
        * ``interference=0.19``: compute that overlaps communication runs
          18.9% slower on average (A100, H100, MI210, MI250; "Characterizing
          Compute-Communication Overlap in GPU-Accelerated Distributed Deep
          Learning: Performance and Power Implications", arXiv 2507.03114).
        * ``host_jitter=15.2 ms``: the one constant fitted to data. It is the
          value at which the mean signed error over the published cases
          whose host prepares the inputs (99 of the 111 in
          ``mlsysim/data/published_scaling.json``) is zero
          (:func:`mlsysim.validation.published.fit_host_jitter`); refitted
          without each of the 20 families in turn it stays within 13.7-17.2 ms,
          and the leave-one-family-out errors are in docs/model.md. Its order is
          that of host noise, the per-step host loop and the data loader's
          stalls (milliseconds). It applies to jobs that load real data; a
          scenario with ``input_pipeline="synthetic"`` (inputs made on the
          device, no loader) or ``"device"`` (decoded on the accelerator) has
          none (Mohan et al. 2021, "Analyzing and Mitigating Data Stalls in
          DNN Training", VLDB).
        * ``failure_rate=2.19e-5 per GPU-hour``: Llama 3 405B's 466
          interruptions in 54 days on up to 16,384 GPUs (:data:`LLAMA3_FAILURE_RATE`).
          It prices failures where a scenario gives ``checkpoint_bandwidth`` and
          ``restart_time``; it changes no figure of the update.
        """
        return cls(
            algorithm="auto",
            intra_efficiency=0.80,
            inter_efficiency=0.90,
            overlap=True,
            bucket_size=DEFAULT_BUCKET_SIZE,
            backward_fraction=BACKWARD_FRACTION,
            update_overhead=quantity(1.0, "ms"),
            straggler_cv=REALISTIC_STRAGGLER_CV,
            interference=INTERFERENCE,
            host_jitter=REALISTIC_HOST_JITTER,
            failure_rate=LLAMA3_FAILURE_RATE,
        )

    def is_seed(self) -> bool:
        """True when these choices are the seed model's."""
        return self == _SEED

    @cached_property
    def choices(self) -> Choices:
        """These choices as the plain values :func:`mlsysim.engine.model.equations.evaluate` takes (cached).

        Each field of :class:`~mlsysim.engine.model.equations.Choices` is the assumption of the
        same name, a Quantity in canonical SI units; a link named in ``measured_links``
        has its efficiency taken as 1 (its bandwidth is an achieved figure already).
        """
        values: dict[str, object] = {}
        for name in Choices.__dataclass_fields__:
            if name not in type(self).model_fields:
                continue  # not an assumption (zero_stage: a scenario input)
            value = getattr(self, name)
            values[name] = to_canonical(value, kind_of(value)) if isinstance(value, Quantity) else value
        for link in self.measured_links:
            values[f"{link}_efficiency"] = 1.0
        return Choices(**values)  # type: ignore[arg-type]  # each value is its field's kind

    def with_interval_scores(self, scores: Iterable[float], source: str) -> Assumptions:
        """A copy whose prediction intervals are built from ``scores``: the normalised residuals
        (measured - predicted) / s of a user's own runs (``mlsysim validate mine``, each run its
        own group), in place of the bands stored with the package.

        The scores travel with the object they are given to, and only with it: a
        :meth:`variant` has none, and no other object's intervals change. An object carrying
        scores is not equal to one without them.
        """
        copy = self.variant()
        copy._own_scores = (_scores(scores, "interval scores", "finite numbers"), str(source))
        copy._own_layout_scores = self._own_layout_scores
        return copy

    @property
    def interval_scores(self) -> tuple[tuple[float, ...], str] | None:
        """(scores, source) given by :meth:`with_interval_scores`, or None."""
        return self._own_scores

    def with_layout_scores(self, scores: Iterable[float], source: str) -> Assumptions:
        """A copy whose parallel layouts' intervals are built from ``scores``: a user's own layout runs'
        held-out errors T_measured / T_predicted - 1 (``mlsysim validate mine``), in place of the published
        model-parallel runs' band. They travel as :meth:`with_interval_scores`' do (this object only; the
        data-parallel scores it holds are kept)."""
        values = _scores(scores, "layout interval scores", "finite numbers above -1", lowest=-1.0)
        copy = self.variant()
        copy._own_scores = self._own_scores
        copy._own_layout_scores = (values, str(source))
        return copy

    @property
    def layout_interval_scores(self) -> tuple[tuple[float, ...], str] | None:
        """(scores, source) given by :meth:`with_layout_scores`, or None."""
        return self._own_layout_scores

    def changed(self) -> dict[str, object]:
        """The fields that differ from the seed's, in declaration order."""
        return {k: v for k, v in self.fields().items() if v != getattr(_SEED_VALUES, k)}

    def bucket_bytes(self) -> float:
        return to_canonical(self.bucket_size, "data")

    def update_overhead_seconds(self) -> float:
        return to_canonical(self.update_overhead, "time")


_SEED = Assumptions()
_SEED_VALUES = _SEED


def assumption_from_text(name: str, value: object) -> object:
    """The Python value of one :class:`Assumptions` field given as text (or a file's scalar).

    Read by the field's declared type (no list of names): a Quantity's validator
    reads text itself (``"25 MiB"``), a flag takes true/false words, a number its
    digits, a choice of words its lower case, a list of names the text.
    """
    if not isinstance(value, str):
        return value
    info = Assumptions.model_fields.get(name)
    if info is None:
        return value  # the model reports the unknown field
    text = value.strip()
    kind = info.annotation
    if kind is bool:
        from mlsysim.core.text import parse_bool

        try:
            return parse_bool(text)
        except InputError as exc:
            raise exc.at(name) from None
    if kind is float:
        from mlsysim.core.text import parse_float

        try:
            return parse_float(text)
        except InputError as exc:
            raise exc.at(name) from None
    if get_origin(kind) is Literal:
        return text.lower()
    return text  # Quantities and link lists: their validators read text


def assumptions_of(value: object) -> Assumptions:
    """An :class:`Assumptions` from ``None`` (the seed), ``"seed"``, ``"realistic"``, an
    Assumptions object, or a mapping of its fields (``preset`` names the base)."""
    if value is None:
        return _SEED
    if isinstance(value, Assumptions):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key in ("seed", "default"):
            return _SEED
        if key == "realistic":
            return Assumptions.realistic()
        raise InputError(f"expected 'seed' or 'realistic', got {value!r}")
    if isinstance(value, dict):
        data = dict(value)
        preset = data.pop("preset", "seed")
        if not isinstance(preset, str):
            raise InputError(f"expected 'seed' or 'realistic', got {preset!r}", loc=("preset",))
        base = assumptions_of(preset)
        changes = {k: assumption_from_text(str(k), v) for k, v in data.items()}
        return base.variant(**changes)
    raise InputError(
        f"expected a mlsysim.Assumptions (e.g. Assumptions.realistic()), 'seed' or 'realistic', "
        f"got {value!r}"
    )

