"""A YAML reader for small configuration files: YAML 1.2 scalars, no tags, bounded aliases.

PyYAML composes the document into nodes (aliases stay references to one
node, nothing is expanded and no object is constructed); :func:`load_yaml`
then builds plain values itself, walking iteratively:

* scalars follow the YAML 1.2 core schema: ``true``/``false``, ``null``/``~``,
  decimal integers and floats; forms that YAML 1.1 tools read differently are
  refused with a hint to quote them (``010``, octal 8 in YAML 1.1; ``1:30``,
  90 in YAML 1.1; ``1_000``; ``0x10``, ``0o10``); ``.inf`` and ``.nan`` are
  refused (inputs are finite); other plain text (``yes``, ``2024-01-01``) is a
  string, as in YAML 1.2;
* explicit tags other than the standard ``!!str``, ``!!int``, ``!!float``,
  ``!!bool``, ``!!null``, ``!!map``, ``!!seq`` are refused (``!!python/name``);
* mapping keys must be strings; a key given twice is refused;
* an alias that refers to a node containing it (recursion) is refused, and so
  is a document whose aliases expand to more than :data:`MAX_NODES` nodes (a
  "billion laughs" file of nested aliases), both before anything is expanded;
  nesting is at most :data:`~mlsysim.core.text.MAX_DEPTH` levels.

Errors are :class:`~mlsysim.core.exceptions.InputError` with the 1-based
``line`` attribute set when known.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from mlsysim.core.exceptions import InputError, MissingDependencyError
from mlsysim.core.text import MAX_DEPTH, parse_float, parse_int, short

if TYPE_CHECKING:
    from mlsysim.core.jsonio import JSONValue

MAX_NODES = 10_000
"""Most values a YAML document may hold once its aliases are expanded."""

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_NULL = ("", "~", "null", "Null", "NULL")
_TRUE = ("true", "True", "TRUE")
_FALSE = ("false", "False", "FALSE")


class _Mark(Protocol):
    line: int


class _Node(Protocol):
    """What is read of a PyYAML node (PyYAML has no type stubs)."""

    tag: str
    value: Any  # a scalar's text, a sequence's nodes, or a mapping's (key, value) node pairs
    style: str | None
    start_mark: _Mark


class YamlError(InputError):
    """A YAML document cannot be read; ``line`` is where (1-based), or None."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def _yaml() -> ModuleType:
    try:
        import yaml
    except ImportError:
        raise MissingDependencyError(
            "YAML scenario files need pyyaml: pip install 'mlsysim[yaml]'"
        ) from None
    return yaml


def dump_yaml(data: object) -> str:
    """YAML text of a plain value (keys in their order, Unicode kept), by PyYAML's safe dumper."""
    text: str = _yaml().safe_dump(data, sort_keys=False, allow_unicode=True)
    return text


def load_yaml(text: str) -> tuple[JSONValue, dict[tuple[str, ...], int]]:
    """(plain value of the document, line of each mapping key path) of YAML ``text``."""
    yaml = _yaml()
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise YamlError(
            f"YAML syntax error: {problem}", mark.line + 1 if mark is not None else None
        ) from None
    except RecursionError:
        raise YamlError(f"YAML nested more than {MAX_DEPTH} levels deep") from None
    lines: dict[tuple[str, ...], int] = {}
    if root is None:
        return None, lines
    return _build(yaml, root, lines), lines


def _line(node: _Node) -> int:
    return int(node.start_mark.line) + 1


def _build(yaml: ModuleType, root: _Node, lines: dict[tuple[str, ...], int]) -> JSONValue:
    """Plain values from the node graph, iteratively, with the limits of the module docstring."""
    count = 0
    result: list[JSONValue] = [None]
    # (node, where to store the value: (container, key), key path, ancestors' ids); the nodes
    # are PyYAML's, a container is a list with int slots or a dict with str keys
    stack: list[tuple[_Node, Any, int | str, tuple[str, ...], frozenset[int]]] = [
        (root, result, 0, (), frozenset())
    ]
    while stack:
        node, into, slot, path, ancestors = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise YamlError(
                f"the document holds more than {MAX_NODES:,} values once its aliases are "
                "expanded; refusing to expand it",
                _line(node),
            )
        if id(node) in ancestors:
            raise YamlError("an alias refers to a node that contains it (recursion)", _line(node))
        if len(ancestors) >= MAX_DEPTH:
            raise YamlError(f"nested more than {MAX_DEPTH} levels deep", _line(node))
        inner = ancestors | {id(node)}
        if isinstance(node, yaml.ScalarNode):
            into[slot] = _scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            _check_tag(node, _TAG + "seq")
            items: list[JSONValue] = [None] * len(node.value)
            into[slot] = items
            stack.extend(
                (child, items, i, path, inner) for i, child in enumerate(node.value)
            )
        elif isinstance(node, yaml.MappingNode):
            _check_tag(node, _TAG + "map")
            table: dict[str, JSONValue] = {}
            into[slot] = table
            for key_node, value_node in node.value:
                key = _key(yaml, key_node)
                if key in table:
                    first = lines.get((*path, key))
                    raise YamlError(
                        f"duplicate key {'.'.join((*path, key))!r}"
                        + (f" (first on line {first})" if first else ""),
                        _line(key_node),
                    )
                table[key] = None
                lines.setdefault((*path, key), _line(key_node))
                stack.append((value_node, table, key, (*path, key), inner))
        else:  # pragma: no cover - PyYAML has no other node kinds
            raise YamlError(f"unsupported YAML node {type(node).__name__}", _line(node))
    return result[0]


def _check_tag(node: _Node, expected: str) -> None:
    if node.tag != expected:
        raise YamlError(f"YAML tag {node.tag!r} is not accepted (no tags)", _line(node))


def _key(yaml: ModuleType, node: _Node) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise YamlError("a mapping key must be a name, not a list or a mapping", _line(node))
    value = _scalar(node)
    if not isinstance(value, str) or not value:
        raise YamlError(
            f"a mapping key must be a name, got {node.value!r}; quote it if it is one",
            _line(node),
        )
    return value


def _scalar(node: _Node) -> str | int | float | bool | None:
    """A scalar by the YAML 1.2 core schema; forms YAML 1.1 reads otherwise are refused."""
    text = node.value
    if node.tag not in _SCALAR_TAGS:
        raise YamlError(f"YAML tag {node.tag!r} is not accepted (no tags)", _line(node))
    if node.style is not None or node.tag == _TAG + "str":  # quoted, or a block, or !!str
        if node.style is None and node.tag == _TAG + "str" and text in _NULL[1:]:
            return text  # the explicit !!str null
        return text
    if text in _NULL:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text and all(ch in "0123456789+-._:eEoxXabcdefABCDEF" for ch in text) and text[-1:] != ".":
        return _number(node, text)
    if text.lower() in (".inf", "+.inf", "-.inf", ".nan"):
        raise YamlError(f"{text} is not a finite number", _line(node))
    return text


def _number(node: _Node, text: str) -> int | float | str:
    body = text.lstrip("+-")
    ambiguous = (
        ":" in body
        or "_" in body
        or body[:2].lower() in ("0x", "0o", "0b")
        or (len(body) > 1 and body[0] == "0" and body[1].isdigit())
    )
    if ambiguous:
        raise YamlError(
            f"{short(text)} is read differently by YAML 1.1 and 1.2 tools "
            "(010 is 8 or 10, 1:30 is 90 or text): write a plain decimal number, or quote it",
            _line(node),
        )
    if body.isdigit():
        try:
            return parse_int(text)
        except InputError as exc:
            raise YamlError(str(exc), _line(node)) from None
    try:
        return parse_float(text)
    except InputError:
        return text  # e.g. "1e" or "abc": text, as YAML 1.2 reads it
