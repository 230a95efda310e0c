"""Read PyTorch profiler (Kineto) traces and say where each step's time went, by operator class.

A trace is the Chrome-trace JSON that ``torch.profiler`` writes (``export_chrome_trace``,
``tensorboard_trace_handler``), one file per rank, plain or gzip-compressed. Recorded with::

    torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                           record_shapes=True, schedule=torch.profiler.schedule(wait=1, warmup=2, active=3))

it holds, per step (``ProfilerStep#N``, one per ``prof.step()``): the CPU operators with
their input shapes and types (``record_shapes``), the runtime calls that launched GPU
work, and the GPU kernels, copies and sets on each stream with their durations.

**Linking a kernel to its operator.** A kernel carries the ``correlation`` id of the
runtime call (``cudaLaunchKernel``) that launched it; that call ran on a CPU thread
inside a stack of operators (``aten::linear`` > ``aten::addmm``), found by nesting in
time on that thread. Traces that lack the runtime call link through ``External id``
(the operator's id, which newer Kineto versions copy onto the kernel). A kernel
belongs to the step whose ``ProfilerStep#N`` span holds its launch.

**Classes** (:data:`CLASSES`), decided in this order, by the kernel's name and the
operators that launched it (:func:`classify`):

1. ``communication``: NCCL / RCCL kernels and the known custom collectives, split by
   collective (:data:`COLLECTIVE_OPS`) from the kernel's or its
   ``record_param_comms`` operator's ``Collective name``, else the process group's
   ``nccl:<collective>`` annotation, else the kernel name (:func:`collective_of`);
2. ``attention``: flash / cuDNN / memory-efficient attention kernels, and every kernel
   launched inside a scaled-dot-product-attention operator (the math fallback's
   products and softmax included);
3. ``matmul``: kernels named as GEMMs (cuBLAS, CUTLASS, nvjet, Triton ``mm``
   templates), and the others a matrix-product operator (``aten::mm``, ``addmm``,
   ``bmm``, ``baddbmm``, ``_scaled_mm``, ``linear``, ``matmul``) or a convolution
   launched, unless their name says memory-bound (a convolution's layout change);
4. ``optimizer``: kernels launched inside ``Optimizer.step`` / ``zero_grad``, by
   ``_foreach_`` and fused optimizer operators, or named ``multi_tensor_apply`` / Adam /
   Adagrad;
5. ``cast``: low-precision quantisation (fp8 / fp4 scaling, amax, cast-transpose);
6. ``memory_bound``: element-wise, reductions, norms, softmax, copies, fills,
   concatenation, indexing, embeddings, Triton pointwise / reduction kernels,
   device-to-device copies and memsets;
7. ``other``: anything else (host-device copies, unknown library kernels).

**Per step** (:class:`StepFigures`): each class's summed kernel time and count; the
union of all kernels (``busy``), ``idle = step − busy``; the union of communication
kernels, of the others (compute), their ``overlap`` and the communication left
``exposed``; the compute stream (the stream with the most compute-kernel time) and the
time it sits idle. :class:`ProfileSummary` gives each figure's median over the steps of
each rank, then over the ranks. A trace without GPU kernels (a CPU-only run) is
summarised by its CPU operators' self time in the same classes, and says so.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mlsysim.core.exceptions import InputError
from mlsysim.core.fileio import read_bytes
from mlsysim.core.text import printable
from mlsysim.core.units import quantity

if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue
    from mlsysim.core.units import Quantity

CLASSES = ("matmul", "attention", "memory_bound", "cast", "optimizer", "communication", "other")
"""The operator classes every kernel (or CPU operator) is put in, as the model separates its time."""

COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast", "reduce")
"""Collectives told apart within ``communication`` (``unknown`` when neither the kernel nor its operator says)."""

MAX_TRACE_BYTES = 2 * 2**30
"""Largest trace read, compressed or not (a few steps of a large model are tens to hundreds of MB)."""

RECORD_HINT = (
    "record with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
    "record_shapes=True) and a schedule of a few steps"
)
"""What to record, repeated in the messages of traces that lack a part of it."""

_US = 1e-6
"""Chrome traces give ``ts`` and ``dur`` in microseconds."""


# ---------------------------------------------------------------------------------------------
# Reading the file


def load_trace(path: str | Path) -> dict[str, object]:
    """The trace's JSON object (``{"traceEvents": [...], ...}``); a bare event list is wrapped.

    Reads gzip transparently (by its magic bytes, whatever the suffix). A file that is not
    JSON, JSON cut short, a truncated gzip stream or JSON without ``traceEvents`` is
    refused with an :class:`InputError` naming the file and what it is instead.
    """
    file = Path(path)
    name = printable(str(file))
    data = read_bytes(file, limit=MAX_TRACE_BYTES)
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, name)
    start = data.lstrip()[:1]
    if start not in (b"{", b"["):
        shown = "empty" if not start else f"starts with {data.lstrip()[:12]!r}"
        raise _trace_error(
            name, f"is not JSON ({shown}); expected a PyTorch profiler Chrome trace (export_chrome_trace's .json "
            "or .json.gz, not an Nsight .nsys-rep, a pickle or a text log)"
        )
    try:
        document = json.loads(data)
    except UnicodeDecodeError as error:
        raise _trace_error(name, f"is not UTF-8 text (byte {error.start}); expected a Chrome trace JSON") from None
    except json.JSONDecodeError as error:
        if error.pos >= len(data.rstrip()) or error.msg.startswith("Unterminated string"):
            raise _trace_error(
                name, f"the JSON ends mid-way (at byte {len(data):,}): the file is truncated; copy it again, "
                "or let the profiler finish writing it"
            ) from None
        raise _trace_error(name, f"is not valid JSON ({error.msg} at line {error.lineno})") from None
    if isinstance(document, list):
        document = {"traceEvents": document}
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        keys = ", ".join(sorted(document)[:6]) if isinstance(document, dict) else type(document).__name__
        what = " (an execution trace: record the profiler's trace instead)" if isinstance(document, dict) and (
            "nodes" in document
        ) else ""
        raise _trace_error(name, f"is JSON but not a Chrome trace: no traceEvents list (found {keys}){what}")
    return document


def _gunzip(data: bytes, name: str) -> bytes:
    """The decompressed bytes of every gzip member; a stream cut short is refused."""
    out: list[bytes] = []
    size = 0
    while data:
        inflater = zlib.decompressobj(wbits=31)
        try:
            chunk = inflater.decompress(data, MAX_TRACE_BYTES + 1 - size)
        except zlib.error as error:
            raise _trace_error(name, f"is not a readable gzip file ({error})") from None
        size += len(chunk)
        out.append(chunk)
        if size > MAX_TRACE_BYTES:
            raise _trace_error(name, f"decompresses to more than {MAX_TRACE_BYTES:,} bytes, the most read")
        if not inflater.eof:
            raise _trace_error(
                name, "the gzip stream ends mid-way: the file is truncated; copy it again, or let the profiler "
                "finish writing it"
            )
        data = inflater.unused_data.lstrip(b"\x00")
        if data[:2] != b"\x1f\x8b":
            break
    return b"".join(out)


def _trace_error(name: str, message: str) -> InputError:
    return InputError(f"{name}: {message}", field="trace")


# ---------------------------------------------------------------------------------------------
# Events


@dataclass(frozen=True)
class TraceOp:
    """A CPU operator or annotation: its span (seconds from the trace's start), thread and args."""

    name: str
    start: float
    end: float
    thread: str
    parent: int
    args: Mapping[str, object] = field(repr=False)


@dataclass(frozen=True)
class TraceKernel:
    """A GPU kernel, copy or set: its span, stream, the operator that launched it (-1: none found)."""

    name: str
    start: float
    duration: float
    stream: str
    kind: str
    launcher: int
    launch: float
    args: Mapping[str, object] = field(repr=False)


@dataclass(frozen=True)
class Step:
    """One ``ProfilerStep#N``: its number and CPU span (seconds from the trace's start)."""

    number: int
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class RankTrace:
    """One rank's trace, read: operators, kernels (sorted by start), steps, and what the file says of its run."""

    file: str
    rank: int | None
    world_size: int | None
    device: str | None
    device_memory: float | None
    software: str
    date: str
    shapes: bool
    ops: tuple[TraceOp, ...] = field(repr=False)
    kernels: tuple[TraceKernel, ...] = field(repr=False)
    steps: tuple[Step, ...]
    labels: tuple[tuple[str, str | None], ...] = field(default=(), repr=False)
    """Each kernel's (class, collective or None): :func:`kernel_classes`, filled in by :func:`read_trace`."""

    def chain(self, op: int) -> list[TraceOp]:
        """The operator ``op`` and its enclosing operators, innermost first."""
        out = []
        while op >= 0:
            out.append(self.ops[op])
            op = self.ops[op].parent
        return out


_KERNEL_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset", "memset": "memset"}
_RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime", "hip_runtime", "hip_driver"})
_OP_CATS = frozenset({"cpu_op", "operator", "user_annotation"})
_STEP = re.compile(r"ProfilerStep#(\d+)$")


def read_trace(path: str | Path) -> RankTrace:
    """One rank's trace file, read and linked (see the module docstring)."""
    name = printable(str(path))
    document = load_trace(path)
    events = as_list(document.get("traceEvents"))
    spans = [(i, e) for i, e in enumerate(events) if isinstance(e, dict) and e.get("ph") == "X"]
    times = [_number(name, i, e, "ts") for i, e in spans]
    origin = min(times, default=0.0)
    ops_raw: list[tuple[float, float, str, str, dict[str, object]]] = []
    runtime: dict[object, tuple[float, str]] = {}
    kernels_raw: list[tuple[str, float, float, str, str, dict[str, object]]] = []
    steps: dict[int, Step] = {}
    for (index, event), ts in zip(spans, times, strict=True):
        cat = str(event.get("cat", "")).lower()
        label = str(event.get("name", ""))
        start = (ts - origin) * _US
        duration = _number(name, index, event, "dur") * _US
        args = as_mapping(event.get("args"))
        thread = f"{event.get('pid')}/{event.get('tid')}"
        if cat in _KERNEL_CATS:
            stream = str(args.get("stream", event.get("tid")))
            kernels_raw.append((label, start, duration, f"{args.get('device', event.get('pid'))}/{stream}",
                                _KERNEL_CATS[cat], args))
        elif cat in _RUNTIME_CATS:
            if "correlation" in args:
                runtime[args["correlation"]] = (start, thread)
        elif cat in _OP_CATS:
            step = _STEP.match(label)
            if step is not None:
                steps.setdefault(int(step.group(1)), Step(int(step.group(1)), start, start + duration))
            ops_raw.append((start, start + duration, label, thread, args))
    ops, launcher_at = _nest(ops_raw, runtime)
    by_external = {op.args.get("External id"): i for i, op in enumerate(ops) if "External id" in op.args}
    kernels = []
    for label, start, duration, stream, kind, args in sorted(kernels_raw, key=lambda k: k[1]):
        launched = runtime.get(args.get("correlation"))
        launcher = launcher_at.get(args.get("correlation"), -1)
        if launcher < 0 and args.get("External id") in by_external:
            launcher = by_external[args.get("External id")]
        launch = launched[0] if launched else (ops[launcher].start if launcher >= 0 else start)
        kernels.append(TraceKernel(label, start, duration, stream, kind, launcher, launch, args))
    info = as_mapping(document.get("distributedInfo"))
    devices = as_list(document.get("deviceProperties"))
    device = as_mapping(devices[0] if devices else None)
    shapes = bool(document.get("record_shapes")) or any(any(as_list(op.args.get("Input Dims"))) for op in ops)
    memory = device.get("totalGlobalMem")
    trace = RankTrace(
        file=name, rank=_int_or_none(info.get("rank")), world_size=_int_or_none(info.get("world_size")),
        device=str(device["name"]) if device.get("name") else None,
        device_memory=float(memory) if isinstance(memory, int | float) and memory > 0 else None,
        software=_software(document, info), date=_date(document), shapes=shapes,
        ops=tuple(ops), kernels=tuple(kernels), steps=tuple(steps[n] for n in sorted(steps)),
    )
    return replace(trace, labels=tuple(kernel_classes(trace)))


def _number(name: str, index: int, event: Mapping[str, object], key: str) -> float:
    value = event.get(key, 0.0 if key == "dur" else None)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _trace_error(name, f"event {index} ({printable(str(event.get('name', '')))[:60]!r}): {key} is not a number, "
                           f"got {value!r}")
    if key == "dur" and value < 0:
        raise _trace_error(name, f"event {index} ({printable(str(event.get('name', '')))[:60]!r}): a negative duration")
    return float(value)


def _nest(
    raw: Sequence[tuple[float, float, str, str, dict[str, object]]], runtime: Mapping[object, tuple[float, str]]
) -> tuple[list[TraceOp], dict[object, int]]:
    """Operators with their enclosing operator (nesting in time on one thread), and the innermost
    operator around each runtime call, by correlation id (the operator that launched its kernel)."""
    threads: dict[str, list[tuple[float, float, str, dict[str, object]]]] = {}
    for start, end, label, where, args in raw:
        threads.setdefault(where, []).append((start, end, label, args))
    calls: dict[str, list[tuple[float, object]]] = {}
    for corr, (t, where) in runtime.items():
        calls.setdefault(where, []).append((t, corr))
    ops: list[TraceOp] = []
    launcher: dict[object, int] = {}
    for where, items in threads.items():
        items.sort(key=lambda r: (r[0], -r[1]))
        pending = sorted(calls.get(where, []), key=lambda c: c[0])
        stack: list[int] = []
        position = 0
        for start, end, label, args in items:
            while position < len(pending) and pending[position][0] < start:
                _assign(pending[position], ops, stack, launcher)
                position += 1
            while stack and ops[stack[-1]].end <= start:
                stack.pop()
            ops.append(TraceOp(label, start, end, where, stack[-1] if stack else -1, args))
            stack.append(len(ops) - 1)
        for call in pending[position:]:
            _assign(call, ops, stack, launcher)
    return ops, launcher


def _assign(call: tuple[float, object], ops: Sequence[TraceOp], stack: list[int], launcher: dict[object, int]) -> None:
    """The runtime call at ``t`` was made by the innermost operator still open at ``t``."""
    t, corr = call
    while stack and ops[stack[-1]].end < t:
        stack.pop()
    if stack:
        launcher[corr] = stack[-1]


def as_mapping(value: object) -> dict[str, object]:
    """``value`` if it is a JSON object, else an empty one (a field the trace does not give)."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[object]:
    """``value`` if it is a JSON list, else an empty one."""
    return value if isinstance(value, list) else []


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _software(document: Mapping[str, object], info: Mapping[str, object]) -> str:
    parts = ["PyTorch profiler (Kineto) trace"]
    if "schemaVersion" in document:
        parts[0] += f", schema {document['schemaVersion']}"
    if isinstance(document.get("cuda_runtime_version"), int):
        version = int(document["cuda_runtime_version"])  # type: ignore[call-overload]
        parts.append(f"CUDA runtime {version // 1000}.{version % 1000 // 10}")
    if info.get("nccl_version"):
        parts.append(f"NCCL {info['nccl_version']}")
    if info.get("backend"):
        parts.append(f"backend {info['backend']}")
    return "; ".join(parts)


def _date(document: Mapping[str, object]) -> str:
    base = document.get("baseTimeNanoseconds")
    if isinstance(base, int) and base > 0:
        return datetime.fromtimestamp(base / 1e9, tz=timezone.utc).date().isoformat()
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Classes


MATMUL_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm", "aten::linear", "aten::matmul",
    "aten::_addmm_activation", "aten::addbmm", "aten::einsum", "aten::_grouped_mm", "aten::_scaled_grouped_mm",
})
"""Operators whose kernels are matrix products (their shapes give the measured matmul table)."""

CONVOLUTION_OPS = frozenset({
    "aten::cudnn_convolution", "aten::convolution", "aten::_convolution", "aten::convolution_backward",
    "aten::cudnn_convolution_transpose", "aten::miopen_convolution", "aten::conv2d", "aten::conv1d", "aten::conv3d",
})
"""Convolutions: implicit GEMMs on the tensor cores, counted with the matrix products."""

_COMM_KERNEL = re.compile(
    r"nccl|rccl|multimem_all_reduce|one_shot_all_reduce|two_shot_all_reduce|cross_device_reduce|deep_ep|"
    r"custom_?all_?reduce", re.IGNORECASE,
)
_ATTENTION_KERNEL = re.compile(r"flash|fmha|attention|attn_|_attn|sdpa|mha_", re.IGNORECASE)
_ATTENTION_OP = re.compile(
    r"scaled_dot_product|flash_attention|flash_attn|efficient_attention|cudnn_attention|_fused_sdp|fmha|"
    r"unified_attention|paged_attention", re.IGNORECASE,
)
_MATMUL_KERNEL = re.compile(
    r"(?<!fb)gemm|gemv|xmma|nvjet|cublas|splitkreduce|s1688|h1688|s16816|h16816|wgmma|tensorop|implicit_gemm|"
    r"triton_tem_fused_.*mm|^bmm_|_bmm_|matmul|Kernel2$", re.IGNORECASE,
)
_OPTIMIZER_OP = re.compile(
    r"^Optimizer\.(step|zero_grad)#|^aten::_foreach_|_fused_adam|_fused_sgd|_fused_adagrad|fused_adamw|"
    r"^optimizer", re.IGNORECASE,
)
_OPTIMIZER_KERNEL = re.compile(r"multi_tensor_apply|adam|adagrad|sgd_kernel|FusedOptimizer", re.IGNORECASE)
_CAST = re.compile(
    r"fp8|float8|e4m3|e5m2|e2m1|mxfp|nvfp4|quantiz|_quant|quant_|amax|cast_transpose|scaled_cast", re.IGNORECASE,
)
_MEMORY_BOUND = re.compile(
    r"elementwise|reduce_kernel|reduction|norm|softmax|copy|fill|cat_?array|catarray|index|gather|scatter|"
    r"embedding|dropout|bn_|batch_norm|layer_norm|rms|transpose|permute|nchwtonhwc|nhwctonchw|triton_(poi|red|per)_|"
    r"at::native|cub::|thrust::|memcpy|memset|vectorized|unrolled|where|arange|cumsum|sort|topk|clamp|"
    r"pooling|pool_|upsample|pad", re.IGNORECASE,
)
_COMM_OP = re.compile(r"record_param_comms|^c10d::|^nccl:|^gloo:|^torch\.distributed|^mpi:", re.IGNORECASE)
_NATIVE_OP = re.compile(r"^(?!autograd::|torch::|c10d::)[A-Za-z_]\w*::\w")
"""A dispatcher operator (``aten::mm``, ``fbgemm::permute_2D_sparse_data``, ``vllm::rms_norm``), not a wrapper."""


def classify(name: str, ops: Sequence[str], kind: str = "kernel") -> str:
    """The class (one of :data:`CLASSES`) of a kernel ``name`` launched inside ``ops`` (innermost first).

    For a CPU operator (a trace without GPU kernels) ``name`` is the operator's own name and
    ``ops`` its enclosing operators, ``kind="cpu"``. The rules and their order are the
    module docstring's.
    """
    return _classify(name, tuple(ops), kind)


@lru_cache(maxsize=2**16)
def _classify(name: str, ops: tuple[str, ...], kind: str) -> str:
    if kind == "memcpy":
        return "memory_bound" if "dtod" in name.lower().replace(" ", "") else "other"
    if kind == "memset":
        return "memory_bound"
    own = [name] if kind == "cpu" else []
    chain = [*own, *ops]
    if (kind != "cpu" and _COMM_KERNEL.search(name)) or (kind == "cpu" and any(_COMM_OP.search(o) for o in chain)):
        return "communication"
    if (kind != "cpu" and _ATTENTION_KERNEL.search(name) and not _MATMUL_KERNEL.search(name)) or any(
        _ATTENTION_OP.search(o) for o in chain
    ):
        return "attention"
    native = next((o for o in chain if _NATIVE_OP.match(o)), None)
    product = native in MATMUL_OPS or native in CONVOLUTION_OPS
    if kind == "cpu" and product:
        return "matmul"
    if kind != "cpu" and (_MATMUL_KERNEL.search(name) or (product and not _MEMORY_BOUND.search(name))):
        return "matmul"
    if any(_OPTIMIZER_OP.search(o) for o in chain) or (kind != "cpu" and _OPTIMIZER_KERNEL.search(name)):
        return "optimizer"
    if _CAST.search(name) or any(_CAST.search(o) for o in ops[:1]):
        return "cast"
    if kind == "cpu":
        return "memory_bound" if native is not None else "other"
    if _MEMORY_BOUND.search(name):
        return "memory_bound"
    return "other"


_COLLECTIVE_NAMES = (
    (re.compile(r"reduce_?scatter", re.IGNORECASE), "reduce_scatter"),
    (re.compile(r"all_?gather", re.IGNORECASE), "all_gather"),
    (re.compile(r"all_?reduce|barrier|cross_device_reduce", re.IGNORECASE), "all_reduce"),
    (re.compile(r"all_?to_?all|deep_ep|dispatch|combine", re.IGNORECASE), "all_to_all"),
    (re.compile(r"send_?recv|\bsend\b|\brecv\b|_send|_recv|sendrecv", re.IGNORECASE), "send_recv"),
    (re.compile(r"broadcast", re.IGNORECASE), "broadcast"),
    (re.compile(r"_reduce_|\breduce\b|kernel_reduce|reduce_", re.IGNORECASE), "reduce"),
)


def collective_of(kernel_name: str, comms: Mapping[str, object] | None, ops: Sequence[str] = ()) -> str:
    """The collective (one of :data:`COLLECTIVE_OPS`, else ``unknown``) of a communication kernel.

    In this order: the ``Collective name`` of the kernel or its ``record_param_comms``
    operator (``allreduce``, ``_allgather_base``, ``all_to_allv``); the process group's
    annotation around the launch (``nccl:all_to_all``, which names the collective an
    all-to-all's send/receive kernels implement); the kernel name
    (``ncclDevKernel_AllGather_RING_LL``)."""
    annotation = next((o.partition(":")[2] for o in ops if o.startswith("nccl:")), None)
    for text in ((comms or {}).get("Collective name"), annotation, kernel_name):
        if not isinstance(text, str) or not text:
            continue
        for pattern, op in _COLLECTIVE_NAMES:
            if pattern.search(text):
                return op
    return "unknown"


def comm_args(trace: RankTrace, kernel: TraceKernel) -> Mapping[str, object] | None:
    """The collective's arguments (``In msg nelems``, ``Group size``, ``dtype`` ...): on the kernel
    (newer PyTorch), else on the ``record_param_comms`` operator that launched it; None if neither."""
    if "In msg nelems" in kernel.args or "Collective name" in kernel.args:
        return kernel.args
    for op in trace.chain(kernel.launcher):
        if op.name == "record_param_comms" and ("In msg nelems" in op.args or "Collective name" in op.args):
            return op.args
    return None


# ---------------------------------------------------------------------------------------------
# Per step


@dataclass(frozen=True)
class ClassTime:
    """One class's time in a step (summed over its kernels or operators) and how many ran."""

    time: Quantity
    count: float


FIGURES = ("step_time", "busy", "idle", "overlap", "exposed_communication", "compute_stream_idle")
"""The time figures of a rank's steps and of the summary (see :class:`ProfileSummary`)."""


@dataclass(frozen=True)
class StepFigures:
    """What one rank did in its steps, each figure the median over the steps (see :class:`ProfileSummary`)."""

    rank: int | None
    file: str
    steps: tuple[int, ...]
    compute_stream: str | None
    step_time: Quantity
    busy: Quantity
    idle: Quantity
    overlap: Quantity
    exposed_communication: Quantity
    compute_stream_idle: Quantity
    classes: Mapping[str, ClassTime]
    collectives: Mapping[str, ClassTime]


def _union(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of ``[start, end)`` intervals."""
    total = 0.0
    end = -math.inf
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def step_windows(trace: RankTrace) -> tuple[list[Step], list[list[int]]]:
    """The steps (or one window over the whole trace when it has none) and each one's kernels."""
    steps = list(trace.steps)
    if not steps:
        starts = [k.launch for k in trace.kernels] + [o.start for o in trace.ops]
        ends = [k.start + k.duration for k in trace.kernels] + [o.end for o in trace.ops]
        steps = [Step(0, min(starts, default=0.0), max(ends, default=0.0))]
    members: list[list[int]] = [[] for _ in steps]
    for i, kernel in enumerate(trace.kernels):
        for s, step in enumerate(steps):
            if step.start <= kernel.launch <= step.end:
                members[s].append(i)
                break
    return steps, members


def kernel_classes(trace: RankTrace) -> list[tuple[str, str | None]]:
    """(class, collective or None) of each of the trace's kernels."""
    out: list[tuple[str, str | None]] = []
    for kernel in trace.kernels:
        chain = [op.name for op in trace.chain(kernel.launcher)]
        klass = classify(kernel.name, chain, kernel.kind)
        comms = comm_args(trace, kernel) if klass == "communication" else None
        out.append((klass, collective_of(kernel.name, comms, chain) if klass == "communication" else None))
    return out


def labels_of(trace: RankTrace) -> tuple[tuple[str, str | None], ...]:
    """The trace's kernel labels (:attr:`RankTrace.labels`), computed if it was built without them."""
    return trace.labels if len(trace.labels) == len(trace.kernels) else tuple(kernel_classes(trace))


def step_figures(trace: RankTrace) -> StepFigures:
    """The rank's per-step figures (GPU kernels; CPU operators' self time when it has no kernels)."""
    steps, members = step_windows(trace)
    per_step: list[dict[str, float]] = []
    per_class: list[dict[str, tuple[float, float]]] = []
    per_collective: list[dict[str, tuple[float, float]]] = []
    compute_stream = None
    if trace.kernels:
        labels = labels_of(trace)
        stream_time: dict[str, float] = {}
        for (klass, _), kernel in zip(labels, trace.kernels, strict=True):
            if klass != "communication" and kernel.kind == "kernel":
                stream_time[kernel.stream] = stream_time.get(kernel.stream, 0.0) + kernel.duration
        compute_stream = max(stream_time, key=lambda s: stream_time[s]) if stream_time else None
        for step, chosen in zip(steps, members, strict=True):
            classes: dict[str, tuple[float, float]] = {}
            collectives: dict[str, tuple[float, float]] = {}
            comm: list[tuple[float, float]] = []
            compute: list[tuple[float, float]] = []
            on_stream: list[tuple[float, float]] = []
            for i in chosen:
                kernel, (klass, collective) = trace.kernels[i], labels[i]
                span = (kernel.start, kernel.start + kernel.duration)
                t, n = classes.get(klass, (0.0, 0.0))
                classes[klass] = (t + kernel.duration, n + 1)
                if collective is not None:
                    t, n = collectives.get(collective, (0.0, 0.0))
                    collectives[collective] = (t + kernel.duration, n + 1)
                (comm if klass == "communication" else compute).append(span)
                if kernel.stream == compute_stream:
                    on_stream.append(span)
            busy = _union(comm + compute)
            overlap = _union(comm) + _union(compute) - busy
            per_step.append({
                "step_time": step.duration, "busy": busy, "idle": max(step.duration - busy, 0.0), "overlap": overlap,
                "exposed_communication": _union(comm) - overlap,
                "compute_stream_idle": max(step.duration - _union(on_stream), 0.0),
            })
            per_class.append(classes)
            per_collective.append(collectives)
    else:
        for step in steps:
            classes = _cpu_classes(trace, step)
            tops = [(o.start, o.end) for o in trace.ops if not _STEP.match(o.name) and step.start <= o.start <= step.end
                    and (o.parent < 0 or _STEP.match(trace.ops[o.parent].name))]
            busy = _union(tops)
            per_step.append({"step_time": step.duration, "busy": busy, "idle": max(step.duration - busy, 0.0),
                             "overlap": 0.0, "exposed_communication": 0.0, "compute_stream_idle": 0.0})
            per_class.append(classes)
            per_collective.append({})
    return StepFigures(
        rank=trace.rank, file=trace.file, steps=tuple(s.number for s in trace.steps), compute_stream=compute_stream,
        classes=_class_times(_median_maps(per_class)), collectives=_class_times(_median_maps(per_collective)),
        **{key: quantity(statistics.median(s[key] for s in per_step), "s") for key in FIGURES},
    )


def _class_times(times: Mapping[str, tuple[float, float]]) -> dict[str, ClassTime]:
    return {k: ClassTime(quantity(t, "s"), n) for k, (t, n) in times.items()}


def _seconds(times: Mapping[str, ClassTime]) -> dict[str, tuple[float, float]]:
    return {k: (float(v.time.to("s").magnitude), v.count) for k, v in times.items()}


def _cpu_classes(trace: RankTrace, step: Step) -> dict[str, tuple[float, float]]:
    """Self time (own span less its children's) and count of the CPU operators in ``step``, by class."""
    children = [0.0] * len(trace.ops)
    for op in trace.ops:
        if op.parent >= 0:
            children[op.parent] += op.end - op.start
    out: dict[str, tuple[float, float]] = {}
    for i, op in enumerate(trace.ops):
        if not step.start <= op.start <= step.end or _STEP.match(op.name):
            continue
        klass = classify(op.name, [o.name for o in trace.chain(op.parent)], "cpu")
        t, n = out.get(klass, (0.0, 0.0))
        out[klass] = (t + max(op.end - op.start - children[i], 0.0), n + 1)
    return out


def _median_maps(maps: Sequence[Mapping[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """Each key's median (time, count) over the maps, a missing key counting as zero."""
    keys = {k for m in maps for k in m}
    return {
        k: (statistics.median(m.get(k, (0.0, 0.0))[0] for m in maps),
            statistics.median(m.get(k, (0.0, 0.0))[1] for m in maps))
        for k in sorted(keys)
    }


# ---------------------------------------------------------------------------------------------
# Several ranks


def read_traces(paths: Sequence[str | Path]) -> tuple[RankTrace, ...]:
    """Every rank's trace, checked to come from one run: distinct ranks, one world size, the same steps."""
    if not paths:
        raise InputError("give at least one trace file (one per rank)", field="trace")
    traces = tuple(read_trace(p) for p in paths)
    ranks = [t.rank for t in traces]
    known = [r for r in ranks if r is not None]
    if len(set(known)) != len(known):
        twice = next(r for r in known if known.count(r) > 1)
        files = ", ".join(t.file for t in traces if t.rank == twice)
        raise InputError(f"rank {twice} is given twice ({files}): give one trace per rank", field="trace")
    sizes = {t.world_size for t in traces if t.world_size is not None}
    if len(sizes) > 1:
        raise InputError(
            f"the traces come from runs of different sizes (world sizes {sorted(sizes)}): give the ranks of one run",
            field="trace",
        )
    numbers = [tuple(s.number for s in t.steps) for t in traces]
    if len(set(numbers)) > 1:
        shown = "; ".join(f"{_rank_label(t)} has {steps_label(n)}" for t, n in zip(traces, numbers, strict=True))
        raise InputError(
            f"the ranks disagree in steps ({shown}): profile the same steps on every rank (one schedule, "
            "prof.step() once per iteration)", field="trace",
        )
    return traces


def _rank_label(trace: RankTrace) -> str:
    return f"rank {trace.rank} ({trace.file})" if trace.rank is not None else trace.file


def steps_label(numbers: Sequence[int]) -> str:
    if not numbers:
        return "no ProfilerStep"
    if list(numbers) == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"steps #{numbers[0]}-#{numbers[-1]}" if len(numbers) > 1 else f"step #{numbers[0]}"
    return "steps " + ", ".join(f"#{n}" for n in numbers)


@dataclass(frozen=True)
class ProfileSummary:
    """Where the traced steps' time went, by operator class: the median over each rank's steps, then over ranks.

    ``subject`` says what was classified: ``"gpu kernels"``, or ``"cpu operators"`` for a
    trace without GPU kernels (``gpu`` False; the classes are then the operators' self
    time). ``classes`` and ``collectives`` map a class (:data:`CLASSES`) or collective
    (:data:`COLLECTIVE_OPS`) to its summed time and count per step; ``step_time`` is the
    ``ProfilerStep`` span; ``busy`` the time at least one kernel runs, ``idle`` the rest;
    ``overlap`` the communication that ran beside compute kernels and
    ``exposed_communication`` the rest of it; ``compute_stream_idle`` the time the compute
    stream sits idle. ``ranks`` holds each rank's own figures; ``notes`` what was left out
    or assumed.
    """

    files: tuple[str, ...]
    subject: str
    gpu: bool
    shapes: bool
    device: str | None
    world_size: int | None
    steps: tuple[int, ...]
    step_time: Quantity
    busy: Quantity
    idle: Quantity
    overlap: Quantity
    exposed_communication: Quantity
    compute_stream_idle: Quantity
    classes: Mapping[str, ClassTime]
    collectives: Mapping[str, ClassTime]
    ranks: tuple[StepFigures, ...] = field(repr=False)
    notes: tuple[str, ...] = ()

    def seconds(self, klass: str) -> float:
        """The class's (or collective's) time per step in seconds; 0 for one that did not run."""
        if klass not in CLASSES and klass not in COLLECTIVE_OPS and klass != "unknown":
            raise InputError(f"class: expected one of {', '.join(CLASSES + COLLECTIVE_OPS)}, got {klass!r}",
                             field="class")
        found = self.classes.get(klass) or self.collectives.get(klass)
        return 0.0 if found is None else float(found.time.to("s").magnitude)

    def to_dict(self) -> dict[str, JSONValue]:
        """The summary as JSON-ready data (quantities as ``{"value", "unit"}`` in ms)."""
        from mlsysim.core.jsonio import encode

        def times(mapping: Mapping[str, ClassTime]) -> dict[str, JSONValue]:
            return {k: {"time": encode(v.time, unit="ms"), "count": v.count} for k, v in mapping.items()}

        return {
            "files": list(self.files), "subject": self.subject, "gpu": self.gpu, "shapes": self.shapes,
            "device": self.device, "world_size": self.world_size, "steps": list(self.steps),
            **{key: encode(getattr(self, key), unit="ms") for key in FIGURES},
            "classes": times(self.classes), "collectives": times(self.collectives),
            "ranks": [
                {"rank": r.rank, "file": r.file, "steps": list(r.steps), "compute_stream": r.compute_stream,
                 **{key: encode(getattr(r, key), unit="ms") for key in FIGURES},
                 "classes": times(r.classes), "collectives": times(r.collectives)}
                for r in self.ranks
            ],
            "notes": list(self.notes),
        }


def summarise(traces: Sequence[RankTrace]) -> ProfileSummary:
    """The :class:`ProfileSummary` of one run's ranks (read and checked by :func:`read_traces`)."""
    figures = tuple(step_figures(t) for t in traces)
    gpu = any(t.kernels for t in traces)
    notes: list[str] = []
    if not gpu:
        notes.append(
            "no GPU kernels in the trace (a CPU-only profile): the classes are CPU operators' self time; "
            f"to calibrate a GPU, {RECORD_HINT} on the GPUs"
        )
    if not all(t.shapes for t in traces):
        notes.append(f"no operator shapes in {', '.join(t.file for t in traces if not t.shapes)}: {RECORD_HINT}")
    if not traces[0].steps:
        notes.append("no ProfilerStep annotations: the whole trace is taken as one step; call prof.step() once per "
                     "iteration under a profiler schedule")
    outside = sum(len(t.kernels) - sum(len(m) for m in step_windows(t)[1]) for t in traces)
    if outside:
        notes.append(f"{outside} kernel(s) launched outside the profiled steps are left out")
    unlinked = sum(1 for t in traces for k in t.kernels if k.launcher < 0 and k.kind == "kernel")
    if gpu and unlinked:
        notes.append(f"{unlinked} kernel(s) have no launching operator in the trace (classified by name only)")

    def across(key: str) -> Quantity:
        return quantity(statistics.median(float(getattr(f, key).to("s").magnitude) for f in figures), "s")

    devices = sorted({t.device for t in traces if t.device})
    return ProfileSummary(
        files=tuple(t.file for t in traces), subject="gpu kernels" if gpu else "cpu operators", gpu=gpu,
        shapes=all(t.shapes for t in traces), device=" / ".join(devices) or None,
        world_size=traces[0].world_size, steps=tuple(s.number for s in traces[0].steps),
        classes=_class_times(_median_maps([_seconds(f.classes) for f in figures])),
        collectives=_class_times(_median_maps([_seconds(f.collectives) for f in figures])),
        ranks=figures, notes=tuple(notes), **{key: across(key) for key in FIGURES},
    )


def read_profile(paths: Sequence[str | Path]) -> ProfileSummary:
    """:func:`summarise` of :func:`read_traces`: the per-class breakdown of one run's trace files."""
    return summarise(read_traces(paths))


__all__ = [
    "CLASSES",
    "COLLECTIVE_OPS",
    "ClassTime",
    "ProfileSummary",
    "RankTrace",
    "StepFigures",
    "classify",
    "collective_of",
    "load_trace",
    "read_profile",
    "read_trace",
    "read_traces",
    "summarise",
]
