"""Measured kernel tables from PyTorch profiler traces, in the format of :mod:`mlsysim.kernels.tables`.

From the traces read by :mod:`mlsysim.calibrate.profile` (operators with their shapes,
kernels linked to the operator that launched them):

* **matmul** rows (``m, n, k, batch, format, time``): one per distinct product shape of
  the matrix-product operators (``aten::mm`` ``[m,k]x[k,n]``, ``addmm``, ``bmm``
  ``[b,m,k]x[b,k,n]``, ``baddbmm``, ``_scaled_mm``, and ``linear`` / ``matmul`` when they
  launch the kernels themselves). A call's time is the sum of its matrix-product kernels
  (the GEMM and its split-K reduction; a bias copy beside it is memory-bound, not the
  product's). ``format`` is the first operand's type; fp32 run by TF32 tensor-core kernels
  (``tf32`` / ``s1688`` / ``s16816`` in the kernel's name) is ``tf32``; ``_scaled_mm`` is
  ``fp8``, ``fp8_rowwise`` (a scale per row), ``mxfp8`` (e8m0 block scales) or ``nvfp4``.
* **attention** rows (``batch, heads, seq_len, head_dim, causal, format, direction, time``,
  with ``kv_heads`` and ``kv_seq_len``): one per shape of the scaled-dot-product-attention
  operators, forward and backward, from the query ``[b, h, s, d]`` and key
  ``[b, h_kv, s_kv, d]`` dims; ``causal`` from the operator's recorded ``is_causal``
  (newer PyTorch records scalar arguments as "Concrete Inputs"; a call without it is left out).
* **collective** rows (``op, bytes, group, link, time``): one per collective, size, group
  and type, from the collective's recorded arguments (PyTorch 2.1 and later):
  ``bytes = max(In msg nelems, Out msg nelems) x element size``, the whole buffer as
  nccl-tests counts it (an all-gather's output, a reduce-scatter's input); ``group`` the
  process group's size; ``link`` a word the caller gives (``unknown`` by default: the
  trace does not say which fabric the group spans).

Each row's ``time`` is the median over its calls (every step of every rank), ``calls``
how many calls it summarises, ``kernel`` the kernel that took most of their time. The
source block names the trace files, ranks, steps, device and software.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mlsysim.calibrate.profile import (
    RankTrace,
    as_list,
    collective_of,
    comm_args,
    labels_of,
    step_windows,
    steps_label,
)
from mlsysim.kernels.tables import KernelTable, parse_json_table

PRODUCT_OPERANDS: Mapping[str, tuple[int, int]] = {
    "aten::mm": (0, 1),
    "aten::_scaled_mm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::_addmm_activation": (1, 2),
    "aten::bmm": (0, 1),
    "aten::baddbmm": (1, 2),
    "aten::matmul": (0, 1),
    "aten::linear": (0, 1),
}
"""Where each product operator's two operands sit in its inputs (``addmm(bias, mat1, mat2)``)."""

ATTENTION_ARGUMENTS: Mapping[str, tuple[str, int, int, int]] = {
    "aten::scaled_dot_product_attention": ("forward", 0, 1, 5),
    "aten::_scaled_dot_product_flash_attention": ("forward", 0, 1, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": ("forward", 0, 1, 4),
    "aten::_scaled_dot_product_efficient_attention": ("forward", 0, 1, 6),
    "aten::_scaled_dot_product_cudnn_attention": ("forward", 0, 1, 6),
    "aten::_scaled_dot_product_flash_attention_backward": ("backward", 1, 2, 11),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": ("backward", 1, 2, 7),
    "aten::_scaled_dot_product_efficient_attention_backward": ("backward", 1, 2, 11),
    "aten::_scaled_dot_product_cudnn_attention_backward": ("backward", 1, 2, 14),
}
"""Per SDPA operator (PyTorch's native_functions.yaml signatures): direction, and the input
positions of the query, the key and ``is_causal``; the query and key are ``[b, h, s, d]``."""

TYPE_FORMATS: Mapping[str, str] = {
    "float": "fp32",
    "double": "fp64",
    "c10::half": "fp16",
    "c10::bfloat16": "bf16",
    "half": "fp16",
    "bfloat16": "bf16",
    "c10::float8_e4m3fn": "fp8",
    "c10::float8_e4m3fnuz": "fp8",
    "c10::float8_e5m2": "fp8",
    "c10::float8_e5m2fnuz": "fp8",
    "c10::float4_e2m1fn_x2": "nvfp4",
}
"""The format word of each recorded operand type (``Input type``); other types keep their own name."""

DTYPE_BYTES: Mapping[str, tuple[str, float]] = {
    "float": ("fp32", 4), "double": ("fp64", 8), "half": ("fp16", 2), "bfloat16": ("bf16", 2),
    "float8_e4m3fn": ("fp8", 1), "float8_e5m2": ("fp8", 1), "float8_e4m3fnuz": ("fp8", 1),
    "float8_e5m2fnuz": ("fp8", 1), "byte": ("uint8", 1), "char": ("int8", 1), "short": ("int16", 2),
    "int": ("int32", 4), "long": ("int64", 8), "bool": ("bool", 1),
}
"""Element size of a collective's ``dtype`` (torch's scalar type names, as record_param_comms writes them)."""

_TF32_KERNEL = re.compile(r"tf32|s1688|s16816|tensorop_s", re.IGNORECASE)


@dataclass(frozen=True)
class MeasuredTable:
    """A measured table: the checked :class:`KernelTable`, and the JSON document it was read from (to write)."""

    table: KernelTable
    document: Mapping[str, object]

    @property
    def file_name(self) -> str:
        """``<kind>_<accelerator>_profile.json``, as the shipped tables are named."""
        return f"{self.table.kind}_{re.sub(r'[^A-Za-z0-9_.-]', '_', self.table.accelerator)}_profile.json"


def _format(type_name: object) -> str | None:
    if not isinstance(type_name, str) or not type_name:
        return None
    word = type_name.strip().lower()
    return TYPE_FORMATS.get(word, word.removeprefix("c10::"))


def _dims(args: Mapping[str, object]) -> list[list[int]] | None:
    dims = args.get("Input Dims")
    if not isinstance(dims, list):
        return None
    return [list(d) if isinstance(d, list) and all(isinstance(x, int) for x in d) else [] for d in dims]


def product_shape(name: str, args: Mapping[str, object]) -> tuple[int, int, int, int, str] | None:
    """``(m, n, k, batch, format)`` of a product operator from its recorded inputs, None if they don't say.

    ``(M x K)(K x N)``, batched ``batch`` times; ``linear(x, w)`` and ``matmul(a, b)`` with a
    2-d second operand fold the leading dims of the first into M."""
    where = PRODUCT_OPERANDS.get(name)
    dims = _dims(args)
    types = as_list(args.get("Input type"))
    if where is None or dims is None or len(dims) <= where[1]:
        return None
    a, b = dims[where[0]], dims[where[1]]
    if name == "aten::linear" and len(a) >= 1 and len(b) == 2:  # weight [n, k]
        m, k, n, batch, k2 = math.prod(a[:-1]), a[-1], b[0], 1, b[1]
    elif len(a) >= 2 and len(b) == 2 and (len(a) == 2 or name == "aten::matmul"):
        m, k, k2, n, batch = math.prod(a[:-1]), a[-1], b[0], b[1], 1
    elif len(a) == 3 and len(b) == 3 and a[0] == b[0]:
        batch, m, k, k2, n = a[0], a[1], a[2], b[1], b[2]
    else:
        return None
    if k != k2 or min(m, n, k, batch) <= 0:
        return None
    fmt = _format(types[where[0]] if len(types) > where[0] else None)
    if fmt is None:
        return None
    if name == "aten::_scaled_mm" and fmt == "fp8":
        scale = dims[2] if len(dims) > 2 else []
        scale_type = _format(types[2] if len(types) > 2 else None) or ""
        if "e8m0" in scale_type:
            fmt = "mxfp8"
        elif len(scale) == 2 and scale[0] == m and m > 1:
            fmt = "fp8_rowwise"
    return m, n, k, batch, fmt


def attention_shape(name: str, args: Mapping[str, object]) -> tuple[int, int, int, int, int, int, int, str, str] | None:
    """``(batch, heads, seq_len, head_dim, kv_heads, kv_seq_len, causal, format, direction)`` of an
    SDPA operator, None when its inputs or ``is_causal`` are not recorded."""
    where = ATTENTION_ARGUMENTS.get(name)
    dims = _dims(args)
    concrete = args.get("Concrete Inputs")
    types = as_list(args.get("Input type"))
    if where is None or dims is None or not isinstance(concrete, list):
        return None
    direction, q, k, causal_at = where
    if len(dims) <= max(q, k) or len(concrete) <= causal_at:
        return None
    query, key = dims[q], dims[k]
    causal = str(concrete[causal_at]).strip().lower()
    if len(query) != 4 or len(key) != 4 or causal not in ("true", "false"):
        return None
    fmt = _format(types[q] if len(types) > q else None)
    if fmt is None:
        return None
    b, h, s, d = query
    return b, h, s, d, key[1], key[2], int(causal == "true"), fmt, direction


def _short(kernel: str) -> str:
    """A kernel's name without ``void``, its parameters and (but for CUTLASS's wrapper) its template."""
    name = kernel.removeprefix("void ").split("(")[0].strip()
    inner = re.match(r"cutlass(?:_\w+)?::Kernel2?<([^<>]+)", name)
    if inner:
        return inner.group(1)
    return name.split("<")[0][:80] or kernel[:80]


@dataclass
class _Calls:
    """The calls of one row: each call's time, and the time of each kernel name."""

    times: list[float]
    kernels: dict[str, float]

    def add(self, time: float, kernels: Mapping[str, float]) -> None:
        self.times.append(time)
        for name, t in kernels.items():
            self.kernels[name] = self.kernels.get(name, 0.0) + t

    def cells(self) -> list[object]:
        """time (us), calls, kernel."""
        kernel = max(self.kernels, key=lambda n: self.kernels[n]) if self.kernels else ""
        return [round(1e6 * statistics.median(self.times), 4), len(self.times), _short(kernel)]


def _grouped(traces: Sequence[RankTrace], klass: str) -> dict[tuple[int, int], dict[str, float]]:
    """The kernels of class ``klass`` within the profiled steps, grouped by (trace, launching
    operator): each group's kernel names with their summed time."""
    groups: dict[tuple[int, int], dict[str, float]] = {}
    for t, trace in enumerate(traces):
        labels = labels_of(trace)
        _, members = step_windows(trace)
        for i in (i for m in members for i in m):
            kernel = trace.kernels[i]
            if labels[i][0] != klass or kernel.launcher < 0:
                continue
            group = groups.setdefault((t, kernel.launcher), {})
            group[kernel.name] = group.get(kernel.name, 0.0) + kernel.duration
    return groups


def matmul_rows(traces: Sequence[RankTrace]) -> tuple[list[list[object]], list[str]]:
    """The matmul table's rows (``m, n, k, batch, format, time [us], calls, kernel``) and notes."""
    rows: dict[tuple[int, int, int, int, str], _Calls] = {}
    unread = 0
    for (t, launcher), kernels in _grouped(traces, "matmul").items():
        chain = traces[t].chain(launcher)
        op = next((o for o in chain if o.name in PRODUCT_OPERANDS), None)
        if op is None:  # a convolution, or a GEMM launched outside a product operator
            continue
        shape = product_shape(op.name, op.args)
        if shape is None:
            unread += 1
            continue
        m, n, k, batch, fmt = shape
        if fmt == "fp32" and any(_TF32_KERNEL.search(name) for name in kernels):
            fmt = "tf32"
        rows.setdefault((m, n, k, batch, fmt), _Calls([], {})).add(sum(kernels.values()), kernels)
    notes = [f"{unread} matrix-product call(s) without readable shapes are left out"] if unread else []
    return [[*key, *calls.cells()] for key, calls in sorted(rows.items())], notes


def attention_rows(traces: Sequence[RankTrace]) -> tuple[list[list[object]], list[str]]:
    """The attention table's rows (``batch, heads, seq_len, head_dim, kv_heads, kv_seq_len, causal,
    format, direction, time [us], calls, kernel``) and notes."""
    calls: dict[tuple[int, int], dict[str, float]] = {}
    for (t, launcher), kernels in _grouped(traces, "attention").items():
        op_index = next((i for i in _chain_indices(traces[t], launcher) if traces[t].ops[i].name in ATTENTION_ARGUMENTS),
                        None)
        if op_index is None:
            continue
        group = calls.setdefault((t, op_index), {})
        for name, time in kernels.items():
            group[name] = group.get(name, 0.0) + time
    rows: dict[tuple[int, int, int, int, int, int, int, str, str], _Calls] = {}
    unread = 0
    for (t, op_index), kernels in calls.items():
        op = traces[t].ops[op_index]
        shape = attention_shape(op.name, op.args)
        if shape is None:
            unread += 1
            continue
        rows.setdefault(shape, _Calls([], {})).add(sum(kernels.values()), kernels)
    notes = [f"{unread} attention call(s) without readable shapes or is_causal are left out"] if unread else []
    return [[*key, *c.cells()] for key, c in sorted(rows.items())], notes


def _chain_indices(trace: RankTrace, op: int) -> list[int]:
    out = []
    while op >= 0:
        out.append(op)
        op = trace.ops[op].parent
    return out


def collective_rows(traces: Sequence[RankTrace], link: str) -> tuple[list[list[object]], list[str]]:
    """The collective table's rows (``op, bytes [B], group, link, format, time [us], calls, kernel``) and notes."""
    rows: dict[tuple[str, float, int, str], _Calls] = {}
    unsized = 0
    for trace in traces:
        labels = labels_of(trace)
        _, members = step_windows(trace)
        for i in (i for m in members for i in m):
            if labels[i][0] != "communication":
                continue
            kernel = trace.kernels[i]
            args = comm_args(trace, kernel)
            size = _message(args)
            if size is None:
                unsized += 1
                continue
            moved, group, fmt = size
            op = collective_of(kernel.name, args, [o.name for o in trace.chain(kernel.launcher)])
            rows.setdefault((op, moved, group, fmt), _Calls([], {})).add(kernel.duration, {kernel.name: kernel.duration})
    notes = []
    if unsized:
        notes.append(f"{unsized} collective kernel(s) without recorded sizes are left out (PyTorch 2.1 and later "
                     "record them)")
    return [[op, moved, group, link, fmt, *c.cells()] for (op, moved, group, fmt), c in sorted(rows.items())], notes


def _message(args: Mapping[str, object] | None) -> tuple[float, int, str] | None:
    """(bytes, group size, format) of a collective's recorded arguments."""
    if args is None:
        return None
    counts = [args.get("In msg nelems"), args.get("Out msg nelems")]
    group = args.get("Group size")
    dtype = str(args.get("dtype", "")).strip().lower().removeprefix("c10::")
    if dtype not in DTYPE_BYTES or not isinstance(group, int) or group < 1:
        return None
    elements = max((c for c in counts if isinstance(c, int) and c >= 0), default=0)
    if elements <= 0:
        return None
    fmt, width = DTYPE_BYTES[dtype]
    return float(elements * width), group, fmt


def measured_tables(
    traces: Sequence[RankTrace], *, accelerator: str, link: str = "unknown"
) -> tuple[tuple[MeasuredTable, ...], tuple[str, ...]]:
    """The matmul, attention and collective tables the traces give (each only where it has rows), and notes.

    Each document is read back through :func:`~mlsysim.kernels.tables.parse_json_table`
    (hence :func:`~mlsysim.kernels.tables.build_table`), so what is written is checked as
    every table is."""
    parts = (
        ("matmul", ["m", "n", "k", "batch", "format", "time", "calls", "kernel"], {"time": "us"},
         matmul_rows(traces)),
        ("attention", ["batch", "heads", "seq_len", "head_dim", "kv_heads", "kv_seq_len", "causal", "format",
                       "direction", "time", "calls", "kernel"], {"time": "us"}, attention_rows(traces)),
        ("collective", ["op", "bytes", "group", "link", "format", "time", "calls", "kernel"],
         {"time": "us", "bytes": "B"}, collective_rows(traces, link)),
    )
    out: list[MeasuredTable] = []
    notes: list[str] = []
    for kind, columns, units, (rows, kind_notes) in parts:
        notes += [f"{kind}: {n}" for n in kind_notes]
        if not rows:
            continue
        document = {
            "kind": kind, "split": "fit", "accelerator": accelerator, "source": source_block(traces, kind),
            "units": units, "columns": columns, "rows": rows,
        }
        name = f"{kind} table of {', '.join(t.file for t in traces)}"
        out.append(MeasuredTable(parse_json_table(json.dumps(document), name), document))
    return tuple(out), tuple(notes)


def source_block(traces: Sequence[RankTrace], kind: str) -> dict[str, str]:
    """The table's ``source``: which traces, ranks and steps, on what device and software."""
    ranks = [t.rank for t in traces]
    shown = ", ".join(str(r) for r in ranks if r is not None) or "not recorded"
    world = traces[0].world_size
    devices = sorted({t.device for t in traces if t.device}) or ["device not recorded"]
    dates = sorted({t.date for t in traces})
    what = {
        "matmul": "each row one product shape; time: the median over its calls of the call's matrix-product "
                  "kernels (GEMM and split-K reduction) summed; format: the first operand's type (fp32 on TF32 "
                  "tensor-core kernels: tf32)",
        "attention": "each row one SDPA shape and direction; time: the median over its calls of every kernel the "
                     "operator launched, summed; heads/seq_len/head_dim from the query [b, h, s, d], kv_heads/"
                     "kv_seq_len from the key",
        "collective": "each row one collective, size, group and type; bytes: max(In msg nelems, Out msg nelems) "
                      "x element size (the whole buffer, as nccl-tests counts it); group: the process group's "
                      "size; time: the median kernel duration",
    }[kind]
    return {
        "title": f"PyTorch profiler trace(s) {', '.join(t.file for t in traces)}",
        "url": ", ".join(t.file for t in traces),
        "date": dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}",
        "hardware": f"{' / '.join(devices)}; ranks {shown}" + (f" of {world}" if world else ""),
        "software": "; ".join(sorted({t.software for t in traces})),
        "notes": f"{what}; calls: how many calls were measured, over {steps_label([s.number for s in traces[0].steps])} "
                 f"of every rank given",
    }


def match_accelerator(device: str | None, memory: float | None) -> str | None:
    """The registry accelerator a trace's device name and memory (bytes) denote, or None when unsure.

    The registry key's model (``A100`` of ``A100_40GB``) must be a word of the device name
    (``NVIDIA A100-SXM4-80GB``); between several (``A100``, ``A100_40GB``) the memory decides,
    within 15%. A PCIe part matches no SXM entry."""
    if not device:
        return None
    from mlsysim.hardware.registry import Hardware

    words = set(re.split(r"[^a-z0-9]+", device.lower()))
    found = []
    for key, entry in Hardware.Cloud.entries().items():
        model = key.split("_")[0].lower()
        if model not in words or ("pcie" in words and "pcie" not in entry.name.lower()):
            continue
        capacity = float(entry.memory.capacity.to("byte").magnitude)
        found.append((key, capacity))
    if memory is not None and len(found) > 1:
        found = [(k, c) for k, c in found if abs(memory / c - 1.0) <= 0.15]
    return found[0][0] if len(found) == 1 else None
