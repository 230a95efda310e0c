"""A small namespace type for registries: attribute access, iteration, look-up by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mlsysim.core.exceptions import UnknownNameError


class Registry:
    """A named group of registry entries (or of sub-groups).

    Entries are class attributes of a subclass; the subclass is used as the
    namespace itself (``Models.Language.GPT2``), and :func:`entries` lists them.
    """

    @classmethod
    def entries(cls) -> dict[str, Any]:
        """The entries of this group, by attribute name, in definition order."""
        return {
            name: value
            for name, value in vars(cls).items()
            if not name.startswith("_") and not isinstance(value, (classmethod, staticmethod))
        }

    @classmethod
    def walk(cls, prefix: str = "") -> Iterator[tuple[str, Any]]:
        """Every leaf entry, with its dotted path (``"Language.GPT2"``)."""
        for name, value in cls.entries().items():
            if isinstance(value, type) and issubclass(value, Registry):
                yield from value.walk(f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}", value

    @classmethod
    def get(cls, path: str) -> Any:
        """The entry at a dotted path or by its leaf name, case-insensitive.

        Raises :class:`UnknownNameError` listing the known names.
        """
        leaves = dict(cls.walk())
        lowered = {k.lower(): v for k, v in leaves.items()}
        by_leaf: dict[str, Any] = {}
        for k, v in leaves.items():
            by_leaf.setdefault(k.rsplit(".", 1)[-1].lower(), v)
        key = path.lower()
        if key in lowered:
            return lowered[key]
        if key in by_leaf:
            return by_leaf[key]
        raise UnknownNameError(f"unknown {cls.__name__} entry {path!r}; known: {', '.join(leaves)}")
