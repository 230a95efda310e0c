"""The collective and dispatch kernel models: shipped fits, measured figures, the facade and its refusals."""

from __future__ import annotations

import json
from importlib.resources import files

import numpy as np
import pytest

from mlsysim.core.exceptions import InputError, UnitsError
from mlsysim.core.units import quantity
from mlsysim.kernels import collectives, dispatch
from mlsysim.kernels.collective_fit import fit_collectives
from mlsysim.kernels.tables import parse_json_table, tables
from mlsysim.validation.kernels_collectives import collective_document, dispatch_document, text


def _stored(name: str) -> str:
    return files("mlsysim.data").joinpath("kernel_fits", name).read_text(encoding="utf-8")


def test_the_shipped_collective_fits_are_a_fresh_fit_of_the_shipped_tables():
    assert _stored("collectives.json") == text(collective_document())


def test_the_shipped_dispatch_fits_are_a_fresh_fit_of_the_shipped_tables():
    assert _stored("dispatch.json") == text(dispatch_document())


def _constants(document: dict) -> list[dict]:
    found = []

    def walk(value: object) -> None:
        if isinstance(value, dict) and "value" in value and "bound" in value:
            found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(document["constants"])
    return found


@pytest.mark.parametrize("name", ["collectives.json", "dispatch.json"])
def test_every_constant_says_what_it_is_rests_on_fit_tables_and_keeps_its_bound(name):
    document = json.loads(_stored(name))
    fit_tables = {t.name for t in tables(split="fit")}
    for constant in _constants(document):
        assert constant["what"] and constant["bound"] and constant["tables"]
        assert set(constant["tables"]) <= fit_tables
        if constant["unit"] == "1" and "efficiency" in constant["what"] or "fraction" in constant["what"]:
            assert 0 < constant["value"] <= 1.0, constant  # no achievable bandwidth above the nominal rate


def test_no_holdout_table_is_fitted_on():
    holdout = next(tables(kind="collective", split="holdout"))
    with pytest.raises(InputError, match="holdout"):
        fit_collectives([holdout])


def _busbw(estimate, op: str, n: int, size: float) -> float:
    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n}[op]
    return size * factor / estimate.time.to("s").magnitude / 1e9


def test_an_8_gpu_h100_all_reduce_of_1_gib_matches_azures_measurement():
    """Azure ND H100 v5, nccl-tests NVLS, 1 GiB: 466.35 GB/s of bus bandwidth (a fit table)."""
    estimate = collectives.collective("all_reduce", quantity(2**30, "B"), 8, node="DGX_H100")
    assert _busbw(estimate, "all_reduce", 8, 2**30) == pytest.approx(466.35, rel=0.05)
    assert "nvls" in estimate.what and estimate.bound == "bandwidth"


def test_ring_collectives_on_an_h100_host_reach_about_80_percent_of_the_link():
    """NCCL's maintainers: ~360-370 GB/s of bus bandwidth for non-NVLS collectives on H100 (nccl-tests 212, 326)."""
    estimate = collectives.collective("all_gather", quantity(16, "GiB"), 8, accelerator="H100")
    assert 340 < _busbw(estimate, "all_gather", 8, 2**34) < 375


def test_the_held_out_h200_sweep_is_within_15_percent_above_64_mib():
    table = next(t for t in tables(kind="collective", split="holdout") if t.accelerator == "H200")
    big = table.columns["bytes"] >= 64 * 2**20
    error = np.abs(collectives.predict_table(table)[big] / table.time[big] - 1)
    assert big.sum() >= 8 and error.max() < 0.15


def test_a_full_nvl72_rack_all_reduce_matches_coreweaves_measurement():
    """CoreWeave, 72 GB200, 4 GiB all-reduce: 10094 us (839 GB/s of bus bandwidth)."""
    estimate = collectives.collective("all_reduce", quantity(2**32, "B"), 72, node="GB200_NVL72")
    assert estimate.time.to("us").magnitude == pytest.approx(10094, rel=0.15)
    assert "nvl72" in estimate.what


def test_small_messages_take_tens_of_microseconds():
    estimate = collectives.collective("all_reduce", quantity(4, "KiB"), 8, node="DGX_H100")
    assert 10 < estimate.time.to("us").magnitude < 60
    assert estimate.bound == "latency"


def test_array_sizes_give_times_that_grow_with_size():
    estimate = collectives.collective("reduce_scatter", quantity(np.geomspace(2**10, 2**34, 25), "B"), 8,
                                      accelerator="H100")
    assert np.all(np.diff(estimate.time.magnitude) > 0)
    assert set(estimate.bound) == {"latency", "bandwidth"}


def test_a_group_larger_than_a_node_crosses_its_nics():
    inside = collectives.collective("all_reduce", quantity(1, "GiB"), 8, node="DGX_H100")
    across = collectives.collective("all_reduce", quantity(1, "GiB"), 64, node="DGX_H100")
    assert "infiniband" in across.what and across.time > inside.time


@pytest.mark.parametrize(("call", "message"), [
    (lambda: collectives.collective("all_reduce", quantity(1, "GiB"), 16, node="AWS_p5_48xlarge"),
     "no collective table covers the roce fabric"),
    (lambda: collectives.collective("all_reduce", quantity(1, "GiB"), 8, node="GB300_NVL72"),
     "no collective table covers Blackwell Ultra"),
    (lambda: collectives.collective("all_reduce", quantity(1, "GiB"), 8, accelerator="A100", algorithm="nvls"),
     "no NVLS table covers Ampere"),
    (lambda: collectives.collective("all_gather", quantity(1, "GiB"), 8, accelerator="H100", algorithm="nvls"),
     "does not implement all_gather"),
    (lambda: collectives.collective("gather", quantity(1, "GiB"), 8, accelerator="H100"), "op: expected one of"),
    (lambda: collectives.collective("all_reduce", quantity(1, "GiB"), 1, accelerator="H100"), "at least 2"),
    (lambda: collectives.collective("all_reduce", quantity(0, "B"), 8, accelerator="H100"), "above zero"),
    (lambda: collectives.collective("all_reduce", quantity(1, "GiB"), 8), "give one of accelerator"),
    (lambda: collectives.collective("all_reduce", quantity(1, "GiB"), 16, node="DGX_H100", link="nvlink"),
     "does not fit one NVLink domain"),
])
def test_what_no_table_covers_is_refused_in_one_line(call, message):
    with pytest.raises(InputError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


def test_a_missing_table_error_says_how_to_supply_one():
    with pytest.raises(InputError, match="mlsysim calibrate kernels FILE"):
        collectives.collective("all_reduce", quantity(1, "GiB"), 8, accelerator="V100")


def test_a_size_without_units_is_refused():
    with pytest.raises(UnitsError, match="a data size"):
        collectives.collective("all_reduce", 2**30, 8, accelerator="H100")  # type: ignore[arg-type]


def test_a_collective_table_may_give_nccl_tests_bus_bandwidth_instead_of_time():
    document = {
        "kind": "collective", "split": "fit", "accelerator": "H100",
        "source": {f: "x" for f in ("title", "url", "date", "hardware", "software", "notes")},
        "units": {"bytes": "B", "busbw": "GB/s"},
        "columns": ["op", "bytes", "group", "link", "busbw"],
        "rows": [["all_reduce", 2**30, 8, "nvlink", 466.35], ["all_gather", 2**30, 8, "nvlink", 350.0]],
    }
    table = parse_json_table(json.dumps(document), "t.json")
    assert table.time.tolist() == pytest.approx([2**30 * 1.75 / 466.35e9, 2**30 * 0.875 / 350e9])
    document["rows"][0][0] = "allreduce_scan"
    with pytest.raises(InputError, match="row 1, column 'op'"):
        parse_json_table(json.dumps(document), "t.json")


def test_deepeps_intranode_dispatch_on_h800_matches_its_readme():
    """DeepEP: 153 GB/s of NVLink bottleneck bandwidth, EP8, 4096 tokens x 7168, top-8 of 256, FP8."""
    estimate = dispatch.dispatch(4096, 7168, 8, 256, 8, accelerator="H800")
    table = next(t for t in tables(kind="dispatch") if t.name == "dispatch_H800_deepep-v1-normal.json")
    measured = table.where(direction="dispatch", ranks=8.0).time[0]
    assert estimate.time.to("s").magnitude == pytest.approx(measured, rel=0.1)


def test_a_held_out_hybrid_ep_table_is_within_15_percent_at_the_median():
    for table in tables(kind="dispatch", split="holdout"):
        error = np.abs(dispatch.predict_table(table) / table.time - 1)
        assert np.median(error) < 0.15, table.name


def test_dispatch_across_nodes_uses_the_nics_and_is_slower():
    inside = dispatch.dispatch(4096, 7168, 8, 256, 8, node="HGX_H800")
    across = dispatch.dispatch(4096, 7168, 8, 256, 32, node="HGX_H800", route_limit=4)
    assert "infiniband" in across.what and across.time > inside.time


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"format": "fp4"}, "format: expected one of"),
    ({"kernel": "fast"}, "kernel: expected one of"),
    ({"direction": "gather"}, "direction: expected dispatch or combine"),
    ({"route_limit": 0}, "route_limit"),
])
def test_dispatch_refuses_what_it_does_not_price(kwargs, message):
    with pytest.raises(InputError, match=message):
        dispatch.dispatch(4096, 7168, 8, 256, 8, accelerator="H800", **kwargs)


def test_dispatch_on_an_architecture_without_a_table_is_refused():
    with pytest.raises(InputError, match="no dispatch table covers Ampere"):
        dispatch.dispatch(4096, 7168, 8, 256, 8, accelerator="A100")
