"""nccl-tests / rccl-tests output as people paste it, and the fit to it.

The fixtures are synthetic outputs in nccl-tests' format (their first lines say
how the numbers were made): an 8x H100 node, the same with NCCL_DEBUG=INFO lines
interleaved, an A100 log indented inside a Markdown issue, a two-node NDR run
in the older format without root and in-place columns, all_gather and
reduce_scatter in one file, an rccl-tests run with wrong values, and a
truncated output.
"""

from pathlib import Path

import numpy as np
import pytest

from mlsysim import Q_, InputError
from mlsysim.calibrate import from_nccl_tests, parse_nccl_tests

FIXTURES = Path(__file__).parent / "fixtures"
H100 = FIXTURES / "h100_8gpu_all_reduce.txt"


def measured(path, collective=None):
    """(size in bytes, out-of-place time in us) of the rows of the chosen run, parsed by hand."""
    runs = parse_nccl_tests(path.read_text(), str(path))
    run = runs[0] if collective is None else next(r for r in runs if r.collective == collective)
    return [(row.size, row.time * 1e6) for row in run.rows if not (row.wrong or 0) > 0]


@pytest.mark.parametrize(
    "name, collective, ranks, alpha_us, beta_gbs, peak_gbs, worst",
    [
        # generated with alpha, beta in each file's first lines; the fitted beta sits
        # below the generating one because mid-size messages are slower than the line
        ("h100_8gpu_all_reduce.txt", None, 8, 18.0, 368.0, 369.76, 0.25),
        ("h100_8gpu_all_reduce_nccl_info.log", None, 8, 18.0, 368.0, 363.69, 0.25),
        ("a100_8gpu_all_reduce_issue.md", None, 8, 22.0, 232.0, 226.76, 0.15),
        ("two_node_ndr_all_reduce_out_of_place.txt", None, 2, 24.0, 47.5, 47.90, 0.20),
        ("h100_8gpu_all_gather_reduce_scatter.txt", "all_gather", 8, 14.0, 355.0, 355.24, 0.25),
        ("h100_8gpu_all_gather_reduce_scatter.txt", "reduce_scatter", 8, 15.0, 355.0, 356.30, 0.25),
        ("mi300x_8gpu_rccl_all_reduce_wrong.txt", None, 8, 28.0, 310.0, 298.72, 0.25),
    ],
)
def test_fixture_fits(name, collective, ranks, alpha_us, beta_gbs, peak_gbs, worst):
    path = FIXTURES / name
    fit = from_nccl_tests(path, collective=collective)
    assert fit.ranks == ranks
    assert fit.collective == (collective or "all_reduce")
    assert fit.peak_bus_bandwidth.to("GB/s").magnitude == pytest.approx(peak_gbs)
    assert fit.latency.to("us").magnitude == pytest.approx(alpha_us, rel=0.3)
    assert 0.8 * beta_gbs < fit.bus_bandwidth.to("GB/s").magnitude <= beta_gbs
    assert fit.worst_relative_error < worst
    # every measured time is within the reported worst relative error of the fit
    points = measured(path, collective)
    assert len(points) == len(fit.message_sizes)
    sizes = np.array([size for size, _ in points], dtype=float)
    times = np.array([time for _, time in points])
    predicted = fit.predict(Q_(sizes, "B")).to("us").magnitude
    errors = np.abs(predicted - times) / times
    assert np.max(errors) == pytest.approx(fit.worst_relative_error, rel=1e-9)


def test_interleaved_info_lines_change_nothing_but_the_noise():
    clean = from_nccl_tests(H100)
    noisy = from_nccl_tests(FIXTURES / "h100_8gpu_all_reduce_nccl_info.log")
    assert len(noisy.message_sizes) == len(clean.message_sizes) == 31
    assert noisy.latency.magnitude == pytest.approx(clean.latency.magnitude, rel=0.02)
    assert noisy.bus_bandwidth.magnitude == pytest.approx(clean.bus_bandwidth.magnitude, rel=0.02)


def test_in_place_columns_can_be_fitted_instead():
    out = from_nccl_tests(H100)
    inp = from_nccl_tests(H100, in_place=True)
    assert inp.measured_times != out.measured_times
    assert inp.bus_bandwidth.magnitude == pytest.approx(out.bus_bandwidth.magnitude, rel=0.03)


def test_in_place_on_a_log_without_in_place_columns_is_an_error():
    with pytest.raises(InputError, match=r"out_of_place\.txt:\d+: in_place"):
        from_nccl_tests(FIXTURES / "two_node_ndr_all_reduce_out_of_place.txt", in_place=True)


def test_unnamed_test_is_assumed_all_reduce_and_noted():
    fit = from_nccl_tests(FIXTURES / "two_node_ndr_all_reduce_out_of_place.txt")
    assert any("assumed all_reduce" in note for note in fit.notes)
    named = from_nccl_tests(H100)
    assert named.notes == ()


def test_rows_with_wrong_values_are_left_out_and_noted():
    path = FIXTURES / "mi300x_8gpu_rccl_all_reduce_wrong.txt"
    fit = from_nccl_tests(path)
    runs = parse_nccl_tests(path.read_text())
    assert len(runs[0].rows) == len(fit.message_sizes) + 2
    assert 2**20 not in fit.message_sizes and 2**22 not in fit.message_sizes
    assert any("2 row(s) with wrong values" in note for note in fit.notes)


def test_several_runs_need_a_choice():
    path = FIXTURES / "h100_8gpu_all_gather_reduce_scatter.txt"
    with pytest.raises(InputError, match="2 runs .*all_gather at line 4, reduce_scatter at line"):
        from_nccl_tests(path)
    with pytest.raises(InputError, match="expected one all_reduce run, found 0"):
        from_nccl_tests(path, collective="all_reduce")


def test_truncated_output_names_the_file_and_line():
    path = FIXTURES / "h100_8gpu_all_reduce_truncated.txt"
    with pytest.raises(InputError, match=r"h100_8gpu_all_reduce_truncated\.txt:40: .*cut off"):
        from_nccl_tests(path)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("hello\nworld\n", "no nccl-tests data rows"),
        ("", "no nccl-tests data rows"),
        ("# nThread 1 nGpus 8\n   1024  256  float  sum  -1  x  0.1  0.2  0\n", r":2: column time"),
        ("1024 256 float sum -1 10.0 0.1 0.2 0\n2048 512 float sum -1 0 0.2 0.3 0\n", r":2: time"),
        ("1024 256 float sum -1 10.0 0.1 0.2 0 10.0 0.1\n", r":1: cannot read this data row"),
        ("1024 256 float sum -1 10.0 0.1 0.2 zero\n", r":1: column #wrong"),
        ("1024 256 float sum -1 10.0 0.1 0.2 0\n", "ranks"),
    ],
)
def test_unparseable_input_names_file_and_line(tmp_path, text, needle):
    path = tmp_path / "log.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=needle) as info:
        from_nccl_tests(path)
    assert "log.txt" in str(info.value)


def test_a_bare_table_needs_ranks_and_validation_na_is_accepted(tmp_path):
    path = tmp_path / "bare.txt"
    path.write_text(
        "   1048576  262144  float  sum  -1   30.0  34.95  61.17  N/A   30.0  34.95  61.17  N/A\n"
        "  67108864 16777216  float  sum  -1  400.0 167.77 293.60  N/A  400.0 167.77 293.60  N/A\n"
    )
    fit = from_nccl_tests(path, ranks=8)
    assert fit.ranks == 8 and len(fit.message_sizes) == 2
    assert fit.worst_relative_error < 1e-9  # two points, one line through them


def test_ranks_keyword_must_agree_with_the_header():
    assert from_nccl_tests(H100, ranks=8).ranks == 8
    with pytest.raises(InputError, match="ranks=16 but the output lists 8 ranks"):
        from_nccl_tests(H100, ranks=16)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the file"):
        from_nccl_tests(tmp_path / "nope.txt")


def test_unsupported_test_is_refused(tmp_path):
    path = tmp_path / "a2a.txt"
    path.write_text(H100.read_text().replace("all_reduce_perf", "alltoall_perf"))
    with pytest.raises(InputError, match="alltoall_perf output cannot be fitted"):
        from_nccl_tests(path)


def test_an_nccl_tests_log_becomes_a_collective_kernel_table():
    from mlsysim.calibrate.nccl_tests import kernel_table

    table = kernel_table(FIXTURES / "h100_8gpu_all_gather_reduce_scatter.txt", accelerator="H100")
    assert table.kind == "collective" and table.split == "fit" and table.accelerator == "H100"
    assert set(table.columns["op"]) == {"all_gather", "reduce_scatter"}
    assert set(table.columns["group"]) == {8.0} and set(table.columns["link"]) == {"nvlink"}
    assert table.time.min() > 0 and table.source.title.endswith("h100_8gpu_all_gather_reduce_scatter.txt")


def test_a_users_log_refits_the_clusters_rates_and_latencies_from_the_shipped_constants():
    from mlsysim.calibrate.nccl_tests import kernel_table
    from mlsysim.kernels.collective_fit import fit_collectives
    from mlsysim.kernels.collectives import predict_table, shipped_constants

    table = kernel_table(FIXTURES / "h100_8gpu_all_gather_reduce_scatter.txt", accelerator="H100")
    fit = fit_collectives([table], start=shipped_constants(), keep=("half_size", "sharpness"))
    assert fit.constants.common["half_size"] == shipped_constants().common["half_size"]
    assert fit.constants.scale_up["Hopper"]["ring_efficiency"].tables == (table.name,)
    assert np.median(np.abs(predict_table(table, fit.constants) / table.time - 1)) < 0.05


def test_a_log_across_hosts_must_name_its_fabric_and_nic_share():
    from mlsysim.calibrate.nccl_tests import kernel_table

    path = FIXTURES / "two_node_ndr_all_reduce_out_of_place.txt"
    with pytest.raises(InputError, match="spans 2 hosts; name the fabric"):
        kernel_table(path, accelerator="H100")
    with pytest.raises(InputError, match="nic_rate"):
        kernel_table(path, accelerator="H100", link="infiniband")
    table = kernel_table(path, accelerator="H100", link="infiniband", nic_rate=50e9)
    assert set(table.columns["nodes"]) == {2.0} and set(table.columns["domain"]) == {1.0}
