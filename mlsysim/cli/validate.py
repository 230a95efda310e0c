"""``mlsysim validate``: check the model's predictions against published measurements and real runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import click

from mlsysim.cli.params import Argument, Option, command, group

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy as np

    from mlsysim.core.jsonio import JSONValue
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.validation.mine import Fit, Run
    from mlsysim.validation.mine_parallel import LayoutFit, LayoutRun
    from mlsysim.validation.published import Comparison, CrossValidation, NestedCheck, Summary

validate_app = group(
    "validate",
    help=(
        "Check predictions against published measurements and real runs.\n\n"
        "Examples:\n\n"
        "  mlsysim validate published\n\n"
        "  mlsysim validate parallel\n\n"
        "  mlsysim validate ddp --nproc 2 --model mlp --steps 20"
    ),
)


@command(validate_app, "parallel")
def parallel(
    json_: bool = Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Predict published tensor/pipeline/ZeRO-3 runs (Megatron-LM, MT-NLG, Llama 3, BLOOM).

    Each run is a scenario (the one a user builds; --json prints its inputs) and
    its prediction is that scenario's result. Leads with each family predicted by
    constants fitted without it, then in sample (one matrix-product ceiling per GPU
    generation; ZeRO-3's and MT-NLG's pipeline engine's achieved rates fitted on
    their own runs), per family, and the runs not predicted with what they lack.
    """
    if json_:
        from mlsysim.core.jsonio import document, dumps, encode
        from mlsysim.validation.parallel import summary

        body = cast("dict[str, JSONValue]", encode(summary()))  # encode() of a dict is a dict
        click.echo(dumps(document("parallel_validation", body), indent=2))
        return
    from mlsysim.validation.parallel import report

    click.echo(report())


@command(validate_app, "published")
def published(
    json_: bool = Option(False, "--json", help="Print the comparison as JSON."),
    cv: bool = Option(
        False,
        "--cv",
        help="Also print every case and family left out (the host jitter refitted without "
        "it, its 80%% interval from the other families), the fully nested check of the "
        "interval (each family left out of everything its band is built from; about 20 s) "
        "and whether the fitted host jitter helps held out.",
    ),
    cases: str = Option(
        "all",
        "--cases",
        help="Which published cases: all (the package's), or issue (the 61 of the shared "
        "set issue 23 names its targets on; --cv then refits and builds the held-out bands "
        "from those alone).",
    ),
) -> None:
    """Predict every published case with the seed model and with Assumptions.realistic().

    Prints measured, predicted and error per case with the realistic preset's
    80% prediction interval, then per family the median, worst and mean
    (signed) error, and overall, first with each family left out (predicted
    with the host jitter refitted without it, its interval built from the other
    families), then in sample: the median error and the interval's coverage
    and median width (points of scaling efficiency). --cv adds the held-out
    figures of every case and family, and the host jitter's check. Then the
    model-parallel runs (per family, and each family left out), and the whole
    run: published energy and emissions reproduced from their inputs, Daly's
    checkpoint intervals, and the Llama 3 405B and OPT-175B failure figures.
    """
    from mlsysim.core.jsonio import document, dumps, encode
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.reports.bands import efficiency_interval_of, score_band
    from mlsysim.validation.published import (
        by_family,
        cases_of,
        compare,
        cross_validate,
        host_jitter_check,
        in_sample_coverage,
        nested_cross_validate,
        nodes_of_cases,
        summarize,
    )

    subset = cases.strip().lower()
    chosen = cases_of(subset, field="--cases")
    realistic_assumptions = Assumptions.realistic()
    seed = compare(cases=chosen)
    realistic = compare(realistic_assumptions, chosen)
    band = score_band(realistic_assumptions, 0.8)
    intervals = efficiency_interval_of(
        realistic_assumptions,
        [r.predicted for r in realistic],
        nodes_of_cases(chosen),
        0.8,
    )
    coverage, width = in_sample_coverage(realistic_assumptions, 0.8, chosen)
    held_out = cross_validate(realistic_assumptions, subset=subset)  # the headline
    lofo = held_out if cv else None
    jitter = host_jitter_check(realistic_assumptions, subset) if cv else None
    nested = nested_cross_validate(realistic_assumptions, subset=subset) if cv else None
    from mlsysim.validation.parallel import summary, summary_lines
    from mlsysim.validation.whole_run import report, report_lines

    if json_:
        body = validation_json(
            seed, realistic, band, intervals, coverage, width, lofo, held_out=held_out, nested=nested
        )
        if jitter is not None:
            body["host_jitter_check"] = {
                "held_out_median_abs_error_with": jitter.with_it.median_abs,
                "held_out_median_abs_error_without": jitter.without_it.median_abs,
                "held_out_mean_error_with": jitter.with_it.mean,
                "held_out_mean_error_without": jitter.without_it.mean,
                "kept": jitter.helps,
            }
        from mlsysim.validation.published import prediction_scenarios

        for preset, assumptions in (("seed", Assumptions()), ("realistic", realistic_assumptions)):
            for row, inputs in zip(
                cast("list[dict[str, object]]", body["cases"]), prediction_scenarios(assumptions, chosen), strict=True
            ):
                row[f"{preset}_scenario"] = inputs
        body["parallel"] = summary()
        body["whole_run"] = report()
        click.echo(
            dumps(
                document(
                    "validation",
                    cast("dict[str, JSONValue]", encode(body)),  # encode() of a dict is a dict
                ),
                indent=2,
            )
        )
        return
    from mlsysim.cli.render import print_validation

    print_validation(
        seed,
        realistic,
        band=band,
        intervals=intervals,
        families={"seed": by_family(seed), "realistic": by_family(realistic)},
        totals={"seed": summarize(seed), "realistic": summarize(realistic)},
        coverage=(coverage, width),
        lofo=lofo,
        held_out=held_out,
        jitter=jitter,
        nested=nested,
    )
    click.echo("")
    for line in summary_lines():
        click.echo(line)
    click.echo("")
    for line in report_lines():
        click.echo(line)


def validation_json(
    seed: list[Comparison],
    realistic: list[Comparison],
    band: tuple[float, float],
    intervals: tuple[np.ndarray, np.ndarray],
    coverage: float,
    width: float,
    lofo: CrossValidation | None,
    *,
    held_out: CrossValidation | None = None,
    nested: NestedCheck | None = None,
) -> dict[str, object]:
    """The ``validate published`` report as plain values (fractions of efficiency).

    ``band``: the conformal quantiles (z_lo, z_hi) of the normalised out-of-family
    residuals; ``intervals``: every case's (low, high) 80% efficiency interval;
    ``held_out``: the leave-one-family-out check the headline leads with (``lofo`` when
    not given); ``lofo``: given, its per-case and per-family figures too."""
    from mlsysim.engine.reports.bands import DIFFICULTY_FORMULA
    from mlsysim.validation.published import by_family, summarize

    def stats(s: Summary) -> dict[str, float]:
        return {
            "count": s.count,
            "median_abs_error": s.median_abs,
            "max_abs_error": s.max_abs,
            "mean_error": s.mean,
        }

    rows = [
        {
            "id": s.case.id,
            "family": s.case.family,
            "source": s.case.source,
            "measured_efficiency": s.case.measured_eff,
            "seed_efficiency": s.predicted,
            "seed_error": s.error,
            "realistic_efficiency": r.predicted,
            "realistic_error": r.error,
            "realistic_interval_80": [float(low), float(high)],
        }
        for s, r, low, high in zip(seed, realistic, *intervals, strict=True)
    ]
    out: dict[str, object] = {}
    lead = held_out if held_out is not None else lofo
    in_sample = summarize(realistic)
    if lead is not None:
        out["headline"] = {
            "held_out": {
                "what": "each family predicted with the host jitter refitted without it, its "
                "80% interval built from the other families' out-of-family residuals",
                **stats(lead.summary),
                "coverage_80": lead.coverage,
                "coverage_80_of_the_average_family": lead.family_coverage,
                "median_width_80": lead.median_width,
            },
            "in_sample": {
                "what": "the preset as fitted on every case, its interval from every case's "
                "residual (a check of the arithmetic, not of honesty)",
                **stats(in_sample),
                "coverage_80": coverage,
                "median_width_80": width,
            },
        }
    out |= {
        "cases": rows,
        "seed": stats(summarize(seed)),
        "realistic": {
            **stats(summarize(realistic)),
            "interval_80": {
                "score_band": list(band),
                "difficulty": DIFFICULTY_FORMULA,
                "unmodelled_loss_floor": -band[0],
                "coverage": coverage,
                "median_width": width,
            },
        },
        "families": {
            name: {"seed": stats(s), "realistic": stats(by_family(realistic)[name])}
            for name, s in by_family(seed).items()
        },
    }
    if lofo is not None:
        out["leave_one_family_out"] = {
            **stats(lofo.summary),
            "coverage_80": lofo.coverage,
            "coverage_80_of_the_average_family": lofo.family_coverage,
            "median_width_80": lofo.median_width,
            "host_jitter_s": lofo.jitters,
            "families": {
                name: stats(s) for name, s in by_family(lofo.comparisons).items()
            },
            "cases": {c.case.id: c.predicted for c in lofo.comparisons},
        }
    if nested is not None:
        out["nested_leave_one_family_out"] = {
            "what": "each family left out of the host jitter's fit behind every residual its 80% band "
            "is built from, of the choice of the band's weights, and of the band itself",
            "coverage_80": nested.coverage,
            "coverage_80_of_the_average_family": nested.family_coverage,
            "median_width_80": nested.median_width,
            "weights": {name: list(pair) for name, pair in nested.choices.items()},
        }
    return out


@command(validate_app, "mine")
def mine(
    runs: str = Argument(..., help="CSV or JSON file of measured runs (see the help)."),
    out: str | None = Option(
        None, "--out", "-o", help="Write the fitted assumptions file here (.toml)."
    ),
    preset: str = Option(
        "realistic", "--preset", help="The assumptions the fit starts from: realistic or seed."
    ),
    force: bool = Option(
        False, "--force",
        help="Overwrite --out if it exists, and keep a fitted constant outside its physical bounds (a warning "
        "instead of exit status 2).",
    ),
    json_: bool = Option(False, "--json", help="Print the fit as JSON."),
    matmul_format: str | None = Option(
        None,
        "--matmul-format",
        help="The format whose fitted ceiling becomes matmul_ceiling, when the layout rows "
        "run more than one low-precision format.",
    ),
) -> None:
    """Fit your cluster's constants to your measured runs, with leave-one-out errors.

    Each row of RUNS is a layout (the scenario's fields, as in a scenario file:
    workload, precision, step_time, per_device_batch, devices_per_node, nodes,
    intra_bandwidth, inter_bandwidth, ...) and its measurement:
    measured_update_time ("412 ms") or measured_throughput (samples/s of the
    whole job). 'mlsysim init --runs runs.csv' writes a template. Fitted:
    intra_efficiency, inter_efficiency and update_overhead (those the runs can
    tell apart); each run is then predicted by a fit made without it.

    A row without step_time (and mfu) is a model-parallel layout priced from the
    operators (tensor_parallel, pipeline_parallel, zero_stage, recompute, ... of a
    transformer on a node; measured_update_time, measured_throughput or
    measured_tflops_per_gpu): such rows fit the matrix-product ceiling
    (matmul_ceiling, attention_ceiling), each row predicted with the ceiling fitted
    on the others (one row: fitted, not left out). A row's own settings go in
    columns named as --set names them (assumptions.overlap = true). A ceiling
    above the best measured kernel of that GPU and format (or at the low end of
    its range) is refused with exit status 2; --force keeps it.
    'mlsysim init --layouts layouts.csv' writes a template.

    Example: mlsysim validate mine runs.csv --out my_cluster.toml
    then:    mlsysim run NAME --assumptions my_cluster.toml
    """
    from pathlib import Path

    from mlsysim.core.exceptions import InputError
    from mlsysim.core.fileio import write_text
    from mlsysim.engine.inputs.assumptions import assumptions_of
    from mlsysim.validation.mine import assumptions_toml, fit_runs, load_all
    from mlsysim.validation.mine_parallel import fit_layouts, layout_scores_of

    if out is not None and Path(out).suffix.lower() != ".toml":
        raise InputError(f"--out: expected a .toml file name, got {out!r}", field="out")
    base = assumptions_of(preset)
    loaded, layouts = load_all(runs, base)
    fit = fit_runs(loaded, base) if loaded else None
    layout_fit = (
        fit_layouts(layouts, fit.assumptions if fit is not None else base, matmul_format)
        if layouts
        else None
    )
    outside = layout_fit.outside_bounds() if layout_fit is not None else []
    if outside and not force:
        raise InputError(f"{runs}: {outside[0]}; check the rows' layouts and measurements, or --force to keep it",
                         field="runs")
    text = assumptions_toml(fit, runs, preset.strip().lower(), loaded, layout_fit, layouts)
    if out is not None:
        write_text(out, text, force=force)
    data: dict[str, object] = {}
    if fit is not None:
        data.update(_mine_runs(loaded, fit, base, out))
    if layout_fit is not None:
        data["layouts"] = _mine_layouts(layouts, layout_fit)
        data["assumptions_file"] = out
    if json_:
        from mlsysim.core.jsonio import document, dumps, encode

        click.echo(
            dumps(document("runs_fit", cast("dict[str, JSONValue]", encode(data))), indent=2)
        )
        return
    if fit is not None:
        _echo_mine_runs(loaded, fit, runs, preset, data)
    if layout_fit is not None:
        if fit is not None:
            click.echo("")
        _echo_mine_layouts(layouts, layout_fit, runs, preset, fitted_links=fit is not None)
    if out is not None:
        click.echo(
            f"wrote {out}: 'mlsysim run NAME --assumptions {out}' predicts with these constants"
            + (", and its intervals come from these runs' leave-one-out residuals"
               if (fit is not None and len(loaded) > 1) or (layout_fit is not None
                                                            and len(layout_scores_of(layout_fit)) >= 2) else "")
        )


def _mine_runs(
    loaded: Sequence[Run], fit: Fit, base: Assumptions, out: str | None
) -> dict[str, object]:
    """The data-parallel runs' fit as plain values (``validate mine --json``)."""
    import math

    import numpy as np

    from mlsysim.validation.mine import interval_widths

    errors = fit.relative_errors
    held = len(loaded) > 1  # one run is fitted, not left out
    width_published, width_own = interval_widths(loaded, fit, base) if held else (math.nan, math.nan)
    return {
        "runs": [
            {
                "name": r.name,
                "line": r.line,
                "measured_update_time_s": float(m),
                "fitted_update_time_s": float(p),
                "held_out_update_time_s": float(h) if held else None,
                "held_out_relative_error": float(e) if held else None,
            }
            for r, m, p, h, e in zip(
                loaded, fit.measured, fit.predicted, fit.held_out, errors, strict=True
            )
        ],
        "fitted": fit.fitted,
        "refits": fit.refits,
        "median_abs_relative_error": float(np.median(np.abs(errors))) if held else None,
        "worst_abs_relative_error": float(np.max(np.abs(errors))) if held else None,
        "in_sample_median_abs_relative_error": float(np.median(np.abs(fit.in_sample_errors))),
        "interval_scores": [float(z) for z in fit.scores] if held else [],
        "median_interval_width_80": {"published": None if width_published != width_published else width_published,
                                     "runs": None if width_own != width_own else width_own},
        "assumptions_file": out,
    }


def _echo_mine_runs(
    loaded: Sequence[Run], fit: Fit, runs: str, preset: str, data: Mapping[str, object]
) -> None:
    import numpy as np

    errors = fit.relative_errors
    widths = cast("dict[str, float | None]", data["median_interval_width_80"])
    width_published, width_own = widths["published"], widths["runs"]
    click.echo(f"{len(loaded)} runs from {runs}; fitted from the {preset} preset:")
    for name, value in fit.fitted.items():
        refit = fit.refits[name]
        shown = (lambda v: f"{v * 1e3:,.2f} ms") if name == "update_overhead" else "{:.3f}".format
        spread = f"(left one out: {shown(min(refit))} .. {shown(max(refit))})" if refit else (
            "(one run: the slowest link it crosses; not left out)")
        click.echo(f"  {name:18} {shown(value):>10}   {spread}")
    if not fit.fitted:
        click.echo("  nothing: every run is on one device")
    elif len(loaded) == 1:
        click.echo("  one run pins one constant; the others stay at the preset's (more runs, at other scales, "
                   "tell the links and the per-update overhead apart)")
    click.echo("")
    name_width = max([24, *(len(r.name) for r in loaded)])
    click.echo(f"{'run':{name_width}} {'line':>5} {'measured':>12} {'fitted':>12} {'left out':>12} {'error':>8}")
    for r, m, p, h, e in zip(loaded, fit.measured, fit.predicted, fit.held_out, errors, strict=True):
        click.echo(
            f"{r.name:{name_width}} {r.line:>5} {m * 1e3:>9,.1f} ms {p * 1e3:>9,.1f} ms "
            + (f"{h * 1e3:>9,.1f} ms {e:>+8.1%}" if h == h else f"{'-':>12} {'-':>8}")
        )
    click.echo("")
    if len(loaded) == 1:
        click.echo(f"update time, in sample: {fit.in_sample_errors[0]:+.1%} (one run: no leave-one-out error, "
                   "no interval of its own)")
        return
    click.echo(
        f"update time, each run predicted without it: median |error| "
        f"{np.median(np.abs(errors)):.1%}, worst {np.max(np.abs(errors)):.1%} "
        f"(in sample: median {np.median(np.abs(fit.in_sample_errors)):.1%})"
    )
    if width_published is not None and width_own is not None:  # some run has several devices
        click.echo(
            f"80% efficiency interval on these layouts: median width {width_published:.1%} "
            f"from the published residuals, {width_own:.1%} from these runs' own"
        )


def _mine_layouts(layouts: Sequence[LayoutRun], fit: LayoutFit) -> dict[str, object]:
    """The layout rows' ceiling fit as plain values (``validate mine --json``, ``layouts``)."""
    import statistics

    from mlsysim.validation.mine_parallel import (
        finite,
        layout_scores_of,
        layout_text,
        left_out_coverage,
    )

    held = [abs(e) for e in finite(fit.relative_errors)]
    scores = layout_scores_of(fit)
    return {
        "architecture": fit.architecture,
        "ceilings": fit.ceilings,
        "linear_format": fit.linear,
        "sixteen_bit_fitted": fit.sixteen_fitted,
        "assumptions": fit.assumptions,
        "bounds": {group: {"largest": bound, "source": source} for group, (bound, source) in fit.bounds.items()},
        "rates_bytes_per_s": fit.rates,
        "identified": fit.identified,
        "outside_bounds": fit.outside_bounds(),
        "runs": [
            {
                "name": r.name,
                "line": r.line,
                "matmul_format": r.matmul_format,
                "layout": layout_text(r),
                "measured_update_time_s": m,
                "exact_ceiling": c,
                "exact_ceiling_at_range_end": fit.at_edge(i, r.group),
                "fitted_update_time_s": p,
                "held_out_ceiling": None if hc != hc else hc,
                "held_out_update_time_s": None if h != h else h,
                "held_out_relative_error": None if e != e else e,
            }
            for i, (r, m, c, p, hc, h, e) in enumerate(
                zip(layouts, fit.measured, fit.exact, fit.predicted, fit.held_out_ceiling, fit.held_out,
                    fit.relative_errors, strict=True)
            )
        ],
        "median_abs_relative_error": statistics.median(held) if held else None,
        "worst_abs_relative_error": max(held) if held else None,
        "interval_scores": scores,
        "interval_coverage_80_left_out": dict(zip(("covered", "runs"), left_out_coverage(scores), strict=True)),
        "in_sample_median_abs_relative_error": statistics.median(abs(e) for e in fit.in_sample_errors),
    }


def _echo_mine_layouts(
    layouts: Sequence[LayoutRun], fit: LayoutFit, runs: str, preset: str, *, fitted_links: bool
) -> None:
    import statistics

    from mlsysim.validation.mine_parallel import finite, layout_text

    under = "the links and overhead fitted above" if fitted_links else f"the {preset} preset"
    click.echo(
        f"{len(layouts)} model-parallel layouts from {runs} (priced from the operators on {fit.architecture}, "
        f"under {under}); matrix-product ceiling, the median of the runs' exact ceilings:"
    )
    for fmt, ceiling in fit.ceilings.items():
        n = sum(1 for r in layouts if r.group == fmt)
        held = [hc for r, hc in zip(layouts, fit.held_out_ceiling, strict=True) if r.group == fmt and hc == hc]
        spread = f"(left one out: {min(held):.3f} .. {max(held):.3f})" if held else "(one run: not left out)"
        label = "16-bit" if fmt == "bf16" else fmt
        click.echo(f"  {label:8} {ceiling:.3f} of its peak, {n} runs  {spread}")
    click.echo(
        "  assumptions: " + ", ".join(f"{k} = {v:g}" for k, v in fit.assumptions.items())
        + ("" if fit.sixteen_fitted else " (16-bit products at the accelerator's fitted ceiling)")
    )
    for fmt, (bound, source) in fit.bounds.items():
        click.echo(f"  bound of {'16-bit' if fmt == 'bf16' else fmt}: {bound:.3f}, {source}")
    for warning in fit.outside_bounds():
        click.echo(f"  kept with --force: {warning}")
    for name, rate in fit.rates.items():
        click.echo(f"  {name:8} {rate / 1e9:.3g} GB/s, the median of its rows' implied rates at the fitted ceiling "
                   f"(bound: the fastest link, {fit.rate_bound / 1e9:.3g} GB/s)")
    kept = "the data-parallel rows' fit" if fitted_links else f"the {preset} preset's"
    click.echo(f"  fitted: {'; '.join(fit.identified)}. The links and the per-update overhead stay at {kept} "
               "(model-parallel rows priced from the operators do not tell them apart from the ceiling)")
    click.echo("")
    width = max([3, *(len(r.name) for r in layouts)])
    click.echo(
        f"{'run':{width}} {'line':>5} {'format':>7} {'layout':18} {'measured':>10} {'exact c':>8} "
        f"{'fitted':>10} {'left out':>10} {'error':>8}"
    )
    for i, (r, m, c, p, h, e) in enumerate(
        zip(layouts, fit.measured, fit.exact, fit.predicted, fit.held_out, fit.relative_errors, strict=True)
    ):
        edge = "*" if fit.at_edge(i, r.group) else " "
        left = f"{h:>8.3f} s" if h == h else f"{'-':>10}"
        error = f"{e:>+8.1%}" if e == e else f"{'-':>8}"
        click.echo(
            f"{r.name:{width}} {r.line:>5} {r.matmul_format:>7} {layout_text(r)[:18]:18} {m:>8.3f} s "
            f"{c:>7.3f}{edge} {p:>8.3f} s {left} {error}"
        )
    held = [abs(e) for e in finite(fit.relative_errors)]
    click.echo("")
    if held:
        click.echo(
            f"update time, each layout predicted with the ceiling fitted on the other runs of its format: "
            f"median |error| {statistics.median(held):.1%}, worst {max(held):.1%} "
            f"(in sample: median {statistics.median(abs(x) for x in fit.in_sample_errors):.1%})"
        )
    from mlsysim.validation.mine_parallel import layout_scores_of, left_out_coverage

    covered, n = left_out_coverage(layout_scores_of(fit))
    if n:
        click.echo(f"80% interval of a layout from these runs' own held-out errors: covers {covered} of {n} runs, "
                   "each left out of the band in turn")
    if any(fit.at_edge(i, r.group) for i, r in enumerate(layouts)):
        click.echo(
            "* at an end of the ceiling's range or at its bound: no ceiling makes this run's prediction exact "
            "(its time is not the matrix products')"
        )


@command(validate_app, "ddp")
def ddp(
    nproc: int = Option(
        2, "--nproc", help="Processes (data-parallel ranks) on this machine."
    ),
    model: str = Option("mlp", "--model", help="Built-in model: mlp or gpt."),
    batch: int | None = Option(None, "--batch", help="Per-process batch (mlp 64, gpt 8)."),
    layers: int | None = Option(None, "--layers", help="Layers (mlp 4, gpt 2)."),
    width: int | None = Option(None, "--width", help="Hidden width (mlp 1024, gpt 256)."),
    heads: int | None = Option(None, "--heads", help="Attention heads (gpt 4)."),
    seq_len: int | None = Option(None, "--seq-len", help="Sequence length (gpt 128)."),
    vocab: int | None = Option(None, "--vocab", help="Vocabulary (gpt 4096)."),
    steps: int = Option(20, "--steps", help="Timed steps, alone and under DDP (median)."),
    warmup: int = Option(3, "--warmup", help="Untimed steps before each timing."),
    iters: int = Option(20, "--iters", help="Timed iterations per AllReduce size."),
    backend: str = Option("gloo", "--backend", help="gloo (CPU) or nccl (CUDA GPUs)."),
    threads: int | None = Option(
        None, "--threads", help="Threads per process (default: the cores shared out, at least 1)."
    ),
    overlap: bool | None = Option(
        None,
        "--overlap/--no-overlap",
        help="Let the prediction hide bucket AllReduces under backward "
        "(default: yes with nccl or spare cores, no when the processes fill the cores).",
    ),
    repeats: int = Option(
        1,
        "--repeats",
        help="Run the whole check this many times and report the run-to-run spread of the "
        "error beside it (a loaded machine moves single runs by tens of percent).",
    ),
    json_: bool = Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Predict DDP's update time from measurements on this machine, run real DDP, and compare.

    Measures AllReduce (fitted) and the one-device step time under the same
    threads, predicts with the model, then trains the same model with
    DistributedDataParallel on --nproc processes.

    Example: mlsysim validate ddp --nproc 2 --model gpt --steps 20 --json
    """
    from mlsysim.calibrate.ddp import validate_ddp
    from mlsysim.calibrate.networks import DEFAULT_BATCH, ModelSpec, require_torch
    from mlsysim.calibrate.torch_measure import Launch
    from mlsysim.core.jsonio import document, dumps

    if isinstance(repeats, bool) or repeats < 1:
        from mlsysim.core.exceptions import InputError

        raise InputError(f"--repeats: expected an integer >= 1, got {repeats!r}", field="repeats")
    spec = ModelSpec.sized(
        model, layers=layers, width=width, heads=heads, seq_len=seq_len, vocab=vocab
    )
    config = Launch(nproc=nproc, backend=backend, threads=threads)
    require_torch()
    runs = [
        validate_ddp(
            spec,
            config,
            batch=DEFAULT_BATCH[spec.name] if batch is None else batch,
            steps=steps,
            warmup=warmup,
            sweep_iters=iters,
            overlap=overlap,
        ).to_dict()
        for _ in range(repeats)
    ]
    errors = sorted(float(cast("float", r["relative_error"])) for r in runs)
    median = errors[len(errors) // 2] if len(errors) % 2 else 0.5 * (
        errors[len(errors) // 2 - 1] + errors[len(errors) // 2]
    )
    data = runs[len(runs) // 2] if repeats == 1 else min(
        runs, key=lambda r: abs(float(cast("float", r["relative_error"])) - median)
    )
    if repeats > 1:
        data = {
            **data,
            "repeats": repeats,
            "relative_errors": [float(cast("float", r["relative_error"])) for r in runs],
            "median_relative_error": median,
        }
    if json_:
        click.echo(dumps(document("ddp_validation", data), indent=2))
        return
    fit = data["allreduce_fit"]
    ms = "{:.4g} ms".format
    click.echo(
        f"DDP on {data['nproc']} processes ({data['backend']}, {data['threads_per_process']} "
        f"thread(s) each): {data['model']}, {data['parameters']:,} parameters, batch {data['batch']}"
    )
    click.echo(
        f"measured inputs    step time {ms(data['step_time']['value'])} (one device, same threads); "
        f"AllReduce {fit['bus_bandwidth']['value']:.4g} GB/s, alpha {fit['latency']['value']:.4g} us "
        f"(worst fit error {fit['worst_relative_error']:.0%})"
    )
    click.echo(
        f"prediction         overlap={data['overlap']}, communication "
        f"{ms(data['predicted_communication_time']['value'])}, exposed "
        f"{ms(data['predicted_exposed_communication_time']['value'])}"
    )
    click.echo("")
    click.echo(f"{'':18} {'predicted':>12} {'measured':>12}")
    click.echo(
        f"{'update time':18} {ms(data['predicted_update_time']['value']):>12} "
        f"{ms(data['measured_update_time']['value']):>12}"
    )
    click.echo(
        f"{'speedup':18} {data['predicted_speedup']:>12.3f} {data['measured_speedup']:>12.3f}"
    )
    click.echo(
        f"{'efficiency':18} {data['predicted_efficiency']:>12.1%} "
        f"{data['measured_efficiency']:>12.1%}"
    )
    click.echo("")
    click.echo(f"{'term (median)':24} {'predicted':>10} {'measured':>10}")
    for name, pair in cast("dict[str, dict[str, float]]", data["terms_ms"]).items():
        click.echo(f"{name:24} {ms(pair['predicted']):>10} {ms(pair['measured']):>10}")
    click.echo(
        f"(measured: DDP's hooks = the no_sync() step minus T1; the rest = the DDP step minus the "
        f"no_sync() step; predicted wait from the measured step-time variation, cv {data['step_time_cv']:.1%})"
    )
    click.echo("")
    click.echo(
        f"relative error of the update time: {data['relative_error']:+.1%} "
        f"(spread of measured steps {data['update_time_spread']:.0%})"
    )
    if repeats > 1:
        click.echo(
            f"over {repeats} runs (the run shown is the median's): median {median:+.1%}, "
            f"from {errors[0]:+.1%} to {errors[-1]:+.1%}: a model change is a real "
            "improvement only when it moves the error by more than this spread"
        )
