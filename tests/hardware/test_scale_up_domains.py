"""Scale-up (NVLink) domains: the nodes of issue 32 and the domain a node's accelerators share."""

from __future__ import annotations

import pytest

from mlsysim import Hardware, InputError, Systems, ureg
from mlsysim.hardware.types import Node

NODES = Systems.Nodes


def test_the_new_nodes_load_with_their_accelerators_and_fabrics() -> None:
    assert NODES.HGX_H800.accelerator == Hardware.Cloud.H800
    assert NODES.GB200_NVL72.accelerator == Hardware.Cloud.GB200
    assert NODES.GB300_NVL72.accelerator == Hardware.Cloud.GB300
    assert NODES.HGX_H800.intra_fabric == Systems.Fabrics.NVLink4_H800
    assert NODES.GB200_NVL72.nic_fabric == Systems.Fabrics.InfiniBand_NDR
    assert NODES.GB300_NVL72.nic_fabric == Systems.Fabrics.InfiniBand_XDR


def test_domain_sizes() -> None:
    # an 8-GPU server is its own domain; an NVL72 rack joins 18 trays of 4 GPUs
    for name in ("HGX_H800", "DGX_H100", "DGX_B200", "HGX_B200", "DGX_A100"):
        node = getattr(NODES, name)
        assert node.scale_up_domain is None
        assert node.domain_size == node.accelerators_per_node == 8 and node.nodes_per_domain == 1
    for name in ("GB200_NVL72", "GB300_NVL72"):
        node = getattr(NODES, name)
        assert (node.accelerators_per_node, node.scale_up_domain, node.domain_size) == (4, 72, 72)
        assert node.nodes_per_domain == 18 and node.nics_per_node == 4


def test_per_direction_bandwidths() -> None:
    gb = ureg.Quantity
    # H800: 400 GB/s both directions, 200 per direction; NVLink 5: 1.8 TB/s, 900 per direction
    assert NODES.HGX_H800.intra_node_bw == gb(200, "GB/s") == Hardware.Cloud.H800.nvlink.bandwidth_per_direction
    assert Systems.Fabrics.NVLink4_H800.bandwidth == gb(200, "GB/s")
    for name in ("GB200_NVL72", "GB300_NVL72", "DGX_B200"):
        node = getattr(NODES, name)
        assert node.intra_node_bw == gb(900, "GB/s")
        assert 2 * node.intra_node_bw == node.accelerator.nvlink.bandwidth == gb(1800, "GB/s")
    # compute NICs, per NIC per direction: 400 Gb/s ConnectX-7, 800 Gb/s ConnectX-8
    assert NODES.HGX_H800.nics_per_node == 8 and NODES.HGX_H800.nic_bandwidth == gb(400, "Gbps")
    assert NODES.GB200_NVL72.nic_bandwidth == gb(400, "Gbps")
    assert NODES.GB300_NVL72.nic_bandwidth == gb(800, "Gbps")
    assert NODES.DGX_B200.nics_per_node == 8 and NODES.DGX_B200.nic_bandwidth == gb(400, "Gbps")


@pytest.mark.parametrize("domain", [2, 6, 10, 0])
def test_a_domain_is_whole_nodes(domain: int) -> None:
    base = NODES.GB200_NVL72.model_dump()
    base.update(accelerator=NODES.GB200_NVL72.accelerator, scale_up_domain=domain)
    with pytest.raises(InputError) as caught:
        Node(**base)
    assert caught.value.errors()[0]["loc"][-1] == "scale_up_domain"


def test_a_domain_of_whole_nodes_is_accepted() -> None:
    base = NODES.GB200_NVL72.model_dump()
    base.update(accelerator=NODES.GB200_NVL72.accelerator, scale_up_domain=36)
    assert Node(**base).domain_size == 36 and Node(**base).nodes_per_domain == 9
