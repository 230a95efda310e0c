"""The links of a scenario's registry node and fabric, as the constants its layout's terms price collectives with
(:class:`~mlsysim.physics.records.LinkCurves`): the measured size curves of :mod:`mlsysim.kernels.collectives`
and DeepEP's dispatch fit of :mod:`mlsysim.kernels.dispatch`, with the registry's rates and latencies of the
links they are for (``Assumptions(collectives="measured")``; docs/parallelism.md, "Measured collectives")."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mlsysim.kernels.collectives import (
    NVLS_ARCHITECTURES,
    CollectiveConstants,
    link_kind,
    shipped_constants,
)
from mlsysim.kernels.dispatch import shipped_constants as dispatch_constants
from mlsysim.physics.records import LinkCurves

if TYPE_CHECKING:
    from mlsysim.core.units import Quantity
    from mlsysim.hardware.types import Fabric, Node



def link_curves(
    node: Node, *, fabric: Fabric | None = None, domain: float | None = None,
    constants: CollectiveConstants | None = None,
) -> LinkCurves | None:
    """The measured curves of a registry ``node``'s links, as the scenario's terms read them
    (:class:`~mlsysim.physics.records.LinkCurves`): its architecture's ring efficiency and latencies, NVLink
    SHARP's at the level of its NVLink domain of ``domain`` devices (None: the node's; above the node's
    accelerators: an NVL72 rack), the fabric between domains (``fabric``: a registry fabric the scenario names,
    else the node's NICs) and the curve's shape; with the registry's rates and latencies of those links, the
    figures the curves price (a link given otherwise is priced at its own, alpha-beta). ``constants``: a cluster
    file's fits (None: the shipped ones). None where no fitted table covers the node's architecture over NVLink:
    the scenario then prices every collective alpha-beta at its links' rates (``explain`` prints those rows).
    """
    constants = constants or shipped_constants()
    accelerator = node.accelerator
    architecture = accelerator.architecture
    up = constants.scale_up.get(architecture or "")
    if up is None:
        return None
    per_node = float(node.accelerators_per_node)
    size = float(node.domain_size) if domain is None or domain != domain else float(domain)
    level = "nvl72" if size > per_node else "nvlink"
    nvls = constants.nvls.get(f"{architecture}/{level}")
    link = link_kind(fabric if fabric is not None else node.nic_fabric)
    out = constants.scale_out.get(link) if link is not None else None
    out_rate = out_latency = math.nan
    if fabric is not None:
        out_rate, out_latency = _si(fabric.bandwidth, "B/s"), _si(fabric.latency, "s")
    elif node.nic_fabric is not None:
        out_rate, out_latency = _si(node.nic_bandwidth, "B/s"), _si(node.nic_fabric.latency, "s")
    deepep = dispatch_constants()
    deepep_up, deepep_latency = deepep.up.get(architecture or ""), deepep.latency.get("normal")
    deepep_out = deepep.out.get(link) if link is not None else None
    common = constants.common
    where = f"{architecture} {'NVL72' if level == 'nvl72' else 'NVLink'}" + (
        f", {link}" if out is not None else f"; {link or 'no fabric'} between domains: no fit, alpha-beta")
    return LinkCurves(
        ring_efficiency=up["ring_efficiency"].value,
        nvls_efficiency=nvls.value if nvls is not None and architecture in NVLS_ARCHITECTURES else math.nan,
        base_latency=up["base_latency"].value, step_latency=common["step_latency"].value,
        out_efficiency=out["efficiency"].value if out is not None else math.nan,
        out_step_latency=out["step_latency"].value if out is not None else math.nan,
        half_size=common["half_size"].value, sharpness=common["sharpness"].value,
        up_rate=_si(node.intra_node_bw, "B/s"),
        up_latency=_si(node.intra_latency, "s") if node.intra_latency is not None else 0.0,
        out_rate=out_rate, out_latency=out_latency,
        dispatch_efficiency=deepep_up.value if deepep_up is not None else math.nan,
        dispatch_out_efficiency=deepep_out.value if deepep_out is not None else math.nan,
        dispatch_latency=deepep_latency.value if deepep_latency is not None else math.nan,
        source=f"{where} (fits on nccl-tests tables, mlsysim/data/kernel_fits/collectives.json; "
               "DeepEP's dispatch: dispatch.json)",
    )


def _si(value: Quantity, unit: str) -> float:
    return float(value.to(unit).magnitude)
