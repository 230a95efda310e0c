"""The package's import graph: no circles between modules, and arrows that point one way.

Every ``import`` counts: deferred ones inside functions, and those under
``if TYPE_CHECKING:`` too. A type named in a signature is a dependency as real
as a call (the four circles of issue 29 each closed through one), so a module
that a lower one must name declares what it reads as a Protocol below it
(``engine/reports/view.py``, ``planning/view.py``). The graph is read with
``ast``, so the test sees what the code says, not what one run imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "mlsysim"

LAYERS = {
    "core": set(),
    "physics": {"core"},
    "models": {"core", "physics"},
    "hardware": {"core", "physics"},
    "kernels": {"core", "physics", "hardware", "data"},
    "engine": {"core", "physics", "models", "hardware", "kernels", "data"},
    "validation": {"core", "models", "hardware", "kernels", "engine", "data"},
    "planning": {"core", "physics", "models", "hardware", "kernels", "engine", "data"},
}
"""What each layer may import (besides itself); cli, ui and viz sit on top and may import any.

``validation`` predicts published runs through the public scenario only (issue 29, item 1):
the mapping from a source to scenario inputs and the statistics, no physics of its own."""

EXEMPT: dict[str, str] = {}
"""Edges that break a layer rule, each with why it is still there; one no longer in the graph
fails :func:`test_every_exemption_is_still_needed`, so the list only shrinks."""

ENGINE_ROOMS = (
    "model",  # what are the numbers? the equations (engine/model/)
    "inputs",  # what was given, and is it valid? fields, checks, presets, derivation
    "reports",  # how is it told? explain, headline, notes, bands (read a result's view)
    "results",  # the result type (engine/results.py): calls the reports
    "solvers",  # checked inputs -> equations -> result
    "scenario_types",  # the scenario: inputs checked once, solved by a solver
    "scenario_definitions",  # the named scenarios, built on first use
    "scenarios",  # mlsysim.Scenarios: the named scenarios by attribute and name
    "shortcuts",  # mlsysim.estimate and friends
    "io",  # scenarios as text: files, --set overrides, JSON schemas
)
"""The rooms of ``mlsysim.engine`` (sub-packages and top-level modules), lowest first:
each may import the rooms before it, never one after it."""


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                targets = [module] + [f"{module}.{a.name}" for a in child.names]
            out.update(t for t in targets if t in modules and t != name)
            visit(child)

    visit(tree)
    return out


def _graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            strong(v)
    return found


def test_there_is_no_import_circle_between_modules():
    assert _cycles(_graph()) == []


def test_a_circle_would_be_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_a_planted_module_circle_is_found(tmp_path):
    """A circle closed by a deferred import and one under TYPE_CHECKING, as issue 29's were."""
    package = tmp_path / "pkg"
    (package / "reports").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "reports" / "__init__.py").write_text("")
    (package / "results.py").write_text(
        "def explain():\n    from pkg.reports.explain import explain_result\n"
    )
    (package / "reports" / "explain.py").write_text(
        "from typing import TYPE_CHECKING\n\nfrom . import headline\n"
        "if TYPE_CHECKING:\n    from pkg.results import Result\n"
    )
    (package / "reports" / "headline.py").write_text("import math\n")
    (package / "other.py").write_text("from pkg import results\n")
    assert _cycles(_graph(package)) == [["pkg.reports.explain", "pkg.results"]]


def test_each_layer_imports_only_the_layers_below_it():
    wrong = []
    for name, targets in _graph().items():
        layer = name.split(".")[1] if name.count(".") else ""
        if layer not in LAYERS:
            continue
        allowed = LAYERS[layer] | {layer}
        for target in targets:
            other = target.split(".")[1] if target.count(".") else ""
            edge = f"{name} -> {target}"
            if other and other not in allowed and edge not in EXEMPT:
                wrong.append(edge)
    assert wrong == []


def _room(name: str) -> str:
    """``mlsysim.engine.inputs.fields`` -> ``inputs``; ``mlsysim.engine.results`` -> ``results``."""
    return name.split(".")[2] if name.startswith("mlsysim.engine.") else ""


def test_every_engine_module_sits_in_a_room():
    """A new engine module is put in a room of :data:`ENGINE_ROOMS` (or a new room is added there)."""
    rooms = {_room(name) for name in _modules()} - {""}
    assert rooms - set(ENGINE_ROOMS) == set()


def test_each_engine_room_imports_only_the_rooms_below_it():
    wrong = []
    for name, targets in _graph().items():
        room = _room(name)
        if not room:
            continue
        below = set(ENGINE_ROOMS[: ENGINE_ROOMS.index(room)]) | {room}
        wrong += [f"{name} -> {t}" for t in targets if _room(t) and _room(t) not in below]
    assert wrong == []


def test_every_exemption_is_still_needed():
    edges = {f"{name} -> {target}" for name, targets in _graph().items() for target in targets}
    assert set(EXEMPT) <= edges


def test_validation_may_not_import_physics():
    """The rule above holds for every validation module but the exempt ones, deferred imports
    included; the whole-run and scaling validations reach the physics through scenarios only."""
    assert "physics" not in LAYERS["validation"]
    for name, targets in _graph().items():
        if name.startswith("mlsysim.validation"):
            found = {t for t in targets if t.startswith("mlsysim.physics")}
            assert {f"{name} -> {t}" for t in found} <= set(EXEMPT), name
