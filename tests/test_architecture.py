"""The package's import graph: no circles, and arrows that point one way.

Every ``import`` counts, deferred ones inside functions included; only imports
under ``if TYPE_CHECKING:`` (which never run) are left out. The graph is read
with ``ast``, so the test sees what the code says, not what one run imported.
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
    "engine": {"core", "physics", "models", "hardware", "data"},
    "validation": {"core", "models", "hardware", "engine", "data"},
    "planning": {"core", "physics", "models", "hardware", "engine", "validation", "data"},
}
"""What each layer may import (besides itself); cli, ui and viz sit on top and may import any.

``validation`` predicts published runs through the public scenario only (issue 29, item 1):
the mapping from a source to scenario inputs and the statistics, no physics of its own."""

EXEMPT = {
    "mlsysim.validation.parallel -> mlsysim.physics.layout": (
        "the model-parallel runs still predicted by layout_figures, not yet through the "
        "scenario (issue 29, item 1; done in its own change)"
    ),
}
"""Edges that break a layer rule, each with why it is still there; one no longer in the graph
fails :func:`test_every_exemption_is_still_needed`, so the list only shrinks."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.orelse:
                    visit(stmt)
                continue
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


def _graph() -> dict[str, set[str]]:
    modules = _modules()
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


def test_there_is_no_import_circle_in_the_package():
    assert _cycles(_graph()) == []


def test_a_circle_would_be_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


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
