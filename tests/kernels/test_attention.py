"""The fused-attention kernel model against published kernel timings, and its public contract."""

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.core.exceptions import InputError
from mlsysim.kernels._accelerator import accelerator_entry, peak_flops
from mlsysim.kernels.attention import (
    ATTENTION_FORMATS,
    attention,
    attention_time,
    shipped_attention_fit,
)
from mlsysim.kernels.attention_fit import fastest_rows, fit_attention
from mlsysim.kernels.memory import fit_memory
from mlsysim.kernels.tables import read_table, shipped_tables, tables
from mlsysim.physics.attention import DIRECTIONS, attention_flops
from mlsysim.validation.kernels_attention import attention_errors, main, summary


def _tflops(estimate, flops):
    return flops / float(estimate.time.to("s").magnitude) / 1e12


def test_h100_flashattention3_head_dim_128_at_16k_within_10_percent():
    # FlashAttention-3 paper, Figure 5(c): 648 TFLOPs/s forward, non-causal, batch 1, 16 heads, 16k
    one = attention("H100", batch=1, heads=16, seq_len=16384, head_dim=128, causal=False, format="fp16")
    assert _tflops(one, attention_flops(1, 16, 16384, 16384, 128, 128, False, 0.0)) == pytest.approx(648, rel=0.10)


def test_gb200_llama_causal_forward_at_32k_within_10_percent():
    # cudnn-frontend llama3.1 on GB200 (cuDNN 9.22): b 2, 64/8 heads, 32k, causal, bf16 forward, 21.692 ms
    one = attention("GB200", batch=2, heads=64, kv_heads=8, seq_len=32768, head_dim=128, causal=True)
    assert float(one.time.to("ms").magnitude) == pytest.approx(21.692, rel=0.10)


def test_a100_flashattention2_forward_backward_within_5_percent():
    # FlashAttention-2 README, A100: head dim 128, causal, 16k: 189 TFLOPs/s forward + backward
    one = attention("A100", batch=1, heads=16, seq_len=16384, head_dim=128, direction="forward+backward")
    assert _tflops(one, attention_flops(1, 16, 16384, 16384, 128, 128, True, 2.0)) == pytest.approx(189, rel=0.05)


def test_held_out_h200_cudnn_2024_long_forward_within_15_percent():
    # cudnn-frontend benchmark_results.csv (H200, never fitted on): b 1, 16 heads, 16k, non-causal, bf16: 687.97
    one = attention("H200", batch=1, heads=16, seq_len=16384, head_dim=128, causal=False)
    assert _tflops(one, attention_flops(1, 16, 16384, 16384, 128, 128, False, 0.0)) == pytest.approx(688, rel=0.15)


def test_gb300_is_faster_than_gb200_at_the_same_format():
    shape = {"batch": 2, "heads": 64, "kv_heads": 8, "seq_len": 8192, "head_dim": 128}
    for direction in ("forward", "backward"):
        assert attention("GB300", direction=direction, **shape).time < attention("GB200", direction=direction, **shape).time


def test_multi_head_latent_attention_head_dims_price_192_and_128():
    mla = attention("GB200", batch=2, heads=128, seq_len=16384, head_dim=192, head_dim_v=128)
    plain = attention("GB200", batch=2, heads=128, seq_len=16384, head_dim=128)
    assert mla.time > plain.time  # 2 (192 + 128) against 2 (128 + 128) FLOPs per score
    # cudnn-frontend dsv3 on GB200: 13.103 ms
    assert float(mla.time.to("ms").magnitude) == pytest.approx(13.103, rel=0.15)


def test_forward_backward_is_the_sum_of_the_two_passes_where_both_are_measured():
    shape = {"batch": 4, "heads": 32, "seq_len": 4096, "head_dim": 128}
    def us(**kwargs):
        return float(attention("H100", **shape, **kwargs).time.to("us").magnitude)

    assert us(direction="forward+backward") == pytest.approx(us() + us(direction="backward"))


def test_arrays_give_what_each_call_gives():
    seqs = np.array([1024.0, 4096.0, 32768.0])
    many = attention_time("GB200", batch=1.0, heads=64.0, kv_heads=8.0, seq_len=seqs, head_dim=128.0,
                          direction="backward")
    for i, s in enumerate(seqs):
        one = attention_time("GB200", batch=1.0, heads=64.0, kv_heads=8.0, seq_len=float(s), head_dim=128.0,
                             direction="backward")
        assert many.time[i] == pytest.approx(one.time)


GROUPS = [(arch, group) for arch, entry in shipped_attention_fit()["architectures"].items() for group in entry["groups"]]


def test_every_ceiling_is_the_best_efficiency_its_fit_tables_measure():
    by_name = {t.name: t for t in shipped_tables()}
    for arch, group in GROUPS:
        entry = shipped_attention_fit()["architectures"][arch]["groups"][group]
        fmt, direction = entry["format"], entry["direction"]
        best = 0.0
        for name in entry["tables"]:
            table = by_name[name]
            assert table.split == "fit", name  # never fitted on a holdout table
            c = table.columns
            take = np.array([ATTENTION_FORMATS[f] == fmt for f in c["format"]]) & (c["direction"] == direction)
            peaks = np.array([peak_flops(accelerator_entry(table.accelerator), f) for f in c["format"][take]])
            flops = attention_flops(c["batch"][take], c["heads"][take], c["seq_len"][take],
                                    c.get("kv_len", c["seq_len"])[take], c["head_dim"][take],
                                    c.get("head_dim_v", c["head_dim"])[take], c["causal"][take] > 0,
                                    float(DIRECTIONS[direction]))
            best = max(best, float(np.max(flops / (c["time"][take] * peaks))))
        assert entry["ceiling"]["value"] == pytest.approx(best, rel=1e-5), (arch, group)
        assert 0 < entry["scale"]["value"] <= 1


ACCELERATOR_OF = {"Ampere": "A100", "Hopper": "H100", "Blackwell": "GB200", "Blackwell Ultra": "GB300"}


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(GROUPS), st.integers(1, 16), st.sampled_from([8, 16, 32, 64, 128]),
       st.integers(128, 131072), st.sampled_from([64, 128, 192, 256]), st.booleans())
def test_no_prediction_beats_its_groups_ceiling(group, batch, heads, seq, head_dim, causal):
    arch, key = group
    fmt, direction = key.split(" ", 1)
    one = attention(ACCELERATOR_OF[arch], batch=batch, heads=heads, seq_len=seq, head_dim=head_dim, causal=causal,
                    format=fmt, direction=direction)
    ceiling = shipped_attention_fit()["architectures"][arch]["groups"][key]["ceiling"]["value"]
    # the efficiency of a memory-bound call is of the memory's bandwidth, not of the compute peak
    assert 0 < one.efficiency <= (1.0 if one.bound == "memory" else ceiling * (1 + 1e-9))


def test_the_shipped_fits_are_a_fresh_fit_of_the_shipped_tables():
    assert main(["--check"]) == 0


def test_median_errors_on_fitted_and_held_out_tables():
    fitted = np.concatenate([r.errors for r in attention_errors(fastest_rows(t) for t in tables(split="fit"))
                             if r.table.kind == "attention"])
    held = [r for r in attention_errors(fastest_rows(t) for t in tables(kind="attention", split="holdout"))]
    long = np.concatenate([r.errors[r.table.columns["seq_len"] >= 2048] for r in held])
    assert summary(fitted)[0] <= 0.07
    assert summary(long)[0] <= 0.10


@pytest.mark.parametrize(
    ("accelerator", "changes", "message"),
    [
        ("A100", {"direction": "forward"}, "no attention table covers A100 (Ampere) in bf16 forward"),
        ("MI300X", {}, "no attention table covers MI300X (CDNA 3)"),
        ("H100", {"format": "mxfp8"}, "no attention table covers H100 (Hopper) in mxfp8 forward"),
        ("H100", {"format": "nvfp4"}, "format 'nvfp4' is not an attention format"),
        ("H100", {"direction": "sideways"}, "direction 'sideways' is not one of forward, backward, forward+backward"),
        ("H100", {"seq_len": 0}, "seq_len must be a positive number, got 0"),
        ("H100", {"causal": "yes"}, "causal must be true or false"),
        ("H999", {}, "unknown Hardware entry 'H999'"),
    ],
)
def test_what_no_table_covers_is_refused_naming_the_missing_table(accelerator, changes, message):
    kwargs = {"batch": 1, "heads": 16, "seq_len": 4096, "head_dim": 128, **changes}
    with pytest.raises(InputError, match=re.escape(message)) as error:
        attention(accelerator, **kwargs)
    if "no attention table" in message:
        assert "mlsysim calibrate kernels FILE" in str(error.value)


def test_a_users_own_table_fits_and_prices_their_accelerator(tmp_path):
    path = tmp_path / "mine.csv"
    rows = ["batch,heads,seq_len,head_dim,causal,format,direction,time [ms]"]
    # 64k tokens of 16 heads (2.68e8 s causal FLOPs) at 0.45, 0.55, 0.60 and 0.62 of 989.4 TFLOPs/s
    for s, ms in ((2048, 1.235), (4096, 2.021), (8192, 3.705), (16384, 7.171)):
        rows.append(f"{65536 // s},16,{s},128,1,bf16,forward,{ms}")
    path.write_text("\n".join(rows) + "\n")
    mine = read_table(path, kind="attention", accelerator="H100")
    fit = fit_attention([mine], fit_memory([]))
    assert list(fit["architectures"]) == ["Hopper"]
    one = attention("H100", batch=8, heads=16, seq_len=8192, head_dim=128, fit=fit)
    assert float(one.time.to("ms").magnitude) == pytest.approx(3.705, rel=0.05)
    with pytest.raises(InputError, match="no attention table covers H100 \\(Hopper\\) in bf16 backward"):
        attention("H100", batch=8, heads=16, seq_len=8192, head_dim=128, direction="backward", fit=fit)
    json.dumps(fit)  # the same format as the shipped file
