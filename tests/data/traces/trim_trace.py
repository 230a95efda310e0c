"""How the vendored traces were cut from their sources (see README.md): run as

    python tests/data/traces/trim_trace.py SOURCE.json.gz OUT.json.gz STEP[,STEP...]

Keeps the trace's metadata and top-level keys; the CPU events (operators, annotations,
runtime calls) that lie wholly inside the ``ProfilerStep#N`` spans named; the GPU
kernels, copies and sets those runtime calls launched (same ``correlation``). Drops the
flow events (``ac2g``, ``async_cpu_to_gpu``, ``fwdbwd``: arrows for a viewer, which the
``correlation`` ids repeat) and the per-kernel launch statistics and bookkeeping
arguments no reader here uses (grid, block, registers, occupancy, event indices).
Writes gzip with a zero timestamp, so the output is the same bytes at every run.
"""

from __future__ import annotations

import gzip
import json
import sys

DROPPED_ARGS = frozenset({
    "registers per thread", "shared memory", "blocks per SM", "warps per SM", "grid", "block",
    "est. achieved occupancy %", "Trace name", "Trace iteration", "Profiler Event Index", "Module Hierarchy",
    "Call stack", "Ev Idx", "cbid", "queued", "context", "Record function id",
})
GPU = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
FLOWS = frozenset({"ac2g", "async_cpu_to_gpu", "fwdbwd"})


def trim(document: dict, steps: set[int]) -> dict:
    """The document with only the events of ``steps`` (see the module docstring)."""
    events = document["traceEvents"]
    windows = [
        (e["ts"], e["ts"] + e["dur"]) for e in events
        if str(e.get("name", "")).startswith("ProfilerStep#") and int(e["name"].split("#")[1]) in steps
    ]
    kept, launched = [], set()
    for event in events:
        if event.get("ph") != "X" or event.get("cat") in GPU:
            continue
        if any(a <= event["ts"] and event["ts"] + event.get("dur", 0) <= b for a, b in windows):
            kept.append(event)
            if event.get("cat") == "cuda_runtime" and "correlation" in event.get("args", {}):
                launched.add(event["args"]["correlation"])
    kept += [e for e in events if e.get("cat") in GPU and e.get("args", {}).get("correlation") in launched]
    for event in kept:
        for key in DROPPED_ARGS & set(event.get("args", {})):
            del event["args"][key]
    meta = [e for e in events if e.get("ph") == "M" or e.get("cat") == "Trace"]
    assert not any(e.get("cat") in FLOWS for e in kept)
    return {**document, "traceEvents": meta + sorted(kept, key=lambda e: e["ts"])}


def main(source: str, target: str, steps: str) -> None:
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    text = json.dumps(trim(document, {int(s) for s in steps.split(",")}), separators=(",", ":"))
    with open(target, "wb") as out:
        out.write(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


if __name__ == "__main__":
    main(*sys.argv[1:4])
