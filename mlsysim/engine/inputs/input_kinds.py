"""What kind of value an input takes, each kind a class with its own schema, text and form.

An :class:`~mlsysim.engine.inputs.fields.InputField` names its kind (``"count"``,
``"quantity"``, ...); :func:`kind_of` gives the object, and everything that
used to ask "which kind is it?" asks the object instead: the JSON schema
(:meth:`InputKind.schema`), how explain and ``run`` write a value
(:meth:`InputKind.text`), how the page shows the field (:attr:`InputKind.form`),
and whether a sweep axis over it holds labels or numbers
(:attr:`InputKind.labelled`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Final, Protocol, cast

from mlsysim.core.formatting import fmt_bytes, fmt_rate, fmt_time
from mlsysim.core.units import to_canonical

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity
    from mlsysim.models.types import Workload


class FieldFacts(Protocol):
    """What a kind reads of the field it describes (an :class:`~mlsysim.engine.inputs.fields.InputField`).

    Declared here, below the field table, so the kinds need not import it: the
    table names each field's kind, and a kind reads only these.
    """

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def dimension(self) -> str | None: ...
    @property
    def display_unit(self) -> str | None: ...
    @property
    def choices(self) -> tuple[str | int, ...]: ...


class InputKind:
    """A kind of input value. Subclasses say how it is described, written and shown."""

    name: ClassVar[str] = "text"
    form: ClassVar[str] = "text"
    """How the page's form shows it: ``int``, ``quantity``, ``choice``, ``number`` or ``text``."""
    labelled: ClassVar[bool] = False
    """Whether a sweep axis over it holds labels (one model evaluation per value) or numbers."""

    def schema(self, f: FieldFacts) -> dict[str, object]:
        """The JSON Schema of the input in the project's JSON encoding (docs/json.md)."""
        return {"type": "string"}

    def text(self, f: FieldFacts, value: object) -> str:
        """The value as explain and ``run`` write it (None is ``none``)."""
        return "none" if value is None else str(value)

    def label(self, f: FieldFacts, value: object) -> str:
        """The value as a table's label (a sweep axis of a labelled kind)."""
        return "none" if value is None else str(getattr(value, "name", value))

    def form_choices(self, f: FieldFacts) -> list[str]:
        """The options the page offers (a select's), or none."""
        return [str(c) for c in f.choices]


class Count(InputKind):
    name = "count"
    form = "int"

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return {"type": "integer", "minimum": 1}


class Index(InputKind):
    """A small integer out of a fixed set (a ZeRO stage)."""

    name = "index"
    form = "choice"
    labelled = True

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return {"type": "integer", "minimum": 0, "enum": list(f.choices)}


class QuantityKind(InputKind):
    name = "quantity"
    form = "quantity"

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
                    "required": ["value", "unit"],
                },
                {"type": "string", "description": "a value with units, e.g. '100 Gbps'"},
            ]
        }

    def text(self, f: FieldFacts, value: object) -> str:
        """In the unit the field is shown in: times and sizes scaled, bandwidths also in GB/s."""
        if value is None:
            return "none"
        dimension = f.dimension or ""
        if dimension in ("tokens", "samples"):
            return f"{to_canonical(value, dimension):.6g} {f.display_unit}"
        if dimension == "time":
            return fmt_time(to_canonical(value, "time"))
        if dimension == "data":
            return fmt_bytes(to_canonical(value, "data"))
        if dimension == "bandwidth":
            rate = fmt_rate(to_canonical(value, "bandwidth"))
            q = cast("Quantity", value)
            shown = f"{q.to(f.display_unit).magnitude:.6g} {f.display_unit}" if f.display_unit else rate
            return shown if shown == rate else f"{shown} ({rate})"
        if dimension == "money_rate":
            return f"{to_canonical(value, 'money_rate'):.6g} USD/h"
        q = cast("Quantity", value)
        return f"{q:~P}"


class Number(InputKind):
    """A plain fraction (the model FLOPs utilisation)."""

    name = "number"
    form = "number"

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return {"type": "number", "exclusiveMinimum": 0, "maximum": 1}


class Factor(InputKind):
    """A plain number of at least 1 (a data centre's PUE), at most ``MAX_PUE``."""

    name = "factor"
    form = "number"

    def schema(self, f: FieldFacts) -> dict[str, object]:
        from mlsysim.physics.energy import MAX_PUE

        return {"type": "number", "minimum": 1, "maximum": MAX_PUE}


class Choice(InputKind):
    name = "choice"
    form = "choice"
    labelled = True

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return {"type": "string", "enum": list(f.choices)}


def _name_or_table(name: dict[str, object], table: str) -> dict[str, object]:
    """The JSON Schema of an input given by name (a string, as ``name`` says) or as a table of its
    fields (an object, described by ``table``)."""
    return {"anyOf": [{"type": "string", **name}, {"type": "object", "description": table}]}


class WorkloadKind(InputKind):
    name = "workload"
    form = "choice"
    labelled = True

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return _name_or_table({"description": "a workload registry name, e.g. 'GPT2'"}, "a workload table")

    def text(self, f: FieldFacts, value: object) -> str:
        workload = cast("Workload", value)
        return f"{workload.name} ({workload.parameter_count():.6g} parameters)"

    def form_choices(self, f: FieldFacts) -> list[str]:
        from mlsysim.models.registry import Models

        return [path.rsplit(".", 1)[-1] for path, _ in Models.walk()]


class AssumptionsKind(InputKind):
    name = "assumptions"
    form = "choice"
    labelled = True

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return _name_or_table({"enum": ["seed", "realistic"]}, "Assumptions fields, 'preset' names the base")

    def label(self, f: FieldFacts, value: object) -> str:
        """``seed``, ``realistic``, or the options that differ from the seed's."""
        from mlsysim.engine.inputs.assumptions import Assumptions

        a = cast(Assumptions, value)
        if a.is_seed():
            return "seed"
        if a == Assumptions.realistic():
            return "realistic"
        return ", ".join(
            f"{k}={f'{v:~P}' if hasattr(v, 'units') else v}" for k, v in a.changed().items()
        )

    def form_choices(self, f: FieldFacts) -> list[str]:
        return ["seed", "realistic"]


class PresetKind(InputKind):
    """A registry entry that fills other inputs (node, fabric, accelerator)."""

    name = "preset"
    form = "text"
    labelled = True

    def schema(self, f: FieldFacts) -> dict[str, object]:
        return {"type": "string", "description": f"a {f.name} registry name"}

    def text(self, f: FieldFacts, value: object) -> str:
        from mlsysim.engine.inputs.presets import preset_name

        return "none" if value is None else preset_name(f.name, value)

    label = text

    def form_choices(self, f: FieldFacts) -> list[str]:
        return []  # suggestions rather than a closed list: see :meth:`suggestions`

    def suggestions(self, f: FieldFacts) -> list[str]:
        from mlsysim.engine.inputs.presets import preset_names

        return preset_names(f.name)


class Text(InputKind):
    """Free text (a scenario's name and description): not an input of the model."""

    name = "text"


KINDS: Final[dict[str, InputKind]] = {
    kind.name: kind()
    for kind in (
        Count, Index, QuantityKind, Number, Factor, Choice, WorkloadKind, AssumptionsKind,
        PresetKind, Text,
    )
}
"""Every kind of input value, by the name the field table gives."""


def kind_of(f: FieldFacts) -> InputKind:
    """The kind object of a field."""
    return KINDS[f.kind]
