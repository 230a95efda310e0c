"""The JSON API behind the page, as plain functions of the request's parameters.

Each function takes the parameters of a query string (or a JSON body) as
text, in the forms of ``mlsysim run --set`` (see :mod:`mlsysim.ui.state`), and
returns JSON-able data; a bad value raises :class:`ApiError` naming the field
with the library's own message. :mod:`mlsysim.ui.app` serves them over HTTP;
nothing here reads or writes a file.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from mlsysim.core.exceptions import InfeasiblePlanError, MlsysimError
from mlsysim.core.jsonio import JSONValue, document
from mlsysim.engine.inputs.fields import FIELDS
from mlsysim.ui.encoding import SCHEMA_VERSION, json_value
from mlsysim.ui.state import (
    PAGE_PARAMS,
    SCENARIO_PARAM,
    FieldErrors,
    form_fields,
    scenario_from,
    text_of,
    text_values,
)

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity
    from mlsysim.engine.results import DataParallelScaleOutResult
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.physics._array import Array
    from mlsysim.planning.plan import Plan
    from mlsysim.planning.table import SweepTable

MAX_PARAMS = 64
"""Most parameters one request may carry."""
MAX_TEXT = 300
"""Longest text of one parameter, in characters."""
MAX_SWEEP_ROWS = 20_000
"""Largest sweep or plan the server answers (layouts); bigger grids belong to ``mlsysim sweep``."""
DEFAULT_MAX_NODES = 64
"""The scaling chart's sweep runs over nodes = 1 .. max(this, 2 x the current nodes)."""

SCALE_OUT_FABRICS = ("Ethernet", "InfiniBand")
"""Registry fabrics (by name prefix) the default plan tries between nodes."""

_RANGE = re.compile(r"\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*(?::\s*(\d+)\s*)?")


MAX_MESSAGE = 400
"""Longest message (and field name) an error answer carries, in characters."""


def bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis), lone surrogates replaced:
    an answer never echoes a whole request back, and always encodes as UTF-8.
    """
    if len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    return text.encode("utf-8", "replace").decode("utf-8")


class ApiError(Exception):
    """A request the API refuses: ``status`` (422 for a bad value), ``errors`` field -> message.

    Messages and field names are :func:`bounded`; ``headers`` go on the answer (``Retry-After``).
    """

    def __init__(
        self, errors: dict[str, str], status: int = 422, headers: dict[str, str] | None = None
    ) -> None:
        errors = {bounded(k, 64): bounded(v) for k, v in errors.items()}
        super().__init__("; ".join(errors.values()))
        self.errors = errors
        self.status = status
        self.headers = dict(headers or {})

    def payload(self) -> dict[str, JSONValue]:
        """``{"schema_version", "error", "field", "errors": {field: message}}``."""
        first_field, first_message = next(iter(self.errors.items()))
        return {
            "schema_version": SCHEMA_VERSION,
            "error": first_message,
            "field": first_field,
            "errors": dict(self.errors),
        }


@dataclass(frozen=True)
class Request:
    """A request's parameters: the scenario, the field changes, page parameters, axes."""

    scenario: str | None = None
    changes: dict[str, str] = field(default_factory=dict)
    page: dict[str, str] = field(default_factory=dict)
    axes: tuple[str, ...] = ()
    plan_axes: tuple[str, ...] = ()

    @classmethod
    def from_items(cls, items: Iterable[tuple[str, object]]) -> Request:
        """From (key, value) pairs of a query string or a JSON body, bounded and checked.

        A value may be text, a number, a bool or a quantity ``{"value": x, "unit": "..."}``;
        ``axis`` and ``plan_axis`` may repeat (``axis=nodes=1..64``); any other key once.
        """
        pairs = list(items)
        if len(pairs) > MAX_PARAMS:
            raise ApiError({"request": f"too many parameters ({len(pairs)}; at most {MAX_PARAMS})"})
        scenario: str | None = None
        changes: dict[str, str] = {}
        page: dict[str, str] = {}
        axes: list[str] = []
        plan_axes: list[str] = []
        for key, raw in pairs:
            text = _text(key, raw)
            if key == "axis":
                axes.append(text)
            elif key == "plan_axis":
                plan_axes.append(text)
            elif key in changes or key in page or (key == SCENARIO_PARAM and scenario is not None):
                raise ApiError({key: f"{key} is given twice"})
            elif key == SCENARIO_PARAM:
                scenario = text
            elif key in PAGE_PARAMS:
                page[key] = text
            else:
                changes[key] = text
        return cls(scenario, changes, page, tuple(axes), tuple(plan_axes))

    @classmethod
    def from_json(cls, body: object) -> Request:
        """From ``{"scenario": name, "set": {field: value}, "axis": [...], ...page parameters}``."""
        if not isinstance(body, dict):
            raise ApiError({"request": "expected a JSON object"})
        items: list[tuple[str, object]] = []
        for key, value in body.items():
            if key == "set":
                if not isinstance(value, dict):
                    raise ApiError({"set": "expected an object of field: value"})
                items += list(value.items())
            elif key in ("axis", "plan_axis") and isinstance(value, list):
                items += [(key, v) for v in value]
            else:
                items.append((key, value))
        return cls.from_items(items)

    def query(self) -> list[tuple[str, str]]:
        """The request as query-string pairs (the page's link)."""
        out = [(SCENARIO_PARAM, self.scenario)] if self.scenario else []
        return out + list(self.changes.items()) + list(self.page.items())


def _text(key: str, value: object) -> str:
    if not isinstance(key, str):
        raise ApiError({"request": "expected parameter names as text"})
    if len(key) > 64:
        raise ApiError({"request": f"parameter name too long ({len(key)} characters)"})
    if not _is_unicode(key):
        raise ApiError({"request": "a parameter name is not valid Unicode text (a lone surrogate)"})
    if (
        isinstance(value, dict)
        and set(value) == {"value", "unit"}
        and all(isinstance(v, (str, int, float)) for v in value.values())
    ):
        value = f"{value['value']} {value['unit']}"
    if isinstance(value, bool):
        value = "true" if value else "false"
    if value is None:
        value = ""
    if isinstance(value, (int, float)):
        value = repr(value)
    if not isinstance(value, str):
        got = f"a JSON {'object' if isinstance(value, dict) else type(value).__name__}"
        raise ApiError({key: f"{key}: expected text, a number or a quantity, got {got}"})
    if len(value) > MAX_TEXT:
        raise ApiError(
            {key: f"{key}: value too long ({len(value)} characters; at most {MAX_TEXT})"}
        )
    if not _is_unicode(value):
        raise ApiError({key: f"{key}: not valid Unicode text (a lone surrogate)"})
    return value


def _is_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (JSON's ``"\\ud800"`` decodes to a lone surrogate, which does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _document(kind: str, body: Mapping[str, object]) -> dict[str, JSONValue]:
    """A top-level answer: :func:`mlsysim.core.jsonio.document` (``schema_version``, ``kind``)."""
    # the bodies here hold JSON data only: text, numbers, None, lists and dicts of them
    return dict(document(kind, cast("Mapping[str, JSONValue]", body)))


def scenario_of(request: Request) -> TrainingScenario:
    """The request's scenario; :class:`ApiError` (422) naming each bad field."""
    try:
        scenario = scenario_from(request.scenario, request.changes)
    except FieldErrors as exc:
        raise ApiError(exc.errors) from None
    return scenario


# -- evaluate ----------------------------------------------------------------------------


def result_values(result: DataParallelScaleOutResult) -> dict[str, JSONValue]:
    """Every result field: quantities as ``{"value", "unit"}`` (cost in USD), others plain."""
    from mlsysim.engine.results import RESULT_NAMES, field_unit, result_fields

    out: dict[str, JSONValue] = {}
    for name in RESULT_NAMES:
        value = getattr(result, name)
        if result_fields()[name].kind == "money" and value is not None:
            value = {"value": value, "unit": field_unit(name)}
        out[name] = json_value(value)
    return out


INTERVAL_LEVEL = 0.8
"""The level of the prediction intervals the page shows."""


def result_intervals(
    result: DataParallelScaleOutResult, level: float = INTERVAL_LEVEL
) -> dict[str, JSONValue] | None:
    """``{"level", "fields": {name: {"low", "high"}}}``: the central prediction interval of
    each figure that has one (:meth:`~mlsysim.engine.results.DataParallelScaleOutResult.interval`),
    in the unit of :func:`result_values`; ``None`` when the assumptions give none (the seed model).
    """
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.units import Quantity
    from mlsysim.engine.results import INTERVAL_FIELDS, field_unit

    try:
        result.interval("efficiency", level)
    except InputError:
        return None
    fields: dict[str, JSONValue] = {}
    for name in INTERVAL_FIELDS:
        value = getattr(result, name)
        if value is None:
            continue
        low, high = result.interval(name, level)
        ends: list[object] = [low, high]
        if name == "cost":
            ends = [{"value": x, "unit": field_unit(name)} for x in ends]
        elif isinstance(value, Quantity) and isinstance(low, Quantity) and isinstance(high, Quantity):
            ends = [low.to(value.units), high.to(value.units)]
        fields[name] = {"low": json_value(ends[0]), "high": json_value(ends[1])}
    return {"level": level, "fields": fields}


def evaluate(request: Request) -> dict[str, JSONValue]:
    """The scenario's inputs (as text), every result figure and, where the assumptions give
    them, the 80% prediction intervals (``intervals``, else ``null``).
    """
    scenario = scenario_of(request)
    result = scenario.result
    return _document(
        "evaluate",
        {
            "scenario": request.scenario or scenario_from(None, {}).name,
            "name": scenario.name,
            "description": scenario.description,
            "values": text_values(scenario),
            "result": result_values(result),
            "intervals": result_intervals(result),
            "notes": list(result.constraint_trace),
        },
    )


# -- sweep and plan ----------------------------------------------------------------------


def axis_size(text: str) -> int:
    """How many values ``FIELD=VALUES`` holds, counted without building them."""
    _, _, spec = text.partition("=")
    found = _RANGE.fullmatch(spec)
    if found:
        start, stop, step = int(found[1]), int(found[2]), int(found[3] or 1)
        return len(range(start, stop + 1, step)) if step > 0 else 0
    return len(spec.split(","))


def _check_size(axes: Iterable[str], what: str) -> int:
    size = math.prod(axis_size(a) for a in axes)
    if size > MAX_SWEEP_ROWS:
        raise ApiError(
            {
                what: f"{what}: {size:,} layouts is too large to answer quickly here (at most "
                f"{MAX_SWEEP_ROWS:,}); use 'mlsysim {'plan' if what == 'plan_axis' else 'sweep'}' "
                "on the command line for bigger grids"
            }
        )
    return size


def _parse_axes(
    texts: Iterable[str], scenario: TrainingScenario, what: str
) -> dict[str, Any]:
    from mlsysim.planning.axes import parse_axis

    axes: dict[str, Any] = {}  # values of scenario fields, passed on as **axes
    for text in texts:
        try:
            name, values = parse_axis(text, scenario)
        except MlsysimError as exc:
            raise ApiError({what: f"{what} {text!r}: {exc}"}) from None
        if name in axes:
            raise ApiError({what: f"{what}: {name} is given twice"})
        axes[name] = values
    return axes


def default_axes(scenario: TrainingScenario) -> tuple[str, ...]:
    """The scaling chart's axis: ``nodes=1..max(64, 2 x nodes)``; without an inter-node link
    (one node), ``devices_per_node=1..max(8, devices_per_node)``. Within the size limit.
    """
    if scenario.inter_bandwidth is None:
        top = min(max(8, scenario.devices_per_node), MAX_SWEEP_ROWS)
        return (f"devices_per_node=1..{top}",)
    top = min(max(DEFAULT_MAX_NODES, 2 * scenario.nodes), MAX_SWEEP_ROWS)
    return (f"nodes=1..{top}",)


def _table(
    request: Request, scenario: TrainingScenario, axes_texts: tuple[str, ...], what: str
) -> SweepTable:
    from mlsysim.planning.sweep import sweep

    _check_size(axes_texts, what)
    axes = _parse_axes(axes_texts, scenario, what)
    try:
        return sweep(scenario, **axes)
    except MlsysimError as exc:
        raise ApiError({getattr(exc, "field", None) or what: str(exc)}) from None


def _columns(table: SweepTable, rows: Array | None = None) -> dict[str, JSONValue]:
    return {
        c: {
            "unit": table.units.get(c),
            "values": json_value(table[c] if rows is None else table[c][rows]),
        }
        for c in table.columns
    }


def sweep_payload(request: Request) -> dict[str, JSONValue]:
    """Every layout of the sweep (``axis`` parameters; default: nodes from 1), column by column."""
    scenario = scenario_of(request)
    texts = request.axes or default_axes(scenario)
    table = _table(request, scenario, texts, "axis")
    return _document(
        "sweep",
        {
            "axes": [{"field": a.field, "column": a.column, "unit": a.unit} for a in table.axes],
            "rows": len(table),
            "columns": _columns(table),
            "interval": efficiency_band_of(table, scenario),
        },
    )


def efficiency_band_of(
    table: SweepTable, scenario: TrainingScenario, level: float = INTERVAL_LEVEL
) -> dict[str, JSONValue] | None:
    """``{"level", "efficiency_low", "efficiency_high"}`` per row of a sweep: the efficiency's
    prediction interval (:func:`mlsysim.engine.reports.bands.efficiency_interval_of`: the
    score quantiles scaled by each row's difficulty, clipped; a point on one device); ``None``
    under the seed model or when the sweep varies the assumptions.
    """
    from mlsysim.engine.reports.bands import efficiency_interval_of

    assumptions = scenario.assumptions
    if assumptions.is_seed() or any(a.field == "assumptions" for a in table.axes):
        return None
    low, high = efficiency_interval_of(
        assumptions, table["efficiency"], table.nodes(), level, table["n_devices"]
    )
    return {
        "level": level,
        "efficiency_low": json_value(low),
        "efficiency_high": json_value(high),
    }


def sweep_csv(request: Request) -> str:
    """The sweep as CSV, with the header of ``mlsysim sweep --csv`` (``name [unit]``)."""
    scenario = scenario_of(request)
    table = _table(request, scenario, request.axes or default_axes(scenario), "axis")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.header())
    writer.writerows(zip(*(table.export_column(c) for c in table.columns), strict=True))
    return out.getvalue()


def default_plan_axes(scenario: TrainingScenario) -> tuple[str, ...]:
    """The plan's search: nodes 1..64 (or 2 x nodes, within the size limit) by the registry's
    Ethernet and InfiniBand fabrics (each with its bandwidth and latency) and the current link
    (``fabric=none``: the scenario's own ``inter_bandwidth``, where it gives one).
    """
    from mlsysim.ui.state import _registry_names

    links = [n for n in _registry_names("fabrics") if n.startswith(SCALE_OUT_FABRICS)]
    own_link = scenario.inter_bandwidth is not None and "inter_bandwidth" in scenario.given
    if own_link:
        links.insert(0, "none")
    top = min(max(DEFAULT_MAX_NODES, 2 * scenario.nodes), MAX_SWEEP_ROWS // len(links))
    return (f"nodes=1..{top}", "fabric=" + ",".join(links))


def plan_payload(request: Request) -> dict[str, JSONValue]:
    """Every layout of the plan's search with its training time, cost and feasibility;
    the best layout and the Pareto front under ``deadline``, ``budget`` and ``min_efficiency``.
    """
    from mlsysim.core.units import parse_quantity
    from mlsysim.planning.plan import plan

    scenario = scenario_of(request)
    texts = request.plan_axes or default_plan_axes(scenario)
    _check_size(texts, "plan_axis")
    axes = _parse_axes(texts, scenario, "plan_axis")
    limits: dict[str, Quantity] = {}
    min_efficiency: float | None = None
    for name, kind in (("deadline", "time"), ("budget", "money")):
        text = request.page.get(name, "").strip()
        if text:
            try:
                limits[name] = parse_quantity(text, kind)
            except MlsysimError as exc:
                raise ApiError({name: f"{name}: {exc}"}) from None
    max_batch: int | None = None
    batch_text = request.page.get("max_global_batch", "").strip()
    if batch_text:
        from mlsysim.core.text import parse_int

        try:
            max_batch = parse_int(batch_text)
        except MlsysimError as exc:
            raise ApiError({"max_global_batch": f"max_global_batch: {exc}"}) from None
    eff = request.page.get("min_efficiency", "").strip()
    if eff:
        try:
            min_efficiency = float(eff)
        except ValueError:
            raise ApiError(
                {"min_efficiency": f"min_efficiency: expected a number, got {eff!r}"}
            ) from None
    objective = request.page.get("objective", "").strip() or (
        "cost" if scenario.node_hour_rate is not None else "time"
    )
    try:
        found = plan(
            scenario,
            objective=objective,
            deadline=limits.get("deadline"),
            budget=limits.get("budget"),
            min_efficiency=min_efficiency,
            max_global_batch=max_batch,
            **axes,
        )
    except InfeasiblePlanError as exc:
        # plans here are within MAX_SWEEP_ROWS < INFEASIBLE_TABLE_LAYOUTS: the error carries the table
        return _plan_rows(cast("SweepTable", exc.table), None, objective, str(exc))
    except MlsysimError as exc:
        raise ApiError({getattr(exc, "field", None) or "plan_axis": str(exc)}) from None
    return _plan_rows(found.table, found, objective, None)


def _plan_rows(
    table: SweepTable, found: Plan | None, objective: str, message: str | None
) -> dict[str, JSONValue]:
    from types import SimpleNamespace

    import numpy as np

    from mlsysim.planning.notes import plan_notes
    from mlsysim.planning.reduce import FIGURE_WORDS, ranked_columns

    labels = _row_labels(table)
    feasible = found.feasible if found is not None else np.zeros(len(table), dtype=bool)
    if found is not None:
        figures = SimpleNamespace(time_figure=found.time_figure, cost_figure=found.cost_figure)
    else:  # an infeasible plan: the whole run's figures where its layouts model them
        modeled = {c: bool(np.isfinite(np.asarray(table[c], dtype=float)).any()) for c in ("wall_clock_time", "total_cost")}
        figures = SimpleNamespace(
            time_figure="wall_clock_time" if modeled["wall_clock_time"] else "training_time",
            cost_figure="total_cost" if modeled["total_cost"] else "cost",
        )
    time, cost = ranked_columns(figures, lambda name: np.asarray(table[name], dtype=float))
    pareto: list[int] = []
    if found is not None:  # the plan's table is the full grid: grid index = row
        pareto = [found.pareto.grid_index(i) for i in range(len(found.pareto))]
    return _document(
        "plan",
        {
            "objective": objective,
            # what the objective, deadline and budget used (the whole run's where modeled)
            "time_figure": figures.time_figure,
            "cost_figure": figures.cost_figure,
            "time_label": FIGURE_WORDS[figures.time_figure],
            "cost_label": FIGURE_WORDS[figures.cost_figure],
            "ranked": {"time": json_value(time), "cost": json_value(cost)},
            "rows": len(table),
            "columns": _columns(table),
            "labels": labels,
            "feasible": json_value(feasible),
            "pareto": pareto,
            "best": None if found is None else found.best_row,
            "knee": None if found is None else found.knee_row,
            "summary": message if found is None else found.summary(),
            "notes": [] if found is None else list(plan_notes(found)),
            "infeasible": message,
        },
    )


def _row_labels(table: SweepTable) -> list[str]:
    """``nodes=4, fabric=InfiniBand_NDR`` for each row (text forms of the axis values)."""
    parts = []
    for position, axis in enumerate(table.axes):
        if FIELDS[axis.field].kind == "preset" and axis.labels is not None:
            texts = [f"{axis.field}={label}" for label in axis.labels]
        else:
            texts = [f"{axis.field}={text_of(v)}" for v in axis.values]
        index = table.axis_indices(position)
        parts.append([texts[int(j)] for j in index])
    return [", ".join(p) for p in zip(*parts, strict=True)] if parts else [""] * len(table)


# -- explain and registry ----------------------------------------------------------------


def explain_payload(request: Request) -> dict[str, JSONValue]:
    """The derivation (``scenario.explain(format="json")``): ``steps`` (each numbered, with
    ``quantity``, ``equation``, ``numbers``, ``value``), ``inputs``, ``model``, ``notes``;
    plus ``text``, the plain-text derivation of ``mlsysim explain``.
    """
    scenario = scenario_of(request)
    explanation = json.loads(scenario.explain(format="json"))
    for number, step in enumerate(explanation["steps"], 1):
        step["number"] = str(number)
    explanation["text"] = scenario.explain()
    return dict(explanation)


TIMELINE_ROWS = 16
"""Most pipeline stages the page's timeline shows (the first, the last, evenly between)."""


def timeline_payload(request: Request) -> dict[str, JSONValue]:
    """One update as a timeline per pipeline stage (:func:`mlsysim.engine.reports.timeline.timeline`):
    ``rows`` (each ``label``, ``segments`` and ``hidden`` as columns ``start``, ``duration`` in
    seconds, ``kind``, ``label``, ``figure``), ``update_time`` in seconds, ``stages``, and ``kinds``
    (each kind's words, in drawing order).
    """
    from mlsysim.engine.reports.timeline import KINDS, Segment, timeline

    line = timeline(scenario_of(request).result, max_rows=TIMELINE_ROWS)

    def columns(segments: tuple[Segment, ...]) -> dict[str, JSONValue]:
        return {name: [getattr(s, name) for s in segments] for name in Segment._fields}

    return _document(
        "timeline",
        {
            "update_time": line.update_time,
            "unit": "s",
            "stages": line.stages,
            "kinds": dict(KINDS),
            "rows": [
                {"label": row.label, "segments": columns(row.segments), "hidden": columns(row.hidden)}
                for row in line.rows
            ],
        },
    )


def registry_payload() -> dict[str, JSONValue]:
    """What the page needs to draw its form: the fields, the named scenarios, registry names, limits."""
    from mlsysim.core.units import to_canonical
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.scenarios import Scenarios
    from mlsysim.hardware.registry import Hardware, Systems
    from mlsysim.models.registry import Models

    def short(path: str) -> str:
        return path.rsplit(".", 1)[-1]

    accelerators = {id(a): short(p) for p, a in Hardware.walk()}
    return _document(
        "registry",
        {
            "fields": list(form_fields()),
            "scenarios": [
                {"name": s.name, "description": s.description, "values": text_values(s)}
                for s in Scenarios
            ],
            "models": [
                {
                    "name": short(p),
                    "label": w.name,
                    "parameters": to_canonical(w.parameters, "count"),
                }
                for p, w in Models.walk()
            ],
            "fabrics": [
                {
                    "name": short(p),
                    "bandwidth": text_of(f.bandwidth),
                    "latency": text_of(f.latency),
                    "source": getattr(f, "source", None),
                }
                for p, f in Systems.Fabrics.walk()
            ],
            "accelerators": [
                {"name": short(p), "memory": text_of(a.memory.capacity)} for p, a in Hardware.walk()
            ],
            "nodes": [
                {
                    "name": short(p),
                    "values": {
                        "devices_per_node": str(n.accelerators_per_node),
                        "intra_bandwidth": text_of(n.accelerator.nvlink.bandwidth_per_direction),
                        "device_memory": accelerators.get(id(n.accelerator), ""),
                    },
                }
                for p, n in Systems.Nodes.walk()
            ],
            "presets": {
                name: {f"assumptions.{k}": text_of(v) for k, v in preset.fields().items()}
                for name, preset in (
                    ("seed", Assumptions()),
                    ("realistic", Assumptions.realistic()),
                )
            },
            "limits": {
                "max_sweep_rows": MAX_SWEEP_ROWS,
                "max_params": MAX_PARAMS,
                "max_text": MAX_TEXT,
            },
        },
    )


def toml_text(request: Request) -> str:
    """The scenario as a TOML scenario file (what ``mlsysim run --file`` reads)."""
    import tomli_w

    from mlsysim.engine.io.files import scenario_to_dict

    return str(tomli_w.dumps(scenario_to_dict(scenario_of(request))))


def params_of(items: Mapping[str, str]) -> Request:
    """A :class:`Request` of a plain mapping (for scripts and tests)."""
    return Request.from_items(items.items())
