"""Time matrix multiplies with torch and write the table ``mlsysim calibrate matmuls`` fits.

    python -m mlsysim.calibrate.matmul_script --out table.json --accelerator H100
    mlsysim calibrate matmuls table.json

On a CUDA GPU it times ``torch.matmul`` in bf16 on :data:`DEFAULT_SHAPES`
(the linear layers of transformers of hidden size 2048 to 8192 at 8192 tokens,
and a few shapes off the tile grid), and in fp8 through ``torch._scaled_mm``
(tensorwise scales, and row-wise where the GPU takes them) on GPUs of compute
capability 8.9 and above; where fp8 is not available a note says so. Each
shape: warm-up calls, then repeats timed with CUDA events, the median kept.
``--device cpu --smoke`` times a few small fp32 products on the CPU (a check
that the pipeline works, not a measurement of a GPU).

It imports only torch and the standard library, so the file can be copied to
a machine without mlsysim. The JSON written is ``{"accelerator", "device",
"torch", "rows": [{"M", "N", "K", "format", "tflops", "seconds"}], "notes"}``;
``--out`` ending in ``.csv`` writes the rows as CSV (the accelerator a column).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypedDict

DEFAULT_SHAPES: tuple[tuple[int, int, int], ...] = tuple(
    shape
    for h in (2048, 4096, 8192)
    for shape in ((8192, 3 * h, h), (8192, h, h), (8192, 4 * h, h), (8192, h, 4 * h))
) + ((8192, 8192, 128), (2048, 2048, 2048), (1000, 1000, 1000), (4096, 50304, 4096))
"""(M, N, K) of the products timed on a GPU: per hidden size h, a transformer layer's query/key/value,
output, MLP up and MLP down projections at 8192 tokens; then a small K, a small square, a shape off the
tile grid and an output layer (vocabulary 50304)."""

SMOKE_SHAPES: tuple[tuple[int, int, int], ...] = ((256, 256, 256), (384, 256, 256), (256, 384, 128), (512, 512, 512))
"""Small fp32 products for ``--smoke`` (seconds on a CPU): each a fraction of a millisecond or more on a CPU, so
that no fit reads a fast CPU's time as under a GPU kernel's launch and fill (a ceiling above 1)."""

FP8_FORMATS = ("fp8", "fp8_rowwise")



class Row(TypedDict):
    """One timed product as the table stores it."""

    M: int
    N: int
    K: int
    format: str
    tflops: float
    seconds: float


def _median_seconds(fn: Callable[[], object], torch: ModuleType, device: str, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _product(torch: ModuleType, fmt: str, m: int, n: int, k: int, device: str) -> Callable[[], object]:
    """A callable computing one (M x K)(K x N) product in ``fmt``."""
    if fmt in ("fp32", "bf16", "fp16"):
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[fmt]
        a = torch.randn(m, k, device=device, dtype=dtype)
        b = torch.randn(k, n, device=device, dtype=dtype)
        return lambda: torch.matmul(a, b)
    e4m3 = torch.float8_e4m3fn
    a = torch.randn(m, k, device=device).to(e4m3)
    b = torch.randn(n, k, device=device).to(e4m3).t()  # column-major, as the fp8 kernels take it
    if fmt == "fp8":
        sa = torch.tensor(1.0, device=device)
        sb = torch.tensor(1.0, device=device)
    else:  # row-wise: one scale per row of A and per column of B
        sa = torch.ones(m, 1, device=device)
        sb = torch.ones(1, n, device=device)
    return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


def measure(
    device: str = "cuda",
    smoke: bool = False,
    formats: tuple[str, ...] | None = None,
    shapes: tuple[tuple[int, int, int], ...] | None = None,
    warmup: int = 5,
    repeats: int = 20,
) -> tuple[list[Row], list[str], str]:
    """(rows, notes, device name) of the products timed."""
    import torch

    notes: list[str] = []
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("matmul_script: --device cuda: no CUDA GPU is visible to torch; use --device cpu --smoke")
    if smoke:
        shapes = shapes or SMOKE_SHAPES
        formats = formats or ("fp32",)
        warmup, repeats = min(warmup, 1), min(repeats, 3)
    shapes = shapes or DEFAULT_SHAPES
    if formats is None:
        formats = ("bf16", *FP8_FORMATS) if device == "cuda" else ("fp32",)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    if device == "cpu":
        notes.append("timed on the CPU: a check of the pipeline, not a measurement of a GPU")
    if any(f in FP8_FORMATS for f in formats):
        capable = device == "cuda" and torch.cuda.get_device_capability() >= (8, 9)
        if not capable or not hasattr(torch, "_scaled_mm"):
            notes.append(f"fp8 skipped: {name} has no fp8 matrix products through torch._scaled_mm")
            formats = tuple(f for f in formats if f not in FP8_FORMATS)
    rows: list[Row] = []
    for fmt in formats:
        for m, n, k in shapes:
            if fmt in FP8_FORMATS and (m % 16 or n % 16 or k % 16):
                notes.append(f"{fmt} {m}x{n}x{k} skipped: fp8 products need dimensions divisible by 16")
                continue
            try:
                fn = _product(torch, fmt, m, n, k, device)
                seconds = _median_seconds(fn, torch, device, warmup, repeats)
            except RuntimeError as exc:  # a kernel this GPU or torch build lacks
                notes.append(f"{fmt} {m}x{n}x{k} skipped: {str(exc).splitlines()[0]}")
                continue
            finally:
                if device == "cuda":
                    torch.cuda.empty_cache()
            tflops = 2.0 * m * n * k / seconds / 1e12
            rows.append({"M": m, "N": n, "K": k, "format": fmt, "tflops": tflops, "seconds": seconds})
    return rows, notes, name


def write_table(path: Path, rows: list[Row], accelerator: str | None, notes: list[str], device: str) -> None:
    if path.suffix.lower() == ".csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, ["M", "N", "K", "format", "tflops", "seconds", "accelerator"])
            writer.writeheader()
            for row in rows:
                writer.writerow({**row, "accelerator": accelerator or ""})
        return
    import torch

    data = {"accelerator": accelerator, "device": device, "torch": torch.__version__, "rows": rows, "notes": notes}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mlsysim.calibrate.matmul_script",
        description="Time matrix multiplies with torch; write the table mlsysim calibrate matmuls fits.",
    )
    parser.add_argument("--out", type=Path, required=True, help="the table to write (.json or .csv)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--smoke", action="store_true", help="a few small fp32 products (a check, not a measurement)")
    parser.add_argument("--accelerator", help="registry name of the GPU measured (e.g. H100), written in the table")
    parser.add_argument("--formats", help="comma-separated: fp32, fp16, bf16, fp8, fp8_rowwise")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls per shape (default 5)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per shape, median kept (default 20)")
    args = parser.parse_args(argv)
    if args.out.suffix.lower() not in (".json", ".csv"):
        parser.error(f"--out: expected a .json or .csv file, got {str(args.out)!r}")
    if args.warmup < 0 or args.repeats < 1:
        parser.error(f"--warmup >= 0 and --repeats >= 1 expected, got {args.warmup} and {args.repeats}")
    known = ("fp32", "fp16", "bf16", *FP8_FORMATS)
    formats = tuple(f.strip() for f in args.formats.split(",")) if args.formats else None
    bad = [f for f in formats or () if f not in known]
    if bad:
        parser.error(f"--formats: expected some of {', '.join(known)}, got {', '.join(bad)}")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("matmul_script: needs torch: pip install torch", file=sys.stderr)
        return 2
    rows, notes, name = measure(args.device, args.smoke, formats, warmup=args.warmup, repeats=args.repeats)
    if not rows:
        print("matmul_script: no product could be timed: " + "; ".join(notes), file=sys.stderr)
        return 1
    write_table(args.out, rows, args.accelerator, notes, name)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"wrote {len(rows)} rows ({name}) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
