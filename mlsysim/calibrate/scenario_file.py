"""Write a calibrated link into a TOML scenario file.

It touches only the two keys of one link, so it also works on a partial file
(a cluster's link figures kept apart from any job); parsing and the atomic
write are the shared ones of :mod:`mlsysim.engine.io.files`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import tomli_w

from mlsysim.calibrate.fit import Link
from mlsysim.core.exceptions import InputError
from mlsysim.core.fileio import read_text
from mlsysim.core.tomlfile import parse_toml
from mlsysim.core.units import to_canonical
from mlsysim.engine.io.files import write_text_atomically

LINKS = ("intra", "inter")


def write_link(path: str | Path, link: Link, which: str) -> dict[str, str]:
    """Set ``<which>_bandwidth`` and ``<which>_latency`` in the TOML file at ``path``.

    Values are written as text with units (``"371.2 GB/s"``, ``"2.3 us"``), as
    scenario files spell them. The keys go where the file keeps its inputs: at
    the top level, or in the one table that already holds ``<which>_bandwidth``
    or ``devices_per_node``. A missing file is created with just these keys.
    The file is rewritten atomically (a temporary file in the same folder, then
    ``os.replace``); comments and formatting are not kept. Returns the values
    written.

    The link is marked as measured: ``measured_links`` of the file's
    ``[assumptions]`` gains ``which`` (a preset name given as text becomes
    ``preset = ...`` in that table), so the bandwidth, an achieved figure, is
    not multiplied by a preset's link efficiency again.
    """
    if which not in LINKS:
        raise InputError(f"link: expected 'intra' or 'inter', got {which!r}", field="link")
    p = Path(path)
    data = _read(p)
    values = {
        f"{which}_bandwidth": f"{to_canonical(link.bandwidth, 'bandwidth') / 1e9:.6g} GB/s",
        f"{which}_latency": f"{to_canonical(link.latency, 'time') * 1e6:.6g} us",
    }
    table = _inputs_table(data, which)
    table.update(values)
    _mark_measured(table, which)
    write_text_atomically(p, tomli_w.dumps(data))
    return values


def _mark_measured(table: dict[str, object], which: str) -> None:
    """Add ``which`` to ``assumptions.measured_links`` of the inputs table."""
    current = _assumptions_of(table)
    listed = current.get("measured_links", [])
    # a TOML array; anything else that is not iterable raises TypeError in list() as before
    links = listed.split(",") if isinstance(listed, str) else list(cast("Iterable[object]", listed))
    if which not in links:
        links.append(which)
    current["measured_links"] = links
    _put_assumptions(table, current)


def _assumptions_of(table: dict[str, object]) -> dict[str, object]:
    """The ``assumptions`` of ``table`` as a table (a preset name given as text: ``{"preset": name}``)."""
    found = table.get("assumptions")
    if isinstance(found, str):
        return {"preset": found}
    if isinstance(found, dict):
        return found
    return {}


def _put_assumptions(table: dict[str, object], assumptions: dict[str, object]) -> None:
    """Set ``table``'s ``assumptions``, moved last (tables last, as TOML requires)."""
    table.pop("assumptions", None)
    table["assumptions"] = assumptions


def _read(path: Path) -> dict[str, object]:
    if not os.path.lexists(path):
        return {}
    return parse_toml(read_text(path), path)[0]


def _inputs_table(data: dict[str, object], which: str) -> dict[str, object]:
    """The table holding the scenario's inputs: the top level, or the one table that has them."""
    return _table_with(data, (f"{which}_bandwidth", "devices_per_node", "intra_bandwidth"))


def _table_with(data: dict[str, object], markers: tuple[str, ...]) -> dict[str, object]:
    """``data`` where it gives one of ``markers``, else the one table of it that does (``data`` where
    none or several do)."""
    if any(key in data for key in markers):
        return data
    tables = [
        value
        for value in data.values()
        if isinstance(value, dict) and any(key in value for key in markers)
    ]
    return tables[0] if len(tables) == 1 else data


def write_assumptions(path: str | Path, values: dict[str, float]) -> dict[str, float]:
    """Set ``values`` (``matmul_ceiling``, ``attention_ceiling``) in the ``[assumptions]`` of the TOML file
    at ``path``.

    The keys go into the assumptions of the table that holds the scenario's inputs (the top level, or
    the one table that gives ``workload``, ``node``, ``accelerator`` or ``devices_per_node``); a preset
    name given as text becomes ``preset = ...`` in that table; a missing file is created. Written
    atomically, like :func:`write_link`. Returns the values written.
    """
    p = Path(path)
    data = _read(p)
    table = _table_with(data, ("workload", "node", "accelerator", "devices_per_node", "assumptions"))
    current = _assumptions_of(table)
    current.update(values)
    _put_assumptions(table, current)
    write_text_atomically(p, tomli_w.dumps(data))
    return dict(values)
