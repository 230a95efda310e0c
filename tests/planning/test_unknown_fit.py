"""Unknown device memory reads as an unknown fit in every export, as the scalar result says."""

import csv

import pytest

from mlsysim import Scenarios, sweep

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE  # no device_memory given


@pytest.fixture(scope="module")
def mixed():
    """Rows without device memory and rows with it (the H100's 80 GB)."""
    return sweep(FOUR, nodes=[1, 2], device_memory=[None, "H100"], zero_stage=[0, 3])


def test_the_scalar_result_and_the_row_agree(mixed):
    assert FOUR.result.fits is None
    for i in range(len(mixed)):
        scalar = mixed.scenario(i).result.fits
        assert mixed.row(i)["fits"] == scalar
    assert {mixed.row(i)["fits"] for i in range(len(mixed))} >= {None, True}


def test_csv_leaves_an_unknown_fit_empty(mixed, tmp_path):
    path = tmp_path / "rows.csv"
    mixed.to_csv(path)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for i, row in enumerate(rows):
        scalar = mixed.scenario(i).result.fits
        assert row["fits"] == ("" if scalar is None else str(scalar))
        assert (row["device_memory [byte]"] == "nan") == (scalar is None)


def test_pandas_and_parquet_say_na(mixed, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = mixed.to_pandas()
    path = tmp_path / "rows.parquet"
    sweep(FOUR, out=path, nodes=[1, 2], device_memory=[None, "H100"], zero_stage=[0, 3])
    stored = pd.read_parquet(path)
    for i in range(len(mixed)):
        scalar = mixed.scenario(i).result.fits
        for got in (frame["fits"][i], stored["fits"][i]):
            assert (got is pd.NA or got is None) if scalar is None else bool(got) == scalar
