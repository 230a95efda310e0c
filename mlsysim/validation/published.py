"""Predict published, measured data-parallel scale-out results and compare.

The cases are ``mlsysim/data/published_scaling.json``: each is a baseline (one
GPU, or one node) and a scaled run of the same job, with the measured scaling
efficiency ``measured_eff = (throughput_scaled / throughput_base) /
(devices_scaled / devices_base)`` and the hardware as published (sources in
each case). A case enters the data only when its figures are quoted from a
source in hand.

Inputs of a case. A case becomes a :class:`TrainingScenario` with
its parameter count, compute precision (from the run's name: AMP, TF32,
FP32), gradient precision on the wire (``grad_bytes``), per-device batch,
devices per node, nodes, intra link (GB/s per direction), inter link (Gb/s
per NIC), NICs per node, accumulation, the transport (``TCP`` in the run's
name, else RDMA), the optimizer and the input pipeline (real, device or synthetic
data) of its code base and the memory bandwidth of its GPU (:data:`FAMILIES`,
:data:`PLATFORMS`). The seed model is given the
link as the seed knows it: one inter-node link of the NIC rate
(``nics_per_node`` unset); other assumptions receive the NIC count.

Prediction. ``t1_s`` in the data is the measured time per micro-step of the
baseline (batch / one-GPU throughput, or devices x batch / one-node
throughput), so it already contains the baseline's own overheads: its
optimizer step amortised over ``accumulation_base`` micro-steps and, for a
one-node baseline, its communication. The one-device step time T1 is
therefore calibrated so that the model reproduces the baseline:
``update_time(base; T1) / A_base = t1_s`` (exact for the seed with a one-GPU
baseline, where T1 = t1_s). The predicted efficiency is then the ratio of
throughputs per device:

    predicted = (A_scaled / update_time(scaled; T1)) / (A_base / update_time(base; T1))
              = A_scaled t1_s / update_time(scaled; T1)

Everything is evaluated once for all cases on numpy arrays through
:func:`mlsysim.engine.model.equations.evaluate`, the code behind every scenario result
(a test checks it against the scenarios' own results).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import quantity
from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.model.equations import Figures, Inputs, evaluate
from mlsysim.engine.scenario_types import TrainingScenario
from mlsysim.engine.solvers.data_parallel import choices_of, model_inputs
from mlsysim.models.types import Workload
from mlsysim.validation.records import RecordError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

PRECISION_OF_GRADIENT_BYTES = {4: "fp32", 2: "fp16"}

MEDIAN_LIMIT = 0.043
"""In-sample median absolute error of the realistic preset on the 111 cases: at most 4.3
points (reached: 4.21; docs/model.md, section 4, says why the remaining misses are not
modelled). The figure that counts is the held-out one, below; every limit here fails a
regression only (an improvement prints a note in the tests, never fails them)."""
HELD_OUT_MEDIAN_LIMIT = 0.044
"""... and with each family left out: at most 4.4 points (issue 23 asks 4: **missed**,
reached 4.32 on the 111 cases; 4.20 on the issue's own 61; docs/model.md, section 4.5)."""
MAX_LIMIT = 0.206
"""... its worst case within 20.6 points (reached: 20.6 held out, 20.3 in sample: the
32-node TensorFlow 2 BERT FP32 run on DGX-2H, docs/model.md, section 4.7)."""
MEAN_LIMIT = 0.015
"""... and its mean signed error within +-1.5 points, in sample and held out (issue 23)."""
COVERAGE_WINDOW = (0.75, 0.85)
"""80% prediction intervals must cover 75-85% of the cases of the families left out, by case and
for the average family (issue 40: a band that holds out of family, neither short nor padded;
issue 29 asked at least 80%, and the band that met it held 88% with each family left out of
everything its band is built from). Reached, fully nested (:func:`nested_cross_validate`):
82% (81% of the average family); each family left out of the jitter's fit and of the residuals
(:func:`cross_validate`): 77% (79%); with the weights picked again without each family
(:func:`choose_difficulty_weights`): 76% (docs/model.md, section 4.5)."""
WIDTH_LIMIT = 0.149
"""... at a median width of at most 14.9 points (reached 14.8 held out, 14.9 in sample with one
band for every layout, s = 1; issue 23 asked 14 with bands that covered 77% of families left out
and 55% of families the project had never seen; the band of issue 29, 17.5 at 86%)."""
NESTED_WIDTH_LIMIT = 0.149
"""... and 14.8 points fully nested, and when the weights are picked again without each family."""
FAMILIES_NOT_BEATING_SEED = frozenset(
    {
        "PyTorch BERT SQuAD fine-tuning",
        "PyTorch BERT pre-training",
        "TensorFlow 2 BERT pre-training",
        "PaddlePaddle ResNet-50 (DeepLearningExamples)",
    }
)
"""Families of more than one case whose held-out median error is not below the seed's
(issue 23 asks for none): 5.4 against 3.4, 7.0 against 6.7, 4.6 against 4.1 and 2.9 against
2.8 points (docs/model.md, section 4.3)."""


@dataclass(frozen=True)
class Family:
    """A group of cases sharing a code base and a model: the unit left out in cross-validation."""

    prefix: str
    name: str
    optimizer: str
    input_pipeline: str = "real"


FAMILIES: tuple[Family, ...] = (
    Family("DLE-PT-RN50-", "PyTorch ResNet-50 (DeepLearningExamples)", "sgd"),
    Family("DLE-PT-BERT-SQuAD-", "PyTorch BERT SQuAD fine-tuning", "adam"),
    Family("DLE-PT-BERT-P", "PyTorch BERT pre-training", "lamb"),
    Family("DLE-PT-TXL-", "PyTorch Transformer-XL", "lamb"),
    Family("PTDDP-", "PyTorch DDP paper (Li et al. 2020)", "sgd", "synthetic"),
    Family("HVD17-", "Horovod tf_cnn_benchmarks", "sgd"),
    Family("HVD-", "Horovod tf_cnn_benchmarks", "sgd"),
    Family("DLE-TF2-BERT-", "TensorFlow 2 BERT pre-training", "lamb"),
    Family("DLE-TF-BioBERT-", "TensorFlow BioBERT pre-training", "lamb"),
    Family("DLE-PT-EffNet", "PyTorch EfficientNet", "rmsprop"),
    Family("DLE-TF-RN50-", "TensorFlow ResNet-50 (DeepLearningExamples)", "sgd"),
    Family("DLE-TF-BERT-SQuAD-", "TensorFlow BERT SQuAD fine-tuning", "adam"),
    Family("DLE-TF-", "TensorFlow ResNeXt-101 / SE-ResNeXt-101", "sgd"),
    Family("DLE-PT-RNXT101-", "PyTorch ResNeXt-101 / SE-ResNeXt-101", "sgd"),
    Family("DLE-PT-SERNXT101-", "PyTorch ResNeXt-101 / SE-ResNeXt-101", "sgd"),
    Family("DLE-PT-TransformerBig-", "PyTorch Transformer-big", "adam"),
    Family("DLE-MX-RN50-", "MXNet ResNet-50 (DeepLearningExamples)", "sgd", "device"),
    Family("DLE-PT-BART-", "PyTorch BART pre-training", "lamb"),
    Family("DLE-PD-RN50-", "PaddlePaddle ResNet-50 (DeepLearningExamples)", "sgd", "device"),
    Family("DLE-PD-BERT-", "PaddlePaddle BERT pre-training", "lamb"),
    Family("DLE-PT-Jasper-", "PyTorch Jasper speech recognition", "novograd"),
    Family("DLE-PT-QuartzNet-", "PyTorch QuartzNet speech recognition", "novograd"),
)
"""Family of a case by the prefix of its id (first match). Optimizers as the code bases
run them: DeepLearningExamples ConvNets (ResNet, ResNeXt, SE-ResNeXt) SGD with
momentum, EfficientNet RMSprop, BERT pre-training, BioBERT and BART pre-training
(apex ``FusedMixedPrecisionLamb``, ``--lamb`` in its scripts) LAMB, BERT SQuAD and
Transformer (fairseq) Adam, Transformer-XL its default ``jitlamb``; the DDP paper's
and Horovod's ConvNet benchmarks and the MXNet ResNet-50 (``fit.py``: momentum 0.875)
SGD with momentum.

Input pipeline: the DDP paper's benchmark (pytorch/pytorch
``benchmarks/distributed/ddp/benchmark.py``) makes one batch with ``torch.rand`` on
the GPU and reuses it every iteration: ``synthetic``, no data loader. Two families
decode on the device (``device``): the MXNet ResNet-50 benchmark
(DeepLearningExamples ``MxNet/Classification/RN50v1.5``: its ``benchmark.py`` runs
``runner`` with its defaults, ``--data-backend dali-gpu``, DALI's "mixed" decoder and
resize and crop on the GPU) and the PaddlePaddle ResNet-50 one (``dali.py``:
``device='mixed'`` decoding, resize and normalisation on the GPU). Every other family
prepares its batches on the host (``real``): the PyTorch ConvNets benchmarks with
``data_backend: pytorch`` (``configs.yml``: PIL decoding in ``DataLoader`` workers), the
TensorFlow ConvNets ones with ``tf.data`` over TFRecords (``training_perf.sh`` passes
no ``--use_dali``), the speech models with DALI pipelines that read, decode and
speed-perturb (resample) the audio on the CPU (``common/dali/pipeline.py``:
``fn.decoders.audio`` before ``.gpu()``; only the spectrogram is made on the GPU), the
language models from token files made ahead of time through a host loader
(Wikipedia/BookCorpus, WMT, WikiText-103, BART's and PaddlePaddle BERT's LDDL Parquet
shards as their READMEs state). Horovod's 2017 benchmark does not say which it used,
so it keeps the default.

Optimizers of the families added in the second round: PaddlePaddle ResNet-50
``Momentum`` (SGD with momentum), PaddlePaddle BERT ``Lamb``, Jasper and QuartzNet
NovoGrad (``--optimizer=novograd``, apex ``FusedNovoGrad``)."""

PLATFORMS: tuple[tuple[str, float, str], ...] = (
    ("A100", 2.039e12, "NVIDIA A100 SXM4 80GB datasheet: 2,039 GB/s HBM2e"),
    ("DGX1", 900e9, "NVIDIA Tesla V100 GPU Architecture whitepaper: 900 GB/s HBM2"),
    ("DGX2", 900e9, "NVIDIA Tesla V100 GPU Architecture whitepaper: 900 GB/s HBM2"),
    ("V100", 900e9, "NVIDIA Tesla V100 GPU Architecture whitepaper: 900 GB/s HBM2"),
    ("HVD17", 732e9, "NVIDIA Tesla P100 datasheet: 732 GB/s HBM2 (Horovod's Pascal GPUs)"),
    ("HVD-", 732e9, "NVIDIA Tesla P100 datasheet: 732 GB/s HBM2 (Horovod's Pascal GPUs)"),
)
"""GPU memory bandwidth (bytes/s) by a token of the case id (first match)."""


CASE_EXTRAS = ("optimizer", "inter_transport", "input_pipeline")
"""Opt-in case inputs given to non-seed assumptions: the optimizer step (with the GPU's
memory bandwidth), the transport and the input pipeline; ``gradient_precision`` is always
the case's."""


class _CaseMarks(TypedDict, total=False):
    added: str
    """When a case came after the first 43, and who collected it (``"2026-12-01"``: the
    shared set of issue 23; later ones name the project's issue and what was read)."""


class CaseRecord(_CaseMarks):
    """One case of the data file as it is stored (``published_scaling.json``)."""

    id: str
    source: str
    stated: str
    params: int
    grad_bytes: int
    batch: int
    t1_s: float
    devices_per_node: int
    nodes: int
    base: str
    accumulation_base: int
    accumulation_scaled: int
    intra_GBps: float
    inter_Gbps: float | None
    nics_per_node: int | None
    measured_eff: float
    assumed: list[str]
    framework: str


@dataclass(frozen=True)
class Case:
    """One published measurement, as in the data file."""

    id: str
    source: str
    measured_eff: float
    raw: CaseRecord

    @property
    def family(self) -> str:
        """The name of the case's family (:data:`FAMILIES`)."""
        return family_of(self.id).name


@dataclass(frozen=True)
class Comparison:
    """Measured and predicted efficiency of one case under one set of assumptions."""

    case: Case
    predicted: float

    @property
    def error(self) -> float:
        """Predicted minus measured efficiency (points of efficiency as a fraction)."""
        return self.predicted - self.case.measured_eff


@dataclass(frozen=True)
class Summary:
    """Error statistics of a set of comparisons (fractions of efficiency)."""

    count: int
    median_abs: float
    max_abs: float
    mean: float

    @classmethod
    def of(cls, errors: ArrayLike) -> Summary:
        e = np.asarray(errors, dtype=float)
        return cls(
            count=int(e.size),
            median_abs=float(np.median(np.abs(e))),
            max_abs=float(np.max(np.abs(e))),
            mean=float(np.mean(e)),
        )


def family_of(case_id: str) -> Family:
    """The family of a case id (:data:`FAMILIES`)."""
    for family in FAMILIES:
        if case_id.startswith(family.prefix):
            return family
    raise RecordError(f"{case_id}: id: no family for this case; add its prefix to FAMILIES")


def memory_bandwidth_of(case_id: str) -> float:
    """The GPU memory bandwidth of a case (bytes/s), by the platform named in its id."""
    for token, bandwidth, _source in PLATFORMS:
        if token in case_id:
            return bandwidth
    raise RecordError(f"{case_id}: id: no platform (GPU memory bandwidth) for this case; add its token to PLATFORMS")


def gradient_precision_of(record: Mapping[str, Any]) -> str:
    """The gradients' format on the wire of a case record (``grad_bytes``: 4 fp32, 2 fp16); another width is
    refused (:class:`~mlsysim.validation.records.RecordError`), never read as one of them."""
    width = record.get("grad_bytes")
    if width not in PRECISION_OF_GRADIENT_BYTES:
        raise RecordError(f"{record.get('id', '?')}: grad_bytes = {width!r}: expected "
                          f"{' or '.join(map(str, PRECISION_OF_GRADIENT_BYTES))} bytes per element")
    return PRECISION_OF_GRADIENT_BYTES[width]


def compute_precision_of(case: Case) -> str:
    """The compute precision named in the run (AMP -> fp16, BF16, TF32, FP32), else the gradient's."""
    for token, precision in (("AMP", "fp16"), ("BF16", "bf16"), ("TF32", "tf32"), ("FP32", "fp32")):
        if f"-{token}" in case.id:
            return precision
    return gradient_precision_of(case.raw)


@cache
def load_cases() -> tuple[Case, ...]:
    """The published cases shipped with the package."""
    text = files("mlsysim.data").joinpath("published_scaling.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return tuple(
        Case(id=c["id"], source=c["source"], measured_eff=float(c["measured_eff"]), raw=c)
        for c in data["cases"]
    )


def scenario_for(
    case: Case,
    *,
    nodes: int | None = None,
    devices_per_node: int | None = None,
    accumulation: int | None = None,
    step_time: float | None = None,
    assumptions: Assumptions | None = None,
    extras: tuple[str, ...] = CASE_EXTRAS,
) -> TrainingScenario:
    """The scaled layout of a case (or another layout / accumulation / step time), as a scenario.

    ``step_time`` (seconds) defaults to the data's ``t1_s``; :func:`calibrated_step_time`
    gives the one that reproduces the baseline. ``extras`` are the opt-in case
    inputs given to non-seed assumptions (all of :data:`CASE_EXTRAS` by default;
    fewer for an ablation).
    """
    c = case.raw
    seed = assumptions is None or assumptions.is_seed()
    n_nodes = c["nodes"] if nodes is None else nodes
    inter = (
        None
        if c["inter_Gbps"] is None or n_nodes == 1
        else quantity(float(c["inter_Gbps"]), "Gbps")
    )
    extra: dict[str, object] = {}
    if not seed:
        extra = {
            "gradient_precision": gradient_precision_of(c),
            "optimizer": family_of(case.id).optimizer,
            "memory_bandwidth": quantity(memory_bandwidth_of(case.id), "B/s"),
            "inter_transport": "tcp" if "TCP" in case.id else None,
            "input_pipeline": family_of(case.id).input_pipeline,
        }
        if "optimizer" not in extras:
            extra["optimizer"] = extra["memory_bandwidth"] = None
        if "inter_transport" not in extras:
            extra["inter_transport"] = None
        if "input_pipeline" not in extras:
            extra["input_pipeline"] = None
    return TrainingScenario(
        name=case.id,
        description=case.source,
        workload=Workload(name=case.id, parameters=quantity(float(c["params"]), "param")),
        precision=gradient_precision_of(c)
        if seed
        else compute_precision_of(case),
        step_time=quantity(float(c["t1_s"] if step_time is None else step_time), "s"),
        training_time=quantity(1.0, "hour"),
        per_device_batch=int(c["batch"]),
        devices_per_node=int(
            c["devices_per_node"] if devices_per_node is None else devices_per_node
        ),
        nodes=n_nodes,
        intra_bandwidth=quantity(float(c["intra_GBps"]), "GB/s"),
        inter_bandwidth=inter,
        nics_per_node=None if seed or inter is None else c["nics_per_node"],
        accumulation_steps=int(c["accumulation_scaled"] if accumulation is None else accumulation),
        assumptions=assumptions or Assumptions(),
        **extra,
    )


def base_scenario_for(
    case: Case,
    assumptions: Assumptions | None = None,
    step_time: float | None = None,
    extras: tuple[str, ...] = CASE_EXTRAS,
) -> TrainingScenario:
    """The baseline layout of a case: one GPU, or one node, at ``accumulation_base``."""
    one_gpu = case.raw["base"] == "1gpu"
    return scenario_for(
        case,
        nodes=1,
        devices_per_node=1 if one_gpu else None,
        accumulation=int(case.raw["accumulation_base"]),
        step_time=step_time,
        assumptions=assumptions,
        extras=extras,
    )


def _inputs(scenario: TrainingScenario) -> dict[str, float]:
    """The model's numeric inputs of a scenario, by attribute (canonical SI floats)."""
    x = model_inputs(scenario.inputs())
    return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}


@cache
def _stacked(
    seed: bool, layout: str, ids: tuple[str, ...], extras: tuple[str, ...] = CASE_EXTRAS
) -> dict[str, np.ndarray]:
    """The Inputs of every case's ``layout`` ("scaled" or "base") as arrays (cached)."""
    by_id = {c.id: c for c in load_cases()}
    a = Assumptions() if seed else Assumptions.realistic()
    rows = []
    for case_id in ids:
        case = by_id[case_id]
        scenario = (
            scenario_for(case, assumptions=a, extras=extras)
            if layout == "scaled"
            else base_scenario_for(case, a, extras=extras)
        )
        rows.append(_inputs(scenario))
    return {k: np.asarray([r[k] for r in rows], dtype=float) for k in rows[0]}


def _evaluate(
    cases: tuple[Case, ...],
    assumptions: Assumptions,
    layout: str,
    step_time: np.ndarray,
    extras: tuple[str, ...] = CASE_EXTRAS,
) -> Figures:
    ids = tuple(c.id for c in cases)
    every = tuple(c.id for c in load_cases())
    position = _positions(every)
    if all(i in position for i in ids):  # rows of the stack of every case (built once)
        rows = np.asarray([position[i] for i in ids], dtype=np.intp)
        stack = _stacked(assumptions.is_seed(), layout, every, extras)
        arrays = {k: v[rows] for k, v in stack.items()}
    else:
        arrays = dict(_stacked(assumptions.is_seed(), layout, ids, extras))
    arrays["step_time"] = step_time
    return evaluate(Inputs(**arrays), choices_of(assumptions))


@cache
def _positions(ids: tuple[str, ...]) -> dict[str, int]:
    return {case_id: k for k, case_id in enumerate(ids)}


def calibrated_step_time(
    cases: tuple[Case, ...] | list[Case],
    assumptions: Assumptions,
    iterations: int = 60,
    extras: tuple[str, ...] = CASE_EXTRAS,
) -> np.ndarray:
    """T1 per case such that the baseline's update time per micro-step equals ``t1_s``.

    Fixed-point iteration ``T1 <- T1 + (t1_s - update_time(base; T1) / A_base)``;
    the update time grows with T1 at a slope of about A_base, so it converges in a
    few steps (a test checks the residual).
    """
    cases = tuple(cases)
    t1 = np.asarray([c.raw["t1_s"] for c in cases], dtype=float)
    a_base = np.asarray([c.raw["accumulation_base"] for c in cases], dtype=float)
    step = t1.copy()
    for _ in range(iterations):
        per_micro_step = _evaluate(cases, assumptions, "base", step, extras).update_time / a_base
        gap = t1 - per_micro_step
        step = np.maximum(step + gap, 1e-3 * t1)
        if np.max(np.abs(gap) / t1) < 1e-12:
            break
    return step


def predict_all(
    assumptions: Assumptions | None = None,
    cases: tuple[Case, ...] | list[Case] | None = None,
    extras: tuple[str, ...] = CASE_EXTRAS,
) -> np.ndarray:
    """Predicted scaling efficiency of every case, relative to its baseline (one array)."""
    a = assumptions or Assumptions()
    chosen = tuple(cases) if cases is not None else load_cases()
    step = calibrated_step_time(chosen, a, extras=extras)
    scaled = _evaluate(chosen, a, "scaled", step, extras)
    t1 = np.asarray([c.raw["t1_s"] for c in chosen], dtype=float)
    a_scaled = np.asarray([c.raw["accumulation_scaled"] for c in chosen], dtype=float)
    return np.asarray(a_scaled * t1 / scaled.update_time, dtype=float)


PREDICTION = "accumulation_scaled x t1_s / result.update_time"
"""How a case's predicted scaling efficiency is read off its scenario's result: the useful
work of the scaled layout (its micro-steps at the baseline's measured step) over its update."""


def prediction_scenarios(
    assumptions: Assumptions | None = None, cases: tuple[Case, ...] | list[Case] | None = None
) -> list[dict[str, object]]:
    """Each case's scaled scenario as a scenario file holds it (its step time the calibrated one,
    :func:`calibrated_step_time`), with the figures the prediction reads beside it: the case's
    predicted efficiency is ``accumulation_scaled x t1_s / scenario.result.update_time``."""
    from mlsysim.engine.io.files import scenario_to_dict

    a = assumptions or Assumptions()
    chosen = tuple(cases) if cases is not None else load_cases()
    steps = calibrated_step_time(chosen, a)
    return [
        {
            "scenario": scenario_to_dict(scenario_for(case, step_time=float(step), assumptions=a)),
            "accumulation_scaled": case.raw["accumulation_scaled"],
            "t1_s": case.raw["t1_s"],
            "prediction": PREDICTION,
        }
        for case, step in zip(chosen, steps, strict=True)
    ]


def predict(case: Case, assumptions: Assumptions | None = None) -> float:
    """Predicted scaling efficiency of one case, relative to its baseline (one GPU or one node)."""
    return float(predict_all(assumptions, [case])[0])


def compare(
    assumptions: Assumptions | None = None,
    cases: tuple[Case, ...] | list[Case] | None = None,
    extras: tuple[str, ...] = CASE_EXTRAS,
) -> list[Comparison]:
    """Every case predicted under ``assumptions`` (the seed model by default)."""
    chosen = tuple(cases) if cases is not None else load_cases()
    predicted = predict_all(assumptions, chosen, extras)
    return [Comparison(c, float(p)) for c, p in zip(chosen, predicted, strict=True)]


def summary(comparisons: list[Comparison]) -> tuple[float, float]:
    """(median, maximum) absolute error, as fractions of efficiency."""
    errors = [abs(c.error) for c in comparisons]
    return statistics.median(errors), max(errors)


def summarize(comparisons: list[Comparison]) -> Summary:
    """Median and worst absolute error and the mean signed error of ``comparisons``."""
    return Summary.of([c.error for c in comparisons])


def by_family(comparisons: list[Comparison]) -> dict[str, Summary]:
    """:class:`Summary` per family, in the order families first appear."""
    groups: dict[str, list[float]] = {}
    for c in comparisons:
        groups.setdefault(c.case.family, []).append(c.error)
    return {name: Summary.of(errors) for name, errors in groups.items()}


# --- the one fitted constant, and leave-one-family-out cross-validation -------------------


def jitter_shares(cases: tuple[Case, ...] | list[Case]) -> np.ndarray:
    """Each case's share p of the host jitter: the model number ``input_pipeline`` of its
    scenario under non-seed assumptions, which the case's input pipeline sets (1 for real
    data read on the host, 0 for inputs made or decoded on the device)."""
    ids = tuple(c.id for c in cases)
    every = tuple(c.id for c in load_cases())
    position = _positions(every)
    if all(i in position for i in ids):  # rows of the stack of every case (built once)
        rows = np.asarray([position[i] for i in ids], dtype=np.intp)
        return _stacked(False, "scaled", every)["input_pipeline"][rows]
    return _stacked(False, "scaled", ids)["input_pipeline"]


def fit_host_jitter(
    assumptions: Assumptions, cases: tuple[Case, ...] | list[Case] | None = None
) -> float:
    """The host jitter (seconds) at which the mean signed error over the ``cases`` it applies
    to is zero: those whose inputs are prepared on the host (the share p of the jitter their
    scenario's ``input_pipeline`` brings is above 0: :func:`jitter_shares`). A case the jitter does
    not touch (inputs on the device, or synthetic) cannot inform it, and counting its errors
    would make the jitter absorb misses of other terms.

    Every other value of ``assumptions`` is kept. The mean error falls as the
    jitter grows (more waiting, lower predicted efficiency), so the root is
    bracketed on [0, 100 ms] and found by regula falsi with the Illinois
    modification (Dowell and Jarratt 1971, "A modified regula falsi method for
    computing the root of an equation"), to 1e-10 s; 0 when the model is
    already pessimistic at 0, or when no case prepares its inputs on the host.
    """
    candidates = tuple(cases if cases is not None else load_cases())
    shares = jitter_shares(candidates)
    chosen = tuple(c for c, share in zip(candidates, shares, strict=True) if share > 0)
    if not chosen:
        return 0.0
    measured = np.asarray([c.measured_eff for c in chosen])

    def bias(jitter: float) -> float:
        a = assumptions.variant(host_jitter=quantity(jitter, "s"))
        return float(np.mean(predict_all(a, chosen) - measured))

    low, high = 0.0, 0.1
    f_low, f_high = bias(low), bias(high)
    if f_low <= 0:
        return 0.0
    if f_high > 0:
        return high
    side = 0
    for _ in range(100):
        x = (low * f_high - high * f_low) / (f_high - f_low)
        f = bias(x)
        if f > 0:
            low, f_low = x, f
            if side == 1:
                f_high /= 2
            side = 1
        else:
            high, f_high = x, f
            if side == -1:
                f_low /= 2
            side = -1
        if high - low < 1e-10 or abs(f) < 1e-12:
            return x
    return 0.5 * (low + high)


def nodes_of_cases(cases: tuple[Case, ...] | list[Case] | None = None) -> np.ndarray:
    """The number of nodes of every case's scaled layout: the second input of the difficulty
    :func:`mlsysim.engine.reports.bands.difficulty` scales the residuals by."""
    chosen = tuple(cases) if cases is not None else load_cases()
    return np.asarray([c.raw["nodes"] for c in chosen], dtype=float)


def refits_host_jitter(assumptions: Assumptions) -> bool:
    """True when ``assumptions`` use the fitted host jitter of the realistic preset.

    Its value was fitted to every published case, so an honest out-of-family
    prediction refits it without the family predicted. Any other value was given,
    not fitted, and is kept.
    """
    from mlsysim.engine.inputs.assumptions import REALISTIC_HOST_JITTER

    return bool(assumptions.host_jitter == REALISTIC_HOST_JITTER) and not assumptions.is_seed()


@dataclass(frozen=True)
class OutOfFamily:
    """Every case predicted by a model that has not seen its family (leave one family out).

    ``jitters``: family -> the host jitter fitted without it (seconds), empty when
    the assumptions fit nothing (:func:`refits_host_jitter`).
    """

    cases: tuple[Case, ...]
    predicted: np.ndarray
    jitters: dict[str, float]

    @property
    def residuals(self) -> np.ndarray:
        """measured - predicted per case (fractions of efficiency)."""
        return np.asarray([c.measured_eff for c in self.cases]) - self.predicted


CASE_SETS = ("all", "issue")
"""The sets of cases a check can run on: ``all`` the cases of the package, ``issue`` the 61
of the shared data set issue 23 names its targets on (the 43 first cases and the 18 marked
``"added": "2026-12-01"``; not those the project collected since, whose ``added`` names it)."""


def cases_of(subset: str = "all", field: str = "subset") -> tuple[Case, ...]:
    """The cases of one of :data:`CASE_SETS` (``field``: how an error names the input)."""
    if subset not in CASE_SETS:
        raise InputError(f"{field}: expected one of {', '.join(CASE_SETS)}, got {subset!r}")
    cases = load_cases()
    if subset == "issue":
        return tuple(c for c in cases if c.raw.get("added") in (None, "2026-12-01"))
    return cases


@cache
def out_of_family(assumptions: Assumptions, subset: str = "all") -> OutOfFamily:
    """Predict each family with the constants fitted without it (cached per assumptions).

    Where the assumptions hold the fitted host jitter (:func:`refits_host_jitter`), it is
    refitted on the other families (:func:`fit_host_jitter`) before the family is
    predicted; otherwise nothing is fitted and the prediction is the plain one.
    ``subset``: the cases (:data:`CASE_SETS`).
    """
    cases = cases_of(subset)
    families = np.asarray([c.family for c in cases])
    predicted = np.empty(len(cases))
    jitters: dict[str, float] = {}
    refit = refits_host_jitter(assumptions)
    for family in dict.fromkeys(families.tolist()):
        held = families == family
        test = tuple(c for c, h in zip(cases, held, strict=True) if h)
        fitted = assumptions
        if refit:
            train = tuple(c for c, h in zip(cases, held, strict=True) if not h)
            jitters[family] = fit_host_jitter(assumptions, train)
            fitted = assumptions.variant(host_jitter=quantity(jitters[family], "s"))
        predicted[held] = predict_all(fitted, test)
    return OutOfFamily(cases, predicted, jitters)


@dataclass(frozen=True)
class CrossValidation:
    """Leave-one-family-out results: each family predicted by a model fitted without it, and
    given the normalised conformal interval of the other families' out-of-family residuals."""

    comparisons: list[Comparison]
    covered: np.ndarray  # per case: measured inside its ``level`` interval
    widths: np.ndarray  # per case: the interval's width (fraction of efficiency)
    lows: np.ndarray  # per case: the interval (efficiency), clipped to [0.001, 1]
    highs: np.ndarray
    jitters: dict[str, float]  # family -> host jitter fitted without it (seconds)
    level: float

    @property
    def summary(self) -> Summary:
        return summarize(self.comparisons)

    @property
    def coverage(self) -> float:
        return float(np.mean(self.covered))

    @property
    def median_width(self) -> float:
        return float(np.median(self.widths))

    @property
    def family_coverage(self) -> float:
        """The coverage of the average family (each family's share of cases inside, averaged
        over families): the figure for the next family, whatever its number of cases."""
        return family_mean(self.covered, [c.case.family for c in self.comparisons])


def _held_out_bands(
    predicted: np.ndarray,
    residuals: np.ndarray,
    families: np.ndarray,
    scale: np.ndarray,
    level: float,
    within: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of each case: the conformal band of the scores residual / scale of the
    *other* families (among the cases ``within``, all by default), times the case's own scale,
    around its prediction, clipped to [0.001, 1]. NaN outside ``within``."""
    from mlsysim.engine.reports.bands import LOWEST_EFFICIENCY, conformal_band

    inside = np.ones(len(predicted), dtype=bool) if within is None else within
    scores = residuals / scale
    lows = np.full(len(predicted), np.nan)
    highs = np.full(len(predicted), np.nan)
    for family in dict.fromkeys(families[inside].tolist()):
        held = families == family
        others = inside & ~held
        z_lo, z_hi = conformal_band(scores[others], level, families[others])
        lows[held] = np.clip(predicted[held] + z_lo * scale[held], LOWEST_EFFICIENCY, 1.0)
        highs[held] = np.clip(predicted[held] + z_hi * scale[held], LOWEST_EFFICIENCY, 1.0)
    return lows, highs


def cross_validate(
    assumptions: Assumptions | None = None,
    *,
    level: float = 0.8,
    weights: tuple[float, float] | None = None,
    subset: str = "all",
) -> CrossValidation:
    """The honesty check of the intervals: leave one family out, twice over.

    Each family F is predicted by the model fitted without it
    (:func:`out_of_family`); its interval is the normalised conformal band
    (:func:`mlsysim.engine.reports.bands.scores`) of the *other* families'
    out-of-family residuals, scaled by F's own difficulty; the check counts how
    often F's measurement falls inside. The interval a result gets uses all
    families' out-of-family residuals; this check leaves F's out of them too.
    ``weights``: the difficulty's (loss, nodes) weights (those of
    :mod:`mlsysim.engine.reports.bands` by default); ``subset``: the cases (:data:`CASE_SETS`).
    """
    from mlsysim.engine.reports.bands import DIFFICULTY_LOSS, DIFFICULTY_NODES, difficulty

    a = assumptions or Assumptions.realistic()
    loss, nodes = weights or (DIFFICULTY_LOSS, DIFFICULTY_NODES)
    oof = out_of_family(a, subset)
    cases = oof.cases
    measured = np.asarray([c.measured_eff for c in cases])
    families = np.asarray([c.family for c in cases])
    scale = difficulty(oof.predicted, nodes_of_cases(cases), loss, nodes)
    lows, highs = _held_out_bands(oof.predicted, oof.residuals, families, scale, level)
    covered = (measured >= lows) & (measured <= highs)
    comparisons = [Comparison(c, float(p)) for c, p in zip(cases, oof.predicted, strict=True)]
    return CrossValidation(comparisons, covered, highs - lows, lows, highs, oof.jitters, level)


@dataclass(frozen=True)
class ConstantCheck:
    """Whether a fitted constant of the preset earns its place on families left out: the
    held-out figures with it (refitted without each family, :func:`out_of_family`) and
    without it (the constant at 0, nothing fitted)."""

    name: str
    with_it: Summary
    without_it: Summary

    @property
    def helps(self) -> bool:
        """True when the held-out median |error| is lower with the constant than without."""
        return self.with_it.median_abs < self.without_it.median_abs


def host_jitter_check(assumptions: Assumptions | None = None, subset: str = "all") -> ConstantCheck:
    """The held-out figures of the realistic preset with its fitted host jitter (refitted
    without each family, so no family is scored with a constant fitted on it) and without
    it (host_jitter 0): the preset keeps the jitter only if it ``helps`` (docs/model.md,
    section 3)."""
    a = assumptions or Assumptions.realistic()
    without = a.variant(host_jitter=quantity(0.0, "s"))

    def held_out(x: Assumptions) -> Summary:
        oof = out_of_family(x, subset)
        return Summary.of(-oof.residuals)

    return ConstantCheck("host_jitter", held_out(a), held_out(without))


LOSS_WEIGHTS = (0.0, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0)
"""The loss weights :func:`choose_difficulty_weights` tries."""
NODE_WEIGHTS = (0.0, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 1.0)
"""The node weights :func:`choose_difficulty_weights` tries."""


def interval_score(
    low: np.ndarray, high: np.ndarray, measured: np.ndarray, level: float
) -> np.ndarray:
    """The interval score of central ``level`` intervals (Gneiting and Raftery 2007, "Strictly
    Proper Scoring Rules, Prediction, and Estimation", JASA, section 6.2), per case:

        S = (u - l) + (2 / a) (l - y) [y < l] + (2 / a) (y - u) [y > u],   a = 1 - level

    the width, plus a penalty for a measurement outside that grows with its distance. It is
    a proper scoring rule: its expectation is least for the true quantiles, so a lower mean
    score rewards bands that are both narrow and right, without a coverage window."""
    a = 1.0 - level
    below = np.maximum(low - measured, 0.0)
    above = np.maximum(measured - high, 0.0)
    return np.asarray((high - low) + (2.0 / a) * (below + above), dtype=float)


def family_mean(values: ArrayLike, families: ArrayLike) -> float:
    """The mean of ``values`` over families, each family weighing alike (the mean of its
    cases' values): the next family, not the next case, is what a band is for."""
    v = np.asarray(values, dtype=float)
    labels = np.asarray(families)
    return float(np.mean([np.mean(v[labels == name]) for name in dict.fromkeys(labels.tolist())]))


@dataclass(frozen=True)
class WeightChoice:
    """The difficulty's weights picked by the leave-one-family-out check, and the check of
    the picking itself.

    ``grid``: (loss, nodes) -> (held-out coverage, median width, interval score averaged
    over families) on every family; ``chosen``: the pair of the lowest mean interval score;
    ``nested_coverage`` / ``nested_width``: each family's band built with the weights the
    same rule picks *without that family* (an inner leave-one-family-out over the others),
    the honest figure of a band whose weights were picked on data; ``nested_choices``:
    family -> the weights picked without it.
    """

    grid: dict[tuple[float, float], tuple[float, float, float]]
    chosen: tuple[float, float]
    nested_coverage: float
    nested_width: float
    nested_choices: dict[str, tuple[float, float]]


def _best_weights(
    predicted: np.ndarray,
    residuals: np.ndarray,
    families: np.ndarray,
    scales: dict[tuple[float, float], np.ndarray],
    level: float,
    within: np.ndarray,
) -> tuple[float, float]:
    """The difficulty's weights (of ``scales``, in their order: ties to the first) whose
    held-out bands over the cases ``within`` (each family left out of its own band in turn)
    have the lowest :func:`interval_score` averaged over those families."""
    measured = residuals + predicted

    def score(pair: tuple[float, float]) -> float:
        lows, highs = _held_out_bands(predicted, residuals, families, scales[pair], level, within)
        per_case = interval_score(lows, highs, measured, level)
        return family_mean(per_case[within], families[within])

    return min(scales, key=score)


def choose_difficulty_weights(
    assumptions: Assumptions | None = None,
    *,
    level: float = 0.8,
    loss_weights: tuple[float, ...] = LOSS_WEIGHTS,
    node_weights: tuple[float, ...] = NODE_WEIGHTS,
) -> WeightChoice:
    """Pick the difficulty's weights s = 1 + w_loss e (1 - e) + w_nodes log2(N) by the
    leave-one-family-out check alone (never in sample): the pair whose held-out ``level``
    bands have the lowest :func:`interval_score` averaged over families
    (:func:`family_mean`: each family weighs alike, as in the bands themselves; ties: the
    first in grid order). Then
    the same rule is repeated without each family in turn (nested), to give the coverage
    and width of the picking itself.

    An earlier rule (the narrowest median width among the pairs covering 75-85%) was
    dropped when the MXNet family's input pipeline was corrected: the widths of the grid
    lie within about one point of each other, that rule's pick jumped with one family more
    or less, and its nested check covered 87% at 15.3 points (docs/model.md, section 4.5)."""
    from mlsysim.engine.reports.bands import difficulty

    a = assumptions or Assumptions.realistic()
    oof = out_of_family(a)
    measured = np.asarray([c.measured_eff for c in oof.cases])
    families = np.asarray([c.family for c in oof.cases])
    nodes = nodes_of_cases(oof.cases)
    pairs = [(w_l, w_n) for w_l in loss_weights for w_n in node_weights]
    scales = {pair: difficulty(oof.predicted, nodes, *pair) for pair in pairs}

    def bands(pair: tuple[float, float], within: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _held_out_bands(oof.predicted, oof.residuals, families, scales[pair], level, within)

    def pick(within: np.ndarray) -> tuple[float, float]:
        return _best_weights(oof.predicted, oof.residuals, families, scales, level, within)

    everyone = np.ones(len(oof.cases), dtype=bool)
    grid: dict[tuple[float, float], tuple[float, float, float]] = {}
    for pair in pairs:
        lows, highs = bands(pair, everyone)
        inside = (measured >= lows) & (measured <= highs)
        mean_score = family_mean(interval_score(lows, highs, measured, level), families)
        grid[pair] = (float(np.mean(inside)), float(np.median(highs - lows)), mean_score)
    lows = np.empty(len(oof.cases))
    highs = np.empty(len(oof.cases))
    choices: dict[str, tuple[float, float]] = {}
    for family in dict.fromkeys(families.tolist()):
        held = families == family
        choices[family] = pick(~held)
        family_lows, family_highs = bands(choices[family], everyone)
        lows[held], highs[held] = family_lows[held], family_highs[held]
    inside = (measured >= lows) & (measured <= highs)
    return WeightChoice(
        grid=grid,
        chosen=pick(everyone),
        nested_coverage=float(np.mean(inside)),
        nested_width=float(np.median(highs - lows)),
        nested_choices=choices,
    )


@cache
def _jitter_without(assumptions: Assumptions, left_out: frozenset[str], subset: str = "all") -> Assumptions:
    """``assumptions`` with the host jitter refitted on the cases outside the families
    ``left_out`` (as given where they hold no fitted jitter, :func:`refits_host_jitter`)."""
    if not refits_host_jitter(assumptions):
        return assumptions
    train = tuple(c for c in cases_of(subset) if c.family not in left_out)
    return assumptions.variant(host_jitter=quantity(fit_host_jitter(assumptions, train), "s"))


@dataclass(frozen=True)
class NestedCheck:
    """The fully nested leave-one-family-out check of the data-parallel band: every family F
    left out of everything its band is built from (:func:`nested_cross_validate`).

    ``covered`` / ``lows`` / ``highs``: per case, its family's band and whether it holds the
    measurement; ``choices``: family -> the difficulty's weights picked without it."""

    cases: tuple[Case, ...]
    covered: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    choices: dict[str, tuple[float, float]]
    level: float

    @property
    def coverage(self) -> float:
        return float(np.mean(self.covered))

    @property
    def family_coverage(self) -> float:
        """The coverage of the average family (each family weighing alike)."""
        return family_mean(self.covered, [c.family for c in self.cases])

    @property
    def median_width(self) -> float:
        return float(np.median(self.highs - self.lows))


@cache
def nested_cross_validate(
    assumptions: Assumptions | None = None,
    *,
    level: float = 0.8,
    subset: str = "all",
    loss_weights: tuple[float, ...] = LOSS_WEIGHTS,
    node_weights: tuple[float, ...] = NODE_WEIGHTS,
) -> NestedCheck:
    """The honest figure of the band a result gets, for a family the model has not seen: each
    family F in turn is left out of *everything* its band is built from (cached).

    For F: every other family G is predicted with the host jitter refitted without F and G
    (:func:`_jitter_without`; F's cases never move a residual its band is built from); the
    difficulty's weights are picked on those residuals alone, by the rule of
    :func:`choose_difficulty_weights` (the lowest interval score of the other families, each
    left out in turn); F's band is the conformal band of the other families' scores under
    those weights (:func:`mlsysim.engine.reports.bands.conformal_band`, each family weighing
    alike), around F's prediction with the jitter refitted without F, scaled by F's own
    difficulty. The check counts how often F's measurements fall inside (docs/model.md,
    section 4.5; ``mlsysim validate published --cv`` prints it). The inner pick of the weights
    reuses the residuals without F and G, not a third level of refits: one constant moving a
    fraction of a millisecond between those fits.
    """
    from mlsysim.engine.reports.bands import difficulty

    a = assumptions or Assumptions.realistic()
    cases = cases_of(subset)
    families = np.asarray([c.family for c in cases])
    measured = np.asarray([c.measured_eff for c in cases])
    nodes = nodes_of_cases(cases)
    names = list(dict.fromkeys(families.tolist()))
    pairs = [(w_l, w_n) for w_l in loss_weights for w_n in node_weights]
    lows, highs = np.empty(len(cases)), np.empty(len(cases))
    choices: dict[str, tuple[float, float]] = {}
    for family in names:
        predicted = np.empty(len(cases))
        for other in names:
            held = families == other
            fitted = _jitter_without(a, frozenset({family, other}), subset)
            predicted[held] = predict_all(fitted, tuple(c for c, h in zip(cases, held, strict=True) if h))
        residuals = measured - predicted
        scales = {pair: difficulty(predicted, nodes, *pair) for pair in pairs}
        choices[family] = _best_weights(predicted, residuals, families, scales, level, families != family)
        everyone = np.ones(len(cases), dtype=bool)
        low, high = _held_out_bands(predicted, residuals, families, scales[choices[family]], level, everyone)
        held = families == family
        lows[held], highs[held] = low[held], high[held]
    covered = (measured >= lows) & (measured <= highs)
    return NestedCheck(cases, covered, lows, highs, choices, level)


def in_sample_coverage(
    assumptions: Assumptions,
    level: float = 0.8,
    cases: tuple[Case, ...] | list[Case] | None = None,
) -> tuple[float, float]:
    """(coverage, median width) of the intervals results get, on the cases whose residuals
    built them (:func:`mlsysim.engine.reports.bands.efficiency_interval_of`; all of them, or
    ``cases``): a check of the arithmetic, not of honesty (:func:`cross_validate` is that)."""
    from mlsysim.engine.reports.bands import efficiency_interval_of

    chosen = tuple(cases) if cases is not None else load_cases()
    predicted = predict_all(assumptions, chosen)
    low, high = efficiency_interval_of(assumptions, predicted, nodes_of_cases(chosen), level)
    measured = np.asarray([c.measured_eff for c in chosen])
    inside = (measured >= low) & (measured <= high)
    return float(np.mean(inside)), float(np.median(high - low))
