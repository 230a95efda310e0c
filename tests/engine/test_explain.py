"""explain() prints numbers that are the model's own: every printed right-hand side recomputed.

Each derivation step prints ``= <operands>`` then ``= <value>``. The test reads
the operands back (numbers with units, x, /, +, -, sqrt, ln, ceil, max), evaluates
them, and checks the result equals the printed value to display precision. A
formula changed in the physics but not in the printed derivation fails here.
"""

import math
import re

import pytest

from mlsysim import (
    Q_,
    Assumptions,
    DataParallelScaleOutScenario,
    Models,
    Scenarios,
    Systems,
    Workload,
)
from mlsysim.engine.io.overrides import vary_workload

UNITS = {
    "TB/s": 1e12, "GB/s": 1e9, "MB/s": 1e6,
    "USD/kWh": 1 / 3.6e6, "g/kWh": 1e-3 / 3.6e6, "MWh": 3.6e9,  # SI: USD/J, kg/J, J
    "USD/h": 1 / 3600, "USD": 1.0, "W": 1.0, "t": 1e3, "min": 60.0,
    "TB": 1e12, "GB": 1e9, "MB": 1e6, "kB": 1e3, "B": 1.0,
    "h": 3600.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "flop": 1.0,
}
NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
QUANTITY = re.compile(rf"({NUMBER})(?:\s+({'|'.join(re.escape(u) for u in UNITS)}))?(?![\w/])")


def value_of(text: str) -> float:
    """A printed operand expression or value, in SI (h as seconds, USD/h as USD per hour)."""
    expr = text.replace(" x ", " * ").replace("ln(", "log(")
    expr = QUANTITY.sub(lambda m: f"({m[1]} * {UNITS.get(m[2], 1.0) if m[2] else 1.0})", expr)
    return float(eval(expr, {"__builtins__": {}}, {"sqrt": math.sqrt, "log": math.log, "ceil": math.ceil, "max": max, "min": min, "exp": math.exp}))


def steps(text: str) -> list[tuple[str, str, str]]:
    """(what, operands, value) of every step that prints both."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = re.match(r"\s+\d+\. ([^:]+):", line)
        if not head:
            continue
        follow = []
        for nxt in lines[i + 1 : i + 3]:
            if nxt.strip().startswith("= "):
                follow.append(nxt.strip()[2:])
        if len(follow) == 2:
            out.append((head[1], follow[0], follow[1]))
    return out


FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE
CASES = {
    "job from scratch, no recomputation": DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, precision="bf16", node=Systems.Nodes.DGX_H100,
        fabric=Systems.Fabrics.InfiniBand_NDR, nodes=16, mfu=0.4,
        training_tokens=Q_(1e12, "token"), per_device_batch=2, zero_stage=1, recompute="none",
    ),
    "cnn job from samples": DataParallelScaleOutScenario(
        workload=Models.Vision.ResNet50, precision="bf16", node="DGX_A100", nodes=2, mfu=0.5,
        training_samples=Q_(90 * 1_281_167, "sample"), per_device_batch=256,
    ),
    "seed one node": Scenarios.Gpt2DataParallelOneNode,
    "seed four nodes": FOUR,
    "seed accumulation": Scenarios.Gpt2GradientAccumulationOneNode,
    "realistic zero-3": FOUR.variant(
        assumptions=Assumptions.realistic(), nics_per_node=8, zero_stage=3, device_memory=Q_(80, "GB")
    ),
    "ring with latency": FOUR.variant(
        intra_latency=Q_(2, "us"), inter_latency=Q_(5, "us"), accumulation_steps=4
    ),
    "tree": FOUR.variant(
        assumptions=Assumptions(algorithm="tree"), nodes=16, nics_per_node=4, inter_latency=Q_(5, "us")
    ),
    "hierarchical zero-1, no layers": FOUR.variant(
        workload=Workload(name="GPT-2 without its shape", parameters=Q_(1.5e9, "param")),
        assumptions=Assumptions(algorithm="hierarchical", overlap=True), zero_stage=1,
        activation_memory=Q_(3, "GB"), device_memory=Q_(40, "GB"),
    ),
    "hierarchical zero-1": FOUR.variant(
        assumptions=Assumptions(algorithm="hierarchical", overlap=True), zero_stage=1,
        activation_memory=Q_(3, "GB"), device_memory=Q_(40, "GB"), optimizer="adam",
        memory_bandwidth=Q_(3.35, "TB/s"),
    ),
    "one bucket": Scenarios.Gpt2DataParallelOneNode.variant(
        assumptions=Assumptions(overlap=True, bucket_size=Q_(8, "GB"))
    ),
    "whole run: failures, energy, emissions, cost": FOUR.variant(
        failure_rate=Q_(2e-4, "failures/device/hour"), checkpoint_bandwidth=Q_(1, "GB/s"),
        restart_time=Q_(10, "min"), device_power=Q_(700, "W"), pue=1.1,
        carbon_intensity="US_average_LLaMA2023", energy_price=Q_(0.08, "USD/kWh"),
    ),
    "whole run: realistic rate, ZeRO-1 writers, given interval": FOUR.variant(
        assumptions=Assumptions.realistic(), zero_stage=1, nics_per_node=8,
        checkpoint_bandwidth=Q_(5, "GB/s"), restart_time=Q_(3, "min"),
        checkpoint_interval=Q_(30, "min"), accelerator="H100", energy_price=Q_(0.1, "USD/kWh"),
        idle_power=Q_(200, "W"),
    ),
    "whole run: energy only": FOUR.variant(
        device_power=Q_(400, "W"), pue=1.3, carbon_intensity=Q_(429, "g/kWh")
    ),
    "whole run: energy with idle power, no failures": FOUR.variant(
        device_power=Q_(700, "W"), idle_power=Q_(150, "W"), energy_price=Q_(0.1, "USD/kWh")
    ),
    "layout t, p, v, sequence parallel": FOUR.variant(
        nodes=5, tensor_parallel=5, pipeline_parallel=2, pipeline_chunks=2, accumulation_steps=4, zero_stage=1,
        sequence_parallel=1, optimizer="adam", memory_bandwidth=Q_(3.35, "TB/s"), intra_latency=Q_(2, "us"),
        inter_latency=Q_(5, "us"),
    ),
    "layout HSDP full recompute, realistic": FOUR.variant(
        nodes=5, tensor_parallel=5, accumulation_steps=4, zero_stage=3, shard_group=2, recompute="full",
        assumptions=Assumptions.realistic(), nics_per_node=8, optimizer_step_time=Q_(20, "ms"),
    ),
    "step from the operators, fp8, fused attention, zero-3": DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=1, per_device_batch=2,
        training_tokens=Q_(1e9, "token"), zero_stage=3, flash_attention=1, matmul_format="fp8",
    ),
    "step from the operators, bf16, unfused attention, full recompute": DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=2, per_device_batch=1,
        training_tokens=Q_(1e9, "token"), flash_attention=0, recompute="full", fused_elementwise=1,
    ),
    "step from the operators, gpt-2 on the data-parallel model": FOUR.variant(
        step_time=None, training_time=None, training_tokens=Q_(1e9, "token"), node=Systems.Nodes.DGX_H100,
        nodes=4,
    ),
    "layout context parallel 8 across two nodes, full recompute": DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_8B, node=Systems.Nodes.DGX_H100, nodes=2, per_device_batch=1,
        accumulation_steps=4, tensor_parallel=2, context_parallel=8, flash_attention=1, recompute="full",
        training_tokens=Q_(1e12, "token"),
    ),
    "layout DeepSeek-V3 expert parallel 64": DataParallelScaleOutScenario(
        workload=Models.Language.DeepSeek_V3, node=Systems.Nodes.HGX_H800, nodes=32, per_device_batch=1,
        accumulation_steps=32, pipeline_parallel=4, expert_parallel=64, zero_stage=1, flash_attention=1,
        matmul_format="fp8", training_tokens=Q_(1e12, "token"),
    ),
    "layout DeepSeek-V3 expert parallel 8, overlapped": DataParallelScaleOutScenario(
        workload=Models.Language.DeepSeek_V3, node=Systems.Nodes.HGX_H800, nodes=32, per_device_batch=1,
        accumulation_steps=32, pipeline_parallel=4, expert_parallel=8, expert_overlap=1, zero_stage=1,
        flash_attention=1, matmul_format="fp8", training_tokens=Q_(1e12, "token"),
    ),
    "layout DeepSeek-V3 with its MTP module on the last stage": DataParallelScaleOutScenario(
        workload=vary_workload(Models.Language.DeepSeek_V3, {"mtp_layers": "1"}), node=Systems.Nodes.HGX_H800,
        nodes=32, per_device_batch=1, accumulation_steps=32, pipeline_parallel=16, expert_parallel=16,
        zero_stage=1, last_stage_layers=2, training_tokens=Q_(1e12, "token"),
    ),
    "layout DeepSeek-V3 in one stage with its MTP module": DataParallelScaleOutScenario(
        workload=vary_workload(Models.Language.DeepSeek_V3, {"mtp_layers": "1"}), node=Systems.Nodes.HGX_H800,
        nodes=4, per_device_batch=1, accumulation_steps=1, expert_parallel=32, training_tokens=Q_(1e12, "token"),
    ),
    "layout custom pipeline layout, recompute modules": DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_405B, node=Systems.Nodes.DGX_H100, fabric=Systems.Fabrics.InfiniBand_NDR,
        nodes=16, per_device_batch=1, accumulation_steps=16, tensor_parallel=8, pipeline_parallel=16,
        sequence_parallel=1, pipeline_layout="E|(t|)*126L", recompute_modules="core_attn,mlp,layernorm",
        training_tokens=Q_(1e12, "token"),
    ),
}

OPERATOR_STEPS = ("matrix products of the linear layers", "attention core", "memory-bound element-wise work", "T1")


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("step from the operators")])
def test_a_step_from_the_operators_prints_each_class_and_their_sum(name):
    """One step per operator class, each with its figures, then T1 = their sum (the step the model used)."""
    scenario = CASES[name]
    job = scenario.result.job
    assert job.operators is not None
    printed = {what.split(",")[0].split(" (")[0].split(":")[0]: (operands, value)
               for what, operands, value in steps(scenario.explain())}
    for what in OPERATOR_STEPS:
        assert what in printed, what
    assert ("casts to " + job.matmul_format in printed) == (float(job.operators.cast_time) > 0)
    t1 = scenario.result.model_inputs.step_time
    assert value_of(printed["T1"][1]) == pytest.approx(float(t1), rel=1e-5)
    assert value_of(printed["T1"][1]) == pytest.approx(float(job.operators.total), rel=1e-5)
    assert value_of(printed["matrix products of the linear layers"][1]) == pytest.approx(
        float(job.operators.matmul_time), rel=1e-5)
    flops = float(printed["matrix products of the linear layers"][0].split(" / ")[0])
    assert flops == pytest.approx(float(job.operators.matmul_flops), rel=1e-5)


def test_a_step_from_mfu_prints_no_operator_classes():
    text = CASES["job from scratch, no recomputation"].explain()
    assert "matrix products of the linear layers" not in text
    assert "T1 = b F / (P u)" in text


@pytest.mark.parametrize("name", list(CASES))
def test_every_printed_step_recomputes_from_its_printed_operands(name):
    text = CASES[name].explain()
    checked = 0
    for what, operands, value in steps(text):
        if value in ("none",) or not re.match(NUMBER, value):
            continue
        printed = value_of(re.sub(r"\s*\((?:does NOT )?fits?\)$", "", value))
        computed = value_of(operands)
        assert computed == pytest.approx(printed, rel=2e-5, abs=1e-9), (what, operands, value)
        checked += 1
    assert checked >= 13, f"only {checked} steps could be read back"


def test_a_changed_operand_would_be_caught():
    """The checker is not vacuous: a wrong printed value fails it."""
    assert value_of("3 GB x 1.75") == pytest.approx(5.25e9)
    assert value_of("32 x 1800 ms / 6461.67 ms") != pytest.approx(value_of("8.9"), rel=2e-5)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("layout") and ("context" in n or "expert" in n)])
def test_context_and_expert_terms_are_printed_and_add_up_to_the_update(name):
    """The ring's and the all-to-alls' exposed times are steps of their own, in the update's sum, and the notes
    name the link each group spans and the share of the update each term takes."""
    scenario = CASES[name]
    r = scenario.result
    printed = {what.split(" (")[0].split(",")[0].split(";")[0]: (operands, value)
               for what, operands, value in steps(scenario.explain())}
    update = printed["update"]
    assert value_of(update[0]) == pytest.approx(float(r.figures.layout.update_time), rel=2e-5)
    notes = "\n".join(r.constraint_trace)
    if "context" in name:
        time = r.context_parallel_time.to("s").magnitude
        assert time > 0
        assert value_of(printed["context-parallel time"][1]) == pytest.approx(time, rel=1e-5)
        assert "context-parallel ring (t x cp = 16 devices) across NVLink domains of 8 devices" in notes
        assert f"context-parallel ring {time / r.update_time.to('s').magnitude:.1%}" in notes
        assert "cp=8" in notes
    else:
        assert "ep=" in notes and "expert all-to-alls (ep x etp = " in notes
        assert value_of(printed["parameters per device"][1]) == pytest.approx(
            float(r.figures.layout.terms.sharding.parameters), rel=1e-5)
        if "overlapped" in name:
            assert "inside the NVLink domain of 8 devices; overlapped" in notes
            assert "the experts' gradient reduction over the d_e ranks that hold the same experts" in printed
        else:
            time = r.expert_parallel_time.to("s").magnitude
            assert value_of(printed["expert-parallel time"][1]) == pytest.approx(time, rel=1e-5)
            assert "87.5% of each all-to-all goes over the NICs" in notes
            assert f"expert all-to-alls {time / r.update_time.to('s').magnitude:.1%}" in notes
