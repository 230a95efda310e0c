"""``mlsysim calibrate``: fit link parameters from nccl-tests logs or torch.distributed runs; read profiler traces."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mlsysim.cli.params import Argument, Option, command, group

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mlsysim.calibrate.fit import CollectiveFit
    from mlsysim.calibrate.kernels import KernelCalibration
    from mlsysim.calibrate.profile import ProfileSummary
    from mlsysim.calibrate.profile_tables import MeasuredTable
    from mlsysim.core.jsonio import JSONValue
    from mlsysim.core.units import Quantity

calibrate_app = group(
    "calibrate",
    help=(
        "Fit the model's link parameters (bandwidth, latency) and step time from measurements.\n\n"
        "Examples:\n\n"
        "  mlsysim calibrate nccl-tests all_reduce.log\n\n"
        "  mlsysim calibrate nccl-tests all_reduce.log --write-scenario my.toml --link intra\n\n"
        "  mlsysim calibrate torch --nproc 2\n\n"
        "  mlsysim calibrate step --model gpt --batch 8\n\n"
        "  mlsysim calibrate matmuls table.json --accelerator H100\n\n"
        "  mlsysim calibrate kernels gemms.csv --kind matmul --accelerator A100 --out my_cluster.json\n\n"
        "  mlsysim calibrate profile rank0.pt.trace.json.gz rank1.pt.trace.json.gz --out measured/"
    ),
)

JSON_HELP = "Print the result as JSON."
WRITE_HELP = "Write the fitted link into this TOML scenario file (needs --link)."
LINK_HELP = "Which link of the scenario the fit describes: intra or inter."
NPROC_HELP = "Processes per node (torchrun's --nproc-per-node)."
THREADS_HELP = "Threads per process (default: the cores shared out, at least 1)."
MODEL_HELP = "Built-in model: mlp or gpt (a small GPT-style transformer)."


@command(calibrate_app, "nccl-tests")
def nccl_tests(
    file: Path = Argument(..., help="nccl-tests / rccl-tests output (as pasted)."),
    ranks: int | None = Option(None, "--ranks", help="Ranks, if the log does not list them."),
    collective: str | None = Option(
        None, "--collective", help="all_reduce, all_gather or reduce_scatter."
    ),
    in_place: bool = Option(False, "--in-place", help="Fit the in-place columns."),
    write_scenario: Path | None = Option(None, "--write-scenario", help=WRITE_HELP),
    link: str | None = Option(None, "--link", help=LINK_HELP),
    json_: bool = Option(False, "--json", help=JSON_HELP),
) -> None:
    """Fit t = alpha + S F(n) / busbw to an nccl-tests log; print the fit and measured vs fitted.

    Example: mlsysim calibrate nccl-tests all_reduce.log --write-scenario my.toml --link intra
    """
    from mlsysim.calibrate import from_nccl_tests

    which = _check_link(write_scenario, link)
    fit = from_nccl_tests(file, ranks=ranks, collective=collective, in_place=in_place)
    _report(fit, write_scenario, which, json_)


@command(calibrate_app, "torch")
def torch_allreduce(
    nproc: int = Option(2, "--nproc", help=NPROC_HELP),
    nnodes: int = Option(1, "--nnodes", help="Nodes; run the same command on each."),
    rdzv_endpoint: str | None = Option(
        None, "--rdzv-endpoint", help="HOST:PORT every node reaches (needed with --nnodes > 1)."
    ),
    backend: str = Option("gloo", "--backend", help="gloo (CPU) or nccl (CUDA GPUs)."),
    threads: int | None = Option(None, "--threads", help=THREADS_HELP),
    min_size: str = Option("1 KiB", "--min-size", "-b", help="Smallest message."),
    max_size: str = Option("64 MiB", "--max-size", "-e", help="Largest message."),
    factor: float = Option(2.0, "--factor", "-f", help="Size multiplier between steps."),
    warmup: int = Option(5, "--warmup", "-w", help="Untimed iterations per size."),
    iters: int = Option(20, "--iters", "-n", help="Timed iterations per size (median)."),
    write_scenario: Path | None = Option(None, "--write-scenario", help=WRITE_HELP),
    link: str | None = Option(None, "--link", help=LINK_HELP),
    json_: bool = Option(False, "--json", help=JSON_HELP),
) -> None:
    """Time AllReduce with torch.distributed on this machine (as nccl-tests does) and fit it.

    Starts --nproc processes the way torchrun does; under torchrun it runs as one rank.

    Example: mlsysim calibrate torch --nproc 2 -b 1KiB -e 16MiB
    """
    from mlsysim.calibrate.networks import require_torch
    from mlsysim.calibrate.torch_measure import (
        Launch,
        _nonnegative,
        _positive,
        measure_allreduce,
        message_sizes,
    )

    which = _check_link(write_scenario, link)
    config = Launch(
        nproc=nproc, nnodes=nnodes, backend=backend, threads=threads, rdzv_endpoint=rdzv_endpoint
    )
    sizes = message_sizes(_size("min-size", min_size), _size("max-size", max_size), factor)
    _nonnegative("warmup", warmup)
    _positive("iters", iters)
    require_torch()  # after every option is checked: importing torch takes seconds
    fit = measure_allreduce(config, sizes, warmup=warmup, iters=iters)
    if fit is not None:  # None on nodes other than rank 0's
        _report(fit, write_scenario, which, json_)


@command(calibrate_app, "step")
def step(
    model: str = Option("mlp", "--model", help=MODEL_HELP),
    batch: int | None = Option(None, "--batch", help="Batch (default: mlp 64, gpt 8)."),
    layers: int | None = Option(None, "--layers", help="Layers (mlp 4, gpt 2)."),
    width: int | None = Option(None, "--width", help="Hidden width (mlp 1024, gpt 256)."),
    heads: int | None = Option(None, "--heads", help="Attention heads (gpt 4)."),
    seq_len: int | None = Option(None, "--seq-len", help="Sequence length (gpt 128)."),
    vocab: int | None = Option(None, "--vocab", help="Vocabulary (gpt 4096)."),
    steps: int = Option(20, "--steps", help="Timed steps (median)."),
    warmup: int = Option(3, "--warmup", help="Untimed steps first."),
    threads: int | None = Option(None, "--threads", help="Threads (default: all cores)."),
    json_: bool = Option(False, "--json", help=JSON_HELP),
) -> None:
    """Time one training step (forward, backward, SGD update) of a built-in model on one device.

    Example: mlsysim calibrate step --model gpt --batch 8 --threads 1
    """
    from mlsysim.calibrate.networks import DEFAULT_BATCH, ModelSpec, require_torch
    from mlsysim.calibrate.torch_measure import measure_step

    spec = ModelSpec.sized(
        model, layers=layers, width=width, heads=heads, seq_len=seq_len, vocab=vocab
    )
    require_torch()
    size = DEFAULT_BATCH[spec.name] if batch is None else batch
    timing = measure_step(spec, size, steps=steps, warmup=warmup, threads=threads)
    step_ms = 1e3 * timing.median
    if json_:
        click.echo(
            json.dumps(
                {
                    "model": spec.describe(),
                    "parameters": timing.parameters,
                    "batch": size,
                    "threads": timing.threads,
                    "step_time": {"value": step_ms, "unit": "millisecond"},
                    "step_time_spread": timing.spread,
                    "steps": len(timing.times),
                },
                indent=2,
                allow_nan=False,
            )
        )
        return
    click.echo(f"model        {spec.describe()}, {timing.parameters:,} parameters")
    click.echo(f"batch        {size}, {timing.threads} thread(s)")
    click.echo(f"step time    {step_ms:.4g} ms (median of {len(timing.times)} steps)")
    click.echo(f"spread       {timing.spread:.1%} (max - min) / median")
    click.echo(f'use it as    --set "step_time={step_ms:.4g} ms"')


@command(calibrate_app, "matmuls")
def matmuls(
    table: Path = Argument(
        ..., help="Measured matrix products: CSV or JSON with M, N, K, format, tflops (matmul_script's output)."
    ),
    accelerator: str | None = Option(
        None, "--accelerator", help="Registry name of the accelerator measured (e.g. H100), if the table names none."
    ),
    matmul_format: str | None = Option(
        None, "--matmul-format", help="The format of the linear layers, whose ceiling is matmul_ceiling."
    ),
    write_scenario: Path | None = Option(
        None, "--write-scenario", help="Write the ceilings into this TOML scenario file's [assumptions]."
    ),
    json_: bool = Option(False, "--json", help=JSON_HELP),
) -> None:
    """Fit the matrix-product ceiling of each format to measured matrix multiplies.

    c_f is the median over a format's rows of measured / (peak_f q_tile q_wave K / (K + K_0));
    each row is predicted by the other rows' fit (leave one row out). The linear layers'
    format gives matmul_ceiling, a 16-bit format measured beside a low-precision one
    attention_ceiling. Measure with: python -m mlsysim.calibrate.matmul_script --out table.json

    Example: mlsysim calibrate matmuls table.json --accelerator H100 --write-scenario my.toml
    """
    from mlsysim.calibrate.matmuls import fit_matmul_ceilings, read_matmul_table, table_text
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.jsonio import document, dumps

    if write_scenario is not None:
        from mlsysim.core.fileio import check_target

        check_target(write_scenario, suffixes=(".toml",), option="--write-scenario")
    measured = read_matmul_table(table)
    if accelerator is not None and measured.accelerator is not None and accelerator != measured.accelerator:
        raise InputError(
            f"--accelerator: the table names {measured.accelerator!r}, got {accelerator!r}", field="accelerator"
        )
    name = accelerator or measured.accelerator
    if name is None:
        raise InputError(
            "--accelerator: the table names no accelerator; expected its registry name (e.g. --accelerator H100)",
            field="accelerator",
        )
    fit = fit_matmul_ceilings(measured.rows, name, source=measured.path)
    values = fit.assumptions(matmul_format)
    if write_scenario is not None:
        from mlsysim.calibrate.scenario_file import write_assumptions

        write_assumptions(write_scenario, values)
    if json_:
        data = fit.to_dict(matmul_format)
        if write_scenario is not None:
            data["written"] = {"file": str(write_scenario), **values}
        click.echo(dumps(document("matmul_calibration", data), indent=2))
        return
    click.echo(table_text(fit, matmul_format))
    click.echo("")
    linear = fit.linear_format(matmul_format)
    if write_scenario is not None:
        written = ", ".join(f"{k} = {v!r}" for k, v in values.items())
        click.echo(f"wrote {written} to {write_scenario} (linear layers in {linear})")
        return
    click.echo(f"use it as (the linear layers in {linear}; set matmul_format = \"{linear}\" in the scenario):")
    click.echo("[assumptions]")
    for key, value in values.items():
        click.echo(f"{key} = {value!r}")


@command(calibrate_app, "kernels")
def kernels(
    files: list[Path] = Argument(
        ..., help="Your measured kernel tables: JSON in the kernel-table format, CSV (with --kind and "
        "--accelerator), or nccl-tests logs (with --accelerator)."
    ),
    accelerator: str | None = Option(
        None, "--accelerator", help="Registry name of the accelerator measured (e.g. A100); a JSON table names "
        "its own, which must be this one."
    ),
    kind: str | None = Option(
        None, "--kind", help="matmul, attention, memory or collective: the kind of a CSV table (a JSON table "
        "names its own, which must be this one)."
    ),
    link: str | None = Option(
        None, "--link", help="nccl-tests logs across hosts: the fabric between them (infiniband, roce, efa), or "
        "nvl72 for one NVL72 rack."
    ),
    nic_rate: str | None = Option(
        None, "--nic-rate", help="nccl-tests logs across hosts: each GPU's share of the NICs per direction "
        "(e.g. '50 GB/s')."
    ),
    out: Path | None = Option(None, "--out", "-o", help="Write the cluster file here (.json)."),
    force: bool = Option(
        False, "--force", help="Write constants outside their bounds anyway (the file lists them), and "
        "replace a read-only --out."
    ),
    json_: bool = Option(False, "--json", help=JSON_HELP),
) -> None:
    """Fit the kernel constants of your own measurements and write a cluster file.

    Fits each kind's constants on your tables with the functions that fit the shipped ones
    (matmul ceilings and best measured efficiency; fused attention; memory-bound bandwidth
    and floor; collective rates and latencies), prints them beside the shipped ones with
    each table's median and worst error before and after, and with --out writes a cluster
    file. A constant outside its bounds (an efficiency above 1, a ceiling above your own
    best kernel, a floor below 0) is refused with exit status 2 unless --force. Tables of
    split holdout are priced, never fitted on.

    Example: mlsysim calibrate kernels gemms.csv --kind matmul --accelerator A100 --out my_cluster.json
    then:    mlsysim run NAME --set cluster_file=my_cluster.json
    """
    import shlex

    from mlsysim.calibrate.kernels import calibrate, read_user_tables
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.fileio import check_target, write_text
    from mlsysim.core.jsonio import document, dumps

    target = check_target(out, suffixes=(".json",), force=force, option="--out") if out is not None else None
    links = ("nvlink", "nvl72", "infiniband", "roce", "efa")
    if link is not None and link not in links:
        raise InputError(f"--link: expected one of {', '.join(links)}, got {link!r}", field="link")
    rate = _rate("nic-rate", nic_rate) if nic_rate is not None else None
    name, tables = read_user_tables(files, kind=kind, accelerator=accelerator, link=link, nic_rate=rate)
    result = calibrate(tables, name)
    refused = result.refused
    written = None
    if target is not None and (force or not refused):
        words = ["mlsysim calibrate kernels", *(shlex.quote(str(f)) for f in files)]
        for option, value in (("--accelerator", accelerator), ("--kind", kind), ("--link", link),
                              ("--nic-rate", nic_rate), ("--out", out)):
            if value is not None:
                words += [option, shlex.quote(str(value))]
        text = json.dumps(result.document(" ".join(words), forced=bool(refused)), indent=1) + "\n"
        written = write_text(target, text, force=force)
    if json_:
        data = calibration_dict(result)
        data["written"] = None if written is None else str(out)
        click.echo(dumps(document("kernel_calibration", data), indent=2))
    else:
        click.echo(calibration_text(result))
        if refused and force and written is not None:
            click.echo(f"forced: {len(refused)} constant(s) outside their bounds written (the file lists them)")
        if written is not None and set(result.kinds) - {"collective"}:
            click.echo(f"wrote {out}: 'mlsysim run NAME --set cluster_file={out}' prices the operators of "
                       f"{name} scenarios with these kernels")
        elif written is not None:
            click.echo(f"wrote {out}: its collective constants price collectives through the kernel API "
                       "(mlsysim.kernels.collectives.collective(..., constants=...)); a scenario does not read them")
        elif not refused:
            click.echo("write them with --out my_cluster.json; then 'mlsysim run NAME --set "
                       "cluster_file=my_cluster.json'")
    if refused and not force:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise InputError(f"{refused[0].refusal()}{more}; --force writes it anyway", field="force")


def calibration_dict(result: KernelCalibration) -> dict[str, JSONValue]:
    """``calibrate kernels --json``: every kind's constants, bounds and errors as plain values."""
    import math

    def errors(pair: tuple[float, float] | None) -> JSONValue:
        return None if pair is None else {"median": pair[0], "worst": pair[1]}

    kinds: dict[str, JSONValue] = {}
    for kind, fit in result.kinds.items():
        kinds[kind] = {
            "constants": [
                {"name": c.name, "unit": c.unit or None, "shipped": c.shipped, "fitted": c.fitted, "low": c.low,
                 "high": c.high if math.isfinite(c.high) else None, "bound": c.bound, "outside": c.outside}
                for c in fit.constants
            ],
            "tables": [
                {"name": e.table.name, "split": e.table.split, "rows": len(e.table), "before": errors(e.before),
                 "after": errors(e.after)}
                for e in fit.errors
            ],
            "notes": list(fit.notes),
        }
    return {"accelerator": result.accelerator, "kinds": kinds, "refused": [c.refusal() for c in result.refused],
            "notes": list(result.notes)}


def calibration_text(result: KernelCalibration) -> str:
    """Per kind: the fitted constants beside the shipped ones and their bounds, then each table's errors."""
    from mlsysim.calibrate.kernels import constant_text
    from mlsysim.core.text import printable

    def share(pair: tuple[float, float] | None, which: int) -> str:
        return "-" if pair is None else f"{pair[which]:.1%}"

    listed = [t for fit in result.kinds.values() for t in fit.tables]
    names = ", ".join(f"{t.name} ({t.kind}, {len(t)} rows)" for t in listed)
    lines = [printable(f"{result.accelerator} kernels from {len(listed)} table(s): {names}")]
    lines += [f"note: {n}" for n in result.notes]
    for kind, fit in result.kinds.items():
        lines += ["", kind]
        rows: list[tuple[str, ...]] = [("constant", "shipped", "fitted", "bound")]
        for c in fit.constants:
            flag = "  <- outside its bound" if c.outside else ""
            bound = f"{constant_text(c.low, c.unit)} .. {constant_text(c.high, c.unit)}"
            rows.append((c.name, constant_text(c.shipped, c.unit), constant_text(c.fitted, c.unit), bound + flag))
        lines += _aligned(rows, "<>><")
        rows = [("table", "split", "rows", "median before", "worst before", "median after", "worst after")]
        rows += [(e.table.name, e.table.split, str(len(e.table)), share(e.before, 0), share(e.before, 1),
                  share(e.after, 0), share(e.after, 1)) for e in fit.errors]
        lines += [""] + _aligned(rows, "<<>>>>>")
        lines += [f"  note: {n}" for n in fit.notes]
    lines.append("")
    return "\n".join(printable(line) for line in lines)


def _aligned(rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """Rows as plain aligned columns (``align``: < or > per column), indented by two spaces."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(align))]
    out = []
    for row in rows:
        cells = [cell.ljust(w) if a == "<" else cell.rjust(w) for cell, w, a in zip(row, widths, align, strict=True)]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _rate(option: str, text: str) -> float:
    """A bandwidth option ('50 GB/s') in bytes/s."""
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.units import parse_quantity, to_canonical

    try:
        return to_canonical(parse_quantity(text, "bandwidth"), "bandwidth")
    except InputError as exc:
        raise InputError(f"--{option}: {exc}", field=option) from None


@command(calibrate_app, "profile")
def profile(
    traces: list[Path] = Argument(
        ..., help="PyTorch profiler Chrome traces (.json or .json.gz) of a few steps, one file per rank."
    ),
    accelerator: str | None = Option(
        None, "--accelerator", help="Registry name of the GPU traced (e.g. A100), where the trace's device name "
        "does not tell it (or to override it)."
    ),
    link: str = Option(
        "unknown", "--link", help="The link the collectives' process groups span (intra, inter, ...): the "
        "collective table's link column."
    ),
    out: Path | None = Option(
        None, "--out", help="Write profile_summary.json and the measured kernel tables (JSON, the kernel tables' "
        "format) into this existing folder."
    ),
    json_: bool = Option(False, "--json", help=JSON_HELP),
) -> None:
    """Where each traced step's time went, by operator class, and the measured kernel tables.

    Reads the traces torch.profiler writes (export_chrome_trace, tensorboard_trace_handler;
    gzip read as such), links every GPU kernel to the operator that launched it and puts it
    in one class: matmul, attention, memory_bound, cast, optimizer, communication (by
    collective), other. Prints each class's time per step (median over the steps, then the
    ranks), the step time, the GPU's idle time and the communication overlapped with compute.
    With --out, writes the summary and the measured matmul, attention and collective tables.
    Record with: torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True) and a
    schedule of a few steps; a trace without GPU kernels or without shapes prints what it
    can and exits with status 2.

    Example: mlsysim calibrate profile rank0.json.gz rank1.json.gz --out measured/
    """
    from mlsysim.calibrate.profile import RECORD_HINT, read_traces, summarise
    from mlsysim.calibrate.profile_tables import match_accelerator, measured_tables
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.jsonio import document, dumps

    folder = _output_folder(out)
    word = link.strip().lower()
    if not word or not word.replace("_", "").replace("-", "").isalnum():
        raise InputError(f"--link: expected a word (intra, inter, ...), got {link!r}", field="link")
    name = _registry_accelerator(accelerator) if accelerator is not None else None
    read = read_traces(traces)
    summary = summarise(read)
    if name is None:
        matches = {match_accelerator(t.device, t.device_memory) for t in read}
        name = matches.pop() if len(matches) == 1 else None
    tables, table_notes = measured_tables(read, accelerator=name, link=word) if summary.gpu and name else ((), ())
    if summary.gpu and name is None:
        table_notes = (f"no tables: the trace's device ({summary.device or 'not recorded'}) is not a registry "
                       "accelerator I can tell; name it with --accelerator",)
    refusal = None
    if not summary.gpu:
        refusal = f"no GPU kernels in {', '.join(summary.files)} (a CPU-only trace); {RECORD_HINT} on the GPUs"
    elif not summary.shapes:
        refusal = (f"no operator shapes in {', '.join(summary.files)}: the measured tables need them; record with "
                   "record_shapes=True")
    elif folder is not None and name is None:
        refusal = f"--out: {table_notes[0]}"
    listed: list[JSONValue] = [{"kind": m.table.kind, "rows": len(m.table), "file": m.file_name} for m in tables]
    data: dict[str, JSONValue] = {
        **summary.to_dict(), "accelerator": name, "tables": listed, "table_notes": list(table_notes),
    }
    if json_:
        click.echo(dumps(document("profile", data), indent=2))
    else:
        click.echo(profile_text(summary, name, tables, table_notes))
    if refusal is not None:
        raise InputError(refusal, field="trace")
    if folder is not None:
        from mlsysim.core.fileio import write_text

        written = [write_text(folder / "profile_summary.json", dumps(document("profile", data), indent=2) + "\n")]
        written += [write_text(folder / m.file_name, table_json(m.document)) for m in tables]
        if not json_:
            for path in written:
                click.echo(f"wrote {path}")


def _output_folder(out: Path | None) -> Path | None:
    """``--out``: an existing, writable folder (checked before the traces are read)."""
    import os

    from mlsysim.core.exceptions import InputError

    if out is None:
        return None
    folder = Path(os.path.expanduser(os.fspath(out)))
    if not folder.is_dir():
        raise InputError(f"--out {str(out)!r}: not an existing folder; create it first", field="out")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"--out {str(out)!r}: the folder is not writable", field="out")
    return folder


def _registry_accelerator(name: str) -> str:
    """``--accelerator``: a registry accelerator's name, as the registry spells it."""
    from mlsysim.kernels._accelerator import registry_accelerator

    return registry_accelerator(name)


def profile_text(
    summary: ProfileSummary, accelerator: str | None, tables: Sequence[MeasuredTable], table_notes: Sequence[str]
) -> str:
    """The per-class breakdown of a summary, as ``calibrate profile`` prints it."""
    from mlsysim.calibrate.profile import CLASSES, steps_label

    step = float(summary.step_time.to("s").magnitude)

    def time(q: Quantity) -> str:
        value = float(q.to("us").magnitude)
        return _human_time(value) if value else "0"

    def share(q: Quantity) -> str:
        return f"{float(q.to('s').magnitude) / step:.1%}" if step > 0 else ""

    ranks = [r.rank for r in summary.ranks]
    who = ", ".join(f"rank {r}" for r in ranks if r is not None) or f"{len(ranks)} trace(s)"
    world = f" of {summary.world_size}" if summary.world_size else ""
    registry = f" (registry: {accelerator})" if accelerator else ""
    lines = [
        ", ".join(summary.files),
        f"  {who}{world}; {summary.device or 'device not recorded'}{registry}; {steps_label(list(summary.steps))}",
        f"  step time {time(summary.step_time)} ({summary.subject}; median over the steps, then the ranks)",
    ]
    if summary.gpu:
        lines.append(
            f"  GPU busy {time(summary.busy)}, idle {time(summary.idle)}; communication overlapped with compute "
            f"{time(summary.overlap)}, exposed {time(summary.exposed_communication)}; compute stream idle "
            f"{time(summary.compute_stream_idle)}"
        )
    lines += ["", f"{'class':<16} {'time/step':>10}  {'of step':>7}  {'count/step':>10}"]
    zero = summary.step_time * 0.0
    for klass in CLASSES:
        found = summary.classes.get(klass)
        spent, count = (found.time, found.count) if found else (zero, 0.0)
        lines.append(f"{klass:<16} {time(spent):>10}  {share(spent):>7}  {count:>10.6g}")
        if klass == "communication":
            for op, item in summary.collectives.items():
                lines.append(f"  {op:<14} {time(item.time):>10}  {share(item.time):>7}  {item.count:>10.6g}")
    measured = ", ".join(f"{m.table.kind} {len(m.table)} row(s)" for m in tables)
    lines += ["", f"measured tables: {measured or 'none'}"]
    lines += [f"note: {n}" for n in (*summary.notes, *table_notes)]
    return "\n".join(lines)


def table_json(data: Mapping[str, object]) -> str:
    """A kernel table's JSON text as the shipped tables are laid out: one row a line."""
    head = {k: v for k, v in data.items() if k != "rows"}
    body = json.dumps(head, indent=2)[:-2]
    rows = ",\n".join("    " + json.dumps(r) for r in as_rows(data.get("rows")))
    return f"{body},\n  \"rows\": [\n{rows}\n  ]\n}}\n"


def as_rows(value: object) -> list[object]:
    """A table document's rows (a list)."""
    return value if isinstance(value, list) else []


def _check_link(write_scenario: Path | None, link: str | None) -> str | None:
    """``--link`` must be intra or inter, and goes with ``--write-scenario``."""
    from mlsysim.calibrate.scenario_file import LINKS
    from mlsysim.core.exceptions import InputError

    if link is not None and link not in LINKS:
        raise InputError(f"--link: expected intra or inter, got {link!r}")
    if write_scenario is not None and link is None:
        raise InputError("--write-scenario needs --link intra or --link inter")
    if link is not None and write_scenario is None:
        raise InputError("--link needs --write-scenario FILE")
    if write_scenario is not None:
        from mlsysim.core.fileio import check_target

        check_target(write_scenario, suffixes=(".toml",), option="--write-scenario")
    return link


def _size(option: str, text: str) -> float:
    """A message size: '64 MiB', '1KiB', or a plain number of bytes."""
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.units import parse_quantity, to_canonical

    if text.strip().isascii() and text.strip().isdigit() and len(text.strip()) <= 18:
        return float(text)
    try:
        return to_canonical(parse_quantity(text, "data"), "data")
    except InputError as exc:
        raise InputError(f"--{option}: {exc}") from None


def _report(fit: CollectiveFit, write_scenario: Path | None, which: str | None, json_: bool) -> None:
    from mlsysim.core.jsonio import document, dumps

    written = None
    if write_scenario is not None and which is not None:
        from mlsysim.calibrate import write_link

        written = write_link(write_scenario, fit.to_link(), which)
    if json_:
        data = fit.to_dict()
        if written is not None:
            data["written"] = {"file": str(write_scenario), **written}
        click.echo(dumps(document("calibration", data), indent=2))
        return
    click.echo(fit_text(fit))
    if written is not None:
        values = ", ".join(f"{k} = {v!r}" for k, v in written.items())
        click.echo(f"wrote {values} to {write_scenario}")


def fit_text(fit: CollectiveFit) -> str:
    """The fit, then measured against fitted time at every size."""
    link = fit.to_link()
    lines = [
        f"{fit.collective} on {fit.ranks} ranks, {len(fit.message_sizes)} sizes ({fit.source})",
        f"  latency (alpha)        {fit.latency.to('us').magnitude:.4g} us",
        f"  bus bandwidth (beta)   {fit.bus_bandwidth.to('GB/s').magnitude:.4g} GB/s",
        f"  peak bus bandwidth     {fit.peak_bus_bandwidth.to('GB/s').magnitude:.4g} GB/s",
        f"  worst relative error   {fit.worst_relative_error:.1%}",
        f"  scenario link          bandwidth {link.bandwidth.to('GB/s').magnitude:.4g} GB/s, "
        f"latency {link.latency.to('us').magnitude:.4g} us per ring step",
    ]
    lines += [f"  note: {note}" for note in fit.notes]
    lines.append("")
    lines.append(f"{'size':>10}  {'measured':>12}  {'fitted':>12}  {'error':>7}")
    fitted = fit.to_dict()["points"]
    for point in fitted:
        lines.append(
            f"{_human_bytes(point['size']['value']):>10}  "
            f"{_human_time(point['measured']['value']):>12}  "
            f"{_human_time(point['fitted']['value']):>12}  "
            f"{point['relative_error']:>+7.1%}"
        )
    return "\n".join(lines)


def _human_bytes(size: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size:.0f} B"


def _human_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.4g} s"
    if us >= 1e3:
        return f"{us / 1e3:.4g} ms"
    return f"{us:.4g} us"
