"""The DDP check's pure parts: the robust step-time variation and the prediction's wait term."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.calibrate.ddp import predict, robust_cv
from mlsysim.calibrate.fit import fit_collective
from mlsysim.core.units import quantity


def test_robust_cv_of_normal_step_times_is_sigma_over_mu():
    rng = random.Random(7)
    times = [rng.gauss(0.1, 0.01) for _ in range(20_000)]
    assert robust_cv(times) == pytest.approx(0.1, rel=0.03)


@given(st.lists(st.floats(0.05, 0.06), min_size=8, max_size=40), st.floats(1.0, 100.0))
def test_a_few_stray_slow_steps_barely_move_it(times, outlier):
    base = robust_cv(times)
    spoiled = robust_cv([*times, outlier])
    assert spoiled <= base + 0.25  # one step of up to 100 s: the standard deviation would explode
    assert robust_cv(times[:3]) == 0.0


def test_the_prediction_waits_for_the_slower_rank_with_the_measured_variation():
    sizes = [2**k for k in range(10, 24)]
    fit = fit_collective(sizes, [1e-4 + s / 1e9 for s in sizes], collective="all_reduce", ranks=2, source="test")
    step = quantity(50.0, "ms")
    quiet = predict(fit, 1_000_000, step, batch=8, overlap=False)
    noisy = predict(fit, 1_000_000, step, batch=8, overlap=False, straggler_cv=0.2)
    wait = (noisy.update_time - quiet.update_time).to("ms").magnitude
    assert wait == pytest.approx(0.2 * 50.0 * math.sqrt(2 * math.log(2)), rel=1e-9)
