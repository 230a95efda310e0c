"""Memory-bound kernels: the fitted bandwidth fraction and floor per accelerator, against published timings."""

import numpy as np
import pytest

from mlsysim.core.exceptions import InputError
from mlsysim.core.units import Q_
from mlsysim.kernels._accelerator import accelerator_entry, memory_bandwidth
from mlsysim.kernels.memory import fit_memory, memory_kernel, memory_time, shipped_memory_fit
from mlsysim.kernels.tables import shipped_tables, tables
from mlsysim.validation.kernels_attention import memory_errors, summary


def test_every_fraction_and_floor_stays_within_what_its_tables_measured():
    by_name = {t.name: t for t in shipped_tables()}
    for name, entry in shipped_memory_fit()["accelerators"].items():
        fitted = [by_name[t] for t in entry["tables"]]
        assert all(t.split == "fit" and t.accelerator == name for t in fitted)
        peak = memory_bandwidth(accelerator_entry(name))
        best = max(float(np.max(t.columns["bytes"] / (t.time * peak))) for t in fitted)
        assert 0 < entry["fraction"]["value"] <= best * (1 + 1e-6)
        assert 0 <= entry["floor"]["value"] <= min(float(t.time.min()) for t in fitted) * (1 + 1e-5)


def test_h200_rmsnorm_forward_of_llama3_8b_within_15_percent():
    # cudnn-frontend norms on H200: RMSNorm forward, 16384 x 4096 bf16 (268.5 MB), 72.41 us (3708 GB/s)
    one = memory_kernel("H200", bytes_moved=Q_(268.51, "MB"))
    assert float(one.time.to("us").magnitude) == pytest.approx(72.41, rel=0.15)
    assert one.bound == "memory"


def test_a100_stream_triad_within_5_percent_and_a_tiny_kernel_is_its_floor():
    # gpu-benches gpu-stream, A100 80GB: triad over 3 x 1 GiB at 1759 GB/s
    triad = memory_time("A100", 3 * (128 * 1024 * 1024 + 2) * 8.0)
    assert triad.time == pytest.approx(3 * (128 * 1024 * 1024 + 2) * 8.0 / 1759e9, rel=0.05)
    tiny = memory_kernel("A100", bytes_moved=1024)
    assert tiny.bound == "launch"


def test_h100_swiglu_fitted_and_babelstream_held_out_within_their_error():
    # Liger-Kernel on H100 SXM: SwiGLU forward, 8192 x 3 x 32768 bf16 (1.61 GB), 527.5 us (fit)
    swiglu = memory_kernel("H100", bytes_moved=8192 * 3 * 32768 * 2)
    assert float(swiglu.time.to("us").magnitude) == pytest.approx(527.5, rel=0.03)
    # Liger's smallest RMSNorm forward, 4096 x 1024 bf16 (16.8 MB) in 12.16 us: the floor shows
    small = memory_kernel("H100", bytes_moved=16795648)
    assert float(small.time.to("us").magnitude) == pytest.approx(12.16, rel=0.05)
    # Azure's ND H100 v5 BabelStream triad over 3 x 10.5 GB at 2.97 TB/s (held out)
    triad = memory_time("H100", 3 * 8.0 * 1308622848)
    assert triad.time == pytest.approx(3 * 8.0 * 1308622848 / 2970e9, rel=0.06)


def test_median_error_of_fitted_tables_and_the_held_out_one():
    fitted = np.concatenate([r.errors for r in memory_errors(tables(kind="memory", split="fit"))])
    held = np.concatenate([r.errors for r in memory_errors(tables(kind="memory", split="holdout"))])
    assert summary(fitted)[0] <= 0.10
    assert summary(held)[0] <= 0.25


def test_an_accelerator_without_a_memory_table_is_refused_naming_it():
    with pytest.raises(InputError, match="no memory-bound kernel table covers A100_40GB") as error:
        memory_kernel("A100_40GB", bytes_moved=1e9)
    assert "mlsysim calibrate kernels FILE" in str(error.value)
    with pytest.raises(InputError, match="bytes_moved must be a positive number of bytes"):
        memory_kernel("H200", bytes_moved=-1)


def test_fitting_skips_held_out_tables():
    assert fit_memory(tables(kind="memory", split="holdout"))["accelerators"] == {}


def test_the_h800_streams_as_the_h100_whose_die_and_memory_it_is():
    """The vendor states the H800 SXM5 is the H100 SXM5's die and HBM3: its memory-bound kernels are the H100's
    measured ones (the one stated equivalence; no other accelerator borrows a table)."""
    from mlsysim.kernels._accelerator import accelerator_entry
    from mlsysim.kernels.memory import SAME_MEMORY, memory_constants

    assert SAME_MEMORY == {"H800": "H100"}
    assert memory_constants(accelerator_entry("H800")) == memory_constants(accelerator_entry("H100"))
