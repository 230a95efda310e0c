"""Presets: registry entries (``node``, ``fabric``, ``accelerator``) that fill other inputs.

A preset is checked like any input (an entry, or its registry name), and then
stands for the figures it fills (:func:`preset_figures`): a node its devices,
its link inside, its NICs, its accelerator and its price; a fabric the
inter-node link's bandwidth and latency; an accelerator the device's memory,
memory bandwidth and power (its TDP). Which preset wins where two fill the same input, and
how an explicit value beats a preset, is the one precedence rule of
:mod:`mlsysim.engine.inputs.layers`.

This module sits below the field table: it imports the registries (lazily)
and nothing of the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, cast

from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.core.units import to_canonical

if TYPE_CHECKING:
    from mlsysim.core.registry import Registry
    from mlsysim.core.units import Quantity
    from mlsysim.hardware.types import Accelerator, Fabric, Node

PRESETS: Final = ("fabric", "node", "accelerator")
"""Inputs that fill other inputs from a registry entry, in the order they fill: a fabric
given beside a node sets the inter-node link before the node's own NICs would."""


def _registry(kind: str) -> tuple[Registry, type]:
    from mlsysim.hardware.registry import Hardware, Systems
    from mlsysim.hardware.types import Accelerator, Fabric, Node

    return {
        "node": (Systems.Nodes, Node),
        "fabric": (Systems.Fabrics, Fabric),
        "accelerator": (Hardware, Accelerator),
    }[kind]


def preset_name(kind: str, entry: object) -> str:
    """The registry name of a ``node``, ``fabric`` or ``accelerator`` entry (``"DGX_H100"``)."""
    registry, _ = _registry(kind)
    for path, value in registry.walk():
        if value is entry or value == entry:
            return str(path.rsplit(".", 1)[-1])
    return str(getattr(entry, "name", entry))


def preset_names(kind: str) -> list[str]:
    """The registry names a preset input takes (``["DGX_H100", ...]``)."""
    registry, _ = _registry(kind)
    return [str(path.rsplit(".", 1)[-1]) for path, _ in registry.walk()]


def preset_label(kind: str, entry: object) -> str:
    """``"node DGX_H100"``: how origins and notes name a preset."""
    return f"{kind} {preset_name(kind, entry)}"


def _lookup(kind: str, value: object) -> object:
    """A registry entry of ``kind``, given as itself or by name (bare errors)."""
    registry, cls = _registry(kind)
    if isinstance(value, str):
        text = value.strip()
        try:  # the name as typed, else its last part (``Systems.Nodes.DGX_H100``)
            value = registry.get(text)
        except UnknownNameError as exc:
            try:
                value = registry.get(text.rsplit(".", 1)[-1])
            except UnknownNameError:
                raise InputError(str(exc)) from None  # the error of the whole name: 'p5.48xlarge
    if not isinstance(value, cls):
        example = next(path.rsplit(".", 1)[-1] for path, _ in registry.walk())
        raise InputError(
            f"expected a {cls.__name__} registry entry or its name (e.g. {example!r}), got {value!r}"
        )
    return value


def check_node(value: object) -> Node:
    """A node registry entry (``Systems.Nodes.DGX_H100`` or ``"DGX_H100"``)."""
    return cast("Node", _lookup("node", value))


def check_fabric(value: object) -> Fabric:
    """A fabric registry entry (``Systems.Fabrics.InfiniBand_NDR`` or ``"InfiniBand_NDR"``)."""
    return cast("Fabric", _lookup("fabric", value))


def check_accelerator(value: object) -> Accelerator:
    """An accelerator registry entry (``Hardware.Cloud.H100`` or ``"H100"``)."""
    return cast("Accelerator", _lookup("accelerator", value))


CHECKS: Final = {"node": check_node, "fabric": check_fabric, "accelerator": check_accelerator}
"""The check of each preset input."""


def fabric_named(text: str) -> Fabric | None:
    """The fabric registry entry named ``text`` (``"InfiniBand_NDR"``), or None."""
    try:
        return check_fabric(text)
    except InputError:
        return None


def node_hour_rate(node: Node) -> Quantity | None:
    """The price of one hour of ``node`` where the price registry has one, else None."""
    price = getattr(node, "price", None)
    return None if price is None else price.rate


def preset_figures(kind: str, entry: object) -> dict[str, tuple[object, str]]:
    """The inputs a preset fills: ``{input: (value, origin)}``, in the order they fill.

    * fabric: ``inter_bandwidth`` and ``inter_latency``;
    * node: ``devices_per_node``, ``intra_bandwidth``, ``intra_latency``,
      ``nics_per_node``, ``accelerator``, ``node_hour_rate`` (where the price
      registry has one), and its NICs' ``inter_bandwidth`` and
      ``inter_latency`` (where it states their fabric); its accelerator then
      fills what an accelerator fills, unless one is given;
    * accelerator: ``device_memory``, ``memory_bandwidth`` and ``device_power`` (its
      datasheet TDP, where the registry has it).
    """
    label = preset_label(kind, entry)
    return {name: (value, label + how) for name, (value, how) in _preset_values(kind, entry).items()}


def _preset_values(kind: str, entry: object) -> dict[str, tuple[object, str]]:
    """:func:`preset_figures` without the entry's registry name: ``{input: (value, how)}``,
    ``how`` the words added to the origin (``" (its NICs)"``)."""
    if kind == "fabric":
        fabric = cast("Fabric", entry)
        return {"inter_bandwidth": (fabric.bandwidth, ""), "inter_latency": (fabric.latency, "")}
    if kind == "accelerator":
        accelerator = cast("Accelerator", entry)
        filled: dict[str, tuple[object, str]] = {
            "device_memory": (accelerator.memory.capacity, ""),
            "memory_bandwidth": (accelerator.memory.bandwidth, ""),
        }
        if accelerator.power is not None:  # its datasheet TDP (docs/whole_run.md)
            filled["device_power"] = (accelerator.power.tdp, " (its TDP)")
        return filled
    node = cast("Node", entry)
    figures: dict[str, tuple[object, str]] = {}
    for name, value in (
        ("devices_per_node", node.accelerators_per_node),
        ("intra_bandwidth", node.intra_node_bw),
        ("intra_latency", getattr(node, "intra_latency", None)),
        ("nics_per_node", node.nics_per_node),
        ("scale_up_domain", getattr(node, "scale_up_domain", None)),
        ("accelerator", node.accelerator),
        ("node_hour_rate", node_hour_rate(node)),
    ):
        if value is not None:
            figures[name] = (value, "")
    nic = getattr(node, "nic_fabric", None)
    if nic is not None:
        figures["inter_bandwidth"] = (node.nic_bandwidth, " (its NICs)")
        figures["inter_latency"] = (nic.latency, " (its NICs)")
    return figures


def preset_fills(kind: str, entry: object) -> frozenset[str]:
    """Every input a preset may fill (a node: with what its accelerator fills).

    Read by the precedence rule at every ``variant``: the registry is not searched
    for the entry's name here (that is only for the origins).
    """
    names = set(_preset_values(kind, entry))
    if kind == "node":
        names |= set(_preset_values("accelerator", cast("Node", entry).accelerator))
    return frozenset(names)


def node_figures(node: Node, precision: str = "bf16", math_efficiency: float = 0.5) -> dict[str, float]:
    """The ``cluster`` inputs of :func:`~mlsysim.physics.layout.layout_figures` from a registry node.

    Peak FLOP/s at ``precision``, HBM bandwidth, the per-device intra-node link,
    one NIC's rate and their count, all per direction, SI units; and ``math_efficiency``
    u, the model FLOPs utilisation of one device's step (``mfu``; an assumption: published
    runs report 0.38-0.54 for a whole job).
    """
    acc = node.accelerator
    return {
        "devices_per_node": float(node.accelerators_per_node),
        "peak_flops": to_canonical(acc.peak_flops(precision), "compute_rate"),
        "math_efficiency": float(math_efficiency),
        "memory_bandwidth": to_canonical(acc.memory.bandwidth, "bandwidth"),
        "intra_bandwidth": to_canonical(node.intra_node_bw, "bandwidth"),
        "nic_bandwidth": to_canonical(node.nic_bandwidth, "bandwidth"),
        "nics_per_node": float(node.nics_per_node),
    }
