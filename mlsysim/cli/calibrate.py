"""``mlsysim calibrate``: fit link parameters from nccl-tests logs or torch.distributed runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mlsysim.cli.params import Argument, Option, command, group

if TYPE_CHECKING:
    from mlsysim.calibrate.fit import CollectiveFit

calibrate_app = group(
    "calibrate",
    help=(
        "Fit the model's link parameters (bandwidth, latency) and step time from measurements.\n\n"
        "Examples:\n\n"
        "  mlsysim calibrate nccl-tests all_reduce.log\n\n"
        "  mlsysim calibrate nccl-tests all_reduce.log --write-scenario my.toml --link intra\n\n"
        "  mlsysim calibrate torch --nproc 2\n\n"
        "  mlsysim calibrate step --model gpt --batch 8\n\n"
        "  mlsysim calibrate matmuls table.json --accelerator H100"
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
