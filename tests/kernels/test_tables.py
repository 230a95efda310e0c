"""Kernel tables: the one format of shipped and user measurements, and what it refuses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mlsysim.core.exceptions import InputError
from mlsysim.kernels.tables import SOURCE_FIELDS, parse_json_table, read_table, shipped_tables

SOURCE = {
    "title": "a GEMM sweep",
    "url": "https://example.org/sweep",
    "date": "2024-05-01",
    "hardware": "1x H100 SXM5 80GB",
    "software": "cuBLAS 12.4",
    "notes": "median of 20 runs",
}


def _document(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {
        "kind": "matmul",
        "split": "fit",
        "accelerator": "H100",
        "source": SOURCE,
        "units": {"time": "us"},
        "columns": ["m", "n", "k", "format", "time"],
        "rows": [[4096, 4096, 4096, "BF16", 200.0], [256, 256, 256, "bf16", 5.0]],
    }
    document.update(changes)
    return document


def test_a_table_reads_times_in_seconds_and_words_in_lower_case():
    table = parse_json_table(json.dumps(_document()), "sweep.json")
    assert table.time.tolist() == pytest.approx([200e-6, 5e-6])
    assert table.columns["format"].tolist() == ["bf16", "bf16"]
    assert table.where(m=256.0).time.tolist() == pytest.approx([5e-6])
    assert table.source.cite().startswith("a GEMM sweep (2024-05-01), 1x H100 SXM5 80GB, cuBLAS 12.4")


def test_a_matrix_product_rate_gives_its_time_from_two_m_n_k_flops():
    document = _document(columns=["m", "n", "k", "format", "tflops"], rows=[[4096, 4096, 4096, "bf16", 687.2]])
    document.pop("units")
    table = parse_json_table(json.dumps(document), "rates.json")
    assert table.time[0] == pytest.approx(2 * 4096**3 / 687.2e12)


@pytest.mark.parametrize("field", SOURCE_FIELDS)
def test_a_table_without_its_source_is_refused(field):
    source = {k: v for k, v in SOURCE.items() if k != field}
    with pytest.raises(InputError, match=f"source lacks {field}"):
        parse_json_table(json.dumps(_document(source=source)), "t.json")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "gemm"}, "kind 'gemm' is not one of matmul"),
        ({"split": "test"}, "split 'test' is not one of fit, holdout"),
        ({"columns": ["m", "n", "format", "time"], "rows": [[1, 1, "bf16", 1.0]]}, "needs the columns k"),
        ({"units": {"time": "GB"}}, "column 'time' needs a unit of time, got 'GB'"),
        ({"units": {}}, "column 'time' needs a unit"),
        ({"rows": [[4096, 4096, "many", "bf16", 1.0]]}, "row 1, column 'k': expected a number, got 'many'"),
        ({"rows": [[4096, 4096, 4096, "bf16", 0.0]]}, "row 1: a time must be above zero"),
        ({"rows": [[4096, 4096, 4096, "bf16"]]}, "row 1 has 4 values for 5 columns"),
        ({"rows": []}, "the table has no rows"),
        ({"extra": 1}, "unknown keys extra"),
    ],
)
def test_a_malformed_table_is_refused_naming_file_row_and_column(changes, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")) as error:
        parse_json_table(json.dumps(_document(**changes)), "bad.json")
    assert str(error.value).startswith("bad.json: ") or "bad.json: " in str(error.value)


def test_a_csv_table_takes_units_in_brackets_and_its_kind_from_the_caller(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("m,n,k,format,time [ms]\n8192,8192,8192,bf16,1.5\n\n")
    table = read_table(path, kind="matmul", accelerator="H100")
    assert table.time.tolist() == pytest.approx([1.5e-3])
    assert table.source.hardware == "the user's cluster"
    with pytest.raises(InputError, match="needs its kind and accelerator"):
        read_table(path)


def test_every_shipped_table_says_where_it_comes_from_and_has_positive_times():
    for table in shipped_tables():
        assert all(getattr(table.source, f).strip() for f in SOURCE_FIELDS), table.name
        assert np.all(table.time > 0), table.name


def test_a_kernel_estimate_reads_seconds_as_microseconds_and_codes_as_labels():
    from mlsysim.kernels.result import KernelEstimate
    from mlsysim.physics.bounds import KernelTime

    one = KernelEstimate.of("x", KernelTime(5e-6, 0.5, 1))
    assert one.time.to("us").magnitude == pytest.approx(5.0) and one.bound == "compute"
    many = KernelEstimate.of("x", KernelTime(np.array([5e-6, 1e-3]), np.array([0.1, 0.8]), np.array([0, 1])))
    assert many.bound.tolist() == ["launch", "compute"]
    assert many.time.to("ms").magnitude.tolist() == pytest.approx([0.005, 1.0])


def _attention_document(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {
        "kind": "attention", "split": "fit", "accelerator": "H100", "source": SOURCE,
        "columns": ["batch", "heads", "seq_len", "head_dim", "causal", "format", "direction", "tflops"],
        "rows": [[1, 16, 16384, 128, 0, "fp16", "forward", 648.0], [1, 16, 16384, 128, 1, "fp16", "backward", 500.0]],
    }
    document.update(changes)
    return document


def test_an_attention_rate_gives_its_time_by_the_flashattention_convention():
    table = parse_json_table(json.dumps(_attention_document()), "fa3.json")
    forward = 4 * 16 * 16384**2 * 128
    assert table.time.tolist() == pytest.approx([forward / 648e12, 2.5 * forward / 2 / 500e12])


def test_an_attention_rate_reads_kv_length_and_value_head_dim():
    document = _attention_document(
        columns=["batch", "heads", "seq_len", "kv_len", "head_dim", "head_dim_v", "causal", "format", "direction",
                 "tflops"],
        rows=[[2, 128, 32768, 32768, 192, 128, 1, "bf16", "forward", 1743.0]])
    table = parse_json_table(json.dumps(document), "dsv3.json")
    assert table.time[0] == pytest.approx(50.456e-3, rel=1e-3)  # cudnn-frontend's dsv3 time on GB200


def test_an_unknown_attention_direction_is_refused_naming_the_row():
    document = _attention_document(rows=[[1, 16, 4096, 128, 0, "bf16", "sideways", 400.0]])
    with pytest.raises(InputError, match="row 1, column 'direction': expected one of forward, backward"):
        parse_json_table(json.dumps(document), "bad.json")


def test_a_memory_bandwidth_gives_its_time_and_needs_units():
    document = {"kind": "memory", "split": "fit", "accelerator": "H200", "source": SOURCE,
                "units": {"bytes": "MB", "bandwidth": "GB/s"}, "columns": ["kernel", "bytes", "bandwidth"],
                "rows": [["rms_norm_forward", 268.51, 3708.1]]}
    table = parse_json_table(json.dumps(document), "norms.json")
    assert table.time[0] == pytest.approx(268.51e6 / 3708.1e9)
    document["units"] = {"bytes": "MB", "bandwidth": "GB"}
    with pytest.raises(InputError, match="column 'bandwidth' needs a unit of data per time, got 'GB'"):
        parse_json_table(json.dumps(document), "norms.json")
