"""Published model-parallel runs, predicted through the public scenario: one path, honest figures."""

import math

import pytest

from mlsysim.engine.io.files import scenario_from_dict
from mlsysim.validation.parallel import (
    EXCLUDED,
    HOPPER_EXPERTS,
    MEDIAN_TARGET,
    MOE_FAMILIES,
    MTNLG_FAMILY,
    NOT_EXPRESSIBLE,
    POWER_CAPPED_H100,
    ZERO3_FAMILY,
    by_family,
    hardware_flops,
    load_cases,
    load_entries,
    megatron_moe_flops_per_token,
    not_expressible,
    summarize,
    summary,
    validation,
)
from tests.validation.limits import hold

HELD_OUT_MEDIAN_LIMIT = 0.075
"""The held-out median reached with the step priced by the measured kernels and one in-training ceiling per
architecture (7.4% over 86 runs: 6.9% over the 70 dense runs, 10.1% over the 16 mixtures of experts, their routed
experts at their own ceiling and DeepEP's dispatch hierarchical; 5.5% over published_parallel.json's 40; with a
fitted ceiling per format, before the kernels were measured: 6.8% over 89): a regression fails, an improvement
is noted."""
IN_SAMPLE_MEDIAN_LIMIT = 0.059
RUNS = 86
"""published_parallel.json's 40 runs, TorchTitan's 30 (context parallelism and asynchronous tensor parallelism
included) and 16 of the 21 mixtures of experts (Qwen3-Next's linear attention and a 32 x 3 pipeline of 94
layers are not expressible; the GB300's MXFP8 kernels are in no table)."""
DENSE_RUNS = 70
DENSE_HELD_OUT_MEDIAN_LIMIT = 0.070
"""The 70 dense runs' held-out median (6.9%; issue 31's target 6%: TorchTitan's long-context and t = 8 runs
miss)."""
GIVEN_HELD_OUT_MEDIAN_LIMIT = 0.056
"""The 40 runs of published_parallel.json held out (5.5%: issue 29's target 5%, met at 4.6% with a fitted
ceiling per format; the A100 runs' FP16 products now at the share of the measured kernels)."""


@pytest.fixture(scope="module")
def checked():
    return validation()


@pytest.fixture(scope="module")
def plain():
    return summary()


def test_every_entry_is_predicted_or_says_what_is_missing():
    entries = load_entries()
    assert len(entries) == 40 + 51  # published_parallel.json, and all of published_frontier.json
    missing = not_expressible()
    assert NOT_EXPRESSIBLE.keys() <= missing.keys()
    assert len(load_cases()) + len(EXCLUDED) + len(missing) == len(entries)
    assert len(load_cases()) == RUNS
    assert all(why for why in {**EXCLUDED, **missing}.values())


def test_production_layouts_go_through_the_scenario(checked):
    """Llama 3 405B (126 layers on 16 stages x 4 chunks) and both BLOOM points (70 layers on 12
    stages; the ramp-up's one micro-batch on 12 stages) are predicted, not refused."""
    ids = {r.case.id for r in checked.in_sample}
    for run in ("llama3_405b_8192gpu_seq8192", "llama3_405b_16384gpu_seq8192",
                "bloom176b_tr11_gbs2048_iter85376", "bloom176b_tr11_gbs16_rampup"):
        assert run in ids
    llama = next(r for r in checked.in_sample if r.case.id == "llama3_405b_8192gpu_seq8192")
    assert llama.result.figures.layout.terms.stage.layers == 8.0


def test_each_reported_prediction_is_the_scenario_result_of_the_inputs_printed_beside_it(plain):
    for run in plain["runs"]:
        for key, time in (("scenario", "predicted_time_s"), ("held_out_scenario", "held_out_predicted_time_s")):
            result = scenario_from_dict(run[key]).result
            assert result.update_time.to("s").magnitude == run[time], (run["id"], key)


def test_bloom_runs_on_its_clusters_omni_path_links():
    bloom = next(c for c in load_cases() if c.id.startswith("bloom176b"))
    assert bloom.inputs["inter_bandwidth"] == "100 Gbps" and bloom.inputs["nics_per_node"] == 4
    megatron = next(c for c in load_cases() if c.id.startswith("narayanan2021_table1"))
    assert megatron.inputs["node"] == "DGX_A100" and "inter_bandwidth" not in megatron.inputs


def test_every_entry_carries_its_source_and_quote():
    for entry in load_entries():
        assert entry["source"] and entry["quote"]


def test_megatrons_count_reproduces_a_quoted_rate():
    # BLOOM's log: 149.77 TFLOP/s per GPU at 104.70 s per iteration on 384 GPUs (Megatron-LM's count)
    flops = hardware_flops(2048, 2048, 70, 14336, 250680)
    assert flops / (104.70 * 384) / 1e12 == pytest.approx(149.77, rel=2e-3)


def test_one_in_training_share_per_generation(checked):
    """One fitted number per dense generation, its 16-bit in-training ceiling; every other format is the same
    share of the best measured kernel in it, never above that kernel."""
    from mlsysim.validation.parallel import best_kernel

    u = checked.efficiency
    assert set(u) == {"A100", "H100", POWER_CAPPED_H100, HOPPER_EXPERTS, "GB200", "GB300", "B200"}
    assert u["A100"]["bf16"] == pytest.approx(0.665, abs=3e-3)
    assert u["H100"]["bf16"] == pytest.approx(0.755, abs=3e-3)
    capped = u[POWER_CAPPED_H100]
    # the 500 W H100s reach less (their power limit priced apart, by the clock curve)
    assert capped["bf16"] < u["H100"]["bf16"]
    for generation in ("H100", POWER_CAPPED_H100):
        share = u[generation]["bf16"] / best_kernel(generation, "bf16")
        for fmt in ("fp8", "fp8_rowwise", "fp8_blockwise"):
            assert u[generation][fmt] == pytest.approx(share * best_kernel(generation, fmt), rel=1e-12)
            assert u[generation][fmt] <= best_kernel(generation, fmt)


def test_the_stored_ceilings_are_the_fit():
    from mlsysim.physics.matmul import fitted_ceiling
    from mlsysim.validation.ceilings import fitted_table

    for architecture, formats in fitted_table().items():
        for fmt, value in formats.items():
            assert fitted_ceiling(architecture, fmt) == value, (architecture, fmt)


def test_no_prediction_uses_mfu_or_a_step_time(plain):
    for run in plain["runs"]:
        for key in ("scenario", "held_out_scenario"):
            assert "mfu" not in run[key] and "step_time" not in run[key]
            assert scenario_from_dict(run[key]).job.origins["step_time"].startswith("operators (")


def test_the_headline_is_the_figure_with_each_family_left_out(checked, plain):
    held, sample = summarize(checked.held_out), summarize(checked.in_sample)
    assert held.count == sample.count == RUNS
    hold("held-out median |error|", held.median, HELD_OUT_MEDIAN_LIMIT)
    hold("in-sample median |error|", sample.median, IN_SAMPLE_MEDIAN_LIMIT)
    assert plain["targets"]["median_abs_error_held_out"] == MEDIAN_TARGET
    assert plain["held_out"]["median_abs_error"] == held.median
    assert list(plain)[:2] == ["held_out", "in_sample"]  # the held-out figure leads


def test_an_implementation_rate_is_fitted_on_its_family_alone_and_reported_leave_one_run_out(checked):
    rates = checked.rates
    assert set(rates) == {ZERO3_FAMILY, MTNLG_FAMILY}
    # DeepSpeed's ZeRO-3 of 2021: about 16 GB/s per GPU where eight 200 Gb/s rails carry 25
    assert 15e9 < rates[ZERO3_FAMILY] < 17e9
    held = {r.case.id: r for r in checked.held_out}
    for run in ("175B_768gpu", "175B_1536gpu", "530B_1120gpu", "530B_2240gpu"):  # communication-bound
        r = held[f"narayanan2021_table2_zero3_{run}"]
        assert r.rate != rates[ZERO3_FAMILY]  # from the other five runs
        assert abs(r.error) < 0.12


def test_families_held_out(checked):
    families = by_family(checked.held_out)
    hold("PTD-P held-out median", families["Megatron-LM PTD-P"].median, 0.047)
    assert families[MTNLG_FAMILY].worst < 0.05
    # Korthikanti's sizes trend: the largest models stay pessimistic
    seq = families["Megatron-LM seq-parallel + selective recompute"]
    assert seq.mean < 0 and seq.worst < 0.095
    hold("TorchTitan 2024 held-out median", families["TorchTitan Llama 3.1 H100 benchmarks"].median, 0.080)
    # the baseline whose batch the source does not state, predicted with its sibling's (ASSUMED)
    baseline = next(r for r in checked.held_out if r.case.id == "korthikanti2022_530B_dp8_2240gpu_full_recompute")
    assert baseline.case.metric == "MFU (model FLOPs)" and -0.12 < baseline.error < -0.03


def test_a_large_model_achieves_more_of_the_peak_than_a_small_one(checked):
    """Issue 31: on one GPU, a 175B model's achieved MFU at least 3 points above a 1.7B model's."""
    by_id = {r.case.id: r for r in checked.in_sample}
    small = by_id["narayanan2021_table1_1.7B"].result.figures.achieved_mfu
    large = by_id["narayanan2021_table2_ptd_175B_384gpu"].result.figures.achieved_mfu
    assert large - small >= 0.03


def test_full_recomputation_is_priced_as_compute(checked):
    """Korthikanti et al. 2022: the same layout with full recomputation is measured 29-32% slower
    than with selective; through the scenario full recomputation costs compute too."""
    by_id = {r.case.id: r for r in checked.in_sample}
    for size in ("22B", "175B", "530B", "1T"):
        full = by_id[f"korthikanti2022_{size}_full_recompute"]
        selective = by_id[f"korthikanti2022_{size}_seqpar_selective"]
        assert full.result.compute_time > 1.2 * selective.result.compute_time
        assert full.result.figures.achieved_mfu < selective.result.figures.achieved_mfu


def test_the_ramp_up_point_is_said_so(checked):
    held = next(r for r in checked.held_out if r.case.id == "bloom176b_tr11_gbs16_rampup")
    assert any("fewer micro-batches" in note for note in held.result.constraint_trace)
    assert not math.isnan(held.error)


def test_the_dense_runs_are_unchanged_by_the_mixtures_of_experts(checked):
    """The MoE runs fit their own ceilings (HOPPER_EXPERTS, GB200, GB300): the dense runs' figures stay."""
    dense = [r for r in checked.held_out if not r.case.family.startswith(MOE_FAMILIES)]
    assert len(dense) == DENSE_RUNS
    hold("dense held-out median", summarize(dense).median, DENSE_HELD_OUT_MEDIAN_LIMIT)
    given = [r for r in dense if not r.case.id.startswith("torchtitan")]
    assert len(given) == 40
    hold("published_parallel.json held-out median", summarize(given).median, GIVEN_HELD_OUT_MEDIAN_LIMIT)


def test_megatron_cores_moe_flop_count_reproduces_its_quoted_rates():
    """Rows quoting both TFLOP/s per GPU and tokens/s per GPU (or the step time) agree with the count."""
    entries = {e["id"]: e for e in load_entries()}
    per_token = megatron_moe_flops_per_token(entries["mcore_moe_qwen3_235b_h100_256gpu_bf16"]["model"])
    assert per_token == pytest.approx(1.480e11, rel=1e-3)
    for run in ("mcore_moe_qwen3_235b_gb200_256gpu_mxfp8", "mcore_moe_qwen3_235b_gb300_256gpu_mxfp8"):
        m = entries[run]["measured"]
        assert m["tflops_per_gpu"] * 1e12 / m["tokens_per_second_per_gpu"] == pytest.approx(per_token, rel=0.01)
    zoo = entries["modelzoo_qwen3_235b_h100_256gpu_tp2_pp8_ep32_deepep"]
    rate = 2048 * 4096 * per_token / (zoo["measured"]["step_time_s"] * 256) / 1e12
    assert rate == pytest.approx(zoo["measured"]["tflops_per_gpu"], rel=0.01)


def test_the_mixtures_of_experts_go_through_the_scenario_with_their_layouts(checked):
    by_id = {r.case.id: r for r in checked.in_sample}
    deepseek = by_id["deepseek_v3_pretrain_2048xH800"]
    assert deepseek.case.inputs["workload"] == "DeepSeek_V3" and deepseek.case.inputs["node"] == "HGX_H800"
    assert deepseek.case.inputs["expert_parallel"] == 64 and deepseek.case.inputs["expert_overlap"] == 1
    # 2.664M GPU-hours x 3600 / 2048 GPUs over 14.8T / (15,360 x 4,096) updates
    assert deepseek.case.measured_time == pytest.approx(2.664e6 * 3600 / 2048 / (14.8e12 / (15360 * 4096)))
    long = by_id["modelzoo_qwen3_235b_h100_256gpu_longctx_seq131072_tp4_cp8"].case.inputs
    assert long["context_parallel"] == 8 and long["workload"]["seq_len"] == 131072  # type: ignore[index]
    assert by_id["mcore_moe_dsv3_gb200_256gpu_mxfp8"].case.inputs["node"] == "GB200_NVL72"
    missing = not_expressible()
    assert "no measured kernels: no matmul table measures mxfp8 on Blackwell Ultra" in missing[
        "modelzoo_qwen3_235b_gb300_64gpu_ep64_mxfp8"]
    assert "linear attention" in missing["modelzoo_qwen3_next_80b_h100_128gpu_tp1_pp4_ep32_deepep"]


def test_the_frontier_mixtures_of_experts_held_out(checked):
    """Issue 32's target is a held-out median of 10% on the frontier runs: not reached (11.5% over the 49
    frontier runs, 7.3% over the 19 MoE runs, their routed experts at their own ceiling, DeepEP's dispatch
    hierarchical); held so it does not regress."""
    families = by_family(checked.held_out)
    hold("Megatron-Core MoE report held-out median", families["Megatron-Core MoE report headline results"].median,
         0.108)
    hold("ModelZoo Qwen3 held-out median", families["Megatron-MoE-ModelZoo Qwen3 benchmark tables"].median, 0.082)
    hold("DeepSeek-V3 held-out |error|", families["DeepSeek-V3 pre-training"].median, 0.111)
    moe = [r for r in checked.held_out if r.case.family.startswith(MOE_FAMILIES)]
    hold("mixtures of experts held-out median", summarize(moe).median, 0.102)


def test_a_mixture_of_experts_long_context_sweep_follows_its_attention(checked):
    """The ModelZoo's context-parallel sweep (16K to 128K tokens, TP 4, CP 1 to 8): the attention core
    grows from a fifth to most of the step; priced at the dense ceilings (the experts at theirs), every
    point held out within 10% and a drift with the sequence under 10% (one ceiling for the whole MoE model
    drifted from -15% to -36%; the measured fused-attention kernels, more efficient on long sequences, run
    the 128K point 9% fast)."""
    held = {r.case.id: r.error for r in checked.held_out}
    sweep = [held[f"modelzoo_qwen3_235b_h100_256gpu_longctx_seq{s}_tp4_cp{cp}"]
             for s, cp in ((16384, 1), (32768, 2), (65536, 4), (131072, 8))]
    assert all(abs(e) < 0.10 for e in sweep), sweep
    assert abs(sweep[-1] - sweep[0]) < 0.10, sweep


MEASURED_HELD_OUT_MEDIAN = 0.087
"""The held-out median with every collective priced by the measured size curves (``Assumptions(collectives=
"measured")``; docs/parallelism.md, "Measured collectives"): 8.7% against the links' 7.4%, so off by default."""


def test_the_measured_collectives_are_off_because_they_predict_the_runs_left_out_worse(checked):
    """The rule the default follows (adopt only at a held-out median of at most 7.6% with no family worse by more
    than 2 points). Should a change make the measured collectives pass it, this fails: flip the default and say so."""
    from mlsysim import Assumptions

    measured = validation(Assumptions(collectives="measured"))
    median = summarize(measured.held_out).median
    assert median == pytest.approx(MEASURED_HELD_OUT_MEDIAN, abs=0.0015)
    links = by_family(checked.held_out)
    worse = [f for f, s in by_family(measured.held_out).items() if s.median - links[f].median > 0.02]
    assert median > 0.076 or worse
    assert sorted(worse) == sorted(["Llama 3 405B pre-training", "BLOOM-176B",
                                    "Megatron-MoE-ModelZoo Qwen3 benchmark tables"])
