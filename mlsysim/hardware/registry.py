"""Hardware, fabric and price registries.

Conventions (each entry's ``note`` repeats what applies to it):

* link bandwidths named ``bandwidth_per_direction`` and every fabric
  ``bandwidth`` are what ONE direction carries; NVLink ``bandwidth`` is the
  datasheet's figure, both directions added together;
* figures are nominal line rates from datasheets and standards, not achieved
  throughput; the achieved fraction is a modeling choice
  (:class:`mlsysim.Assumptions`), calibrated by ``mlsysim calibrate``;
* latencies are typical small-message figures, order of magnitude, to be
  replaced by a calibration where it matters.
"""

from __future__ import annotations

from mlsysim.core.registry import Registry
from mlsysim.core.units import quantity
from mlsysim.hardware.types import Accelerator, Fabric, Interconnect, Memory, Node, Price


def _link(name: str, per_direction_GBps: float, *, source: str, note: str) -> Interconnect:
    return Interconnect(
        name=name,
        bandwidth=quantity(2 * per_direction_GBps, "GB/s"),
        bandwidth_per_direction=quantity(per_direction_GBps, "GB/s"),
        source=source,
        note=note,
    )


def _fabric(
    name: str, value: float, unit: str, latency_us: float, *, source: str, note: str
) -> Fabric:
    return Fabric(
        name=name,
        bandwidth=quantity(value, unit),
        latency=quantity(latency_us, "us"),
        source=source,
        note=note,
    )


_ETHERNET_LATENCY_NOTE = (
    "latency: 10 us is an order-of-magnitude host-to-host figure for kernel TCP through one "
    "switch (RoCE is a few us); calibrate it for real use"
)
_IB_LATENCY_NOTE = (
    "latency: 1 us, order of magnitude of host-to-host RDMA latency through one switch "
    "(adapter datasheets state about 0.6 us port-to-port)"
)


class Fabrics(Registry):
    """Link technologies: per port, per direction, nominal line rate."""

    Ethernet_10G = _fabric(
        "10 Gb Ethernet",
        10,
        "Gbps",
        10,
        source="IEEE 802.3ae (10GBASE)",
        note="10 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    Ethernet_25G = _fabric(
        "25 Gb Ethernet",
        25,
        "Gbps",
        10,
        source="IEEE 802.3by (25GBASE)",
        note="25 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    Ethernet_40G = _fabric(
        "40 Gb Ethernet",
        40,
        "Gbps",
        10,
        source="IEEE 802.3ba (40GBASE)",
        note="40 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    Ethernet_100G = _fabric(
        "100 Gb Ethernet",
        100,
        "Gbps",
        10,
        source="IEEE 802.3ba / 802.3bj (100GBASE)",
        note="100 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    Ethernet_200G = _fabric(
        "200 Gb Ethernet",
        200,
        "Gbps",
        10,
        source="IEEE 802.3bs (200GBASE)",
        note="200 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    Ethernet_400G = _fabric(
        "400 Gb Ethernet",
        400,
        "Gbps",
        10,
        source="IEEE 802.3bs (400GBASE)",
        note="400 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    Ethernet_800G = _fabric(
        "800 Gb Ethernet",
        800,
        "Gbps",
        10,
        source="IEEE 802.3df (800GBASE)",
        note="800 Gbit/s per port per direction, nominal; " + _ETHERNET_LATENCY_NOTE,
    )
    InfiniBand_EDR = _fabric(
        "InfiniBand EDR",
        100,
        "Gbps",
        1,
        source="InfiniBand Trade Association roadmap (EDR, 4x lanes at 25 Gb/s)",
        note="100 Gbit/s per 4x port per direction, data rate; " + _IB_LATENCY_NOTE,
    )
    InfiniBand_HDR = _fabric(
        "InfiniBand HDR",
        200,
        "Gbps",
        1,
        source="InfiniBand Trade Association roadmap (HDR, 4x lanes at 50 Gb/s); NVIDIA ConnectX-6 datasheet",
        note="200 Gbit/s per 4x port per direction, data rate; " + _IB_LATENCY_NOTE,
    )
    InfiniBand_NDR = _fabric(
        "InfiniBand NDR",
        400,
        "Gbps",
        1,
        source="InfiniBand Trade Association roadmap (NDR, 4x lanes at 100 Gb/s); NVIDIA ConnectX-7 datasheet",
        note="400 Gbit/s per 4x port per direction, data rate; " + _IB_LATENCY_NOTE,
    )
    InfiniBand_XDR = _fabric(
        "InfiniBand XDR",
        800,
        "Gbps",
        1,
        source="InfiniBand Trade Association roadmap (XDR, 4x lanes at 200 Gb/s); NVIDIA ConnectX-8 SuperNIC datasheet",
        note="800 Gbit/s per 4x port per direction, data rate; " + _IB_LATENCY_NOTE,
    )
    NVLink2 = _fabric(
        "NVLink 2 (V100)",
        150,
        "GB/s",
        1,
        source="NVIDIA Tesla V100 GPU Architecture whitepaper",
        note="per GPU per direction: 6 links x 25 GB/s; latency order of magnitude",
    )
    NVLink3 = _fabric(
        "NVLink 3 (A100)",
        300,
        "GB/s",
        1,
        source="NVIDIA A100 Tensor Core GPU Architecture whitepaper",
        note="per GPU per direction: 12 links x 25 GB/s; latency order of magnitude",
    )
    NVLink4 = _fabric(
        "NVLink 4 (H100)",
        450,
        "GB/s",
        1,
        source="NVIDIA H100 Tensor Core GPU datasheet",
        note="per GPU per direction: 18 links x 25 GB/s (900 GB/s both directions); latency order of magnitude",
    )
    NVLink5 = _fabric(
        "NVLink 5 (B200)",
        900,
        "GB/s",
        1,
        source="NVIDIA DGX B200 datasheet; NVIDIA Blackwell architecture technical brief",
        note="per GPU per direction: 18 links x 50 GB/s (1.8 TB/s both directions); latency order of magnitude",
    )
    PCIe3_x16 = _fabric(
        "PCIe 3.0 x16",
        15.75,
        "GB/s",
        1,
        source="PCI-SIG, PCI Express Base Specification 3.0",
        note="per direction: 16 lanes x 8 GT/s x 128b/130b = 15.75 GB/s; latency order of magnitude",
    )
    PCIe4_x16 = _fabric(
        "PCIe 4.0 x16",
        31.5,
        "GB/s",
        1,
        source="PCI-SIG, PCI Express Base Specification 4.0",
        note="per direction: 16 lanes x 16 GT/s x 128b/130b = 31.5 GB/s; latency order of magnitude",
    )
    PCIe5_x16 = _fabric(
        "PCIe 5.0 x16",
        63.0,
        "GB/s",
        1,
        source="PCI-SIG, PCI Express Base Specification 5.0",
        note="per direction: 16 lanes x 32 GT/s x 128b/130b = 63 GB/s; latency order of magnitude",
    )


class Cloud(Registry):
    """Data-centre accelerators."""

    H100 = Accelerator(
        name="NVIDIA H100 SXM5 80GB",
        memory=Memory(capacity=quantity(80, "GB"), bandwidth=quantity(3.35, "TB/s")),
        nvlink=_link(
            "NVLink 4",
            450,
            source="NVIDIA H100 Tensor Core GPU datasheet",
            note="18 NVLink 4 links; 900 GB/s both directions, 450 GB/s per direction",
        ),
        peak_flops=quantity(989, "Tflop/s"),
        source="NVIDIA H100 Tensor Core GPU datasheet (SXM5)",
        note="memory per GPU; HBM3 bandwidth peak; peak_flops is dense BF16 tensor throughput (1979 with sparsity)",
    )
    A100 = Accelerator(
        name="NVIDIA A100 SXM4 80GB",
        memory=Memory(capacity=quantity(80, "GB"), bandwidth=quantity(2.039, "TB/s")),
        nvlink=_link(
            "NVLink 3",
            300,
            source="NVIDIA A100 Tensor Core GPU datasheet",
            note="12 NVLink 3 links; 600 GB/s both directions, 300 GB/s per direction",
        ),
        peak_flops=quantity(312, "Tflop/s"),
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB)",
        note="memory per GPU; HBM2e bandwidth peak; peak_flops is dense BF16 tensor throughput",
    )
    A100_40GB = Accelerator(
        name="NVIDIA A100 SXM4 40GB",
        memory=Memory(capacity=quantity(40, "GB"), bandwidth=quantity(1.555, "TB/s")),
        nvlink=_link(
            "NVLink 3",
            300,
            source="NVIDIA A100 Tensor Core GPU datasheet",
            note="12 NVLink 3 links; 600 GB/s both directions, 300 GB/s per direction",
        ),
        peak_flops=quantity(312, "Tflop/s"),
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB)",
        note="memory per GPU; HBM2 bandwidth peak; peak_flops is dense BF16 tensor throughput",
    )
    V100 = Accelerator(
        name="NVIDIA V100 SXM2 32GB",
        memory=Memory(capacity=quantity(32, "GB"), bandwidth=quantity(900, "GB/s")),
        nvlink=_link(
            "NVLink 2",
            150,
            source="NVIDIA Tesla V100 GPU Architecture whitepaper",
            note="6 NVLink 2 links of 25 GB/s per direction; 300 GB/s both directions",
        ),
        peak_flops=quantity(125, "Tflop/s"),
        source="NVIDIA Tesla V100 GPU Architecture whitepaper; NVIDIA V100 datasheet",
        note="memory per GPU (16 GB variant also sold); peak_flops is FP16 tensor-core throughput (SXM2)",
    )
    B200 = Accelerator(
        name="NVIDIA B200",
        memory=Memory(capacity=quantity(180, "GB"), bandwidth=quantity(8, "TB/s")),
        nvlink=_link(
            "NVLink 5",
            900,
            source="NVIDIA DGX B200 datasheet",
            note="18 NVLink 5 links; 1.8 TB/s both directions, 900 GB/s per direction",
        ),
        peak_flops=quantity(2250, "Tflop/s"),
        source="NVIDIA DGX B200 datasheet (1,440 GB of GPU memory over 8 GPUs)",
        note="memory per GPU in a DGX B200; HBM3e bandwidth peak; peak_flops is dense BF16 tensor throughput",
    )
    MI300X = Accelerator(
        name="AMD Instinct MI300X",
        memory=Memory(capacity=quantity(192, "GB"), bandwidth=quantity(5.3, "TB/s")),
        nvlink=_link(
            "Infinity Fabric",
            448,
            source="AMD Instinct MI300X accelerator datasheet",
            note="AMD Infinity Fabric, not NVLink: 7 links, 896 GB/s aggregate both directions, 448 GB/s per direction",
        ),
        peak_flops=quantity(1307.4, "Tflop/s"),
        source="AMD Instinct MI300X accelerator datasheet",
        note="memory per GPU; HBM3 bandwidth peak; peak_flops is dense BF16 matrix throughput",
    )


class Hardware(Registry):
    """Accelerators: ``Hardware.Cloud.H100``."""

    Cloud = Cloud


def _node(
    name: str,
    accelerator: Accelerator,
    count: int,
    nics: int,
    nic: Fabric,
    *,
    intra: Interconnect | None = None,
    source: str,
    note: str,
) -> Node:
    return Node(
        name=name,
        accelerator=accelerator,
        accelerators_per_node=count,
        intra_node_bw=(intra or accelerator.nvlink).bandwidth_per_direction,
        nics_per_node=nics,
        nic_bandwidth=nic.bandwidth,
        nic_fabric=nic,
        source=source,
        note=note,
    )


class Nodes(Registry):
    """Servers: accelerators per node, the link between them, and the compute NICs."""

    DGX_H100 = _node(
        "NVIDIA DGX H100",
        Cloud.H100,
        8,
        8,
        Fabrics.InfiniBand_NDR,
        source="NVIDIA DGX H100 datasheet",
        note="8x H100 over NVSwitch (450 GB/s per GPU per direction); 8x ConnectX-7 400 Gb/s compute NICs, one per GPU",
    )
    DGX_A100 = _node(
        "NVIDIA DGX A100",
        Cloud.A100,
        8,
        8,
        Fabrics.InfiniBand_HDR,
        source="NVIDIA DGX A100 datasheet",
        note="8x A100 over NVSwitch (300 GB/s per GPU per direction); 8x ConnectX-6 200 Gb/s compute NICs",
    )
    DGX_B200 = _node(
        "NVIDIA DGX B200",
        Cloud.B200,
        8,
        8,
        Fabrics.InfiniBand_NDR,
        source="NVIDIA DGX B200 datasheet",
        note="8x B200 over NVSwitch (900 GB/s per GPU per direction); 8x ConnectX-7 400 Gb/s compute ports",
    )
    HGX_B200 = _node(
        "NVIDIA HGX B200",
        Cloud.B200,
        8,
        8,
        Fabrics.InfiniBand_NDR,
        source="NVIDIA HGX platform datasheet (HGX B200)",
        note="8x B200 over NVSwitch (900 GB/s per GPU per direction); NIC count and rate depend on the server builder, 8x 400 Gb/s assumed",
    )
    DGX1_V100 = _node(
        "NVIDIA DGX-1 (V100)",
        Cloud.V100,
        8,
        4,
        Fabrics.InfiniBand_EDR,
        source="NVIDIA DGX-1 with Tesla V100 System Architecture whitepaper",
        note="8x V100 in a hybrid cube mesh, 6 NVLink 2 links per GPU (150 GB/s per direction); 4x 100 Gb/s EDR InfiniBand",
    )
    DGX2 = _node(
        "NVIDIA DGX-2",
        Cloud.V100,
        16,
        8,
        Fabrics.InfiniBand_EDR,
        source="NVIDIA DGX-2 datasheet",
        note="16x V100 32GB over NVSwitch (150 GB/s per GPU per direction); 8x 100 Gb/s EDR InfiniBand",
    )


class Systems(Registry):
    """Nodes and fabrics: ``Systems.Nodes.DGX_H100``, ``Systems.Fabrics.Ethernet_10G``."""

    Nodes = Nodes
    Fabrics = Fabrics


class CloudPricing(Registry):
    """Cloud prices."""

    GpuTrainingPerHour = Price(
        name="Cloud GPU training price",
        rate=quantity(4.0, "USD/hour"),
        source="mlsysim SPEC section 4 (the seed's cloud price assumption)",
        note="4 USD per GPU per hour, a round planning figure for an on-demand H100-class GPU; a node costs this times its GPUs",
    )


class Pricing(Registry):
    """Prices: ``Pricing.Cloud.GpuTrainingPerHour``."""

    Cloud = CloudPricing


class Infrastructure(Registry):
    """Infrastructure: ``Infrastructure.Pricing.Cloud.GpuTrainingPerHour.rate``."""

    Pricing = Pricing
