"""Scenario files: read and write scenarios as TOML (or YAML), with units as text.

A file holds the scenario's fields at the top level, spelled as on the
command line (``--set``) because both go through
:func:`mlsysim.engine.io.overrides.coerce_field`::

    name = "Llama2On16Nodes"
    base = "Gpt2DataParallelOneNode"   # optional: start from a named scenario
    workload = "Llama2_7B"             # a registry name, or a [workload] table
    precision = "bf16"
    step_time = "2.1 s"
    training_time = "400 hour"
    per_device_batch = 4
    devices_per_node = 8
    nodes = 16
    intra_bandwidth = "450 GB/s"
    inter_bandwidth = "400 Gbps"
    node_hour_rate = "32 USD/hour"
    device_memory = "H100"             # an accelerator name, or a size ("80 GB")

    [assumptions]                      # or: assumptions = "realistic"
    preset = "realistic"
    overlap = false

An inline workload is a table of :class:`~mlsysim.Workload` fields
(``[workload]`` with ``name``, ``parameters = "7e9 param"``, optionally
``model_size``, ``architecture``; ``kind = "transformer"`` and the shape
fields make a :class:`~mlsysim.TransformerWorkload`), or a registry model with
some of its figures changed (``[workload]`` with ``base = "Mixtral_8x22B"`` and
``seq_len = 4096``; a quoted top-level key ``"workload.seq_len" = 4096`` does the
same to the scenario's workload, as ``--set workload.seq_len=4096`` does).

Every mistake raises :class:`~mlsysim.core.exceptions.ScenarioFileError`
naming the file, the line and the field. Writing is atomic: the file is
written beside its destination and renamed over it, so a reader never sees
half a file and a failed write leaves the old one intact.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mlsysim.core.exceptions import (
    InputError,
    ScenarioFileError,
    UnknownNameError,
)
from mlsysim.core.fileio import atomic_writer, check_target, read_text
from mlsysim.core.text import check_depth
from mlsysim.core.tomlfile import parse_toml
from mlsysim.core.units import Quantity, parse_quantity

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mlsysim.core.jsonio import JSONValue
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.scenario_types import TrainingScenario
    from mlsysim.models.types import Workload


FORMATS = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}
WORKLOAD_QUANTITIES = {"parameters": "count", "model_size": "data"}
RELATIVE_PATHS = ("cluster_file",)
"""Inputs that name a file: a relative path in a scenario file is relative to the scenario file's folder."""


# -- reading -----------------------------------------------------------------------------


def load_scenario(path: str | os.PathLike[str]) -> TrainingScenario:
    """The scenario described by a TOML or YAML file (chosen by its suffix).

    Raises :class:`ScenarioFileError` (an ``InputError``) naming the file, the
    line and the field for a syntax error, an unknown field, a bad unit or
    value, or a missing required field.
    """
    file = Path(os.path.expanduser(os.fspath(path)))
    kind = _format(file)
    text = read_text(file)
    data, lines = parse_toml(text, file) if kind == "toml" else _parse_yaml(text, file)
    try:
        check_depth(data)
    except InputError as exc:
        raise ScenarioFileError(str(exc), path=str(file)) from None
    for key in RELATIVE_PATHS:  # a path in the file is read from the file's folder
        value = data.get(key)
        if isinstance(value, str) and value.strip() and not os.path.isabs(os.path.expanduser(value.strip())):
            data[key] = os.path.normpath(os.path.join(file.parent, value.strip()))
    try:
        return scenario_from_dict(data)
    except InputError as exc:
        raise ScenarioFileError(
            exc.message, path=str(file), line=_line_of(lines, exc.loc), loc=exc.loc
        ) from None


def scenario_from_dict(data: Mapping[str, object]) -> TrainingScenario:
    """A scenario from parsed file contents (strings with units, registry names, tables).

    Each value is read by its field's entry in the field table; errors are
    located at the field (``exc.loc``), the file loader adds file and line.
    """
    from mlsysim.engine.io.overrides import coerce_field, split_workload_changes, vary_workload
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
    from mlsysim.engine.scenarios import Scenarios

    data, workload_changes = split_workload_changes(data)
    base_name = data.pop("base", None)
    fields: dict[str, object] = {}
    for key, value in data.items():
        if key == "workload" and isinstance(value, dict):
            fields[key] = _inline_workload(value)
        else:
            fields[key] = coerce_field(str(key), value)
    try:
        if workload_changes:
            workload = fields.get("workload")
            if workload is None and isinstance(base_name, str):
                with contextlib.suppress(UnknownNameError):
                    workload = Scenarios.get(base_name).workload
            if workload is None:
                raise InputError("workload.FIELD changes one figure of the workload: give the workload too",
                                 loc=("workload",))
            fields["workload"] = vary_workload(cast("Workload", workload), workload_changes)
        if base_name is None:
            return DataParallelScaleOutScenario(**fields)
        if not isinstance(base_name, str):
            raise InputError(f"expected a scenario name, got {base_name!r}", loc=("base",))
        try:
            base = Scenarios.get(base_name)
        except UnknownNameError as exc:
            raise InputError(str(exc), loc=("base",)) from None
        return base.variant(**fields)
    except InputError as exc:
        raise _without_owner(exc) from None


def _without_owner(exc: InputError) -> InputError:
    """The same error at the same field, without the class name: the file already says what it is."""
    stripped = exc.at()
    stripped.loc = exc.loc
    return stripped


def _inline_workload(table: Mapping[str, object]) -> Workload:
    from mlsysim.models.types import TransformerWorkload, Workload

    data = dict(table)
    base = data.pop("base", None)
    if base is not None:  # a registry model with some of its figures changed
        from mlsysim.engine.inputs.fields import FIELDS
        from mlsysim.engine.io.overrides import vary_workload

        if "kind" in data:
            raise InputError("a workload table with a base takes the base's kind; leave kind out",
                             loc=("workload", "kind"))
        try:
            registered = cast("Workload", FIELDS["workload"].from_text(str(base)))
        except InputError as exc:
            raise InputError(exc.message, loc=("workload", "base")) from None
        return vary_workload(registered, data) if data else registered
    kind = data.pop("kind", "workload")
    if kind not in ("workload", "transformer"):
        raise InputError(
            f"expected 'workload' or 'transformer', got {kind!r}", loc=("workload", "kind")
        )
    for key, unit_kind in WORKLOAD_QUANTITIES.items():
        text = data.get(key)
        if isinstance(text, str):
            try:
                data[key] = parse_quantity(text, unit_kind)
            except InputError as exc:
                raise exc.at("workload", key) from None
    cls = TransformerWorkload if kind == "transformer" else Workload
    try:
        return cls(**data)
    except InputError as exc:
        raise exc.at("workload", *exc.loc) from None


def _format(file: Path) -> str:
    kind = FORMATS.get(file.suffix.lower())
    if kind is None:
        raise ScenarioFileError(
            f"unknown scenario file type {file.suffix!r}; use .toml, .yaml or .yml", path=str(file)
        )
    return kind


def _line_of(lines: dict[tuple[str, ...], int], path: tuple[str, ...]) -> int | None:
    """The line of the longest known prefix of ``path`` (the table of an inner field)."""
    for i in range(len(path), 0, -1):
        if path[:i] in lines:
            return lines[path[:i]]
    if path[:1] == ("inter_bandwidth",):  # several nodes, no link: point at nodes
        return lines.get(("nodes",))
    return None


def _parse_yaml(text: str, file: Path) -> tuple[dict[str, JSONValue], dict[tuple[str, ...], int]]:
    """YAML text of ``file`` -> (data, line of each key), by :func:`mlsysim.core.yaml12.load_yaml`."""
    from mlsysim.core.yaml12 import YamlError, load_yaml

    try:
        data, lines = load_yaml(text)
    except YamlError as exc:
        raise ScenarioFileError(str(exc), path=str(file), line=exc.line) from None
    if not isinstance(data, dict):
        raise ScenarioFileError(
            "expected a mapping of scenario fields", path=str(file), line=1 if text else None
        )
    return data, lines


# -- writing -----------------------------------------------------------------------------


def save_scenario(
    scenario: TrainingScenario, path: str | os.PathLike[str], *, force: bool = False
) -> Path:
    """Write ``scenario`` as TOML or YAML (by suffix), atomically; returns the path.

    Units are written as text, registry workloads by name, assumptions as a
    preset name or a table of the fields that differ from the seed's, a file's
    path (``cluster_file``) whole, and fields that are not set are left out.
    ``load_scenario`` reads it back to an equal scenario.
    """
    file = Path(os.path.expanduser(os.fspath(path)))
    kind = _format(file)
    _target(file, force)
    data = scenario_to_dict(scenario)
    for key in RELATIVE_PATHS:  # read back from the file's folder: written whole
        value = data.get(key)
        if isinstance(value, str):
            data[key] = os.path.abspath(os.path.expanduser(value))
    if kind == "toml":
        import tomli_w

        text = tomli_w.dumps(data)
    else:
        from mlsysim.core.yaml12 import dump_yaml

        text = dump_yaml(data)
    write_text_atomically(file, text, force=force)
    return file


def _target(path: Path, force: bool) -> None:
    try:
        check_target(path, suffixes=tuple(FORMATS), force=force)
    except InputError as exc:
        raise ScenarioFileError(str(exc).split(": ", 1)[-1], path=str(path)) from None


def write_text_atomically(path: Path, text: str, *, force: bool = False) -> None:
    """Replace ``path`` by ``text`` through :func:`atomic_writer`; failures name the file."""
    try:
        with atomic_writer(path, force=force) as handle:
            handle.write(text)
    except InputError as exc:
        raise ScenarioFileError(str(exc).split(": ", 1)[-1], path=str(path)) from None


def scenario_to_dict(scenario: TrainingScenario) -> dict[str, object]:
    """Plain TOML/YAML values of a scenario: strings with units, names, numbers, tables."""
    out: dict[str, object] = {}
    tables: dict[str, object] = {}
    from mlsysim.engine.inputs.presets import PRESETS, preset_name
    from mlsysim.engine.inputs.workload_figures import DEFAULT_RECOMPUTE

    fields = scenario.fields()
    for derived in scenario.job.origins:  # written as what they derive from
        del fields[derived]
    ordered = {k: fields.pop(k) for k in ("name", "description")} | fields
    for key, value in ordered.items():
        if value is None or (key == "zero_stage" and value == 0):
            continue
        if key == "recompute" and value == DEFAULT_RECOMPUTE:
            continue
        if key in PRESETS:
            out[key] = preset_name(key, value)
            continue
        if key == "workload":
            workload = cast("Workload", value)  # the field's checked kind
            from mlsysim.models.registry import registry_name

            name = registry_name(workload)
            if name is None:
                tables[key] = _workload_table(workload)
            else:
                out[key] = name
        elif key == "assumptions":
            preset = assumptions_value(cast("Assumptions", value))
            if isinstance(preset, dict):
                tables[key] = preset
            elif preset != "seed":
                out[key] = preset
        else:
            out[key] = _plain(value)
    return out | tables  # tables last, as TOML requires


def _plain(value: object) -> object:
    if isinstance(value, Quantity):
        return quantity_text(value)
    return value


def quantity_text(q: Quantity) -> str:
    """``"450 GB/s"``: a Quantity as text that :func:`parse_quantity` reads back exactly."""
    magnitude = q.magnitude
    number = str(magnitude) if isinstance(magnitude, int) else repr(float(magnitude))
    for style in ("~C", "C"):
        text = f"{number} {q.units:{style}}"
        with contextlib.suppress(InputError):
            back = parse_quantity(text)
            if back.units == q.units and back.magnitude == magnitude:
                return text
    return f"{number} {q.units:C}"


def _workload_table(workload: Workload) -> dict[str, object]:
    from mlsysim.models.types import TransformerWorkload

    table: dict[str, object] = {}
    if isinstance(workload, TransformerWorkload):
        table["kind"] = "transformer"
    for key, value in workload.fields().items():
        if value is not None and value != "":
            table[key] = _plain(value)
    return table


def assumptions_value(assumptions: Assumptions) -> object:
    """A set of assumptions as a scenario file writes it: ``"seed"``, ``"realistic"``, or the
    table of the fields that differ from the seed's."""
    from mlsysim.engine.inputs.assumptions import Assumptions

    if assumptions.is_seed():
        return "seed"
    if assumptions == Assumptions.realistic():
        return "realistic"
    seed = Assumptions()
    return {k: _plain(v) for k, v in assumptions.fields().items() if v != getattr(seed, k)}
