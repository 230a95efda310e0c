"""Registries as data: entries read from TOML files, validated into their types on first use.

The figures of the accelerators, nodes, fabrics, prices and workloads live in
TOML files shipped in the package (``mlsysim/data/registry/*.toml``). A file
holds one table per entry, under the kind it belongs to::

    [fabrics.InfiniBand_NDR]                 # Systems.Fabrics.InfiniBand_NDR
    name = "InfiniBand NDR"
    bandwidth = "400 Gbps"                   # a figure: value and unit as text
    latency = "1 us"
    source = "InfiniBand Trade Association roadmap"
    note = "per 4x port per direction, data rate"

    [accelerators.Cloud.H100]                # Hardware.Cloud.H100 (a group, then the name)

Entries are validated into the types of :mod:`mlsysim.hardware.types` and
:mod:`mlsysim.models.types` the first time a registry is used, so
``import mlsysim`` reads no file. :func:`load_registry` adds a user's file
(same format, any kinds mixed): an entry with the path of a built-in entry
replaces it, a new path adds an entry; each entry is validated when the file
is loaded and errors name the file, the line and the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import import_module
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from mlsysim.core.exceptions import InputError, ScenarioFileError, UnknownNameError
from mlsysim.core.suggest import known, typed_names, unknown

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from mlsysim.core.units import Quantity


class Entry(Protocol):
    """What every validated registry entry has (an accelerator, a node, a workload, ...)."""

    @property
    def name(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def note(self) -> str: ...


E = TypeVar("E", bound=Entry, covariant=True)
"""The type of a registry's entries (``Accelerator`` for ``Hardware``)."""


class Registry(Generic[E]):
    """A named group of registry entries of type ``E`` (or of sub-groups), filled on first use.

    Attribute access gives an entry or a sub-group (``Models.Language.GPT2``);
    :meth:`entries` lists a group, :meth:`walk` every leaf with its dotted path,
    :meth:`get` finds one by path or by its leaf name.
    """

    def __init__(self, name: str, doc: str = "", fill: Callable[[Registry[Entry]], None] | None = None):
        self.__name__ = name
        self.__doc__ = doc
        self._children: dict[str, Registry[E] | Pending | E] = {}
        self._fill = fill
        self._filled = fill is None

    def _ensure(self) -> None:
        if not self._filled and self._fill is not None:
            self._filled = True
            try:
                self._fill(self)
            except BaseException:
                self._filled = False
                self._children.clear()
                raise

    def _reset(self) -> None:
        """Forget the entries; the next use fills the group again."""
        if self._fill is not None:
            self._children.clear()
            self._filled = False

    def _put(self, path: tuple[str, ...], value: Pending) -> None:
        """Announce an entry at ``path`` below this group (the groups on the way made as needed)."""
        group = self
        for part in path[:-1]:
            child = group._children.get(part)
            if child is None:
                child = group._children[part] = Registry(part)
            group = cast("Registry[E]", child)  # the parts above an entry name groups
        group._children[path[-1]] = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        self._ensure()
        try:
            return self._resolved(name)
        except KeyError:
            raise AttributeError(
                f"registry {self.__name__} has no entry {name!r}; {known(name, self._children)}"
            ) from None

    def __dir__(self) -> list[str]:
        self._ensure()
        return sorted(set(super().__dir__()) | set(self._children))

    def __repr__(self) -> str:
        return f"<registry {self.__name__}>"

    def _resolved(self, name: str) -> Registry[E] | E:
        """The child ``name``, validated now if it was only announced (see :class:`Pending`)."""
        child = self._children[name]
        if isinstance(child, Pending):
            # validated into its kind's type (Kind.types), the type the root is declared with
            child = self._children[name] = cast("E", child.build())
        return child

    def entries(self) -> dict[str, Registry[E] | E]:
        """The entries (and sub-groups) of this group, by attribute name, in file order."""
        self._ensure()
        return {name: self._resolved(name) for name in self._children}

    def walk(self, prefix: str = "") -> Iterator[tuple[str, E]]:
        """Every leaf entry, with its dotted path (``"Language.GPT2"``)."""
        for name, value in self.entries().items():
            if isinstance(value, Registry):
                yield from value.walk(f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}", value

    def get(self, path: str) -> E:
        """The entry at a dotted path or by its leaf name, case-insensitive.

        Raises :class:`UnknownNameError` listing the known names.
        """
        leaves = dict(self.walk())
        lowered = {k.lower(): v for k, v in leaves.items()}
        by_leaf: dict[str, E] = {}
        for k, v in leaves.items():
            by_leaf.setdefault(k.rsplit(".", 1)[-1].lower(), v)
        key = path.lower()
        if key in lowered:
            return lowered[key]
        if key in by_leaf:
            return by_leaf[key]
        raise UnknownNameError(unknown(path, f"{self.__name__} entry", typed_names(leaves)))


@dataclass(frozen=True)
class Pending:
    """An entry announced in a group and validated on first access (so one look-up validates
    that entry and what it refers to, not the whole registry)."""

    catalog: Catalog
    kind: str
    path: tuple[str, ...]

    def build(self) -> Entry:
        return self.catalog.entry(self.kind, ".".join(self.path))


# -- the kinds of entries --------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One kind of registry entry: where it sits and what it is validated into.

    ``types`` maps the entry's ``kind`` key (``"default"`` when absent) to the
    type, as ``"module:Class"`` (imported on first use). ``references`` maps a
    field to the kind its text names (a node's ``accelerator = "H100"``);
    ``derived`` fills an absent field from a referenced entry's attribute.
    """

    name: str
    root: str
    prefix: tuple[str, ...]
    group_depth: int
    types: dict[str, str]
    references: dict[str, str] = field(default_factory=dict)
    derived: dict[str, tuple[str, str]] = field(default_factory=dict)

    def type_for(self, choice: str) -> type:
        module, _, name = self.types[choice].partition(":")
        cls: type = getattr(import_module(module), name)
        return cls


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "accelerators",
            "Hardware",
            (),
            1,
            {"default": "mlsysim.hardware.types:Accelerator"},
        ),
        Kind("fabrics", "Systems", ("Fabrics",), 0, {"default": "mlsysim.hardware.types:Fabric"}),
        Kind(
            "prices",
            "Infrastructure",
            ("Pricing",),
            1,
            {"default": "mlsysim.hardware.types:Price"},
        ),
        Kind(
            "grids",
            "Infrastructure",
            ("Grid",),
            0,
            {"default": "mlsysim.hardware.types:GridIntensity"},
        ),
        Kind(
            "failures",
            "Infrastructure",
            ("Reliability",),
            0,
            {"default": "mlsysim.hardware.types:FailureRate"},
        ),
        Kind(
            "nodes",
            "Systems",
            ("Nodes",),
            0,
            {"default": "mlsysim.hardware.types:Node"},
            references={
                "accelerator": "accelerators",
                "nic_fabric": "fabrics",
                "intra_fabric": "fabrics",
                "price": "prices",
            },
            derived={
                "intra_node_bw": ("accelerator", "nvlink.bandwidth_per_direction"),
                "intra_latency": ("intra_fabric", "latency"),
                "nic_bandwidth": ("nic_fabric", "bandwidth"),
            },
        ),
        Kind(
            "models",
            "Models",
            (),
            1,
            {
                "default": "mlsysim.models.types:Workload",
                "workload": "mlsysim.models.types:Workload",
                "transformer": "mlsysim.models.types:TransformerWorkload",
            },
        ),
    )
}
"""Every kind, in the order entries are listed (a kind's references come before it)."""

BUILTIN_FILES = tuple(f"{name}.toml" for name in KINDS)
"""The data files shipped in ``mlsysim/data/registry``, one per kind."""


@dataclass(frozen=True)
class Origin:
    """Where an entry was read: the file, its line, and whether it ships with mlsysim."""

    path: str
    line: int | None
    builtin: bool

    def __str__(self) -> str:
        where = Path(self.path).name if self.builtin else self.path
        where = where if self.line is None else f"{where}:{self.line}"
        return f"built-in {where}" if self.builtin else where


@dataclass(frozen=True)
class _Raw:
    """One entry as read from a file, not yet validated."""

    kind: Kind
    path: tuple[str, ...]
    table: dict[str, object]
    origin: Origin
    lines: dict[tuple[str, ...], int]


# -- the catalog: raw tables by kind, validated entries on demand ----------------------------


class Catalog:
    """Every registry entry: read from the built-in files (once), plus users' files."""

    def __init__(self) -> None:
        self._raw: dict[str, dict[tuple[str, ...], _Raw]] | None = None
        self._built: dict[tuple[str, tuple[str, ...]], Entry] = {}
        self._building: set[tuple[str, tuple[str, ...]]] = set()
        self.roots: dict[str, Registry[Entry]] = {}

    # reading

    def _tables(self) -> dict[str, dict[tuple[str, ...], _Raw]]:
        if self._raw is None:
            raw: dict[str, dict[tuple[str, ...], _Raw]] = {name: {} for name in KINDS}
            folder = files("mlsysim.data").joinpath("registry")
            for name in BUILTIN_FILES:
                shown = f"mlsysim/data/registry/{name}"
                text = _text_of(folder.joinpath(name), shown)
                for entry in _read(text, shown, builtin=True):
                    raw[entry.kind.name][entry.path] = entry
            self._raw = raw
        return self._raw

    def load(self, path: str | os.PathLike[str]) -> list[str]:
        """Add or replace entries from a user's TOML file; validate them all; their names."""
        entries = _read(_text_of(Path(path), str(path)), str(path), builtin=False)
        raw = self._tables()
        saved = {name: dict(tables) for name, tables in raw.items()}
        try:
            for entry in entries:
                self._check_unambiguous(entry)
                raw[entry.kind.name][entry.path] = entry
            self._forget()
            for entry in entries:
                self.entry(entry.kind.name, ".".join(entry.path))
        except BaseException:
            self._raw = saved
            self._forget()
            raise
        return [f"{e.kind.name}.{'.'.join(e.path)}" for e in entries]

    def _check_unambiguous(self, entry: _Raw) -> None:
        """A new entry may not reuse the leaf name of another entry of its kind."""
        for path, other in self._tables()[entry.kind.name].items():
            if path != entry.path and path[-1].lower() == entry.path[-1].lower():
                raise _error(
                    entry,
                    (),
                    f"the name {entry.path[-1]!r} is already taken by "
                    f"{entry.kind.name}.{'.'.join(path)} ({other.origin}); "
                    "use the same path to replace it, or another name",
                )

    def reset(self) -> None:
        """Back to the built-in entries only (users' files forgotten); a no-op when none was loaded."""
        raw = self._raw
        if raw is None or all(e.origin.builtin for t in raw.values() for e in t.values()):
            return
        self._raw = None
        self._forget()

    def _forget(self) -> None:
        self._built.clear()
        for root in self.roots.values():
            root._reset()

    # looking up and building

    def paths(self, kind: str) -> list[tuple[str, ...]]:
        return list(self._tables()[kind])

    def origin(self, kind: str, path: tuple[str, ...]) -> Origin:
        return self._tables()[kind][path].origin

    def find(self, kind: str, name: str) -> tuple[str, ...]:
        """The path of the entry of ``kind`` named by a dotted path or leaf, case-insensitive."""
        tables = self._tables()[kind]
        key = name.strip().lower()
        for path in tables:
            if ".".join(path).lower() == key:
                return path
        for path in tables:
            if path[-1].lower() == key:
                return path
        names = typed_names(".".join(p) for p in tables)
        raise UnknownNameError(unknown(name, f"{kind} entry", names))

    def entry(self, kind: str, name: str) -> Entry:
        """The validated entry of ``kind`` named ``name`` (built once, then cached)."""
        path = self.find(kind, name)
        key = (kind, path)
        built = self._built.get(key)
        if built is None:
            raw = self._tables()[kind][path]
            if key in self._building:
                raise _error(raw, (), "refers to itself through its references")
            self._building.add(key)
            try:
                built = self._built[key] = _build(self, raw)
            finally:
                self._building.discard(key)
        return built

    def root(self, name: str, doc: str) -> Registry[Entry]:
        """The registry named ``name`` (Hardware, Systems, ...), filled from its kinds on first use."""

        def fill(registry: Registry[Entry]) -> None:
            for kind in KINDS.values():
                if kind.root == name:
                    for path in self.paths(kind.name):
                        registry._put(kind.prefix + path, Pending(self, kind.name, path))

        root = self.roots[name] = Registry(name, doc, fill)
        return root

    def listing(self) -> Iterator[tuple[str, str, Entry, Origin]]:
        """(kind, dotted path, entry, origin) of every entry, kind by kind, in file order."""
        for kind in KINDS:
            for path in self.paths(kind):
                dotted = ".".join(path)
                yield kind, dotted, self.entry(kind, dotted), self.origin(kind, path)


class _Readable(Protocol):
    """A file in the package (``importlib.resources``) or on disk (``pathlib.Path``)."""

    def read_text(self, encoding: str | None = None) -> str: ...


def _text_of(source: _Readable, shown: str) -> str:
    """The text of a registry file; an unreadable one is named (``shown``) with the reason."""
    try:
        return source.read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ScenarioFileError(f"cannot read the registry file ({reason})", path=shown) from None


def _read(text: str, path: str, *, builtin: bool) -> list[_Raw]:
    """The entries of one registry file; structural mistakes name the file and line."""
    from mlsysim.core.tomlfile import parse_toml  # the one TOML reader with key lines

    data, lines = parse_toml(text, Path(path))
    out: list[_Raw] = []
    for kind_name, groups in data.items():
        kind = KINDS.get(kind_name)
        if kind is None:
            raise ScenarioFileError(
                f"unknown kind of registry entry; known: {', '.join(KINDS)}",
                path=path,
                line=_first_line(lines, (kind_name,)),
                loc=(kind_name,),
            )
        for entry_path, table in _entry_tables(kind, (), groups, path, lines):
            line = lines.get((kind_name, *entry_path))
            out.append(_Raw(kind, entry_path, table, Origin(path, line, builtin), lines))
    return out


def _entry_tables(
    kind: Kind, above: tuple[str, ...], value: object, path: str, lines: dict[tuple[str, ...], int]
) -> Iterator[tuple[tuple[str, ...], dict[str, object]]]:
    """(path, table) of each entry below ``kind.name``, at its kind's depth."""
    shape = ".".join((kind.name, *(["<group>"] * kind.group_depth), "<Name>"))
    if not isinstance(value, dict):
        raise ScenarioFileError(
            f"expected tables [{shape}] below it, got {value!r}",
            path=path,
            line=_first_line(lines, (kind.name, *above)),
            loc=(kind.name, *above),
        )
    for name, inner in value.items():
        here = (*above, name)
        if not name.isidentifier():
            raise ScenarioFileError(
                "a registry name must be a Python identifier (letters, digits, _)",
                path=path,
                line=_first_line(lines, (kind.name, *here)),
                loc=(kind.name, *here),
            )
        if len(above) < kind.group_depth:
            yield from _entry_tables(kind, here, inner, path, lines)
        elif isinstance(inner, dict):
            yield here, inner
        else:
            raise ScenarioFileError(
                f"an entry is a table [{shape}]; got {name} = {inner!r} at this level",
                path=path,
                line=_first_line(lines, (kind.name, *above)),
                loc=(kind.name, *above),
            )


def _first_line(lines: dict[tuple[str, ...], int], prefix: tuple[str, ...]) -> int | None:
    """The first line that names ``prefix`` or a key below it."""
    found = [n for path, n in lines.items() if path[: len(prefix)] == prefix]
    return min(found) if found else None


def _line(lines: dict[tuple[str, ...], int], path: tuple[str, ...]) -> int | None:
    """The line of ``path``, or of its longest known prefix (the table of an inner field)."""
    for i in range(len(path), 0, -1):
        if path[:i] in lines:
            return lines[path[:i]]
    return None


def _error(raw: _Raw, field_path: tuple[str, ...], message: str) -> ScenarioFileError:
    """``file:line: kind.entry.field: message`` for a mistake in one entry."""
    loc = (raw.kind.name, *raw.path, *field_path)
    return ScenarioFileError(message, path=raw.origin.path, line=_line(raw.lines, loc), loc=loc)


_FIGURE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s+(\S.*?)\s*$")


def parse_figure(text: str) -> Quantity:
    """``"450 GB/s"`` -> ``Q_(450, "GB/s")``: the number as written (an int stays an int), then its unit.

    Text of another shape goes to :func:`~mlsysim.core.units.parse_quantity`;
    unreadable text raises :class:`~mlsysim.UnitsError`.
    """
    from mlsysim.core.units import parse_quantity, quantity

    found = _FIGURE.match(text)
    if found is None:
        return parse_quantity(text)
    number, unit_text = found.groups()
    magnitude = float(number) if any(c in number for c in ".eE") else int(number)
    try:
        return quantity(magnitude, unit_text)
    except Exception:  # pint raises many unrelated types on a bad unit; parse_quantity names it
        return parse_quantity(text)


def _build(catalog: Catalog, raw: _Raw) -> Entry:
    """Validate one entry's table into its type; errors name the file, line and field."""
    kind = raw.kind
    table = dict(raw.table)
    choice = table.pop("kind", "default") if len(kind.types) > 1 else "default"
    if choice not in kind.types:
        names = ", ".join(k for k in kind.types if k != "default")
        raise _error(raw, ("kind",), f"expected one of {names}, got {choice!r}")
    cls = kind.type_for(choice)
    for key, target in kind.references.items():
        if key in table:
            named = table[key]
            if not isinstance(named, str):
                raise _error(
                    raw, (key,), f"expected the name of a {target} entry, got {named!r}"
                )
            try:
                table[key] = catalog.entry(target, named)
            except UnknownNameError as exc:
                raise _error(raw, (key,), str(exc)) from None
    for key, (reference, attribute) in kind.derived.items():
        if key not in table and table.get(reference) is not None:
            value = table[reference]
            for part in attribute.split("."):
                value = getattr(value, part)
            table[key] = value
    declared = getattr(cls, "model_fields", {})
    text_fields = _text_fields(cls)
    for key, value in list(table.items()):
        if key in declared and key not in text_fields and key not in kind.references:
            table[key] = _figures(raw, (key,), value)
    table.setdefault("name", raw.path[-1])
    try:
        return cls(**table)
    except InputError as exc:
        raise _error(raw, exc.loc, exc.message) from None


def _figures(raw: _Raw, where: tuple[str, ...], value: object) -> object:
    """Text figures (``"450 GB/s"``) as Quantities, inside tables too; other values as they are."""
    if isinstance(value, str):
        try:
            return parse_figure(value)
        except InputError as exc:
            raise _error(raw, where, exc.message) from None
    if isinstance(value, dict):
        return {
            k: v if k in _TEXT_KEYS else _figures(raw, (*where, k), v) for k, v in value.items()
        }
    return value


_TEXT_KEYS = frozenset(("name", "source", "note"))
"""Keys of inner tables (an accelerator's ``nvlink``) that hold text, not figures."""


def _text_fields(cls: type) -> set[str]:
    """The fields of ``cls`` that hold text (``str`` or ``str | None``), not figures."""
    fields: dict[str, FieldInfo] = getattr(cls, "model_fields", {})
    return {name for name, f in fields.items() if f.annotation in (str, str | None)}


CATALOG = Catalog()
"""The one catalog of the process: built-in entries, plus what :func:`load_registry` added."""


def load_registry(path: str | os.PathLike[str]) -> list[str]:
    """Add or replace registry entries from a TOML file; returns the entries it names.

    The file has the format of the built-in data files (one table per entry,
    under its kind: ``[accelerators.<Group>.<Name>]``, ``[nodes.<Name>]``,
    ``[fabrics.<Name>]``, ``[prices.<Group>.<Name>]``, ``[models.<Group>.<Name>]``,
    ``[grids.<Name>]``, ``[failures.<Name>]``).
    An entry with the path of an existing one replaces it (entries that refer
    to it, such as the nodes of a replaced accelerator, follow); every entry of
    the file is validated now, and a mistake raises
    :class:`~mlsysim.ScenarioFileError` naming the file, the line and the field
    (the registries are then as they were before the call).
    """
    return CATALOG.load(path)


def reset_registry() -> None:
    """Forget the entries added by :func:`load_registry`; back to the built-in data."""
    CATALOG.reset()
