"""Cost of gradient AllReduce: volume per rank and alpha-beta time, per algorithm.

Every time here is affine in the message size M (bytes):
``t(M) = L + M * s`` with a startup part L (seconds) and a per-byte part s
(seconds per byte). Functions return the pair ``(L, s)`` so that callers can
cost one whole gradient, or many buckets of it, with the same numbers.

Sources:
* ring AllReduce volume 2(k-1)/k per rank, and the alpha-beta cost model:
  Thakur, Rabenseifner and Gropp 2005, "Optimization of Collective
  Communication Operations in MPICH", section 4 (ring/Rabenseifner
  reduce-scatter + all-gather); Patarasuk and Yuan 2009, "Bandwidth optimal
  all-reduce algorithms for clusters of workstations".
* bus bandwidth and the factor 2(n-1)/n: nccl-tests, doc/PERFORMANCE.md.
* hierarchical (intra reduce-scatter, inter AllReduce of each shard over the
  NIC rails, intra all-gather): Goyal et al. 2017, "Accurate, Large Minibatch
  SGD: Training ImageNet in 1 Hour", section 4; Jia et al. 2018, "Highly
  Scalable Deep Learning Training System with Mixed-Precision" (hierarchical
  all-reduce).
* double binary tree: Sanders, Speck and Traeff 2009, "Two-tree algorithms for
  full bandwidth broadcast, reduction and scan"; NCCL 2.4 (NVIDIA developer
  blog, "Massively Scale Your Deep Learning Training with NCCL 2.4", 2019).
"""

from __future__ import annotations

from typing import NamedTuple

from mlsysim.physics._array import Num, ceil, log2, maximum, minimum

TRANSPORT_EFFICIENCY: dict[str, float] = {"rdma": 1.0, "tcp": 0.5}
"""Fraction of the inter-node rate a transport keeps, relative to RDMA (a factor on ``inter_bandwidth``).

RDMA (InfiniBand, RoCE; GPUDirect) is the reference: NCCL reaches 96% of an
HDR NIC's line rate over it (NVIDIA/nccl issue 412), the figure the link
efficiency already stands for. Over TCP sockets NCCL moved about 6 GB/s of
AllReduce bus bandwidth per node on 100 Gb/s Ethernet (12.5 GB/s line rate)
with 8 processes per node on AWS p3dn (NVIDIA/nccl issue 398, NCCL 2.4.8):
0.48 of line rate, about half of RDMA's 0.96, hence 0.5. Horovod's own
figures show the same order of loss on 25 GbE (Sergeev and Del Balso 2018,
"Horovod: fast and easy distributed deep learning in TensorFlow": VGG-16
scaling 85% with RDMA, 62% with TCP).
"""

ALGORITHMS = ("ring", "hierarchical", "tree")
"""AllReduce algorithms across nodes; ``auto`` picks the fastest of these."""


class StageCost(NamedTuple):
    """The cost of one AllReduce stage: ``t(M) = startup + M * volume / rate``.

    ``startup`` in seconds (per message), ``volume`` bytes sent per byte of
    message, ``rate`` in bytes per second. Floats, or numpy arrays in a sweep.
    """

    startup: Num
    volume: Num
    rate: Num


RING_FACTOR_EQUATION = "f(k) = 2(k-1)/k"
"""The ring AllReduce volume factor, as :func:`ring_allreduce_factor` computes it."""


def ring_allreduce_factor(k: Num) -> Num:
    """Bytes each rank sends in a ring AllReduce, per byte of buffer: f(k) = 2(k-1)/k.

    A reduce-scatter then an all-gather, each moving (k-1)/k of the buffer per
    rank; f(1) = 0 (nothing to exchange). (Patarasuk and Yuan 2009.)
    """
    return 2.0 * (k - 1) / k


def intra_node_cost(
    devices_per_node: Num, bandwidth: Num, latency: Num = 0.0
) -> StageCost:
    """Cost of the AllReduce stage inside a node: ``(L, v, rate)``, the same for every algorithm.

    A ring reduce-scatter + all-gather over d devices moves v = f(d) bytes per
    byte of message, so ``t(M) = 2(d-1) alpha + M f(d) / B_intra``, zero for d = 1.
    With alpha = 0 this is the seed's ``intra_time = G * f(d) / intra_bandwidth``.
    """
    d = devices_per_node
    return StageCost(2.0 * (d - 1) * latency, ring_allreduce_factor(d), bandwidth)


INTRA_NODE_EQUATION = ("intra_bytes = G x f(d)", "2(d-1)")
"""(bytes per device, ring steps) of :func:`intra_node_cost`, in symbols."""

INTER_NODE_EQUATIONS: dict[str, tuple[str, str, str]] = {
    "ring": ("inter_bytes = G x f(n)  (flat ring over all n devices)", "2(n-1)", "inter_bytes"),
    "hierarchical": (
        "inter_bytes = (G / d) x f(N)  (each device's shard, ring over the N nodes)",
        "2(N-1)",
        "G f(N)",
    ),
    "tree": ("inter_bytes = 2 G / d  (shard up and down a double binary tree)", "2 ceil(log2 N)", "2 G"),
}
"""Per algorithm of :func:`inter_node_cost`: (bytes per device, latency steps, volume over
the NICs of a node), in symbols."""


def inter_node_cost(
    algorithm: str,
    devices_per_node: Num,
    nodes: Num,
    bandwidth: Num,
    nics: Num = 1,
    latency: Num = 0.0,
) -> StageCost:
    """Cost of the AllReduce stage across nodes: ``(L, v, rate)``, zero for one node.

    Each device sends ``M * v`` bytes across nodes and the stage takes
    ``t(M) = L + M * v / rate``. ``bandwidth`` is one NIC's rate; k = min(nics, d)
    NICs carry traffic in parallel (one rail per device at most), so
    rate = k * bandwidth. With n = d * N:

    * ``ring`` (the seed): a second ring over all n devices whose node-crossing
      edges ride the inter-node link: ``t = 2(n-1) alpha + M f(n) / (k B)``.
      With k = 1 and alpha = 0 this is the seed's ``G * f(n) / inter_bandwidth``.
    * ``hierarchical``: each device's 1/d shard is AllReduced over the N nodes,
      the d shards sharing k NICs: ``t = 2(N-1) alpha + (M/d) f(N) / (k B / d)``,
      i.e. per device v = f(N)/d and rate = k B / d.
    * ``tree``: the shard reduced then broadcast along a double binary tree,
      each half of it on one of the two trees:
      ``t = 2 ceil(log2 N) alpha + 2 (M/d) / (k B / d)``.
    """
    d, big_n = devices_per_node, nodes
    many = big_n > 1
    rate = minimum(nics, d) * bandwidth
    if algorithm == "ring":
        n = d * big_n
        return StageCost(2.0 * (n - 1) * latency * many, ring_allreduce_factor(n) * many, rate)
    if algorithm == "hierarchical":
        return StageCost(2.0 * (big_n - 1) * latency, ring_allreduce_factor(big_n) / d, rate / d)
    if algorithm == "tree":
        return StageCost(2.0 * ceil(log2(big_n)) * latency, 2.0 * many / d, rate / d)
    raise ValueError(f"unknown AllReduce algorithm {algorithm!r}; expected one of {ALGORITHMS}")


def stage_time(message_bytes: Num, cost: StageCost) -> Num:
    """``t(M) = L + M * v / rate`` for a stage cost ``(L, v, rate)``."""
    startup, volume, rate = cost
    return startup + message_bytes * volume / rate


BUCKETS_EQUATION = "m = ceil(G / b);  r = G - (m-1) b"
"""The bucket layout of :func:`bucket_layout`, in symbols."""


def bucket_layout(gradient_bytes: Num, bucket_bytes: Num) -> tuple[Num, Num, Num]:
    """Split the gradient into DDP buckets: (count m, full bucket size b, last bucket size r).

    m = ceil(G / b); the last bucket holds r = G - (m-1) b. A bucket larger than
    the gradient is one bucket of size G. (PyTorch DDP, bucket_cap_mb.)
    """
    b = minimum(bucket_bytes, gradient_bytes)
    m = maximum(ceil(gradient_bytes / b), 1.0)
    return m, b, gradient_bytes - (m - 1.0) * b
