"""Published model-parallel runs: the honest figures the model reaches, pinned (not the targets)."""

import pytest

from mlsysim.validation.parallel import (
    EXCLUDED,
    MEDIAN_TARGET,
    by_family,
    evaluate_cases,
    fit_efficiency,
    hardware_flops,
    leave_one_family_out,
    load_cases,
    load_entries,
    predict,
    summarize,
    zero3_rate_check,
)


@pytest.fixture(scope="module")
def cases():
    return load_cases()


@pytest.fixture(scope="module")
def results(cases):
    return evaluate_cases(cases, fit_efficiency(cases))


def test_every_entry_is_predicted_or_excluded_with_a_reason(cases):
    assert len(load_entries()) == 40
    assert len(cases) + len(EXCLUDED) == 40
    assert all(why for why in EXCLUDED.values())


def test_bloom_runs_on_its_clusters_omni_path_links(cases):
    bloom = next(c for c in cases if c.id.startswith("bloom176b"))
    assert bloom.inputs["nic_bandwidth"] == 12.5e9 and bloom.inputs["nics_per_node"] == 4.0
    megatron = next(c for c in cases if c.id.startswith("narayanan2021_table1"))
    assert megatron.inputs["nic_bandwidth"] == 25e9 and megatron.inputs["nics_per_node"] == 8.0


def test_every_entry_carries_its_source_and_quote():
    for entry in load_entries():
        assert entry["source"] and entry["quote"]


def test_megatrons_count_reproduces_a_quoted_rate():
    # BLOOM's log: 149.77 TFLOP/s per GPU at 104.70 s per iteration on 384 GPUs (Megatron-LM's count)
    flops = hardware_flops(2048, 2048, 70, 14336, 250680)
    assert flops / (104.70 * 384) / 1e12 == pytest.approx(149.77, rel=2e-3)


def test_one_fitted_efficiency_per_generation(cases):
    u = fit_efficiency(cases)
    assert set(u) == {"A100", "H100"}
    assert u["A100"] == pytest.approx(0.592, abs=2e-3)
    assert u["H100"] == pytest.approx(0.731, abs=2e-3)


def test_overall_median_meets_the_target_and_the_worst_does_not(results):
    total = summarize(results)
    assert total.count == 37
    assert total.median == pytest.approx(0.040, abs=0.002)
    assert total.median <= MEDIAN_TARGET
    assert total.worst == pytest.approx(2.98, abs=0.02)  # ZeRO-3 at 1,536 GPUs: see docs/parallelism.md


def test_megatron_families_are_within_target(results):
    families = by_family(results)
    ptd = families["Megatron-LM PTD-P"]
    assert ptd.median < 0.02 and ptd.worst < 0.075
    seq = families["Megatron-LM seq-parallel + selective recompute"]
    assert seq.median == pytest.approx(0.075, abs=0.003) and seq.worst == pytest.approx(0.139, abs=0.003)


def test_ptd_p_holds_its_throughput_as_gpus_double(results):
    rates = {r.case.id: r.case.measured_time / r.predicted_time for r in results}
    for size in ("175B", "530B"):
        ptd = [v for k, v in rates.items() if k.startswith(f"narayanan2021_table2_ptd_{size}")]
        assert max(abs(v - 1) for v in ptd) < 0.05


def test_zero3_falloff_is_not_reproduced(results):
    """Measured: ZeRO-3 falls from 144 to 44 TFLOP/s per GPU (175B, 384 -> 1,536 GPUs); the model's
    per-layer ring collectives over eight 200 Gb/s rails per node stay hidden under compute, so it
    predicts a flat rate and misses by 4x at 1,536 GPUs. Pinned so that a fix shows."""
    by_id = {r.case.id: r for r in results}
    small = by_id["narayanan2021_table2_zero3_175B_384gpu"]
    large = by_id["narayanan2021_table2_zero3_175B_1536gpu"]
    predicted_small = 144 * small.case.measured_time / small.predicted_time
    predicted_large = 44 * large.case.measured_time / large.predicted_time
    assert predicted_large == pytest.approx(predicted_small, rel=0.02)
    assert large.error == pytest.approx(2.98, abs=0.02)


def test_a_given_sharding_rate_equal_to_the_ring_rate_changes_nothing(results):
    for r in results:
        if r.case.inputs["zero_stage"] >= 1:
            again = predict(r.case, r.efficiency, float(r.figures.parts.shard_rate))
            assert float(again.update_time) == pytest.approx(r.predicted_time, rel=1e-12)


def test_one_achieved_collective_rate_explains_the_communication_bound_zero3_runs(results):
    """The diagnostic: the 175B runs on 768 and 1,536 GPUs and the 530B runs on 1,120 and 2,240
    are exact at 15.5-18 GB/s per GPU (a floor set by the parameters, not the GPU count), and each
    is within 12% when predicted with the median rate of the other five runs."""
    checks = {c.id: c for c in zero3_rate_check(results)}
    assert len(checks) == 6
    bound = [k for k in checks if k.endswith(("175B_768gpu", "175B_1536gpu", "530B_1120gpu", "530B_2240gpu"))]
    assert len(bound) == 4
    for k in bound:
        assert 15.5e9 < checks[k].implied_rate < 18e9
        assert abs(checks[k].held_out_error) < 0.12
    for k in set(checks) - set(bound):  # compute ~ communication: perfect overlap is optimistic there
        assert checks[k].implied_rate < 13e9
        assert checks[k].held_out_error > 0.2


def test_leave_one_family_out_is_reported_for_every_family(cases):
    held = leave_one_family_out(cases)
    assert len(held) == 6
    assert held["Megatron-LM PTD-P"].median == pytest.approx(0.084, abs=0.003)
