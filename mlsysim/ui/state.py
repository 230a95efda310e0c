"""The page's state: scenario fields as text, spelled as ``mlsysim run --set`` spells them.

The query string of the page (``?scenario=Gpt2DataParallelOneNode&nodes=4&inter_bandwidth=10 Gbps``)
and the API's requests carry a named scenario and ``FIELD=TEXT`` changes to it.
Every text value is parsed by :func:`apply_text_values`, the one place where the
UI calls the command line's parser, so the page, the API and ``--set`` accept the
same spellings and report the same errors. The form's fields come from the
field table (:data:`mlsysim.engine.inputs.fields.FIELDS`) and the fields of
:class:`~mlsysim.Assumptions` (:func:`form_fields`), never from a list written here.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import TYPE_CHECKING, cast

from mlsysim.core.exceptions import InputError, MlsysimError

if TYPE_CHECKING:
    import pint
    from pydantic_core import ErrorDetails

    from mlsysim.core.units import Quantity
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.models.types import Workload

SCENARIO_PARAM = "scenario"
"""Query parameter naming the scenario the changes apply to (default: the first named one)."""
PAGE_PARAMS = (
    "deadline",
    "budget",
    "objective",
    "min_efficiency",
    "max_global_batch",
    "teach",
    "axis",
    "plan_axis",
    "format",
)
"""Query parameters of the page and the API that are not scenario fields."""
NOT_IN_FORM = ("name", "description", "cluster_file")
NOT_FROM_A_REQUEST = ("cluster_file",)
"""Inputs that name a file on the machine serving the page: a request may not name one (it would read any
file the server can); the scenario the page starts from may (``mlsysim ui --file job.toml``)."""
ASSUMPTIONS = "assumptions"
ASSUMPTION_PRESETS = ("seed", "realistic")
CUSTOM_WORKLOAD = "custom"
"""The ``workload`` choice of a workload given by its parameter count instead of a registry name."""
WORKLOAD_PARAMETERS = "workload.parameters"
WORKLOAD_NAME = "workload.name"
CUSTOM_WORKLOAD_FIELDS = (WORKLOAD_PARAMETERS, WORKLOAD_NAME)
"""The page's fields of a custom workload: ``workload=custom&workload.parameters=7e9&workload.name=My 7B``
(the way ``assumptions=custom`` takes ``assumptions.FIELD``); read here, not by the field table."""

class FieldErrors(MlsysimError):
    """Bad values, each with the library's own message: ``errors`` maps field -> message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


def apply_text_values(
    base: TrainingScenario, values: Mapping[str, str]
) -> TrainingScenario:
    """``base`` with each ``FIELD=TEXT`` applied, exactly as ``mlsysim run --set FIELD=TEXT``.

    The only call of the command line's text parser in the UI: when the field
    table replaces it, this is the one line to change. An empty text is the
    ``--set`` spelling ``none`` (clears an optional field).
    """
    from mlsysim.engine.io.overrides import apply_overrides

    for key in values:
        if key in NOT_FROM_A_REQUEST:
            raise InputError("the page does not read files on the machine serving it; start it from a "
                             f"scenario file that names one (mlsysim ui --file job.toml, {key} = \"FILE\")",
                             loc=(key,))
    rest, workload = custom_workload(base, values)
    scenario = apply_overrides(base, [f"{k}={v if v.strip() else 'none'}" for k, v in rest.items()])
    if workload is None:
        return scenario
    name = f"{base.name} [{', '.join(f'{k}={v.strip()}' for k, v in values.items())}]"
    return scenario.variant(workload=workload, name=name if base.name else scenario.name)


def custom_workload(
    base: TrainingScenario, values: Mapping[str, str]
) -> tuple[dict[str, str], Workload | None]:
    """(the other changes, the custom workload or ``None``) of ``values``.

    ``workload=custom`` with ``workload.parameters=7e9`` (``7e9 param``, ``7 B`` ...) and
    optionally ``workload.name``: a :class:`~mlsysim.Workload` of that parameter count, checked
    by the library. ``workload.parameters`` alone implies ``workload=custom``; without it, the
    base scenario's own custom workload (one of a file) keeps its count.
    """
    from mlsysim.core.exceptions import InputError
    from mlsysim.core.units import parse_quantity
    from mlsysim.models.types import Workload

    chosen = values.get("workload", "").strip()
    given = {k: v.strip() for k, v in values.items() if k.startswith("workload.")}
    is_custom = chosen.lower() == CUSTOM_WORKLOAD
    if not given and not is_custom:
        return dict(values), None
    for key in given:
        if key not in CUSTOM_WORKLOAD_FIELDS:
            raise InputError(
                f"{key}: unknown; a custom workload takes {' and '.join(CUSTOM_WORKLOAD_FIELDS)}",
                field=key,
            )
    if chosen and not is_custom:
        raise InputError(
            f"{WORKLOAD_PARAMETERS}: applies to workload={CUSTOM_WORKLOAD} only, "
            f"not to workload={chosen}",
            field=WORKLOAD_PARAMETERS,
        )
    rest = {k: v for k, v in values.items() if k != "workload" and not k.startswith("workload.")}
    own = None if _registry_workload(base.workload) else base.workload
    text = given.get(WORKLOAD_PARAMETERS, "")
    parameters: Quantity | float
    if text:
        try:
            parameters = float(text)  # a plain count, as a file's ``parameters = 7e9``
        except ValueError:
            try:
                parameters = parse_quantity(text, "count")
            except InputError as exc:
                raise InputError(
                    f"{WORKLOAD_PARAMETERS}: {exc}", field=WORKLOAD_PARAMETERS
                ) from None
    elif own is not None:
        parameters = own.parameters
    else:
        raise InputError(
            f"{WORKLOAD_PARAMETERS}: a custom workload needs its parameter count "
            "(e.g. 7e9 or 7e9 param)",
            field=WORKLOAD_PARAMETERS,
        )
    name = given.get(WORKLOAD_NAME) or (own.name if own is not None else CUSTOM_WORKLOAD)
    try:
        return rest, Workload(name=name, parameters=parameters)
    except InputError as exc:  # the library's words: "Workload.parameters: ..."
        raise InputError(str(exc), field=WORKLOAD_PARAMETERS) from None


def base_scenario(name: str | None) -> TrainingScenario:
    """The named scenario (case-insensitive), or the first one when no name is given."""
    from mlsysim.engine.scenarios import Scenarios

    if name is None or not name.strip():
        return next(iter(Scenarios))
    try:
        return Scenarios.get(name.strip())
    except MlsysimError as exc:
        raise FieldErrors({SCENARIO_PARAM: str(exc)}) from None


def scenario_from(name: str | None, changes: Mapping[str, str]) -> TrainingScenario:
    """The scenario ``name`` with ``changes``; :class:`FieldErrors` names every bad field.

    Every mistake comes from the library's structured list (``InputError.errors()``),
    each reported on the field it is located at (a rule between fields, several
    nodes and no ``inter_bandwidth``, on the field the library names).
    """
    base = base_scenario(name)
    try:
        return apply_text_values(base, changes)
    except InputError as exc:
        errors: dict[str, str] = {}
        for error, detail in zip((exc, *exc.others), exc.errors(), strict=True):
            errors.setdefault(_change_of(detail, changes), error.located)
        raise FieldErrors(errors) from None
    except MlsysimError as exc:
        raise FieldErrors({next(iter(changes), SCENARIO_PARAM): str(exc)}) from None


def _change_of(detail: ErrorDetails, changes: Mapping[str, str]) -> str:
    """The form field an error detail is about: the field it is located at, else the first
    changed field among those its rule reads."""
    loc = tuple(str(p) for p in detail["loc"])
    for key in (".".join(loc), *loc[:1]):
        if key in changes or key in _form_names():
            return key
    for key in (str(f) for f in (detail.get("ctx") or {}).get("fields", ())):
        if key in changes:
            return key
    return next(iter(changes), SCENARIO_PARAM)


def _form_names() -> set[str]:
    return {str(f["name"]) for f in form_fields()}


def text_of(value: object) -> str:
    """A field value as ``--set`` spells it (``"450.0 GB/s"``, ``"GPT2"``); ``""`` for none."""
    from mlsysim.engine.io.files import quantity_text

    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "magnitude") and hasattr(value, "units"):
        try:
            return _quantity_text(value.magnitude, value.units)
        except TypeError:  # an unhashable magnitude
            return quantity_text(cast("Quantity", value))  # field values with units are Quantities
    if hasattr(value, "is_seed"):
        return _preset_of(cast("Assumptions", value))
    if hasattr(value, "parameters"):  # a workload: its registry name
        return _workload_name(cast("Workload", value))
    return str(value)


@lru_cache(maxsize=4096)
def _quantity_text(magnitude: float, units: pint.Unit) -> str:
    """``quantity_text`` remembered per (magnitude, unit): it parses its text back to check it."""
    from mlsysim.core.units import ureg
    from mlsysim.engine.io.files import quantity_text

    return str(quantity_text(ureg.Quantity(magnitude, units)))


def _preset_of(assumptions: Assumptions) -> str:
    if assumptions.is_seed():
        return "seed"
    if assumptions == type(assumptions).realistic():
        return "realistic"
    return "custom"


def _workload_name(workload: Workload) -> str:
    return _registry_workload(workload) or str(workload.name)


def _registry_workload(workload: Workload) -> str | None:
    """The registry name of ``workload``; ``None`` for a workload of no registry (a custom one)."""
    from mlsysim.models.registry import Models

    for path, entry in Models.walk():
        if entry == workload:
            return path.rsplit(".", 1)[-1]
    return None


def text_values(scenario: TrainingScenario) -> dict[str, str]:
    """Every form field of ``scenario`` as text, the assumptions' fields as ``assumptions.FIELD``."""
    from mlsysim.engine.inputs.presets import PRESETS, preset_name

    derived = scenario.job.origins  # filled by a preset or derived: not the user's to spell
    out = {
        k: preset_name(k, v) if k in PRESETS and v is not None else text_of(v)
        for k, v in scenario.fields().items()
        if k not in NOT_IN_FORM and k not in derived
    }
    custom = "workload" in out and _registry_workload(scenario.workload) is None
    if "workload" in out:
        out["workload"] = CUSTOM_WORKLOAD if custom else out["workload"]
        out[WORKLOAD_PARAMETERS] = text_of(scenario.workload.parameters) if custom else ""
        out[WORKLOAD_NAME] = scenario.workload.name if custom else ""
    for key, value in scenario.assumptions.fields().items():
        out[f"{ASSUMPTIONS}.{key}"] = text_of(value)
    return out


# -- the form ----------------------------------------------------------------------------


@cache
def form_fields() -> tuple[dict[str, object], ...]:
    """One entry per input of the page: the field table's inputs in its order, then the assumptions.

    Each entry: ``name`` (the field, as ``--set`` names it), ``label``, ``symbol``
    and ``unit`` (from the field table), ``group``, ``kind`` (``int``,
    ``quantity``, ``choice``, ``number`` or ``text``), ``required``, ``optional``
    (may be empty: none), ``choices`` (a select's options), ``suggestions``
    (registry names the field also takes) and ``example`` (a text it accepts).
    """
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.inputs.fields import FIELDS, GROUPS

    base = base_scenario(None)
    out: list[dict[str, object]] = []
    for f in FIELDS.values():
        if f.name in NOT_IN_FORM:
            continue
        entry: dict[str, object] = {
            "name": f.name,
            "label": f.label,
            "symbol": f.symbol,
            "unit": f.display_unit,
            "group": GROUPS[f.group],
            "required": f.required,
            "optional": f.optional,
            "choices": [],
            "suggestions": [],
            "example": "",
        }
        kind = f.kinds
        entry.update(kind=kind.form, choices=kind.form_choices(f))
        if f.kind == "workload":
            entry["choices"] = [*kind.form_choices(f), CUSTOM_WORKLOAD]
        elif f.kind == "assumptions":
            entry["choices"] = [*kind.form_choices(f), "custom"]
        elif f.kind == "preset":
            entry["suggestions"] = kind.suggestions(f)  # type: ignore[attr-defined]
        elif kind.form == "int":
            entry["example"] = "1"
        elif kind.form == "quantity":
            entry.update(**_accepted_texts(f.name, base, f.display_unit))
        out.append(entry)
        if f.kind == "workload":
            out += _custom_workload_fields(str(entry["group"]))
    for name, info in Assumptions.model_fields.items():
        entry = _describe(f"{ASSUMPTIONS}.{name}", info.annotation, base)
        entry.update(
            group="Model assumptions", required=True, optional=False, label="", symbol=None
        )
        entry.setdefault("unit", None)
        out.append(entry)
    return tuple(out)


def _custom_workload_fields(group: str) -> list[dict[str, object]]:
    """The form entries of a custom workload (``workload=custom``): its parameter count and name."""
    common = {"group": group, "required": False, "optional": True, "choices": [], "suggestions": []}
    return [
        {
            **common,
            "name": WORKLOAD_PARAMETERS,
            "label": "parameter count of a custom workload",
            "symbol": None,
            "unit": "param",
            "kind": "quantity",
            "example": "7e9 param",
        },
        {
            **common,
            "name": WORKLOAD_NAME,
            "label": "name of a custom workload",
            "symbol": None,
            "unit": None,
            "kind": "text",
            "example": CUSTOM_WORKLOAD,
        },
    ]


def _describe(
    name: str, annotation: object, base: TrainingScenario
) -> dict[str, object]:
    """The form entry of one :class:`~mlsysim.Assumptions` field, from its annotation."""
    entry: dict[str, object] = {"name": name, "choices": [], "suggestions": [], "example": ""}
    kinds = {a for a in typing.get_args(annotation) if a is not type(None)} or {annotation}
    literal = [a for a in kinds if typing.get_origin(a) is typing.Literal]
    if literal:
        entry.update(kind="choice", choices=list(typing.get_args(literal[0])))
    elif bool in kinds:
        entry.update(kind="choice", choices=["false", "true"])
    elif int in kinds:
        entry.update(kind="int", example="1")
    elif any(getattr(a, "__name__", "") == "Quantity" for a in kinds):
        entry.update(kind="quantity", **_accepted_texts(name, base, None))
    elif float in kinds:
        entry.update(kind="number", example="0.9")
    else:
        entry.update(kind="text")
    return entry


EXAMPLES = ("100 Gbps", "5 us", "80 GB", "32 USD/hour")
"""Candidate example texts; a quantity field's placeholder is the first it accepts."""


def _accepted_texts(
    name: str, base: TrainingScenario, unit: str | None
) -> dict[str, object]:
    """A quantity field's example and the registry names it takes, both found by asking the parser."""
    own = text_values(base).get(name, "")
    candidates = (*EXAMPLES, f"1 {unit}") if unit else EXAMPLES
    example = own or next((t for t in candidates if _accepts(base, name, t)), "")
    suggestions: list[str] = []
    for group in ("fabrics", "accelerators"):
        names = _registry_names(group)
        if names and _accepts(base, name, names[0]):
            suggestions += names
    return {"example": example, "suggestions": suggestions}


def _accepts(base: TrainingScenario, name: str, text: str) -> bool:
    try:
        apply_text_values(base, {name: text})
    except MlsysimError:
        return False
    return True


def _registry_names(group: str) -> list[str]:
    from mlsysim.hardware.registry import Hardware, Systems
    from mlsysim.models.registry import Models

    registry = {
        "models": Models,
        "accelerators": Hardware,
        "fabrics": Systems.Fabrics,
        "nodes": Systems.Nodes,
    }[group]
    return [path.rsplit(".", 1)[-1] for path, _ in registry.walk()]
