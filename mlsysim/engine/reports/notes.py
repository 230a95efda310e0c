"""Notes on a layout: what memory counts, what came from where, and what would not run as planned.

Read by the solver's ``constraint_trace`` (and so by ``run``, plans and the
page): the model computes every layout, and these say where its answer should
not be taken at face value.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mlsysim.core.formatting import fmt_time
from mlsysim.core.units import quantity, to_canonical
from mlsysim.engine.inputs.derivation import Checked, Job
from mlsysim.engine.reports.scale import cluster_note
from mlsysim.physics.memory import training_state_bytes

if TYPE_CHECKING:
    from mlsysim.engine.reports.view import ResultView

MFU_SANITY_LIMIT = 0.6
"""A model FLOPs utilisation ``mfu`` above this is flagged: it is above the highest MFU a
published training run reports (Korthikanti et al. 2022, "Reducing Activation Recomputation in
Large Transformer Models", abstract: 54.2 % for a 530B model on 2,240 A100s; Chowdhery et al.
2022, PaLM, Table 3: 46.2 %; Llama Team 2024, The Llama 3 Herd of Models, Table 4: 38-43 %), and
the matrix products alone reach 0.69 (A100) to 0.77 (H100) of the dense peak in this project's fit
(``mlsysim validate parallel``)."""

BATCH_SANITY_TOLERANCE = 1.05
"""A global batch is flagged above this multiple of the workload's largest
reported batch: sources round their figures (Llama 2's "4M tokens" at 4096
tokens per sequence is 976.6 sequences; 1024 sequences are 4.19M tokens)."""


def memory_note(job: Job, zero_stage: int) -> str:
    """What ``memory_per_device`` includes."""
    state = f"training state (16 B/param, ZeRO stage {zero_stage})"
    if job.activations == "derived":
        return (
            f"memory_per_device = {state} + activations of the transformer layers "
            f"(recompute={job.recompute}; Korthikanti et al. 2022; embeddings and logits not counted)"
        )
    if job.activations == "given":
        return f"memory_per_device = {state} + activation_memory as given"
    return (
        f"memory_per_device = {state} only: activations not counted "
        "(the workload states no transformer shape; give activation_memory)"
    )


def sanity_notes(values: Checked, job: Job) -> tuple[str, ...]:
    """Warnings about a layout that the model computes but that would not run as planned.

    ``values`` are the scenario's checked, resolved inputs.
    """
    notes = []
    mfu = values.get("mfu")
    if mfu is not None and mfu > MFU_SANITY_LIMIT:
        notes.append(
            f"mfu {mfu:g} is above {MFU_SANITY_LIMIT:g}: published training runs report a model FLOPs "
            "utilisation of 0.38 to 0.54, and the matrix products alone reach 0.69 (A100) to 0.77 (H100) of "
            "the peak; the step time is likely optimistic"
        )
    workload = values["workload"]
    n = values["devices_per_node"] * values["nodes"]
    memory = values.get("device_memory")
    if memory is not None:
        capacity = to_canonical(memory, "data")
        sharded = float(training_state_bytes(workload.parameter_count(), 3, n))
        if sharded > capacity:
            notes.append(
                f"the training state does not fit even with ZeRO-3 over {n} devices "
                f"({sharded / 1e9:.4g} GB > {capacity / 1e9:.4g} GB per device): this job needs "
                "tensor or pipeline parallelism: give tensor_parallel and pipeline_parallel, or plan "
                "over them (--axis tensor_parallel=1,2,4,8 --axis pipeline_parallel=1,2,4)"
            )
    batch = batch_note(values)
    if batch is not None:
        notes.append(batch)
    scale = cluster_note(n)
    if scale is not None:
        notes.append(scale)
    return tuple(notes)


def batch_note(values: Checked) -> str | None:
    """The note for a global batch beyond the largest the workload's sources report; else None.

    Global batch B = per_device_batch x devices x accumulation_steps, in
    samples (sequences), against ``Workload.largest_reported_batch_samples()``
    (with :data:`BATCH_SANITY_TOLERANCE` for the sources' rounding).
    """
    workload = values["workload"]
    reported = workload.largest_reported_batch_samples()
    if reported is None:
        return None
    n = values["devices_per_node"] * values["nodes"]
    global_batch = values["per_device_batch"] * n * values.get("accumulation_steps", 1)
    if global_batch <= reported * BATCH_SANITY_TOLERANCE:
        return None
    figure = workload.largest_reported_batch
    stated = f"{reported:.7g} samples"
    if figure.dimensionality == quantity(1, "token").dimensionality:
        tokens = float(figure.to("token").magnitude)
        stated += f" = {tokens / 1e6:g}M tokens / {workload.seq_len} per sequence"
    cited = _short_source(workload.largest_reported_batch_source)
    what = workload.largest_reported_batch_note.split(":", 1)[0].strip()
    why = "; ".join(part for part in (cited, what) if part)
    return (
        f"global batch {global_batch:g} samples is beyond the largest reported for "
        f"{workload.name}: {stated}{f' ({why})' if why else ''}; "
        "convergence at this batch is unproven (more steps or a loss of quality)"
    )


def _short_source(source: str) -> str:
    """A source in a few words: the quoted title and what follows it in parentheses dropped."""
    return re.sub(r",? '[^']*'(?: \([^)]*\))?", "", source).strip()


def origins_notes(job: Job) -> tuple[str, ...]:
    """One note per preset or derivation: which inputs it filled."""
    by_origin: dict[str, list[str]] = {}
    for name, origin in job.origins.items():
        if name == "activation_memory":
            continue  # said by memory_note
        by_origin.setdefault(origin, []).append(name)
    return tuple(f"from {origin}: {', '.join(names)}" for origin, names in by_origin.items())


def shorter_than_one_update(r: ResultView) -> bool:
    """Whether the run's training time is shorter than one of its updates: its samples do not fill one
    global batch (issue 40: 100,000 nodes of a 25-hour GPT-2 job 'trained' in 0.4 s of 6.6 s updates)."""
    return float(r.figures.training_time) < float(r.figures.update_time)


def short_run_note(r: ResultView) -> tuple[str, ...]:
    """Where the whole run is shorter than one update: said, with its samples, the global batch and the most
    devices that one update's batch leaves room for (the training time is then the per-sample rate's
    extrapolation, not a schedule that can run)."""
    if not shorter_than_one_update(r):
        return ()
    x = r.model_inputs
    samples = float(x.training_time) * float(x.per_device_batch) / float(x.step_time)
    batch = r.global_batch
    nodes = float(x.nodes)
    most = max(1, int(nodes * samples // batch))
    return (
        f"the whole run, {samples:,.0f} samples, is less than one update's global batch of {batch:,}: it ends "
        f"inside its first update, so its training time ({fmt_time(float(r.figures.training_time))}, shorter "
        f"than one update of {fmt_time(float(r.figures.update_time))}) is the per-sample rate extrapolated, not "
        f"a schedule that can run; at most {most:,} nodes fill one update (or fewer accumulation steps, or a "
        "longer run)",
    )


def mfu_note(r: ResultView) -> tuple[str, ...]:
    """Where ``mfu`` was given and the job achieves less (communication, bubbles, waits): both said,
    so that the MFU of one device's step and the job's are not taken one for the other."""
    mfu = r.inputs.get("mfu") if r.inputs else None
    achieved = float(r.figures.achieved_mfu)
    if not isinstance(mfu, float) or achieved != achieved or abs(achieved - mfu) <= 5e-4 * mfu:
        return ()
    return (
        f"mfu {mfu:g} is the model FLOPs utilisation of one device's step (what one device achieves); the "
        f"job achieves MFU {achieved:.3f}: its communication, pipeline bubble and waits lower it",
    )
