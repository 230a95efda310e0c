"""``mlsysim init FILE``: write a commented scenario file to start a job from scratch."""

from __future__ import annotations

from pathlib import Path

import click

from mlsysim.cli.params import Argument, Option

TEMPLATE = """\
# A data-parallel training job, planned from the hardware and the model.
#
#   mlsysim run --file {path}
#   mlsysim explain --file {path}
#   mlsysim sweep --file {path} --axis nodes=1..64
#
# Values with units are text ("400 Gbps", "1e12 token"); names come from
# `mlsysim registry`. A commented line shows an alternative or an override.

name = "MyJob"
description = "Llama-3 8B on 16 DGX H100 nodes over InfiniBand NDR"

# The model trained, and the number format of its gradients.
workload = "Llama3_8B"
precision = "bf16"

# The hardware. A node preset fills devices_per_node, intra_bandwidth,
# intra_latency, nics_per_node, the NICs' inter_bandwidth and inter_latency,
# the accelerator and device_memory (and node_hour_rate where the registry
# has a price); a fabric preset fills inter_bandwidth and inter_latency.
# A field written out here wins over the preset.
node = "DGX_H100"
nodes = 16
fabric = "InfiniBand_NDR"
# devices_per_node = 8
# intra_bandwidth = "450 GB/s"
# inter_bandwidth = "400 Gbps"
# node_hour_rate = "32 USD/hour"

# Speed of one device: its model FLOPs utilisation (0-1; MFU as Megatron-LM,
# NeMo and the PaLM paper report it: recomputation and element-wise work are
# inside it), from which step_time = batch x model FLOPs / (peak FLOP/s x mfu);
# or a measured step_time instead. The job's own MFU (communication, bubbles
# and waits included) is a result.
mfu = 0.4
# step_time = "1.81 s"
per_device_batch = 1
accumulation_steps = 1

# Size of the job: tokens (or samples) to train on; or the measured
# one-device training_time instead.
training_tokens = "1e12 token"
# training_samples = "1.2e8 sample"
# training_time = "42878 hour"

# Memory per device: training state (ZeRO stage 0-3) plus the activations
# of the transformer layers (recompute: none, selective or full).
zero_stage = 1
recompute = "selective"
# activation_memory = "20 GB"

# Modeling choices: "seed" (the default: no latency, no overlap) or "realistic".
# assumptions = "realistic"
"""


def template(path: str) -> str:
    """The commented scenario file ``mlsysim init`` writes, naming ``path`` in its examples."""
    return TEMPLATE.format(path=path)


def init_command(
    path: str = Argument(..., help="The scenario file to write (.toml; .csv with --runs)."),
    force: bool = Option(False, "--force", help="Overwrite the file if it exists."),
    runs: bool = Option(
        False,
        "--runs",
        help="Write a template of measured runs (.csv) for 'mlsysim validate mine' instead.",
    ),
    layouts: bool = Option(
        False,
        "--layouts",
        help="Write a template of measured model-parallel runs (.csv: tensor, pipeline, ZeRO "
        "layouts priced from the operators) for 'mlsysim validate mine' instead.",
    ),
) -> None:
    """Write a commented scenario file to start from (a job from the hardware and the model).

    Examples:

      mlsysim init job.toml && mlsysim run --file job.toml

      mlsysim init --runs runs.csv && mlsysim validate mine runs.csv --out my_cluster.toml

      mlsysim init --layouts layouts.csv && mlsysim validate mine layouts.csv --out my_cluster.toml
    """
    from mlsysim.core.exceptions import InputError

    file = Path(path)
    if runs and layouts:
        raise InputError("init: give --runs or --layouts, not both")
    if layouts:
        from mlsysim.validation.mine_parallel import LAYOUTS_TEMPLATE

        if file.suffix.lower() != ".csv":
            raise InputError(f"init --layouts: expected a .csv file name, got {path!r}")
        if file.exists() and not force:
            raise InputError(f"init: {path!r} exists; give --force to overwrite it")
        if not file.expanduser().resolve().parent.is_dir():
            raise InputError(f"init: the folder of {path!r} does not exist")
        file.write_text(LAYOUTS_TEMPLATE, encoding="utf-8")
        click.echo(
            f"wrote {path}: one measured model-parallel run per row, no step_time (priced from the "
            f"operators; fill in measured_update_time or measured_tflops_per_gpu), then run "
            f"'mlsysim validate mine {path} --out my_cluster.toml'"
        )
        _echo_columns(LAYOUTS_TEMPLATE, layouts=True)
        return
    if runs:
        from mlsysim.validation.mine import RUNS_TEMPLATE

        if file.suffix.lower() != ".csv":
            raise InputError(f"init --runs: expected a .csv file name, got {path!r}")
        if file.exists() and not force:
            raise InputError(f"init: {path!r} exists; give --force to overwrite it")
        if not file.expanduser().resolve().parent.is_dir():
            raise InputError(f"init: the folder of {path!r} does not exist")
        file.write_text(RUNS_TEMPLATE, encoding="utf-8")
        click.echo(
            f"wrote {path}: one measured run per row (fill in measured_update_time or "
            f"measured_throughput), then run 'mlsysim validate mine {path} --out my_cluster.toml'"
        )
        _echo_columns(RUNS_TEMPLATE, layouts=False)
        return
    if file.suffix.lower() != ".toml":
        raise InputError(f"init: expected a .toml file name, got {path!r}")
    if file.exists() and not force:
        raise InputError(f"init: {path!r} exists; give --force to overwrite it")
    if not file.expanduser().resolve().parent.is_dir():
        raise InputError(f"init: the folder of {path!r} does not exist")
    file.write_text(template(path), encoding="utf-8")
    click.echo(f"wrote {path}: edit it, then run 'mlsysim run --file {path}'")


def _echo_columns(template: str, *, layouts: bool) -> None:
    """Every column of a runs template, what it holds and its unit (an empty cell: not given)."""
    from mlsysim.validation.mine import column_docs

    docs = column_docs(template.splitlines()[0].split(","))
    width = max(len(c) for c, _ in docs)
    click.echo("columns (an empty cell is not given; any other scenario field may be added as a column):")
    for column, text in docs:
        click.echo(f"  {column:{width}}  {text}")
    if layouts:
        click.echo(f"  {'assumptions.NAME':{width}}  what the run was run with, as --set names it "
                   "(assumptions.overlap = true): this row only")
