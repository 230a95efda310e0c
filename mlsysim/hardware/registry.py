"""Hardware, fabric and price registries, read from ``mlsysim/data/registry/*.toml``.

Conventions (each entry's ``note`` repeats what applies to it):

* link bandwidths named ``bandwidth_per_direction`` and every fabric
  ``bandwidth`` are what ONE direction carries; NVLink ``bandwidth`` is the
  datasheet's figure, both directions added together;
* figures are nominal line rates and peak rates from datasheets and
  standards, not achieved throughput; the achieved fraction is a modeling
  choice (:class:`mlsysim.Assumptions`), calibrated by ``mlsysim calibrate``;
* peak compute is dense (structured sparsity never counted), per number
  format, and per GPU: figures a vendor quotes per superchip (GB200, GB300:
  two GPUs) or per NVL72 rack are divided, and the note shows how;
* compute units (SMs, CUs) are stored only where a document states the
  count enabled on the product;
* latencies are typical small-message figures, order of magnitude, to be
  replaced by a calibration where it matters.

The entries are validated into :mod:`mlsysim.hardware.types` on first use;
:func:`mlsysim.load_registry` adds a user's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from mlsysim.core.registry import CATALOG, Registry

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator, FailureRate, GridIntensity, Price

# each root holds the types its kinds are validated into (mlsysim.core.registry.KINDS)
Hardware = cast("Registry[Accelerator]", CATALOG.root("Hardware", "Accelerators: ``Hardware.Cloud.H100``."))
Systems: Registry = CATALOG.root(  # Node | Fabric once mlsysim.validation reads its nodes from Systems.Nodes
    "Systems", "Nodes and fabrics: ``Systems.Nodes.DGX_H100``, ``Systems.Fabrics.Ethernet_10G``."
)
Infrastructure = cast("Registry[Price | GridIntensity | FailureRate]", CATALOG.root(
    "Infrastructure",
    "Prices: ``Infrastructure.Pricing.Cloud.GpuTrainingPerHour.rate``.",
))
