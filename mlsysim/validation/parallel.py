"""Predict published model-parallel training runs (tensor, pipeline, data, ZeRO-3) and compare.

The runs are ``mlsysim/data/published_parallel.json`` (sources and the quoted
rows in each entry): Megatron-LM's weak scaling (Narayanan et al. 2021, Table
1) and its PTD-P vs ZeRO-3 comparison (Table 2), sequence parallelism with
selective recomputation (Korthikanti et al. 2022, Table 5 and section 6.3),
MT-NLG 530B (Smith et al. 2022), Llama 3 405B (Llama Team 2024, Table 4) and
BLOOM-176B (BigScience's training logs).

Prediction. Each run becomes one call of
:func:`mlsysim.physics.layout.layout_figures` with its model shape, layout
and the registry's node (DGX A100 for the A100 runs; a DGX H100's figures for
Llama 3's H100 servers, which have the same 400 Gb/s per GPU), with a cluster's
own inter-node links where they differ (:data:`CLUSTER_NETWORK`). The only
fitted figure is the math-kernel efficiency u of each GPU generation: the u
that makes each run's prediction exact is found by bisection, and the
generation's u is the median of those (which minimises the median error).

Comparison, like with like. A source reports teraFLOP/s per GPU under its own
FLOP count (hardware FLOPs with the recomputed forward for Megatron-LM 2021,
MT-NLG and BLOOM: 96 B s L h^2 (1 + s/6h + V/(16 L h)); model FLOPs for
Korthikanti et al. and Llama 3) or the iteration time. Both are turned into
the measured time of one update, T = FLOPs / (rate x GPUs) under the source's
own count, so the predicted throughput over the measured one is T_measured /
T_predicted whichever count the source used, and the error is that ratio
minus one.

Inputs a source does not state are assumed and named in :data:`ASSUMED`
(each with its reason); runs that cannot be predicted are listed in
:data:`EXCLUDED` with the reason.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, cast

from mlsysim.physics.layout import LayoutFigures, layout_figures

MEDIAN_TARGET = 0.05
"""Issue 21: median |error| of throughput per GPU at most 5%."""
WORST_TARGET = 0.12
"""Issue 21: worst |error| at most 12%."""

PLATFORM_OF_GENERATION = {"A100": "DGX_A100", "H100": "DGX_H100"}
"""The registry node whose figures a run's GPU generation is given (peak, HBM, NVLink, NICs)."""

CLUSTER_NETWORK: dict[str, dict[str, float]] = {
    "Jean Zay": {"nic_bandwidth": 12.5e9, "nics_per_node": 4.0},
}
"""Inter-node links of a cluster that are not its generation's registry node's (by the start of the entry's cluster).

Jean Zay (BLOOM-176B): "4 OmniPath links" per 8-GPU A100 node (BigScience tr11-176B-ml
training README, "Hardware"); Intel Omni-Path Architecture 100 series links carry
100 Gb/s = 12.5 GB/s per direction (nominal). The DGX A100 figures would give it eight
200 Gb/s HDR NICs, four times the bandwidth.
"""

EXCLUDED = {
    "korthikanti2022_530B_dp8_2240gpu_full_recompute": (
        "neither the batch nor the micro-batch of this baseline is stated; only its MFU"
    ),
    "llama3_405b_16384gpu_seq131072": "context parallelism (16-way) is not modelled",
    "bloom176b_tr11_gbs16_rampup": (
        "one micro-batch on a 12-stage pipeline: fewer micro-batches than stages, a layout the model's "
        "rules refuse (m >= p; mlsysim.physics.layout.check_layout)"
    ),
}
"""Runs left out, with the reason."""

ASSUMED: dict[str, dict[str, Any]] = {
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
        "data_overlap": 0.0,
        "why": "micro-batch not read from the paper (1, as every other 530B run here); full recomputation because "
        "the quoted teraFLOP/s equal Megatron-LM's count with the recomputed forward (126 x 2240 x 60.1 s = "
        "1.70e19 FLOPs); DeepSpeed's pipeline engine reduces gradients after the pipeline flush",
    },
    "llama3": {
        "micro_batch": 1,
        "pipeline_chunks": 4,
        "zero_stage": 3,
        "backward_gathers": 0.0,
        "recompute": "none",
        "flash_attention": True,
        "layer_rule": "126 layers on 16 stages: one layer fewer on the first and last stage (Llama 3, section 3.3.2)",
        "why": "the interleaving V is not stated (4 assumed: about 2 layers per chunk on 8-layer stages); "
        "FSDP that does not reshard after the forward; one sequence per micro-batch (the table's batch per "
        "data-parallel group is the micro-batch count); no recomputation at 8K tokens (section 3.3.2); "
        "fused attention kernels",
    },
    "bloom176b": {
        "recompute": "full",
        "data_overlap": 0.0,
        "why": "DeepSpeed's pipeline engine reduces gradients after the pipeline flush; 70 layers plus the "
        "embeddings as pipeline blocks on 12 stages",
    },
}
"""Inputs each family or run does not state, keyed by a prefix of the run id; the longest prefix wins."""


@dataclass(frozen=True)
class ParallelCase:
    """One published run, ready to predict."""

    id: str
    family: str
    generation: str
    source: str
    inputs: dict[str, Any]
    measured_time: float
    """Seconds per update, from the source's iteration time or its rate under its own FLOP count."""
    metric: str
    """What was compared: the iteration time, or teraFLOP/s per GPU."""
    assumptions: str


def _generation(entry: dict[str, Any]) -> str:
    return "H100" if "H100" in entry["hardware"]["gpu"] else "A100"


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


def _measured_time(entry: dict[str, Any], model: dict[str, Any]) -> tuple[float, str]:
    measured = entry["measured"]
    if measured.get("iteration_time_s"):
        return float(measured["iteration_time_s"]), "iteration time"
    rate = float(measured["tflops_per_gpu"]) * 1e12 * entry["gpus"]
    if entry["id"].startswith("llama3"):
        tokens = entry["global_batch"] * model["seq_len"]
        flops = palm_model_flops(tokens, model["params_billion"] * 1e9, model["layers"], model["hidden"],
                                 model["seq_len"])
    else:
        flops = hardware_flops(entry["global_batch"], model["seq_len"], model["layers"], model["hidden"],
                               model["vocab"] or 51200)
    return flops / rate, "teraFLOP/s per GPU"


def _cluster_network(entry: dict[str, Any]) -> dict[str, float]:
    cluster = str(entry["hardware"].get("cluster", ""))
    return next((links for name, links in CLUSTER_NETWORK.items() if cluster.startswith(name)), {})


@cache
def _node_figures(generation: str) -> dict[str, float]:
    from mlsysim.engine.inputs.presets import node_figures
    from mlsysim.hardware.registry import Systems

    figures = node_figures(getattr(Systems.Nodes, PLATFORM_OF_GENERATION[generation]), "bf16")
    del figures["math_efficiency"]  # fitted per generation
    return figures


def case_of(entry: dict[str, Any]) -> ParallelCase:
    """The inputs of :func:`layout_figures` for one entry of the data file (model, layout, assumptions)."""
    model, layout = entry["model"], entry["layout"]
    assumed = _assumed(entry["id"])
    t = layout.get("tensor_parallel") or assumed["tensor_parallel"]
    p = layout.get("pipeline_parallel") or assumed["pipeline_parallel"]
    d = layout["data_parallel"]
    chunks = layout.get("interleave_chunks")
    v = chunks if isinstance(chunks, int) else assumed.get("pipeline_chunks", 1)
    b = entry.get("micro_batch") or assumed.get("micro_batch", 1)
    m = entry["global_batch"] / (d * b)
    recompute = assumed.get("recompute") or _recompute_mode(layout.get("recompute"))
    if layout.get("recompute") and not str(layout["recompute"]).startswith("none for"):
        recompute = _recompute_mode(layout["recompute"])
    zero = layout.get("zero_stage") or assumed.get("zero_stage", 0)
    inputs: dict[str, Any] = {
        "parameters": model["params_billion"] * 1e9,
        "layers": float(model["layers"]),
        "hidden": float(model["hidden"]),
        "heads": float(model["heads"]),
        "seq_len": float(model["seq_len"]),
        "vocab": float(model.get("vocab") or 51200),
        "devices": float(entry["gpus"]),
        **_node_figures(_generation(entry)),
        **_cluster_network(entry),
        "tensor_parallel": float(t),
        "pipeline_parallel": float(p),
        "pipeline_chunks": float(v),
        "micro_batch": float(b),
        "micro_batches": float(m),
        "zero_stage": float(zero),
        "backward_gathers": assumed.get("backward_gathers", 1.0),
        "data_overlap": 0.0 if layout.get("dp_grad_allreduce_overlap") is False else assumed.get("data_overlap", 1.0),
        "recompute": recompute,
        "sequence_parallel": bool(layout.get("sequence_parallel")),
        "flash_attention": bool(assumed.get("flash_attention", False)),
    }
    measured_time, metric = _measured_time(entry, model)
    return ParallelCase(
        id=entry["id"],
        family=entry["family"].split(" (")[0],
        generation=_generation(entry),
        source=entry["source"],
        inputs=inputs,
        measured_time=measured_time,
        metric=metric,
        assumptions=str(assumed.get("why", "")),
    )


@cache
def load_entries() -> tuple[dict[str, Any], ...]:
    """Every entry of ``published_parallel.json``, as stored."""
    text = files("mlsysim.data").joinpath("published_parallel.json").read_text(encoding="utf-8")
    return tuple(json.loads(text)["entries"])


def load_cases() -> list[ParallelCase]:
    """The runs that are predicted (all but :data:`EXCLUDED`)."""
    return [case_of(e) for e in load_entries() if e["id"] not in EXCLUDED]


def predict(case: ParallelCase, math_efficiency: float, sharding_rate: float = math.nan) -> LayoutFigures:
    """The layout figures of one run at a math-kernel efficiency u (and, when given, an achieved
    per-rank rate of the ZeRO collectives instead of the links' ring rate)."""
    return layout_figures(math_efficiency=math_efficiency, sharding_rate=sharding_rate, **case.inputs)


def exact_efficiency(case: ParallelCase) -> float:
    """The u at which the prediction equals the measurement (bisection; the time falls as u grows)."""
    lo, hi = 0.01, 1.5
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float(predict(case, mid).update_time) > case.measured_time:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def fit_efficiency(cases: list[ParallelCase]) -> dict[str, float]:
    """One u per GPU generation: the median of the runs' exact u (minimises the median error)."""
    by_generation: dict[str, list[float]] = {}
    for case in cases:
        by_generation.setdefault(case.generation, []).append(exact_efficiency(case))
    return {g: statistics.median(us) for g, us in by_generation.items()}


@dataclass(frozen=True)
class ParallelResult:
    """One run's prediction: error = predicted / measured throughput - 1."""

    case: ParallelCase
    efficiency: float
    predicted_time: float
    figures: LayoutFigures

    @property
    def error(self) -> float:
        return self.case.measured_time / self.predicted_time - 1.0


def evaluate_cases(cases: list[ParallelCase], efficiency: dict[str, float]) -> list[ParallelResult]:
    """Predict every run with its generation's u."""
    out = []
    for case in cases:
        u = efficiency[case.generation]
        figures = predict(case, u)
        out.append(ParallelResult(case, u, float(figures.update_time), figures))
    return out


ZERO3_FAMILY = "ZeRO-3 baseline in Narayanan et al. 2021"
"""The family whose communication the links' ring rate does not explain (docs/parallelism.md)."""


def implied_sharding_rate(case: ParallelCase, math_efficiency: float) -> float:
    """The per-rank rate of the ZeRO collectives (bytes/s) at which the run's prediction is exact.

    Bisection on log(rate) between 100 MB/s and 10 TB/s (the time falls as the rate grows);
    NaN where even 10 TB/s leaves the prediction slower than the measurement (the miss is not
    the sharding traffic). A diagnostic: it says what a framework's collectives achieved, not a
    figure the model is fitted with.
    """
    lo, hi = math.log(1e8), math.log(1e13)
    if float(predict(case, math_efficiency, math.exp(hi)).update_time) > case.measured_time:
        return math.nan
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if float(predict(case, math_efficiency, math.exp(mid)).update_time) > case.measured_time:
            lo = mid
        else:
            hi = mid
    return math.exp(0.5 * (lo + hi))


@dataclass(frozen=True)
class RateCheck:
    """One ZeRO-3 run: its implied collective rate, and its error when predicted with the median
    rate implied by the family's other runs (leave one run out)."""

    id: str
    implied_rate: float
    held_out_rate: float
    held_out_error: float


def zero3_rate_check(results: list[ParallelResult]) -> list[RateCheck]:
    """The ZeRO-3 family's implied collective rates and leave-one-run-out errors (see :func:`implied_sharding_rate`)."""
    family = [r for r in results if r.case.family == ZERO3_FAMILY]
    rates = {r.case.id: implied_sharding_rate(r.case, r.efficiency) for r in family}
    out = []
    for r in family:
        others = [v for k, v in rates.items() if k != r.case.id and not math.isnan(v)]
        rate = statistics.median(others)
        predicted = float(predict(r.case, r.efficiency, rate).update_time)
        out.append(RateCheck(r.case.id, rates[r.case.id], rate, r.case.measured_time / predicted - 1.0))
    return out


@dataclass(frozen=True)
class Summary:
    """Median and worst |error| of a set of runs."""

    count: int
    median: float
    worst: float


def summarize(results: list[ParallelResult]) -> Summary:
    errors = [abs(r.error) for r in results]
    return Summary(len(errors), statistics.median(errors), max(errors))


def by_family(results: list[ParallelResult]) -> dict[str, Summary]:
    families: dict[str, list[ParallelResult]] = {}
    for r in results:
        families.setdefault(r.case.family, []).append(r)
    return {f: summarize(rs) for f, rs in families.items()}


def leave_one_family_out(cases: list[ParallelCase]) -> dict[str, Summary]:
    """Each family predicted with u fitted on the others; a generation left without runs takes the A100 u."""
    out = {}
    for family in dict.fromkeys(c.family for c in cases):
        train = [c for c in cases if c.family != family]
        held = [c for c in cases if c.family == family]
        u = fit_efficiency(train)
        fallback = u.get("A100", next(iter(u.values())))
        u = {g: u.get(g, fallback) for g in {"A100", "H100"}}
        out[family] = summarize(evaluate_cases(held, u))
    return out


def summary() -> dict[str, object]:
    """The validation as plain values: the fitted efficiencies, every run's error, all runs,
    per family and leave one family out (errors as fractions)."""
    cases = load_cases()
    u = fit_efficiency(cases)
    results = evaluate_cases(cases, u)

    def plain(s: Summary) -> dict[str, float | int]:
        return {"runs": s.count, "median_abs_error": s.median, "worst_abs_error": s.worst}

    return {
        "math_efficiency": dict(sorted(u.items())),
        "runs": [
            {"id": r.case.id, "family": r.case.family, "measured_time_s": r.case.measured_time,
             "predicted_time_s": r.predicted_time, "error": r.error}
            for r in results
        ],
        "all": plain(summarize(results)),
        "families": {f: plain(s) for f, s in by_family(results).items()},
        "leave_one_family_out": {f: plain(s) for f, s in leave_one_family_out(cases).items()},
        "targets": {"median_abs_error": MEDIAN_TARGET, "worst_abs_error": WORST_TARGET},
        "zero3_rate_check": [
            {"id": c.id, "implied_rate_bytes_per_s": c.implied_rate, "held_out_rate_bytes_per_s": c.held_out_rate,
             "held_out_error": c.held_out_error}
            for c in zero3_rate_check(results)
        ],
    }


def summary_lines() -> list[str]:
    """A few lines for ``mlsysim validate published``: all runs, and per family held out."""
    data = summary()
    total = cast("dict[str, float]", data["all"])
    u = cast("dict[str, float]", data["math_efficiency"])
    lines = [
        "Model-parallel runs (tensor, pipeline, ZeRO-3; one math-kernel efficiency per GPU: "
        + ", ".join(f"{g} {v:.3f}" for g, v in u.items())
        + f"): {int(total['runs'])} runs, median |error| {total['median_abs_error']:.1%}, "
        f"worst {total['worst_abs_error']:.1%} (targets {MEDIAN_TARGET:.0%}, {WORST_TARGET:.0%})",
    ]
    held = cast("dict[str, dict[str, float]]", data["leave_one_family_out"])
    for family, s in cast("dict[str, dict[str, float]]", data["families"]).items():
        lines.append(
            f"  {family:45s} n={int(s['runs']):2d} median {s['median_abs_error']:5.1%} "
            f"worst {s['worst_abs_error']:5.1%}; family left out: median "
            f"{held[family]['median_abs_error']:5.1%} worst {held[family]['worst_abs_error']:5.1%}"
        )
    lines.append("  (every run: mlsysim validate parallel)")
    return lines


def report() -> str:
    """The validation table as text: every run, per family, overall and leave-one-family-out."""
    cases = load_cases()
    u = fit_efficiency(cases)
    results = evaluate_cases(cases, u)
    lines = [
        "fitted math-kernel efficiency u: " + ", ".join(f"{g} {v:.3f}" for g, v in sorted(u.items())),
        "",
        f"{'run':52s} {'measured s':>10s} {'predicted s':>11s} {'error':>7s}  bubble  tp  data",
    ]
    for r in results:
        f = r.figures
        lines.append(
            f"{r.case.id:52s} {r.case.measured_time:10.2f} {r.predicted_time:11.2f} {r.error:+7.1%}"
            f"  {float(f.bubble_time) / r.predicted_time:5.1%} {float(f.tensor_time) / r.predicted_time:4.0%}"
            f" {float(f.data_time + f.sharding_time) / r.predicted_time:4.0%}"
        )
    total = summarize(results)
    lines += ["", f"all {total.count} runs: median |error| {total.median:.1%}, worst {total.worst:.1%} "
              f"(targets {MEDIAN_TARGET:.0%}, {WORST_TARGET:.0%})", "", "per family:"]
    for family, s in by_family(results).items():
        lines.append(f"  {family:45s} n={s.count:2d} median {s.median:5.1%} worst {s.worst:5.1%}")
    lines += ["", "leave one family out:"]
    for family, s in leave_one_family_out(cases).items():
        lines.append(f"  {family:45s} n={s.count:2d} median {s.median:5.1%} worst {s.worst:5.1%}")
    checks = zero3_rate_check(results)
    if checks:
        lines += ["", "ZeRO-3 diagnostic (not part of the model's fit): the per-GPU rate of the ZeRO-3 collectives",
                  "at which each run is exact, and each run predicted with the median rate of the other five",
                  "(the links' ring rate over a DGX A100's eight 200 Gb/s NICs is "
                  f"{_zero3_ring_rate(results) / 1e9:.0f} GB/s):"]
        for c in checks:
            lines.append(f"  {c.id:50s} implied {c.implied_rate / 1e9:6.1f} GB/s; with {c.held_out_rate / 1e9:5.1f} GB/s: "
                         f"error {c.held_out_error:+6.1%}")
    lines += ["", "excluded:"] + [f"  {k}: {why}" for k, why in EXCLUDED.items()]
    return "\n".join(lines)


def _zero3_ring_rate(results: list[ParallelResult]) -> float:
    first = next(r for r in results if r.case.family == ZERO3_FAMILY)
    return float(first.figures.parts.shard_rate)


if __name__ == "__main__":
    print(report())
