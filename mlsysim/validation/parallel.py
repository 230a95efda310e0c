"""Predict published model-parallel training runs (tensor, pipeline, data, ZeRO-3) through the public scenario.

The runs are ``mlsysim/data/published_parallel.json`` (sources and the quoted
rows in each entry): Megatron-LM's weak scaling (Narayanan et al. 2021, Table
1) and its PTD-P vs ZeRO-3 comparison (Table 2), sequence parallelism with
selective recomputation (Korthikanti et al. 2022, Table 5 and section 6.3),
MT-NLG 530B (Smith et al. 2022), Llama 3 405B (Llama Team 2024, Table 4) and
BLOOM-176B (BigScience's training logs).

One path. Each run becomes the inputs of a
:class:`~mlsysim.DataParallelScaleOutScenario`, in the form of a scenario file
(:func:`scenario_inputs`: the model's shape, the registry node of its GPU
generation, the layout, what the source does not state named in
:data:`ASSUMED`), and its prediction is ``scenario.result.update_time``: the
figure a user gets for the same inputs. This module maps a source's
description to those inputs and computes the statistics; it has no physics of
its own. A run the scenario cannot express is listed in :data:`NOT_EXPRESSIBLE`
with what is missing; a run the source does not describe fully enough in
:data:`EXCLUDED`.

Constants, fitted and reported honestly:

* ``mfu`` u, the math-kernel efficiency of one GPU generation: the u that
  makes each run's prediction exact is found by bisection, and a generation's
  u is the median of those of the runs it is fitted on (which minimises the
  median error). Runs whose family has an implementation rate (below) do not
  inform u.
* An implementation's achieved collective rate, a named assumption of one
  family only (:data:`IMPLEMENTATION_RATES`): DeepSpeed's ZeRO-3 of 2021
  (``sharding_rate``) and DeepSpeed's pipeline engine of 2021 in MT-NLG
  (``pipeline_rate``). It is fitted on that family alone, and each of its runs
  is reported predicted from the family's other runs (leave one run out).

The headline is the figure with each family left out: the family's runs
predicted with the u fitted on the other families (a generation with no run
left takes the A100's); the in-sample figure comes second.

Comparison, like with like. A source reports teraFLOP/s per GPU under its own
FLOP count (hardware FLOPs with the recomputed forward for Megatron-LM 2021,
MT-NLG and BLOOM: 96 B s L h^2 (1 + s/6h + V/(16 L h)); model FLOPs for
Llama 3) or the iteration time. Both are turned into the measured time of one
update, T = FLOPs / (rate x GPUs) under the source's own count, so the
predicted throughput over the measured one is T_measured / T_predicted
whichever count the source used, and the error is that ratio minus one.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from mlsysim.core.units import quantity
from mlsysim.engine.inputs.assumptions import Assumptions
from mlsysim.engine.io.files import assumptions_value
from mlsysim.engine.reports.bands import Scores

SEED = Assumptions()
"""The assumptions the published runs are predicted under by default: the links at their
nominal rate (the kernel efficiency is fitted on them), each run's own overlap."""

if TYPE_CHECKING:
    from mlsysim.engine.results import DataParallelScaleOutResult
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario

MEDIAN_TARGET = 0.05
"""Issue 29: median |error| with each family left out at most 5%."""

NODE_OF_GENERATION = {"A100": "DGX_A100", "H100": "DGX_H100", "H100 500 W": "DGX_H100"}
"""The registry node whose figures a run's GPU generation is given (peak, HBM, NVLink, NICs).
Llama 3's Grand Teton servers have the same 400 Gb/s per GPU as a DGX H100."""

CLUSTER_NETWORK: dict[str, dict[str, object]] = {
    "Jean Zay": {"inter_bandwidth": "100 Gbps", "nics_per_node": 4},
}
"""Inter-node links of a cluster that are not its generation's registry node's (by the start of the entry's cluster).

Jean Zay (BLOOM-176B): "4 OmniPath links" per 8-GPU A100 node (BigScience tr11-176B-ml
training README, "Hardware"); Intel Omni-Path Architecture 100 series links carry
100 Gb/s per direction (nominal). The DGX A100 figures would give it eight 200 Gb/s HDR
NICs, four times the bandwidth.
"""

EXCLUDED: dict[str, str] = {}
"""Runs the source does not describe enough to predict, with the reason (none now)."""

NOT_EXPRESSIBLE = {
    "llama3_405b_16384gpu_seq131072": "context parallelism (16-way): the scenario has no context_parallel input yet",
}

FRONTIER_FAMILIES = ("TorchTitan",)
"""Families of ``published_frontier.json`` whose dense runs this validation predicts (the mixtures of experts,
Blackwell runs and DeepSeek-V3 belong to the frontier's own validation)."""


def frontier_not_expressible(entry: Mapping[str, Any]) -> str | None:
    """What a dense frontier run needs that the scenario lacks (None: expressible)."""
    layout = entry["layout"]
    if (layout.get("context_parallel") or 1) > 1:
        return f"context parallelism ({layout['context_parallel']}-way): no context_parallel input yet"
    if layout.get("async_tensor_parallel"):
        return "asynchronous tensor parallelism (collectives overlapped with the matrix products): no input for it yet"
    return None
"""Runs the scenario cannot express, with what it lacks (never predicted by another formula)."""

ASSUMED: dict[str, dict[str, Any]] = {
    "korthikanti2022_530B_dp8_2240gpu_full_recompute": {
        "micro_batch": 1,
        "global_batch": 2240,
        "pipeline_chunks": 3,
        "overlap": False,
        "why": "the abstract states only the MFU (42.1%) of this baseline, against 54.2% for the run of "
        "section 6.3 on the same 2,240 GPUs ('29% faster'): a like-for-like comparison, so the same batch "
        "(2,240), micro-batch (1), interleaving (v = 3) and unoverlapped gradient all-reduce as that run",
    },
    "narayanan2021_table2_ptd_175B": {
        "tensor_parallel": 8,
        "pipeline_parallel": 12,
        "recompute": "full",
        "why": "Table 2 gives only t p = 96; t = 8 (one node, as in every Table 1 model of 18B parameters and more) "
        "leaves p = 12; full recomputation as in Table 1",
    },
    "narayanan2021_table2_ptd_530B": {
        "pipeline_chunks": 3,
        "recompute": "full",
        "why": "'the 530-billion-parameter model from Table 1': its interleaving (v = 3) and full recomputation",
    },
    "narayanan2021_table2_zero3": {
        "recompute": "full",
        "why": "not stated; the runs use Megatron-LM's code with DeepSpeed's ZeRO-3 and report Table 1's FLOP count, "
        "which includes the recomputed forward",
    },
    "mtnlg530b": {
        "micro_batch": 1,
        "recompute": "full",
        "overlap": False,
        "why": "micro-batch not read from the paper (1, as every other 530B run here); full recomputation because "
        "the quoted teraFLOP/s equal Megatron-LM's count with the recomputed forward (126 x 2240 x 60.1 s = "
        "1.70e19 FLOPs); DeepSpeed's pipeline engine reduces gradients after the pipeline flush",
    },
    "llama3": {
        "micro_batch": 1,
        "pipeline_chunks": 4,
        "zero_stage": 3,
        "reshard_after_forward": 0,
        "recompute": "none",
        "flash_attention": 1,
        "first_stage_layers": 7,
        "last_stage_layers": 7,
        "why": "the interleaving V is not stated (4 assumed: about 2 layers per chunk on 8-layer stages); "
        "FSDP that does not reshard after the forward; one sequence per micro-batch (the table's batch per "
        "data-parallel group is the micro-batch count); no recomputation at 8K tokens (section 3.3.2); "
        "fused attention kernels; 126 layers on 16 stages with one layer fewer on the first and the last "
        "(section 3.3.2)",
    },
    "torchtitan": {
        "flash_attention": 1,
        "why": "PyTorch's scaled_dot_product_attention runs fused (FlashAttention or cuDNN) kernels on H100; the "
        "Grand Teton H100s are a 500 W HBM2e variant whose peak and memory bandwidth are not stated (the DGX "
        "H100's figures); FSDP2 reshards after the forward (its default); 'selective' is torchtitan's per-op "
        "selective checkpointing (the attention core recomputed, as Megatron's)",
    },
    "bloom176b": {
        "recompute": "full",
        "overlap": False,
        "first_stage_layers": 5,
        "last_stage_layers": 5,
        "why": "DeepSpeed's pipeline engine reduces gradients after the pipeline flush; 70 layers plus the two "
        "embeddings as pipeline blocks on 12 stages (partition 'type:transformer|embedding': 72 blocks, 6 a "
        "stage, so 5 layers beside an embedding on the first and the last stage)",
    },
}
"""Inputs each family or run does not state, keyed by a prefix of the run id; the longest prefix wins."""

ZERO3_FAMILY = "ZeRO-3 baseline in Narayanan et al. 2021"
MTNLG_FAMILY = "MT-NLG 530B"

IMPLEMENTATION_RATES = {ZERO3_FAMILY: "sharding_rate", MTNLG_FAMILY: "pipeline_rate"}
"""Families run by an implementation whose achieved collective rate is a named assumption
(:class:`~mlsysim.Assumptions`), fitted on the family alone: DeepSpeed's ZeRO-3 gathers and
DeepSpeed's pipeline engine, both of 2021 (docs/parallelism.md)."""

U_RANGE = (0.02, 1.0)
"""Bisection range of a matrix-product ceiling."""

ARCHITECTURE_OF_GENERATION = {"A100": "Ampere", "H100": "Hopper", "H100 500 W": "Hopper"}
"""The registry architecture of each GPU generation (the key of its fitted ceilings)."""

SIXTEEN_BIT = "bf16"
RATE_RANGE = (1e8, 1e13)
"""Bisection range of an implementation's achieved rate, bytes/s."""


@dataclass(frozen=True, eq=False)
class ParallelCase:
    """One published run, as the inputs of a scenario file (without ``mfu``, which is fitted)."""

    id: str
    family: str
    generation: str
    source: str
    inputs: Mapping[str, object]
    """The scenario's inputs as a scenario file holds them (:func:`mlsysim.engine.io.files.scenario_from_dict`)."""
    measured_time: float
    """Seconds per update, from the source's iteration time or its rate under its own FLOP count."""
    metric: str
    """What was compared: the iteration time, or teraFLOP/s per GPU."""
    assumptions: str
    rate: str | None = None
    """The implementation rate this run's family is priced with (None: the links')."""
    format: str = SIXTEEN_BIT
    """The linear layers' number format (``matmul_format``): the ceiling the run informs."""


def _generation(entry: Mapping[str, Any]) -> str:
    gpu = entry["hardware"]["gpu"]
    if "H100" in gpu:
        return POWER_CAPPED_H100 if "500 W" in gpu else "H100"
    return "A100"


POWER_CAPPED_H100 = "H100 500 W"
"""Meta's Grand Teton H100s of the TorchTitan runs: a 96 GB HBM2e part capped at 500 W, whose peak and memory
bandwidth the source says are unknown ("between SXM and NVL"). A different operating point from the 700 W
H100 SXM of a DGX H100: its ceilings are fitted on its own runs (its node's other figures are the DGX H100's)."""


def _assumed(case_id: str) -> dict[str, Any]:
    keys = [k for k in ASSUMED if case_id.startswith(k)]
    return dict(ASSUMED[max(keys, key=len)]) if keys else {}


def _recompute_mode(value: object) -> str:
    text = str(value or "none").lower()
    for mode in ("selective", "full"):
        if text.startswith(mode):
            return mode
    return "none"


def hardware_flops(batch: float, seq_len: float, layers: float, hidden: float, vocab: float) -> float:
    """Megatron-LM's FLOPs of one update with full recomputation (Narayanan et al. 2021, equation 3).

        F = 96 B s L h^2 (1 + s / (6 h) + V / (16 L h))
    """
    s, lyr, h = seq_len, layers, hidden
    return 96.0 * batch * s * lyr * h * h * (1.0 + s / (6.0 * h) + vocab / (16.0 * lyr * h))


def palm_model_flops(tokens: float, parameters: float, layers: float, hidden: float, seq_len: float) -> float:
    """Model FLOPs of ``tokens`` tokens: (6 N + 12 L h s) per token (Chowdhery et al. 2022, appendix B)."""
    return tokens * (6.0 * parameters + 12.0 * layers * hidden * seq_len)


def korthikanti_model_flops(batch: float, seq_len: float, layers: float, hidden: float, vocab: float) -> float:
    """Model FLOPs of one update as Korthikanti et al. 2022 count them for MFU (section 6.1):

        F = 72 B L s h^2 (1 + s / (6 h) + V / (12 h L))
    """
    s, lyr, h = seq_len, layers, hidden
    return 72.0 * batch * lyr * s * h * h * (1.0 + s / (6.0 * h) + vocab / (12.0 * h * lyr))


A100_PEAK = 312e12
"""The dense 16-bit peak Korthikanti et al.'s MFU is a fraction of (A100: 312 teraFLOP/s)."""


def _measured_time(entry: Mapping[str, Any], model: Mapping[str, Any]) -> tuple[float, str]:
    measured = entry["measured"]
    if measured.get("tokens_per_second_per_gpu"):
        tokens = entry["global_batch"] * model["seq_len"]
        return tokens / (float(measured["tokens_per_second_per_gpu"]) * entry["gpus"]), "tokens/s per GPU"
    if measured.get("iteration_time_s"):
        return float(measured["iteration_time_s"]), "iteration time"
    if not measured.get("tflops_per_gpu") and measured.get("mfu"):
        batch = entry["global_batch"] or _assumed(entry["id"])["global_batch"]
        flops = korthikanti_model_flops(batch, model["seq_len"], model["layers"], model["hidden"], model["vocab"])
        return flops / (float(measured["mfu"]) / 100.0 * A100_PEAK * entry["gpus"]), "MFU (model FLOPs)"
    rate = float(measured["tflops_per_gpu"]) * 1e12 * entry["gpus"]
    if entry["id"].startswith("llama3"):
        tokens = entry["global_batch"] * model["seq_len"]
        flops = palm_model_flops(tokens, model["params_billion"] * 1e9, model["layers"], model["hidden"],
                                 model["seq_len"])
    else:
        flops = hardware_flops(entry["global_batch"], model["seq_len"], model["layers"], model["hidden"],
                               model["vocab"] or 51200)
    return flops / rate, "teraFLOP/s per GPU"


def _cluster_network(entry: Mapping[str, Any]) -> dict[str, object]:
    cluster = str(entry["hardware"].get("cluster", ""))
    return next((dict(links) for name, links in CLUSTER_NETWORK.items() if cluster.startswith(name)), {})


def scenario_inputs(entry: Mapping[str, Any]) -> dict[str, object]:
    """The scenario-file inputs of one entry of the data file: model, node, layout and what is assumed.

    ``mfu`` is left out (fitted per generation); the assumptions table holds the overlap
    of the gradient reduction (an implementation rate is added where its family has one).
    """
    model, layout = entry["model"], entry["layout"]
    assumed = _assumed(entry["id"])
    t = layout.get("tensor_parallel") or assumed["tensor_parallel"]
    p = layout.get("pipeline_parallel") or assumed["pipeline_parallel"]
    d = layout["data_parallel"]
    chunks = layout.get("interleave_chunks")
    v = chunks if isinstance(chunks, int) else assumed.get("pipeline_chunks", 1)
    b = entry.get("micro_batch") or assumed.get("micro_batch", 1)
    m = (entry["global_batch"] or assumed["global_batch"]) // (d * b)
    recompute = assumed.get("recompute") or _recompute_mode(layout.get("recompute"))
    if layout.get("recompute") and not str(layout["recompute"]).startswith("none for"):
        recompute = _recompute_mode(layout["recompute"])
    zero = layout.get("zero_stage") or assumed.get("zero_stage", 0)
    overlap = layout.get("dp_grad_allreduce_overlap") is not False and assumed.get("overlap", True)
    inputs: dict[str, object] = {
        "name": entry["id"],
        "workload": {
            "kind": "transformer",
            "name": str(model.get("arch") or entry["id"]),
            "parameters": f"{model['params_billion']}e9 param",
            "layers": int(model["layers"]),
            "hidden_dim": int(model["hidden"]),
            "heads": int(model["heads"]),
            "seq_len": int(model["seq_len"]),
            "vocab_size": int(model.get("vocab") or 51200),
            **_shape_extras(model),
        },
        "precision": "bf16",
        "matmul_format": _matmul_format(entry),
        "node": NODE_OF_GENERATION[_generation(entry)],
        "nodes": int(entry["gpus"]) // int(entry["hardware"]["gpus_per_node"]),
        **_cluster_network(entry),
        "training_samples": f"{entry['global_batch'] or assumed['global_batch']} sample",
        "per_device_batch": int(b),
        "accumulation_steps": int(m),
        "tensor_parallel": int(t),
        "pipeline_parallel": int(p),
        "zero_stage": int(zero),
        "recompute": recompute,
        "sequence_parallel": 1 if layout.get("sequence_parallel") else 0,
        "flash_attention": int(assumed.get("flash_attention", 0)),
        "optimizer": "adam",
        "assumptions": {"overlap": bool(overlap)},
    }
    if v > 1:
        inputs["pipeline_chunks"] = int(v)
    if layout.get("torch_compile"):
        inputs["fused_elementwise"] = 1
    for name in ("reshard_after_forward", "first_stage_layers", "last_stage_layers"):
        if name in assumed:
            inputs[name] = int(assumed[name])
    return inputs


def _matmul_format(entry: Mapping[str, Any]) -> str:
    """The linear layers' format of a run: bf16, fp8 (tensorwise scales: torchao's Float8 default) or fp8_rowwise."""
    text = str(entry.get("precision") or "bf16").lower()
    if not text.startswith("fp8"):
        return "bf16"
    return "fp8_rowwise" if "rowwise" in text else "fp8"


def _shape_extras(model: Mapping[str, Any]) -> dict[str, object]:
    """Grouped-query attention, the MLP's width and its gate, where the source states them."""
    out: dict[str, object] = {}
    if model.get("kv_heads"):
        out["kv_heads"] = int(model["kv_heads"])
    if model.get("ffn_hidden"):
        out["ffn_hidden"] = int(model["ffn_hidden"])
        out["gated_mlp"] = "SwiGLU" in str(model.get("arch") or "")
    return out


def case_of(entry: Mapping[str, Any]) -> ParallelCase:
    """One entry of the data file as a :class:`ParallelCase`."""
    family = entry["family"].split(" (")[0]
    measured_time, metric = _measured_time(entry, entry["model"])
    return ParallelCase(
        id=entry["id"],
        family=family,
        generation=_generation(entry),
        source=entry["source"],
        inputs=scenario_inputs(entry),
        measured_time=measured_time,
        metric=metric,
        assumptions=str(_assumed(entry["id"]).get("why", "")),
        rate=IMPLEMENTATION_RATES.get(family),
        format=_matmul_format(entry),
    )


def _entries(name: str) -> list[dict[str, Any]]:
    text = files("mlsysim.data").joinpath(name).read_text(encoding="utf-8")
    entries: list[dict[str, Any]] = json.loads(text)["entries"]
    return entries


@cache
def load_entries() -> tuple[dict[str, Any], ...]:
    """Every entry of ``published_parallel.json`` and the dense runs of ``published_frontier.json``
    (:data:`FRONTIER_FAMILIES`), as stored."""
    frontier = [e for e in _entries("published_frontier.json") if e["family"].startswith(FRONTIER_FAMILIES)]
    return tuple(_entries("published_parallel.json") + frontier)


def not_expressible() -> dict[str, str]:
    """Every run the scenario cannot express, with what it lacks."""
    out = dict(NOT_EXPRESSIBLE)
    for e in load_entries():
        why = frontier_not_expressible(e)
        if why is not None:
            out[e["id"]] = why
    return out


@cache
def load_cases() -> tuple[ParallelCase, ...]:
    """The runs that are predicted (all but :data:`EXCLUDED` and :func:`not_expressible`)."""
    left_out = EXCLUDED.keys() | not_expressible().keys()
    return tuple(case_of(e) for e in load_entries() if e["id"] not in left_out)


# -- the public path ----------------------------------------------------------------------------


Ceilings = Mapping[str, float]
"""Fitted ceilings of one architecture by format (``{"bf16": 0.6, "fp8": 0.5}``)."""


def ceiling_assumptions(case: ParallelCase, ceilings: Ceilings) -> dict[str, float]:
    """The assumptions that price a run at ``ceilings``: its format's for the linear layers, and the
    16-bit one for the attention core and output layer where the format is not 16-bit."""
    out = {"matmul_ceiling": float(ceilings[case.format])}
    if case.format != SIXTEEN_BIT:
        out["attention_ceiling"] = float(ceilings[SIXTEEN_BIT])
    return out


def prediction_inputs(
    case: ParallelCase, ceilings: Ceilings, rate: float | None = None, base: Assumptions = SEED
) -> dict[str, object]:
    """The scenario-file inputs of a prediction: the case's, its architecture's matrix-product ceilings
    (assumptions ``matmul_ceiling``, ``attention_ceiling``), the implementation rate of its family where
    it has one (bytes/s), under the ``base`` assumptions (the links' efficiencies, the algorithm...;
    the run's own overlap wins). No ``mfu``, no ``step_time``: the step comes from the operators."""
    inputs = dict(case.inputs)
    preset = assumptions_value(base)
    table: dict[str, object] = dict(preset) if isinstance(preset, dict) else {"preset": preset}
    table.update(cast("Mapping[str, object]", case.inputs["assumptions"]))
    table.update(ceiling_assumptions(case, ceilings))
    if rate is not None and case.rate is not None:
        table[case.rate] = f"{rate!r} B/s"
    inputs["assumptions"] = table
    return inputs


@cache
def _base(case: ParallelCase, base: Assumptions) -> DataParallelScaleOutScenario:
    from mlsysim.engine.io.files import scenario_from_dict

    return scenario_from_dict(prediction_inputs(case, {SIXTEEN_BIT: 0.5, case.format: 0.5}, base=base))


def scenario_of(
    case: ParallelCase, ceilings: Ceilings, rate: float | None = None, base: Assumptions = SEED
) -> DataParallelScaleOutScenario:
    """The public scenario of a run at ``ceilings`` (and implementation ``rate``): the same as
    ``scenario_from_dict(prediction_inputs(case, ceilings, rate, base))``, built as a variant."""
    scenario = _base(case, base)
    changes: dict[str, object] = dict(ceiling_assumptions(case, ceilings))
    if rate is not None and case.rate is not None:
        changes[case.rate] = quantity(rate, "B/s")
    return scenario.variant(assumptions=scenario.assumptions.variant(**changes))


def predicted_time(
    case: ParallelCase, ceilings: Ceilings, rate: float | None = None, base: Assumptions = SEED
) -> float:
    """Seconds of one update: ``scenario.result.update_time`` of the run's scenario."""
    return float(scenario_of(case, ceilings, rate, base).result.update_time.to("s").magnitude)


def _bisect(slower: Callable[[float], bool], lo: float, hi: float, steps: int = 40) -> float:
    """The boundary in [lo, hi] where ``slower`` turns False (geometric bisection)."""
    a, b = math.log(lo), math.log(hi)
    for _ in range(steps):
        mid = 0.5 * (a + b)
        if slower(math.exp(mid)):
            a = mid
        else:
            b = mid
    return math.exp(0.5 * (a + b))


@cache
def exact_ceiling(case: ParallelCase, sixteen: float = math.nan, base: Assumptions = SEED) -> float:
    """The ceiling of the run's format at which its prediction equals the measurement (the time falls as
    the ceiling grows), the 16-bit products at ``sixteen`` where the format is not 16-bit; the range's end
    where even it cannot reach it."""

    def slower(c: float) -> bool:
        ceilings = {SIXTEEN_BIT: c if case.format == SIXTEEN_BIT else sixteen, case.format: c}
        return predicted_time(case, ceilings, None, base) > case.measured_time

    return _bisect(slower, *U_RANGE)


@cache
def implied_rate(case: ParallelCase, ceilings: tuple[tuple[str, float], ...], base: Assumptions = SEED) -> float:
    """The implementation rate (bytes/s) at which the run's prediction is exact at ``ceilings``; NaN where
    even the highest rate leaves it slower than measured (the miss is not that traffic)."""
    table = dict(ceilings)
    if predicted_time(case, table, RATE_RANGE[1], base) > case.measured_time:
        return math.nan
    return _bisect(lambda r: predicted_time(case, table, r, base) > case.measured_time, *RATE_RANGE)


def fit_efficiency(cases: Iterable[ParallelCase], base: Assumptions = SEED) -> dict[str, dict[str, float]]:
    """The ceilings per GPU generation and format: the 16-bit one the median of the exact ceilings of
    the 16-bit runs priced by the links (a run whose family has an implementation rate does not inform
    it); a low-precision format's the median of its runs' exact ceilings with the 16-bit one fitted."""
    cases = list(cases)
    sixteen: dict[str, list[float]] = {}
    for case in cases:
        if case.rate is None and case.format == SIXTEEN_BIT:
            sixteen.setdefault(case.generation, []).append(exact_ceiling(case, math.nan, base))
    fitted = {g: {SIXTEEN_BIT: statistics.median(cs)} for g, cs in sixteen.items()}
    complete = _complete(fitted)
    low: dict[tuple[str, str], list[float]] = {}
    for case in cases:
        if case.rate is None and case.format != SIXTEEN_BIT:
            c16 = complete[case.generation][SIXTEEN_BIT]
            low.setdefault((case.generation, case.format), []).append(exact_ceiling(case, c16, base))
    for (g, f), cs in low.items():
        fitted.setdefault(g, {SIXTEEN_BIT: complete[g][SIXTEEN_BIT]})[f] = statistics.median(cs)
    return fitted


FORMAT_FALLBACK = {"fp8_rowwise": "fp8"}
"""A format fitted on no run takes this one's ceiling (FP8 with row scales: the tensorwise FP8 one)."""


def _complete(u: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Every generation's ceilings; a generation fitted on no run takes the A100's, a format fitted on
    no run its fallback's (:data:`FORMAT_FALLBACK`)."""
    fallback = u.get("A100", next(iter(u.values())))
    out = {g: dict(u.get(g, fallback)) for g in NODE_OF_GENERATION}
    for table in out.values():
        for f, other in FORMAT_FALLBACK.items():
            if f not in table and other in table:
                table[f] = table[other]
    return out


def family_rate(
    case: ParallelCase, family: Iterable[ParallelCase], ceilings: Ceilings, *, held_out: bool,
    base: Assumptions = SEED,
) -> float | None:
    """The implementation rate a run is predicted with: the median implied rate of its family's runs
    (without the run itself when ``held_out``); None for a family priced by the links."""
    if case.rate is None:
        return None
    key = tuple(sorted(ceilings.items()))
    rates = [
        implied_rate(c, key, base) for c in family if c.family == case.family and (c.id != case.id or not held_out)
    ]
    rates = [r for r in rates if not math.isnan(r)]
    return statistics.median(rates) if rates else None


@dataclass(frozen=True)
class ParallelResult:
    """One run's prediction: error = predicted / measured throughput - 1 = T_measured / T_predicted - 1."""

    case: ParallelCase
    ceilings: Ceilings
    rate: float | None
    predicted_time: float
    result: DataParallelScaleOutResult = field(repr=False)
    base: Assumptions = SEED
    """The assumptions the run was predicted under (its own overlap and rate added)."""

    @property
    def error(self) -> float:
        return self.case.measured_time / self.predicted_time - 1.0

    @property
    def inputs(self) -> dict[str, object]:
        """The scenario-file inputs whose ``result.update_time`` is :attr:`predicted_time`."""
        return prediction_inputs(self.case, self.ceilings, self.rate, self.base)


def _predict(
    case: ParallelCase, u: Mapping[str, Ceilings], family: Iterable[ParallelCase], held_out: bool, base: Assumptions
) -> ParallelResult:
    ceilings = u[case.generation]
    rate = family_rate(case, family, ceilings, held_out=held_out, base=base)
    scenario = scenario_of(case, ceilings, rate, base)
    result = scenario.result
    return ParallelResult(case, ceilings, rate, float(result.update_time.to("s").magnitude), result, base)


def evaluate_cases(
    cases: Iterable[ParallelCase], efficiency: Mapping[str, Mapping[str, float]], base: Assumptions = SEED
) -> list[ParallelResult]:
    """Every run predicted in sample: its generation's u, its family's rate from all its runs."""
    cases = list(cases)
    u = _complete(efficiency)
    return [_predict(c, u, cases, False, base) for c in cases]


def leave_one_family_out(cases: Iterable[ParallelCase], base: Assumptions = SEED) -> list[ParallelResult]:
    """Every run predicted with constants fitted without its family: u on the other families (a
    generation left without runs takes the A100's u), an implementation rate from the family's
    other runs (leave one run out)."""
    cases = list(cases)
    out = []
    for family in dict.fromkeys(c.family for c in cases):
        u = _complete(fit_efficiency((c for c in cases if c.family != family), base))
        out += [_predict(c, u, cases, True, base) for c in cases if c.family == family]
    order = {c.id: i for i, c in enumerate(cases)}
    return sorted(out, key=lambda r: order[r.case.id])


@dataclass(frozen=True)
class Summary:
    """Median and worst |error| of a set of runs, and the mean signed error."""

    count: int
    median: float
    worst: float
    mean: float


def summarize(results: Iterable[ParallelResult]) -> Summary:
    errors = [r.error for r in results]
    absolute = [abs(e) for e in errors]
    return Summary(len(errors), statistics.median(absolute), max(absolute), statistics.fmean(errors))


def by_family(results: Iterable[ParallelResult]) -> dict[str, Summary]:
    families: dict[str, list[ParallelResult]] = {}
    for r in results:
        families.setdefault(r.case.family, []).append(r)
    return {f: summarize(rs) for f, rs in families.items()}


def worst_of(results: Iterable[ParallelResult]) -> ParallelResult:
    return max(results, key=lambda r: abs(r.error))


@dataclass(frozen=True)
class Validation:
    """The whole check: the fitted constants, every run in sample and held out."""

    efficiency: dict[str, dict[str, float]]
    """Matrix-product ceilings per GPU generation and format, fitted on all runs."""
    in_sample: list[ParallelResult]
    held_out: list[ParallelResult]

    @property
    def rates(self) -> dict[str, float]:
        """Each implementation rate fitted on its whole family (bytes/s)."""
        out: dict[str, float] = {}
        for r in self.in_sample:
            if r.rate is not None:
                out[r.case.family] = r.rate
        return out


@cache
def validation(base: Assumptions = SEED) -> Validation:
    """The check of :func:`summary` and :func:`report` under the ``base`` assumptions (the seed's:
    the links at their nominal rate, the run's own overlap), computed once per process."""
    cases = load_cases()
    u = fit_efficiency(cases, base)
    return Validation(_complete(u), evaluate_cases(cases, u, base), leave_one_family_out(cases, base))


@cache
def layout_scores(base: Assumptions = SEED) -> Scores:
    """The held-out errors of the runs (T_measured / T_predicted - 1, each family predicted with
    constants fitted without it) under ``base``, with their families: what a layout's prediction
    interval is built from (:func:`mlsysim.engine.reports.bands.layout_band`)."""
    held = validation(base).held_out
    families = tuple(r.case.family for r in held)
    return Scores(
        np.asarray([r.error for r in held], dtype=float),
        f"{len(held)} published model-parallel runs in {len(set(families))} families, each predicted "
        "with constants fitted without its family (each run weighs alike)",
        families,
    )


@dataclass(frozen=True)
class Coverage:
    """How often the ``level`` band of a layout covers runs of a family it was built without."""

    level: float
    coverage: float
    median_width: float
    """Median over the families left out of rho_hi - rho_lo (T_measured / T_predicted)."""
    band: tuple[float, float]
    """(rho_lo, rho_hi) from every run."""


def layout_coverage(level: float = 0.8, base: Assumptions = SEED) -> Coverage:
    """The honesty check of a layout's interval: each family left out of the band too (its runs'
    errors held out, the band built from the other families' held-out errors), the share of its
    runs the band covers, over all runs; and the band's median width."""
    from mlsysim.engine.reports.bands import conformal_band

    found = layout_scores(base)
    errors, families = found.values, np.asarray(found.groups)
    covered: list[bool] = []
    widths: list[float] = []
    for family in dict.fromkeys(found.groups or ()):
        train = families != family
        low, high = conformal_band(errors[train], level)
        held = errors[~train]
        covered += [bool(x) for x in (held >= low) & (held <= high)]
        widths.append(high - low)
    low, high = conformal_band(errors, level)
    return Coverage(level, statistics.fmean(covered), statistics.median(widths), (1.0 + low, 1.0 + high))


def _plain(s: Summary) -> dict[str, float | int]:
    return {"runs": s.count, "median_abs_error": s.median, "worst_abs_error": s.worst, "mean_error": s.mean}


def summary() -> dict[str, object]:
    """The validation as plain values (errors as fractions): held out first, then in sample; every
    run with the scenario inputs its prediction is ``scenario.result`` of."""
    v = validation()
    held = {r.case.id: r for r in v.held_out}
    held_total, sample_total = summarize(v.held_out), summarize(v.in_sample)
    return {
        "held_out": {**_plain(held_total), "worst_run": worst_of(v.held_out).case.id},
        "in_sample": {**_plain(sample_total), "worst_run": worst_of(v.in_sample).case.id},
        "matmul_ceilings": {g: dict(sorted(c.items())) for g, c in sorted(v.efficiency.items())},
        "implementation_rates_bytes_per_s": {
            f: {"input": IMPLEMENTATION_RATES[f], "rate": rate} for f, rate in v.rates.items()
        },
        "runs": [
            {
                "id": r.case.id,
                "family": r.case.family,
                "measured_time_s": r.case.measured_time,
                "metric": r.case.metric,
                "predicted_time_s": r.predicted_time,
                "error": r.error,
                "held_out_predicted_time_s": held[r.case.id].predicted_time,
                "held_out_error": held[r.case.id].error,
                "achieved_mfu": r.result.figures.achieved_mfu,
                "scenario": r.inputs,
                "held_out_scenario": held[r.case.id].inputs,
                "assumed": r.case.assumptions,
            }
            for r in v.in_sample
        ],
        "families": {
            f: {"held_out": _plain(s), "in_sample": _plain(by_family(v.in_sample)[f])}
            for f, s in by_family(v.held_out).items()
        },
        "targets": {"median_abs_error_held_out": MEDIAN_TARGET},
        "layout_interval_80": _coverage_plain(layout_coverage(0.8)),
        "not_predicted": {**{k: f"not expressible: {why}" for k, why in not_expressible().items()},
                          **{k: f"not described: {why}" for k, why in EXCLUDED.items()}},
    }


def _coverage_plain(c: Coverage) -> dict[str, object]:
    return {
        "band_update_time_ratio": list(c.band),
        "coverage_families_left_out": c.coverage,
        "median_width_families_left_out": c.median_width,
    }


def coverage_line(level: float = 0.8) -> str:
    """One line: a layout's interval and how it covers families left out."""
    c = layout_coverage(level)
    return (
        f"a layout's {level:.0%} interval: update time x [{c.band[0]:.3f}, {c.band[1]:.3f}] (split conformal "
        f"on the held-out errors, each run the unit); each family left out of the band too, it covers "
        f"{c.coverage:.0%} of its runs at a median width of {c.median_width:.1%} of the update time"
    )


def headline() -> str:
    """One line: the held-out figure first, the in-sample one second, labelled."""
    v = validation()
    held, sample = summarize(v.held_out), summarize(v.in_sample)
    return (
        f"Model-parallel runs through the scenario: {held.count} runs, each family left out: median |error| "
        f"{held.median:.1%}, worst {held.worst:.1%} ({worst_of(v.held_out).case.id}); in sample (constants "
        f"fitted on all runs): median {sample.median:.1%}, worst {sample.worst:.1%} (target: held-out median "
        f"{MEDIAN_TARGET:.0%})"
    )


def summary_lines() -> list[str]:
    """A few lines for ``mlsysim validate published``: the headline, and per family."""
    v = validation()
    sample = by_family(v.in_sample)
    lines = [headline()]
    for family, s in by_family(v.held_out).items():
        lines.append(
            f"  {family:46s} n={s.count:2d} held out: median {s.median:5.1%} worst {s.worst:5.1%}; "
            f"in sample: median {sample[family].median:5.1%}"
        )
    lines.append("  " + coverage_line())
    lines.append("  (every run, its inputs and the constants: mlsysim validate parallel)")
    return lines


def _layout_text(inputs: Mapping[str, object]) -> str:
    def get(name: str, default: object = 1) -> object:
        return inputs.get(name, default)

    text = f"t{get('tensor_parallel')} p{get('pipeline_parallel')}"
    if int(cast(int, get("pipeline_chunks"))) > 1:
        text += f" v{get('pipeline_chunks')}"
    text += f" m{get('accumulation_steps')} b{get('per_device_batch')}"
    if get("zero_stage", 0):
        text += f" z{get('zero_stage')}"
    return text + f" {str(get('recompute', 'selective'))[:4]}"


def report() -> str:
    """The validation table as text: every run held out and in sample, per family, the constants."""
    v = validation()
    held = {r.case.id: r for r in v.held_out}
    lines = [headline(), ""]
    lines.append(
        f"{'run':50s} {'layout':22s} {'measured s':>10s} {'held out s':>10s} {'error':>7s} "
        f"{'in sample s':>11s} {'error':>7s} {'MFU':>5s}"
    )
    for r in v.in_sample:
        h = held[r.case.id]
        lines.append(
            f"{r.case.id:50s} {_layout_text(r.case.inputs):22s} {r.case.measured_time:10.2f} "
            f"{h.predicted_time:10.2f} {h.error:+7.1%} {r.predicted_time:11.2f} {r.error:+7.1%} "
            f"{float(r.result.figures.achieved_mfu):5.1%}"
        )
    lines += ["", "per family (held out: the family's runs predicted with constants fitted without it):"]
    sample = by_family(v.in_sample)
    for family, s in by_family(v.held_out).items():
        lines.append(
            f"  {family:46s} n={s.count:2d} held out: median {s.median:5.1%} worst {s.worst:5.1%} "
            f"mean {s.mean:+6.1%}; in sample: median {sample[family].median:5.1%} worst {sample[family].worst:5.1%}"
        )
    lines += [
        "",
        "constants: matrix-product ceilings per generation and format (matmul_ceiling), fitted on all runs "
        "priced by the links: "
        + "; ".join(
            f"{g} " + ", ".join(f"{f} {x:.3f}" for f, x in sorted(c.items())) for g, c in sorted(v.efficiency.items())
        ),
    ]
    for family, rate in v.rates.items():
        lines.append(
            f"  {IMPLEMENTATION_RATES[family]} of {family}: {rate / 1e9:.1f} GB/s, fitted on the family alone "
            "(each run held out: from the family's other runs)"
        )
    lines += ["", coverage_line(), "", "not predicted:"]
    lines += [f"  {k}: not expressible: {why}" for k, why in not_expressible().items()]
    lines += [f"  {k}: not described: {why}" for k, why in EXCLUDED.items()]
    lines += ["", "each run's scenario (a scenario file's inputs): mlsysim validate parallel --json, runs[].scenario"]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
