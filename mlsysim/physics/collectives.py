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

import math
from typing import Any, NamedTuple, TypeAlias

import numpy as np

from mlsysim.physics._array import Array, Num, ceil, is_array, log2, maximum, minimum, where
from mlsysim.physics.records import Cluster, LinkCurves

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


# ---------------------------------------------------------------------------------------------
# Measured size curves (issue 38): what the layout's terms price a collective at where its links
# are a registry node's and fabric's that the fits cover (:class:`~mlsysim.physics.records.LinkCurves`)

Flag: TypeAlias = "bool | Array"
"""Whether something holds: for one layout (a bool) or for each of many (a bool array)."""

CURVE_EQUATION = "a_0 + a h + max(V_up / (e_up B_up), V_out / (e_out B_out)) / (x / (x + x_h))^g"
"""The measured curve of one collective (:func:`wire_time`), in symbols."""


class Wire(NamedTuple):
    """One algorithm's traffic for one collective: the bytes each rank moves per direction over its scale-up
    link (``up_bytes``, V_up) and over its share of the NICs (``out_bytes``, V_out), the algorithm's latency
    steps inside a domain and across domains, the per-rank size x its curve is read at, and the scale-up
    link's efficiency e_up (the ring's, or NVLink SHARP's). The equations are those of
    :mod:`mlsysim.physics.collective_curves` (nccl-tests' size conventions), for one op and algorithm each."""

    algorithm: str
    up_bytes: Num
    out_bytes: Num
    up_steps: Num
    out_steps: Num
    per_rank: Num
    up_efficiency: Num


def wire_time(curves: LinkCurves, wire: Wire, up_rate: Num, out_rate: Num) -> Num:
    """t = a_0 + a_up h_up + a_out h_out + max(V_up / (e_up B_up), V_out / (e_out B_out)) / fill(x),
    fill(x) = (x / (x + x_h))^g (:func:`mlsysim.physics.collective_curves.collective_time`): ``up_rate`` B_up
    the rank's scale-up rate, ``out_rate`` B_out its share of its domain's NICs (bytes/s per direction)."""
    c = curves
    share = (wire.per_rank / (wire.per_rank + c.half_size)) ** c.sharpness
    up = wire.up_bytes / (wire.up_efficiency * up_rate)
    out = where(wire.out_bytes > 0, wire.out_bytes / (c.out_efficiency * out_rate), 0.0)
    return (c.base_latency + c.step_latency * wire.up_steps + c.out_step_latency * wire.out_steps
            + maximum(up, out) / share)


def fastest(curves: LinkCurves, wires: list[Wire], up_rate: Num, out_rate: Num) -> tuple[Num, Wire]:
    """(the least time of ``wires``, the wire that takes it): as NCCL's tuner picks among the algorithms that
    apply, by its own model. An algorithm that does not apply (or has no measured efficiency) has a NaN
    efficiency, so a NaN time: never picked. For many rows the wire returned is the first (the times are
    the rows' own)."""
    best, chosen = wire_time(curves, wires[0], up_rate, out_rate), wires[0]
    for wire in wires[1:]:
        time = wire_time(curves, wire, up_rate, out_rate)
        if is_array(time, best):
            best = np.where((time < best) | np.isnan(best), time, best)
        elif time < best or best != best:
            best, chosen = time, wire
    return best, chosen


def all_reduce_wires(curves: LinkCurves, size: Num, group: Num, domain: Num, algorithm: str = "auto") -> list[Wire]:
    """The algorithms an all-reduce of ``size`` bytes over n = ``group`` ranks in domains of d = ``domain`` may
    take (:mod:`mlsysim.physics.collective_curves`), F = 2 (n-1)/n, N = n / d:

    * one domain: ``ring`` V_up = F S, 2 (n-1) steps; ``nvls`` (NVLink SHARP, where measured) V_up = (n+1)/n S,
      2 steps;
    * across domains: ``ring`` (a flat ring) V_up = F S (d-1)/d, V_out = F S / d, 2 (n-1) steps across;
      ``tree`` (NCCL's: reduce-scatter in the domain, the shard across on the rank's rail, all-gather)
      V_up = 2 (d-1)/d S, V_out = 2 (N-1)/N S / d, 2 (d-1) steps inside and 2 log2 N across; ``nvls_tree``
      the same with NVLS inside (V_up = (d+1)/d S, 2 steps); ``hierarchical`` the tree's bytes with a ring of
      2 (N-1) steps across the domains (Goyal et al. 2017).

    ``algorithm`` is the assumption's, for the part across domains (``auto``: every one that applies; ``ring``,
    ``tree``, ``hierarchical``: that one); inside one domain NCCL picks ring or NVLS either way.
    """
    n = group
    d = minimum(domain, n)
    big = n / d
    one = big <= 1.0
    f = 2.0 * (n - 1.0) / n
    x = size / n
    ring, nvls, nan = curves.ring_efficiency, curves.nvls_efficiency, math.nan
    ring_across = algorithm in ("auto", "ring")
    wires = [Wire("ring", where(one, f * size, f * size * (d - 1.0) / d), where(one, 0.0, f * size / d),
                  where(one, 2.0 * (n - 1.0), 0.0), where(one, 0.0, 2.0 * (n - 1.0)), x,
                  ring if ring_across else where(one, ring, nan))]
    several = is_array(one)
    if several or one:
        wires.append(Wire("nvls", (n + 1.0) / n * size, 0.0, 2.0, 0.0, x, where(one, nvls, nan)))
    if several or not one:
        across = 2.0 * (big - 1.0) / maximum(big, 1.0) * size / d
        tree_steps = 2.0 * log2(maximum(big, 1.0))
        inside = 2.0 * (d - 1.0) / d * size
        if algorithm in ("auto", "tree"):
            wires.append(Wire("tree", inside, across, 2.0 * (d - 1.0), tree_steps, x, where(one, nan, ring)))
        if algorithm == "auto":
            wires.append(Wire("nvls_tree", (d + 1.0) / d * size, across, 2.0, tree_steps, x,
                              where(one | (d < 2.0), nan, nvls)))
        if algorithm == "hierarchical":
            wires.append(Wire("hierarchical", inside, across, 2.0 * (d - 1.0), 2.0 * (big - 1.0), x,
                              where(one, nan, ring)))
    return wires


def gather_wires(curves: LinkCurves, size: Num, group: Num, domain: Num) -> list[Wire]:
    """An all-gather (``size`` the whole output) or reduce-scatter (the whole input) over n ranks in domains of
    d: ``ring`` V_up = F S (one domain), F S (d-1)/d and V_out = F S / d across, n - 1 steps, F = (n-1)/n;
    ``tree`` across domains V_up = (d-1)/d S, V_out = (N-1)/N S / d, d - 1 steps inside and 2 log2 N across."""
    n = group
    d = minimum(domain, n)
    big = n / d
    one = big <= 1.0
    f = (n - 1.0) / n
    x = size / n
    ring = Wire("ring", where(one, f * size, f * size * (d - 1.0) / d), where(one, 0.0, f * size / d),
                where(one, n - 1.0, 0.0), where(one, 0.0, n - 1.0), x, curves.ring_efficiency)
    if not is_array(one) and one:
        return [ring]
    tree = Wire("tree", (d - 1.0) / d * size, (big - 1.0) / maximum(big, 1.0) * size / d, d - 1.0,
                2.0 * log2(maximum(big, 1.0)), x, where(one, math.nan, curves.ring_efficiency))
    return [ring, tree]


def send_recv_wire(curves: LinkCurves, size: Num, crosses: Num) -> Wire:
    """One send/recv of ``size`` bytes between two ranks: over the scale-up link, or (``crosses``) the NICs;
    one step, read at x = S."""
    return Wire("ring", where(crosses, 0.0, size), where(crosses, size, 0.0), where(crosses, 0.0, 1.0),
                where(crosses, 1.0, 0.0), size, curves.ring_efficiency)


def all_to_all_wire(curves: LinkCurves, size: Num, group: Num, inside_share: Num, outside_share: Num,
                    crosses: Num) -> Wire:
    """An all-to-all of ``size`` bytes sent by each of n ranks (nccl-tests' whole send buffer), ``inside_share``
    of it over the scale-up link and ``outside_share`` over the NICs (flat: (d-1)/n and (n-d)/n, the curve's;
    a hierarchical dispatch's shares, :func:`mlsysim.physics.experts.all_to_all_shares`); n - 1 steps, across
    domains where the group ``crosses`` them; read at x = S / n."""
    steps = group - 1.0
    return Wire("ring", inside_share * size, outside_share * size, where(crosses, 0.0, steps),
                where(crosses, steps, 0.0), size / group, curves.ring_efficiency)


def dispatch_time(curves: LinkCurves, size: Num, inside_share: Num, outside_share: Num, up_rate: Num,
                  out_rate: Num) -> Num:
    """One hierarchical dispatch or combine (DeepEP's normal kernels) of ``size`` bytes a rank sends, its
    shares over NVLink and the NICs the routing's (:func:`mlsysim.physics.experts.all_to_all_shares`), by their
    fit (:func:`mlsysim.physics.expert_dispatch.dispatch_time`): a_d + max(s_in M / (e_d,up B_up),
    s_out M / (e_d,out B_out)), no size curve (the fit has none)."""
    c = curves
    up = inside_share * size / (c.dispatch_efficiency * up_rate)
    out = where(outside_share > 0, outside_share * size / (c.dispatch_out_efficiency * out_rate), 0.0)
    return c.dispatch_latency + maximum(up, out)


def measured_links(cluster: Cluster, curves: LinkCurves | None) -> tuple[Flag, Flag]:
    """(up, out): whether the measured curves price the collectives on the scale-up link and on the NICs: a
    link whose rate and latency are the registry's that the curves were built for (``up_rate`` and
    ``up_latency``, ``out_rate`` and ``out_latency``; a fabric no fit covers has none). A link given by hand,
    or scaled by an efficiency or transport assumption, means what it says: its collectives are priced with
    the alpha-beta equations at its own rate and latency."""
    if curves is None:
        return False, False
    up = _same(cluster.intra_bandwidth, curves.up_rate) & _same(cluster.intra_latency, curves.up_latency)
    out = _known(curves.out_efficiency) & _same(cluster.nic_bandwidth, curves.out_rate) & _same(cluster.inter_latency, curves.out_latency)
    return up, out


def _known(value: Num) -> Any:
    """``value`` is a number (not NaN, not fitted): a :data:`Flag`."""
    return value == value


def _same(value: Num, registry: Num) -> Any:
    """``value`` is the registry's figure (to rounding: the same Quantity converted by another route): a
    :data:`Flag`."""
    difference: Any = value - registry
    scale: Any = registry
    return abs(difference) <= 1e-9 * abs(scale)
