"""``benchmarks/bench_few_shot.py`` (issue 41's few-shot transfer) on one small family: what it calibrates on,
what it predicts, and that its path is the fit's. The headline figure is measured, not checked, here."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import bench_few_shot as bench
finally:
    sys.path.pop(0)

FAMILY = "MT-NLG 530B (A100)"
"""Three runs at 2,240, 2,800 and 3,360 GPUs: the smallest family the benchmark uses."""


@pytest.fixture(scope="module")
def family() -> list[bench.Run]:
    eligible, _ = bench.families(bench.published_runs())
    return eligible[FAMILY]


def test_families_are_eligible_or_skipped_with_a_reason() -> None:
    runs = bench.published_runs()
    eligible, skipped = bench.families(runs)
    assert FAMILY in eligible and eligible.keys().isdisjoint(skipped)
    assert {bench.family_key(r) for r in runs} == eligible.keys() | skipped.keys()
    for members in eligible.values():
        assert len(members) >= bench.MIN_RUNS and len({r.gpus for r in members}) >= bench.MIN_GPU_COUNTS
        assert len({r.case.generation for r in members}) == 1
    assert all(why for why in skipped.values())


def test_the_smallest_runs_calibrate_and_every_other_run_is_predicted(family: list[bench.Run], tmp_path: Path) -> None:
    result = bench.family_result(FAMILY, family, tmp_path)
    smallest = sorted(family, key=lambda r: r.gpus)
    assert result.two.on == [r.case.id for r in smallest[:2]]
    assert result.one.on == [smallest[0].case.id]
    assert result.two.status == result.one.status == "fitted"
    everything = {r.case.id for r in family}
    assert set(result.predicted) == everything - set(result.two.on)
    assert set(result.predicted).isdisjoint(result.two.on) and result.predicted
    for errors in (result.two.errors, result.one.errors, result.uncalibrated, result.two.errors_replaced):
        assert set(errors) == set(result.predicted)
        assert all(math.isfinite(e) and e > -1.0 for e in errors.values())
    for fit in (result.two, result.one):
        assert 0.0 < (fit.assumptions.get("kernel_share") or fit.assumptions["matmul_ceiling"]) <= 1.0
    # two fits on different runs: two different ceilings, two different predictions
    assert result.two.assumptions != result.one.assumptions
    assert result.two.errors != result.one.errors
    assert (tmp_path / "MT_NLG_530B__A100__2.csv").read_text(encoding="utf-8").count("\n") == 3  # header + 2 rows


def test_the_written_assumptions_reproduce_the_run_they_were_fitted_on(family: list[bench.Run], tmp_path: Path) -> None:
    """One run's exact ceiling, through the assumptions file and the run's scenario file: its own time."""
    first = sorted(family, key=lambda r: r.gpus)[0]
    fit = bench.calibrate([first], [first], tmp_path, "self")
    assert fit.status == "fitted"
    assert abs(fit.errors[first.case.id]) < 1e-6


def test_a_fit_outside_its_bounds_is_recorded_as_refused(family: list[bench.Run], tmp_path: Path) -> None:
    """Runs three times faster than measured: no ceiling up to the best measured kernel reaches them."""
    fast = [bench.Run(replace(r.case, measured_time=r.case.measured_time / 3.0), r.gpus) for r in family]
    fit = bench.calibrate(fast[:2], fast[2:], tmp_path, "fast")
    assert fit.status == "refused"
    assert "faster" in fit.reason
    assert fit.errors == {}


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--json", "--family", "MT-NLG"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in document["families"]] == [FAMILY]
    assert document["pooled"]["2 runs"]["runs"] == len(document["families"][0]["predicted"])
    assert set(document["pooled"]) == set(bench.VARIANTS)
