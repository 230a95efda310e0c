"""Your own model-parallel runs: fit the matrix-product ceiling of your accelerator to them.

``mlsysim validate mine RUNS`` reads two kinds of rows (:mod:`mlsysim.validation.mine`):

* a row with ``step_time`` (or ``mfu``): a data-parallel run whose step was measured on one
  device; it fits the cluster's links and per-update overhead (:func:`~mlsysim.validation.mine.fit_runs`);
* a row with neither (:func:`is_layout_row`): a *layout*, any tensor, pipeline, data and
  ZeRO layout of a transformer on a node or accelerator, whose step the scenario prices
  from the operators (:mod:`mlsysim.physics.operators`). Such rows fit the fraction of
  the format's peak the matrix products reach: the assumptions ``matmul_ceiling`` and
  ``attention_ceiling``.

This module does the second. Each layout row becomes a
:class:`~mlsysim.validation.parallel.ParallelCase` and is predicted by the public path of
:mod:`mlsysim.validation.parallel` (:func:`~mlsysim.validation.parallel.predicted_time`:
``scenario.result.update_time`` of the row's scenario with the ceilings as assumptions, no
``mfu``, no ``step_time``). The fit is the one that module makes on published runs
(:func:`~mlsysim.validation.parallel.exact_ceiling`): each row's exact ceiling (the one at
which its prediction equals its measurement, by geometric bisection over
:data:`~mlsysim.validation.parallel.U_RANGE`), and per format the median of its rows'
(which minimises the median |error|). The 16-bit ceiling (bf16 and fp16 rows together) is
fitted first; a low-precision format's rows (``matmul_format = "fp8"``...) are bisected with
the attention core and output layer at that 16-bit ceiling (at the accelerator's fitted one,
or the base assumptions' ``attention_ceiling``, when no row is 16-bit). Each row is then
predicted with the ceiling fitted on the other rows of its format (leave one out).

Row schema (beside the scenario's inputs, as in a scenario file: ``workload``, ``node`` or
``accelerator``, ``nodes``, ``precision``, ``matmul_format``, ``tensor_parallel``,
``pipeline_parallel``, ``pipeline_chunks``, ``sequence_parallel``, ``zero_stage``,
``recompute``, ``flash_attention``, ``fused_elementwise``, ``per_device_batch`` (the
micro-batch), ``accumulation_steps``, ...):

* the workload: a registry name (``workload = "Llama2_7B"``), or the shape columns
  :data:`SHAPE_COLUMNS` (``parameters``, ``layers``, ``hidden_dim``, ``heads``,
  ``seq_len``, ``vocab_size``, ...), which build a transformer named by ``workload`` (or
  the row's name); with a registry name they change its shape (``seq_len = 8192``).
* ``global_batch`` (samples) instead of ``accumulation_steps``: the micro-batches per
  update are global_batch / (per_device_batch x data-parallel ranks), a whole number.
* the measurement, one of: ``measured_update_time`` (one optimizer update, with its unit),
  ``measured_throughput`` (samples per second of the whole job) or
  ``measured_tflops_per_gpu``: model teraFLOP/s per GPU under the scenario's count of model
  FLOPs (``scenario.flops_per_sample``: 6 N + 12 L h s per token, Chowdhery et al. 2022,
  no recomputation): T = global batch x FLOPs per sample / (rate x GPUs). A framework that
  counts the recomputed forward too (Megatron-LM's "hardware" FLOPs) reports more: give
  its iteration time instead.

The layout rows of one file must run on one accelerator architecture (the assumptions file
holds one ceiling per role). A mixture of experts' rows fit the same dense ceilings, their routed
experts priced at the architecture's stored expert ceiling (or the base assumptions'
``expert_ceiling``): fitting ``expert_ceiling`` itself from your runs is not offered yet (give it as an
assumption, from ``mlsysim validate parallel``'s published fit or your own). ``matmul_ceiling`` is written as the ceiling of the linear
layers' format (:func:`linear_format`), ``attention_ceiling`` as the 16-bit one.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mlsysim.core.exceptions import InputError, ScenarioFileError
from mlsysim.core.units import parse_quantity
from mlsysim.validation.parallel import (
    SIXTEEN_BIT,
    U_RANGE,
    ParallelCase,
    exact_ceiling,
    implied_rate,
    predicted_time,
    scenario_of,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.scenario_types import TrainingScenario

STEP_FIELDS = ("step_time", "mfu")
"""A row that gives one of these is a data-parallel run (its step given); one that gives
neither is a layout priced from the operators."""

LAYOUT_MEASURED_FIELDS = ("measured_update_time", "measured_throughput", "measured_tflops_per_gpu")
"""The measurement of a layout row: one of these columns."""

SHAPE_COLUMNS = (
    "parameters", "layers", "hidden_dim", "heads", "seq_len", "vocab_size", "kv_heads",
    "ffn_hidden", "gated_mlp",
)
"""Columns that give (or change) the transformer's shape."""

SIXTEEN_BIT_FORMATS = ("bf16", "fp16")
"""Formats whose rows inform the 16-bit ceiling (they run at one rate on tensor cores)."""

ROW_ASSUMPTION_PREFIX = "assumptions."
"""A layout row's column ``assumptions.NAME`` sets one assumption for that row (what it was run with)."""

EDGE = 1e-6
"""An exact ceiling within this (relative) of an end of :data:`U_RANGE` is at the end: the
measurement is out of the reach of any ceiling there."""

LAYOUTS_TEMPLATE = """\
name,workload,node,nodes,precision,matmul_format,tensor_parallel,pipeline_parallel,pipeline_chunks,sequence_parallel,zero_stage,recompute,flash_attention,per_device_batch,accumulation_steps,global_batch,measured_update_time,measured_tflops_per_gpu
t8p1,Llama2_7B,DGX_H100,2,bf16,bf16,8,1,,1,0,selective,1,1,,256,,
t4p2,Llama2_7B,DGX_H100,2,bf16,bf16,4,2,2,1,0,selective,1,1,,256,,
"""
"""What ``mlsysim init --layouts FILE.csv`` writes: model-parallel runs (no ``step_time``:
priced from the operators); fill in ``measured_update_time`` (with its unit) or
``measured_tflops_per_gpu``."""


def is_layout_row(row: Mapping[str, object]) -> bool:
    """A row priced from the operators: it gives neither ``step_time`` nor ``mfu``."""
    return not any(k in row for k in STEP_FIELDS)


@dataclass(frozen=True)
class LayoutRun:
    """One measured model-parallel run: the case the public path predicts, where it was read."""

    name: str
    case: ParallelCase
    line: int
    matmul_format: str
    """The linear layers' format as the scenario resolves it (``fp16``, ``bf16``, ``fp8``...)."""
    base: Assumptions
    """The assumptions the row was read under."""

    @property
    def group(self) -> str:
        """The ceiling the run informs: ``bf16`` (every 16-bit format) or its low-precision format."""
        return self.case.format

    @property
    def measured_update_time(self) -> float:
        return self.case.measured_time


@dataclass(frozen=True)
class LayoutFit:
    """Ceilings fitted to layout runs, and each run predicted with and without itself."""

    architecture: str
    ceilings: dict[str, float]
    """Format group -> fitted ceiling (the median of its runs' exact ceilings)."""
    exact: list[float]
    """Each run's exact ceiling (its format's; the 16-bit one at :attr:`ceilings`' for a low format)."""
    predicted: list[float]
    """Each run at the fitted ceilings (s)."""
    held_out_ceiling: list[float]
    """Each run's format's ceiling fitted on the other runs (NaN: no other run of its format)."""
    held_out: list[float]
    """Each run at :attr:`held_out_ceiling` (s; NaN where that is NaN)."""
    measured: list[float]
    assumptions: dict[str, float]
    """What the assumptions file holds: ``kernel_share`` (the 16-bit ceiling over the best measured 16-bit
    kernel: every format at that share of its own best kernel) where the linear layers' fit is 16-bit and a
    kernel table measures the GPU; else ``matmul_ceiling`` (the linear format's) and ``attention_ceiling``."""
    linear: str
    """The format whose ceiling is ``matmul_ceiling``."""
    sixteen_fitted: bool
    """Whether the 16-bit ceiling was fitted on runs (else taken from the base or the fitted table)."""
    bounds: dict[str, tuple[float, str]]
    """Format group -> (the largest ceiling it may take, why): the best measured kernel of the accelerator in
    that format (a fraction of its peak), or the peak itself where no kernel table measures it."""
    rates: dict[str, float] = field(default_factory=dict)
    """Implementation rate -> its fitted value (bytes/s; :func:`rate_role`): the median of its rows' implied
    rates at the fitted ceilings."""
    rate_bound: float = math.inf
    """The fastest link a device has (bytes/s): no implementation's rate is above it."""
    identified: list[str] = field(default_factory=list)
    """What the rows pin down and what they leave at the base, each with why (the report's words)."""

    def outside_bounds(self) -> list[str]:
        """One sentence per fitted ceiling outside its physical bounds: at :attr:`bounds` (the scenario takes no
        ceiling above the best measured kernel of that GPU, so a fit there means the runs are faster than any it
        allows), or at the low end of :data:`U_RANGE` (slower than any ceiling explains)."""
        found = []
        for group, ceiling in self.ceilings.items():
            bound, source = self.bounds[group]
            label = "16-bit" if group == SIXTEEN_BIT else group
            if ceiling >= bound * (1 - EDGE):
                found.append(f"the {label} runs are faster than the matrix-product ceiling can make them: at "
                             f"{source} ({bound:.3f} of peak) the model is still slower than the median run")
            elif ceiling <= U_RANGE[0] * (1 + EDGE):
                found.append(f"the runs put the {label} matrix-product ceiling at {ceiling:.3f} of peak, the "
                             f"lowest the fit tries: something other than the matrix products sets their time")
        for name, rate in self.rates.items():
            if rate > self.rate_bound * (1 + EDGE):
                found.append(f"the runs put {name} at {rate / 1e9:.3g} GB/s, above the fastest link of the device "
                             f"({self.rate_bound / 1e9:.3g} GB/s): their time is not that traffic's")
        return found

    @property
    def relative_errors(self) -> list[float]:
        """Leave-one-out predicted / measured - 1 of the update time, per run (NaN: not held out)."""
        return [h / m - 1.0 for h, m in zip(self.held_out, self.measured, strict=True)]

    @property
    def in_sample_errors(self) -> list[float]:
        return [p / m - 1.0 for p, m in zip(self.predicted, self.measured, strict=True)]

    def at_edge(self, index: int, group: str) -> bool:
        """Whether run ``index``'s exact ceiling (of format ``group``) is at an end of the bisection range, or at
        its format's bound (:attr:`bounds`: no ceiling the scenario takes makes it faster)."""
        c = self.exact[index]
        top = min(U_RANGE[1], self.bounds[group][0])
        return c <= U_RANGE[0] * (1 + EDGE) or c >= top * (1 - EDGE)


# -- reading ---------------------------------------------------------------------------------


def _workload(row: dict[str, object], name: str) -> dict[str, object] | object:
    """The row's workload: its registry name, or a transformer table from the shape columns."""
    shape = {k: row.pop(k) for k in SHAPE_COLUMNS if k in row}
    named = row.pop("workload", None)
    if not shape:
        if named is None:
            raise InputError("expected a workload (a registry name) or its shape columns", loc=("workload",))
        return named
    table: dict[str, object] = {}
    if named is not None:
        from mlsysim.core.exceptions import UnknownNameError
        from mlsysim.core.text import parse_name
        from mlsysim.models.registry import Models

        try:
            known = Models.get(parse_name(str(named)))
        except (UnknownNameError, InputError):
            known = None
        if known is not None:
            table = {k: getattr(known, k) for k in type(known).model_fields if getattr(known, k) is not None}
    table["kind"] = "transformer"
    table.setdefault("name", str(named or name))
    for key, value in shape.items():
        if key == "parameters":
            text = str(value).strip()
            table[key] = text if any(ch.isalpha() for ch in text.replace("e", "")) else f"{text} param"
        elif key == "gated_mlp":
            flag = str(value).strip().lower()
            if flag not in ("1", "0", "true", "false", "yes", "no"):
                raise InputError(f"expected 1 or 0 (true or false), got {value!r}", loc=(key,))
            table[key] = flag in ("1", "true", "yes")
        else:
            try:
                table[key] = int(str(value))
            except ValueError:
                raise InputError(f"expected a whole number, got {value!r}", loc=(key,)) from None
    return table


def _whole(value: object, key: str) -> int:
    try:
        number = float(str(value))
    except ValueError:
        raise InputError(f"expected a whole number, got {value!r}", loc=(key,)) from None
    if not (math.isfinite(number) and number == int(number) and number > 0):
        raise InputError(f"expected a positive whole number, got {value!r}", loc=(key,))
    return int(number)


def _layout_measured(measured: Mapping[str, object], scenario: TrainingScenario) -> tuple[float, str]:
    """(seconds of one update, the column it came from) of a layout row."""
    given = [k for k in LAYOUT_MEASURED_FIELDS if k in measured]
    if len(given) != 1:
        raise InputError(
            f"expected one of {', '.join(LAYOUT_MEASURED_FIELDS)}, got {', '.join(given) if given else 'none'}",
            loc=(LAYOUT_MEASURED_FIELDS[0],),
        )
    key = given[0]
    value = measured[key]
    result = scenario.result
    if key == "measured_update_time":
        try:
            seconds = float(parse_quantity(str(value), "time").to("s").magnitude)
        except InputError as exc:
            raise exc.at(key) from None
    else:
        text = str(value).strip()
        for unit in ("sample/s", "samples/s", "TFLOP/s", "TFLOPS", "/s"):
            text = text.removesuffix(unit).strip()
        try:
            rate = float(text)
        except ValueError:
            raise InputError(f"expected a positive number, got {value!r}", loc=(key,)) from None
        if not (math.isfinite(rate) and rate > 0):
            raise InputError(f"expected a positive number, got {value!r}", loc=(key,))
        batch = float(result.global_batch)
        if key == "measured_throughput":
            seconds = batch / rate
        else:
            flops = scenario.flops_per_sample
            if flops is None:
                raise InputError("the workload has no FLOP count; give measured_update_time", loc=(key,))
            gpus = float(result.figures.n_devices)
            seconds = batch * float(flops.to("flop").magnitude) / (rate * 1e12 * gpus)
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"expected a positive time, got {value!r}", loc=(key,))
    return seconds, key


def _row_assumptions(data: dict[str, object]) -> dict[str, object]:
    """The row's own settings, taken out of ``data``: its ``assumptions.NAME`` columns (as ``--set`` spells
    them: ``assumptions.overlap = true``), each over the base assumptions for this row only; empty cells are
    not settings. A name the assumptions do not have is refused at its column."""
    from mlsysim.engine.inputs.assumptions import Assumptions

    own: dict[str, object] = {}
    for key in [k for k in data if k.startswith(ROW_ASSUMPTION_PREFIX)]:
        value = data.pop(key)
        name = key.removeprefix(ROW_ASSUMPTION_PREFIX)
        if name not in Assumptions.model_fields or name == "preset":
            raise InputError(f"{name!r} is not an assumption; known: {', '.join(sorted(Assumptions.model_fields))}",
                             loc=(key,))
        if str(value).strip():
            own[name] = value
    return own


def _layout_case(
    row: dict[str, object], line: int, base: Assumptions
) -> tuple[str, ParallelCase, str]:
    """(name, case, the resolved linear format) of one layout row; InputError located at its column."""
    data = dict(row)
    name = str(data.pop("name", f"line {line}"))
    measured = {k: data.pop(k) for k in LAYOUT_MEASURED_FIELDS if k in data}
    global_batch = data.pop("global_batch", None)
    if global_batch is not None and "accumulation_steps" in data:
        raise InputError("give accumulation_steps or global_batch, not both", loc=("global_batch",))
    data["workload"] = _workload(data, name)
    if not {"training_time", "training_tokens", "training_samples"} & set(data):
        data["training_time"] = "1 hour"
    data["assumptions"] = _row_assumptions(data)
    case = ParallelCase(
        id=f"{name} (line {line})", family="", generation="", source="", inputs=data,
        measured_time=math.nan, metric="", assumptions="", format=SIXTEEN_BIT,
    )
    if global_batch is not None:
        # the data-parallel ranks of the layout, read before the micro-batches per update are known
        # (without the interleaving, whose check needs them)
        probe = {k: v for k, v in data.items() if k != "pipeline_chunks"}
        scenario = scenario_of(replace(case, inputs=probe), {SIXTEEN_BIT: 0.5}, None, base)
        total = _whole(global_batch, "global_batch")
        ranks = int(scenario.result.figures.data_parallel)
        micro = int(scenario.per_device_batch)
        if total % (micro * ranks):
            raise InputError(
                f"expected a multiple of per_device_batch x data-parallel ranks ({micro} x {ranks}), got {total}",
                loc=("global_batch",),
            )
        data["accumulation_steps"] = total // (micro * ranks)
        case = replace(case, inputs=dict(data))
    scenario = scenario_of(case, {SIXTEEN_BIT: 0.5}, None, base)
    job = scenario.job
    if job.operator_efficiency != job.operator_efficiency:  # NaN: the step is not priced from the operators
        raise InputError(
            "this row gives no step_time, so its step is priced from the operators: it needs a transformer "
            "with its shape (layers, hidden_dim, heads, seq_len) on a node or accelerator",
            loc=("workload",),
        )
    linear = str(job.matmul_format)
    group = SIXTEEN_BIT if linear in SIXTEEN_BIT_FORMATS else linear
    seconds, _ = _layout_measured(measured, scenario)
    return name, replace(case, measured_time=seconds, format=group, generation=_architecture(scenario)), linear


def _architecture(scenario: TrainingScenario) -> str:
    accelerator = scenario.accelerator
    if accelerator is None:
        return ""
    return str(accelerator.architecture or accelerator.name)


def load_layout_runs(
    rows: Sequence[tuple[int, dict[str, object]]], file: Path, base: Assumptions
) -> list[LayoutRun]:
    """The layout rows (:func:`is_layout_row`) of a runs file's rows as runs under ``base``; a bad
    row raises :class:`~mlsysim.core.exceptions.ScenarioFileError` naming ``file:line`` and the column."""
    out: list[LayoutRun] = []
    for line, row in rows:
        if not is_layout_row(row):
            continue
        try:
            name, case, linear = _layout_case(row, line, base)
        except InputError as exc:
            raise ScenarioFileError(exc.message, path=str(file), line=line, loc=exc.loc) from None
        if out and case.generation != out[0].case.generation:
            column = "node" if "node" in row else "accelerator"
            raise ScenarioFileError(
                f"the layout rows must run on one architecture (one ceiling per file): this row's is "
                f"{case.generation or 'unknown'}, line {out[0].line}'s {out[0].case.generation}",
                path=str(file), line=line, loc=(column,),
            )
        out.append(LayoutRun(name, case, line, linear, base))
    return out


# -- the fit ---------------------------------------------------------------------------------


def linear_format(groups: Sequence[str], matmul_format: str | None = None) -> str:
    """The format whose ceiling becomes ``matmul_ceiling``: ``matmul_format`` when given, else the one
    low-precision format fitted, else the 16-bit one (as :mod:`mlsysim.calibrate.matmuls` chooses)."""
    fitted = list(dict.fromkeys(groups))
    if matmul_format is not None:
        wanted = SIXTEEN_BIT if matmul_format in SIXTEEN_BIT_FORMATS else matmul_format
        if wanted not in fitted:
            raise InputError(
                f"--matmul-format: no layout row runs its linear layers in {matmul_format}; "
                f"fitted: {', '.join(fitted)}",
                field="matmul_format",
            )
        return wanted
    low = [g for g in fitted if g != SIXTEEN_BIT]
    if len(low) > 1:
        raise InputError(
            f"--matmul-format: the layout rows run {', '.join(low)}; say which one matmul_ceiling is for",
            field="matmul_format",
        )
    return low[0] if low else SIXTEEN_BIT


def _sixteen_fallback(runs: Sequence[LayoutRun], base: Assumptions) -> float:
    """The 16-bit ceiling where no row is 16-bit: the base's ``attention_ceiling``, else the one the
    scenario takes for the accelerator (fitted, ``mlsysim/data/matmul_ceilings.json``)."""
    if base.attention_ceiling:
        return float(base.attention_ceiling)
    run = runs[0]
    value = math.nan
    try:
        scenario = scenario_of(run.case, {SIXTEEN_BIT: 0.5, run.group: 0.5}, None, base)
        scenario = scenario.variant(assumptions=scenario.assumptions.variant(attention_ceiling=0.0))
        value = float(scenario.job.attention_ceiling)
    except InputError:
        pass
    if not (value == value and value > 0):
        raise InputError(
            f"no layout row is 16-bit and {run.case.generation or 'the accelerator'} has no fitted 16-bit "
            "ceiling: add a bf16 run, or give the base assumptions an attention_ceiling",
            field="runs",
        )
    return value


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def rate_role(run: LayoutRun) -> str | None:
    """The implementation rate a row's time also rests on: ``sharding_rate`` with ZeRO-3 (its per-layer
    gathers), else ``pipeline_rate`` with a pipeline (its stage-to-stage transfers); None for neither."""
    inputs = run.case.inputs

    def number(name: str, default: float) -> float:
        text = str(inputs.get(name, "") or "").strip()
        return float(text) if text else default

    if number("zero_stage", 0.0) == 3:
        return "sharding_rate"
    if number("pipeline_parallel", 1.0) > 1:
        return "pipeline_rate"
    return None


def fit_layouts(
    runs: Sequence[LayoutRun], base: Assumptions, matmul_format: str | None = None
) -> LayoutFit:
    """The ceilings (and the implementation rates the rows tell apart) of ``runs`` under ``base`` (the links,
    the overhead...), each run held out.

    The ceiling rows: those whose time rests on no implementation rate (:func:`rate_role`) where some row's
    does and some row's does not (the two then tell the ceiling from the rate), and the rows of a rate that
    barely moves their time (:func:`_moves_time`: noise would set it); else every row. 16-bit rows:
    exact ceilings by :func:`~mlsysim.validation.parallel.exact_ceiling`, the median; each held out: the median
    of the other 16-bit rows'. A low format's rows: their exact ceilings with the 16-bit ceiling fitted
    (:func:`_sixteen_fallback` when no row is 16-bit), the median; each held out: the median of the other rows
    of its format. Then each rate: the median of its rows' implied rates at those ceilings
    (:func:`~mlsysim.validation.parallel.implied_rate`); each of its rows held out: the median of the others'.
    """
    fastest = _fastest_link(runs[0], base)
    roles: list[str | None] = [rate_role(r) for r in runs]
    pins = [x is None for x in roles] if None in roles else [True] * len(runs)
    c16, exact, exact16, ceilings = _ceiling_table(runs, pins, base)
    table = {SIXTEEN_BIT: c16, **ceilings}
    if not all(pins):  # the rate rows' roles the rows identify; the others' rows pin the ceiling too
        moving = {role: _moves_time([replace(r.case, rate=role) for r, x in zip(runs, roles, strict=True)
                                     if x == role], table, fastest, base)
                  for role in dict.fromkeys(x for x in roles if x is not None)}
        roles = [x if x is not None and moving[x] else None for x in roles]
        if not all(moving.values()):
            pins = [x is None for x in roles]
            c16, exact, exact16, ceilings = _ceiling_table(runs, pins, base)
            table = {SIXTEEN_BIT: c16, **ceilings}
    else:  # every row rests on a rate (or none does): the rows cannot tell a rate from the ceiling
        moving, roles = {}, [None] * len(runs)
    groups = list(ceilings)
    cases = [replace(r.case, rate=role) if role else r.case for r, role in zip(runs, roles, strict=True)]
    implied = [
        implied_rate(case, tuple(sorted(table.items())), base) if case.rate else math.nan for case in cases
    ]
    rates = {}
    for role in dict.fromkeys(x for x in roles if x is not None):
        found = [v for v, x in zip(implied, roles, strict=True) if x == role and v == v]
        if found:
            rates[role] = _median(found)
    predicted, held_ceiling, held = [], [], []
    for i, (run, case) in enumerate(zip(runs, cases, strict=True)):
        rate = rates.get(case.rate) if case.rate else None
        predicted.append(predicted_time(case, table, rate, base))
        if case.rate:  # a rate row: the rate of the other rows of its role, at the fitted ceilings
            loo = _median([v for k, (v, c) in enumerate(zip(implied, cases, strict=True))
                           if k != i and c.rate == case.rate and v == v])
            held_ceiling.append(table[run.group])
            held.append(math.nan if loo != loo else predicted_time(case, table, loo, base))
            continue
        others = [c for k, (r, c, pin) in enumerate(zip(runs, exact, pins, strict=True))
                  if k != i and r.group == run.group and pin]
        loo = _median(others)
        held_ceiling.append(loo)
        held.append(
            math.nan if loo != loo else predicted_time(case, {**table, run.group: loo}, None, base)
        )
    linear = linear_format(groups, matmul_format)
    bounds = {g: ceiling_bound(next(r for r in runs if r.group == g), base) for g in groups}
    best16, source16 = bounds.get(SIXTEEN_BIT, (math.nan, ""))
    if linear == SIXTEEN_BIT and exact16 and source16.startswith("the best measured"):
        # every format at that share of its own best measured kernel (an fp8 job too)
        assumptions = {"kernel_share": round(min(1.0, c16 / best16), 6)}
    else:
        assumptions = {"matmul_ceiling": round(table[linear], 6)}
        if exact16 or linear == SIXTEEN_BIT:
            assumptions["attention_ceiling"] = round(c16, 6)
    return LayoutFit(
        architecture=runs[0].case.generation,
        ceilings=ceilings,
        exact=exact,
        predicted=predicted,
        held_out_ceiling=held_ceiling,
        held_out=held,
        measured=[r.measured_update_time for r in runs],
        assumptions=assumptions,
        linear=linear,
        sixteen_fitted=bool(exact16),
        bounds=bounds,
        rates=rates,
        rate_bound=fastest,
        identified=_identified([rate_role(r) for r in runs], moving, rates),
    )


def _fastest_link(run: LayoutRun, base: Assumptions) -> float:
    """The fastest link of the run's device (bytes/s, per direction): NVLink's, else the NIC's."""
    scenario = layout_scenario(run, base=base)
    rates = [q for q in (scenario.intra_bandwidth, scenario.inter_bandwidth) if q is not None]
    return max((float(q.to("B/s").magnitude) for q in rates), default=math.inf)


RATE_SENSITIVITY = 0.05
"""A rate is fitted only where its rows' time moves by at least this share between the device's fastest link
and a quarter of it (:func:`_moves_time`): below, measurement noise would set it."""


def _ceiling_table(runs: Sequence[LayoutRun], pins: Sequence[bool], base: Assumptions
                   ) -> tuple[float, list[float], list[float], dict[str, float]]:
    """(the 16-bit ceiling, each run's exact ceiling, the pinning 16-bit rows' exact ceilings, each format's
    ceiling): the medians over the ``pins`` rows (a format no pinning row runs: over all its rows)."""
    exact16 = [exact_ceiling(r.case, math.nan, base) for r, pin in zip(runs, pins, strict=True)
               if r.group == SIXTEEN_BIT and pin]
    c16 = _median(exact16) if exact16 else _sixteen_fallback(runs, base)
    exact = [
        exact_ceiling(r.case, math.nan, base) if r.group == SIXTEEN_BIT else exact_ceiling(r.case, c16, base)
        for r in runs
    ]
    ceilings = {}
    for g in dict.fromkeys(r.group for r in runs):
        pinned = [c for r, c, pin in zip(runs, exact, pins, strict=True) if r.group == g and pin]
        ceilings[g] = _median(pinned or [c for r, c in zip(runs, exact, strict=True) if r.group == g])
    return c16, exact, exact16, ceilings


def _moves_time(cases: Sequence[ParallelCase], table: Mapping[str, float], fastest: float,
                base: Assumptions) -> bool:
    """Whether most of ``cases`` (rows of one rate) take at least :data:`RATE_SENSITIVITY` longer at a quarter
    of the fastest link than at it: whether the rows can pin that rate."""
    moved = 0
    for case in cases:
        quick = predicted_time(case, dict(table), fastest, base)
        moved += predicted_time(case, dict(table), fastest / 4.0, base) >= quick * (1.0 + RATE_SENSITIVITY)
    return 2 * moved > len(cases)


def _identified(roles: Sequence[str | None], moving: Mapping[str, bool], rates: Mapping[str, float]) -> list[str]:
    """What the layout rows pin down and what they leave at the base's values, and why."""
    out = ["the matrix-product ceilings"]
    named = {"sharding_rate": "ZeRO-3 rows", "pipeline_rate": "pipeline rows"}
    for role, rows in named.items():
        count = sum(x == role for x in roles)
        if not count:
            continue
        if role in rates:
            out.append(f"{role} ({count} {rows}, beside rows without it)")
        elif role not in moving:
            out.append(f"not {role}: every row has it (or a rate), so the rows cannot tell it from the ceiling")
        elif not moving[role]:
            out.append(f"not {role}: its term moves its rows' time by less than {RATE_SENSITIVITY:.0%} between the "
                       "fastest link and a quarter of it, too little to pin")
        else:
            out.append(f"not {role}: its rows are slower than any rate explains at the fitted ceiling")
    return out


def ceiling_bound(run: LayoutRun, base: Assumptions) -> tuple[float, str]:
    """(the largest ceiling ``run``'s format may take, why): the best measured kernel of its accelerator in that
    format (:func:`mlsysim.kernels.device.device_kernels`, a fraction of the format's peak), else the peak."""
    from mlsysim.kernels.device import device_kernels

    accelerator = layout_scenario(run, base=base).accelerator
    fmt = run.matmul_format if run.group != SIXTEEN_BIT or run.matmul_format in SIXTEEN_BIT_FORMATS else "bf16"
    if accelerator is None:
        return 1.0, "the format's peak"
    try:
        best = device_kernels(accelerator, fmt).matmul_ceiling
    except InputError:
        return 1.0, f"the {fmt} peak of {accelerator.name} (no kernel table measures it)"
    return min(1.0, best), f"the best measured {fmt} kernel of {accelerator.name}"


def layout_scenario(
    run: LayoutRun, fit: LayoutFit | None = None, base: Assumptions | None = None
) -> TrainingScenario:
    """The public scenario of a layout run under ``base`` (the assumptions it was read under), at the
    ``fit``'s ceilings (without: a placeholder of 0.5, for the figures that do not depend on them:
    devices, ranks, the global batch)."""
    if fit is None:
        table = {SIXTEEN_BIT: 0.5, run.group: 0.5}
    else:
        table = {SIXTEEN_BIT: fit.assumptions.get("attention_ceiling", 0.5), **fit.ceilings}
    return scenario_of(run.case, table, None, base if base is not None else run.base)


def layout_text(run: LayoutRun) -> str:
    """The layout in a few characters: ``t8 p2 v2 m16 b1 z1 sel``."""
    i = run.case.inputs

    def get(name: str, default: object = 1) -> object:
        return i.get(name, default)

    text = f"t{get('tensor_parallel')} p{get('pipeline_parallel')}"
    if str(get("pipeline_chunks")) not in ("1", ""):
        text += f" v{get('pipeline_chunks')}"
    text += f" m{get('accumulation_steps')} b{get('per_device_batch')}"
    if str(get("zero_stage", 0)) not in ("0", ""):
        text += f" z{get('zero_stage')}"
    return text


def layout_scores_of(fit: LayoutFit) -> list[float]:
    """The runs' held-out errors as a layout's interval reads them, T_measured / T_predicted - 1 (the runs left
    out only; :meth:`~mlsysim.engine.inputs.assumptions.Assumptions.with_layout_scores`)."""
    return [m / h - 1.0 for m, h in zip(fit.measured, fit.held_out, strict=True) if h == h]


def left_out_coverage(scores: Sequence[float], level: float = 0.8) -> tuple[int, int]:
    """(covered, n): how many of the ``scores`` the ``level`` band of the others covers (each left out in
    turn; :func:`mlsysim.engine.reports.band_store.conformal_band`); (0, 0) with fewer than 3."""
    from mlsysim.engine.reports.band_store import conformal_band

    if len(scores) < 3:
        return 0, 0
    covered = 0
    for i, z in enumerate(scores):
        low, high = conformal_band([x for k, x in enumerate(scores) if k != i], level)
        covered += low <= z <= high
    return covered, len(scores)


def finite(values: Sequence[float]) -> list[float]:
    return [v for v in values if v == v]
