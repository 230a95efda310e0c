"""Registry of workloads, read from ``mlsysim/data/registry/models.toml``.

Parameter counts are the figures the cited source states; where the source
gives a rounded figure (GPT-2's "1.5B"), that rounded figure is the entry.
Forward FLOPs per sample count a multiply-add as two operations. Entries are
validated into :mod:`mlsysim.models.types` on first use;
:func:`mlsysim.load_registry` adds a user's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from mlsysim.core.registry import CATALOG, Registry

if TYPE_CHECKING:
    from mlsysim.models.types import Workload

Models = cast("Registry[Workload]", CATALOG.root(
    "Models", "All workloads: ``Models.Language.GPT2``, ``Models.Vision.ResNet50``."
))  # validated into Workload (and its TransformerWorkload), as mlsysim.core.registry.KINDS says


def registry_name(workload: object) -> str | None:
    """The registry path of a workload (``"Language.GPT2"``), or None for one not in the registry."""
    for path, entry in Models.walk():
        if entry == workload:
            return str(path)
    return None
