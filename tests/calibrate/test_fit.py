"""The alpha-beta fit: exact on affine data, relative-error weighted, validated inputs, the link map."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, DataParallelScaleOutModel, InputError, UnitsError, Workload
from mlsysim.calibrate import bus_factor, fit_collective


def affine_times(sizes, alpha, beta, collective, ranks):
    return [alpha + s * bus_factor(collective, ranks) / beta for s in sizes]


SIZES = [2.0**k for k in range(3, 34)]


@settings(max_examples=50, deadline=None)
@given(
    alpha=st.floats(1e-6, 1e-3),
    beta=st.floats(1e9, 1e12),
    ranks=st.integers(2, 1024),
    collective=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter"]),
)
def test_fit_recovers_alpha_and_beta_of_affine_data(alpha, beta, ranks, collective):
    fit = fit_collective(
        SIZES,
        affine_times(SIZES, alpha, beta, collective, ranks),
        collective=collective,
        ranks=ranks,
    )
    assert fit.latency.to("s").magnitude == pytest.approx(alpha, rel=1e-6)
    assert fit.bus_bandwidth.to("B/s").magnitude == pytest.approx(beta, rel=1e-6)
    assert fit.worst_relative_error < 1e-9


def test_bus_factor_is_nccl_tests_factor():
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert bus_factor("reduce_scatter", 2) == pytest.approx(0.5)


def test_fit_weights_relative_error_so_small_sizes_count():
    # latency-bound points (10 us) and bandwidth-bound ones (ms); a 1% error at
    # the large end must not swamp the small end, as plain least squares would.
    sizes = [1e3, 1e4, 1e5, 1e8, 1e9]
    times = affine_times(sizes, 1e-5, 1e11, "all_reduce", 8)
    times[-1] *= 1.01
    fit = fit_collective(sizes, times, collective="all_reduce", ranks=8)
    assert fit.latency.to("us").magnitude == pytest.approx(10.0, rel=0.01)
    assert fit.worst_relative_error < 0.01
    errors = fit.relative_errors()
    assert np.max(np.abs(errors)) == pytest.approx(fit.worst_relative_error)


def test_negative_intercept_is_clamped_to_zero_latency():
    sizes = [1e6, 2e6, 4e6]
    times = [s / 1e10 - 1e-6 for s in sizes]  # a line through a negative intercept
    fit = fit_collective(sizes, times, collective="all_gather", ranks=2)
    assert fit.latency.magnitude == 0.0
    assert fit.bus_bandwidth.magnitude > 0


def test_predict_takes_quantities_scalars_and_arrays():
    fit = fit_collective([1e3, 1e9], [1.00175e-5, 1.751e-2], collective="all_reduce", ranks=8)
    assert fit.predict(Q_(1, "GB")).to("ms").magnitude == pytest.approx(17.51)
    assert fit.predict(Q_(1000, "MB")).to("ms").magnitude == pytest.approx(17.51)
    many = fit.predict(Q_(np.array([0.0, 1e9]), "B"))
    assert many.to("us").magnitude == pytest.approx([10.0, 17510.0])


@pytest.mark.parametrize("size", [1e6, Q_(1, "s"), "1 MB", Q_(-1, "MB"), Q_(math.nan, "MB")])
def test_predict_rejects_what_is_not_a_size(size):
    fit = fit_collective([1e3, 1e9], [1e-5, 1e-2], collective="all_reduce", ranks=8)
    with pytest.raises(InputError, match="message_size"):
        fit.predict(size)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(ranks=1), "ranks"),
        (dict(ranks=0), "ranks"),
        (dict(ranks=2.5), "ranks"),
        (dict(collective="alltoall"), "collective"),
        (dict(sizes=[1e3], times=[1e-5]), "two or more"),
        (dict(sizes=[1e3, 1e3], times=[1e-5, 1.1e-5]), "two or more"),
        (dict(times=[1e-5, -1.0]), "times"),
        (dict(times=[1e-5, math.inf]), "times"),
        (dict(sizes=[0.0, 1e9]), "message_sizes"),
        (dict(times=[1e-5]), "same length"),
        (dict(times=[2e-2, 1e-5]), "do not grow"),
    ],
)
def test_fit_rejects_bad_inputs_naming_them(kwargs, needle):
    args = dict(sizes=[1e3, 1e9], times=[1e-5, 1e-2], collective="all_reduce", ranks=8)
    args.update(kwargs)
    with pytest.raises(InputError, match=needle):
        fit_collective(
            args["sizes"], args["times"], collective=args["collective"], ranks=args["ranks"]
        )


@pytest.mark.parametrize("collective, steps", [("all_reduce", 14), ("all_gather", 7)])
def test_to_link_latency_is_per_ring_step(collective, steps):
    sizes = [1e3, 1e9]
    fit = fit_collective(
        sizes, affine_times(sizes, 28e-6, 2e11, collective, 8), collective=collective, ranks=8
    )
    link = fit.to_link()
    assert link.latency.to("us").magnitude == pytest.approx(28.0 / steps)
    assert link.bandwidth.to("GB/s").magnitude == pytest.approx(200.0)


def test_model_fed_with_the_link_reproduces_the_fitted_allreduce_time():
    # The model's ring over d = n devices with (B, alpha/step) must give the fitted
    # time for the whole gradient: 2(n-1) alpha_step + G f(n) / B = alpha + G F / beta.
    sizes = [1e3, 1e9]
    fit = fit_collective(
        sizes, affine_times(sizes, 30e-6, 3e11, "all_reduce", 8), collective="all_reduce", ranks=8
    )
    link = fit.to_link()
    result = DataParallelScaleOutModel().solve(
        Workload(name="w", parameters=Q_(1e8, "param")),
        "fp32",
        Q_(1, "s"),
        Q_(1, "hour"),
        1,
        8,
        1,
        link.bandwidth,
        intra_latency=link.latency,
    )
    assert result.communication_time.to("us").magnitude == pytest.approx(
        fit.predict(Q_(4e8, "B")).to("us").magnitude
    )


def test_results_are_quantities_in_readable_units():
    fit = fit_collective([1e3, 1e9], [1.00175e-5, 1.751e-2], collective="all_reduce", ranks=8)
    assert str(fit.latency.units) == "µs"
    assert str(fit.bus_bandwidth.units) == "GB/s"
    with pytest.raises(UnitsError):
        fit.predict(Q_(1, "GB/s"))
    data = fit.to_dict()
    assert data["latency"] == {"value": 10.0, "unit": "microsecond"}
    assert data["bus_bandwidth"]["unit"] == "gigabyte / second"
    assert len(data["points"]) == 2
    assert repr(fit).startswith("CollectiveFit(collective='all_reduce', ranks=8, latency=10 µs")
