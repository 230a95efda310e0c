"""A collective's time as a curve over its size: a latency floor plus the bytes on the wire over the
achievable bandwidth of the link that binds, approached as the message grows.

Sizes follow nccl-tests (NVIDIA/nccl-tests, doc/PERFORMANCE.md): ``S`` is the buffer an
all-reduce reduces, the whole output of an all-gather, the whole input of a reduce-scatter,
the whole send buffer of an all-to-all (S / n to each peer), and what one rank sends in a
send/recv. The algorithm bandwidth is S / t and the bus bandwidth S F(n) / t with
(:func:`bus_factor`)

    F = 2 (n - 1) / n  (all-reduce),  (n - 1) / n  (all-gather, reduce-scatter, all-to-all),
    F = 1  (send/recv, broadcast).

**Wire bytes** (:func:`wire_bytes`). Each rank sends (and receives) V bytes per direction over
its scale-up link (NVLink, ``V_up``) and over its share of the NICs (``V_out``). The group of
n ranks spans N = n / d scale-up domains (a node, or an NVL72 rack) of d ranks each.

* ``ring`` (one domain): V_up = F S. All-to-all and send/recv are direct point-to-point
  transfers and count here too (all-to-all: (n - 1) / n S; send/recv: S).
* ``ring`` (N > 1 domains, a flat ring; NCCL's channels cross the domains' edges at different
  ranks, so every NIC carries a share): V_up = F S (d - 1) / d, V_out = F S / d.
* ``nvls`` (NVLink SHARP: the NVSwitch reduces and multicasts; all-reduce in one domain):
  each rank pushes its buffer into the switch and reads its reduced shard, then writes the
  shard that the switch multicasts, so V_up = (n + 1) / n S (the factor of the "n + 1"
  accounting in NVIDIA/nccl-tests issue 153). The bus bandwidth it reports, 2 (n - 1) /
  (n + 1) times the wire's, is above the link's rate from n = 5 on: measured on an 8-GPU
  H200, 414 to 473 GB/s of bus bandwidth for 5 to 8 GPUs is a constant 304-310 GB/s on the
  wire (Bekman, "Machine Learning Engineering", Network chapter, SHARP section).
* ``tree`` (N > 1: reduce-scatter inside each domain, an all-reduce of each rank's 1 / d shard
  across the domains over its own NIC rail, all-gather inside; NCCL's Tree/NVLSTree, Goyal et
  al. 2017 section 4): all-reduce V_up = 2 (d - 1) / d S, V_out = 2 (N - 1) / N S / d;
  all-gather and reduce-scatter half of each. ``nvls_tree``: the same with NVLS inside the
  domain, V_up = (d + 1) / d S.
* all-to-all across domains: V_up = (d - 1) / n S, V_out = (n - d) / n S (each rank's own NIC:
  an all-to-all "cannot aggregate the bandwidth of multiple NICs", NVIDIA/nccl-tests issue 267).

**Time** (:func:`collective_time`):

    t(S) = alpha + max(V_up / (e_up B_up), V_out / (e_out B_out)) / fill(x),
    fill(x) = (x / (x + x_h))^g,  x = S / n  (S for send/recv),
    alpha = a_0 + a_up h_up + a_out h_out

* B_up, B_out: the nominal per-direction rates of a rank's scale-up link and of its share of
  the NICs (the registry's); e_up, e_out <= 1: the fraction of the wire rate the library's
  copies reach at large sizes (NCCL's SM copies move 128-byte payloads and reach about 80% of
  NVLink: "~20GB/s effective bandwidth with a 128B payload size" of each 25 GB/s NVLink 3
  link, S. Jeaugey in NVIDIA/nccl-tests issue 149); ``nvls`` has its own e_up.
* fill: the share of that rate a message of x bytes per rank reaches: chunks pipelined over
  the library's channels leave them partly idle while the pipeline fills and drains, and
  small messages use the low-latency protocols at a fraction of the bandwidth (Hu et al.
  2025, "Demystifying NCCL", arXiv:2507.04786: LL about 25-50% of peak, LL128 about 95%,
  Simple the peak); x_h is the per-rank size at which the curve is at 2^-g of its ceiling,
  g how sharply it rises. A saturating power is the form the published sweeps support: the
  marginal bandwidth keeps rising from 64 MiB to 8 GiB on every single-node sweep, which an
  affine (alpha-beta) time cannot show.
* alpha: a fixed start a_0 plus a per-step latency for each of the algorithm's steps inside a
  domain (h_up) and across domains (h_out): a ring all-reduce takes 2 (n - 1) steps, a ring
  all-gather, reduce-scatter or all-to-all n - 1, NVLS 2, a tree 2 log2 N across domains
  (:func:`latency_steps`; Thakur, Rabenseifner and Gropp 2005, section 4).

Every function takes floats or numpy arrays (broadcast together) and codes from :class:`Op` and
:class:`Algorithm` (ints, or int arrays for many rows); a combination an algorithm does not
implement takes an infinite time, so the fastest of several (``auto``) never picks it.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from mlsysim.physics._array import Num, plain
from mlsysim.physics.bounds import Bound, KernelTime


class Op(IntEnum):
    """A collective operation (the nccl-tests binary ``<name>_perf``, ``alltoall`` as ``all_to_all``)."""

    ALL_REDUCE = 0
    ALL_GATHER = 1
    REDUCE_SCATTER = 2
    ALL_TO_ALL = 3
    SEND_RECV = 4
    BROADCAST = 5

    @property
    def label(self) -> str:
        """``"all_reduce"``, ...: how tables and the facade name it."""
        return self.name.lower()


class Algorithm(IntEnum):
    """How the bytes travel (NCCL's algorithms; ``ring`` also names direct point-to-point transfers)."""

    RING = 0
    NVLS = 1
    TREE = 2
    NVLS_TREE = 3

    @property
    def label(self) -> str:
        """``"ring"``, ``"nvls"``, ``"tree"``, ``"nvls_tree"``."""
        return self.name.lower()


OPS = tuple(o.label for o in Op)
"""Labels of :class:`Op`, by code."""
ALGORITHMS = tuple(a.label for a in Algorithm)
"""Labels of :class:`Algorithm`, by code."""


_AR, _AG, _RS, _A2A, _SR, _BC = (int(o) for o in Op)
_RING, _NVLS, _TREE, _NVLS_TREE = (int(a) for a in Algorithm)


def bus_factor(op: Num, n: Num) -> Num:
    """F(n), nccl-tests' bus bandwidth over algorithm bandwidth: 2 (n-1)/n for all-reduce, (n-1)/n
    for all-gather, reduce-scatter and all-to-all, 1 for send/recv and broadcast
    (NVIDIA/nccl-tests, doc/PERFORMANCE.md)."""
    single = (n - 1.0) / n
    return np.where(op == _AR, 2.0 * single, np.where((op == _SR) | (op == _BC), 1.0, single))


def _ring_bytes(op: Num, s: Num, n: Num, d: Num, one: Num) -> tuple[Num, Num]:
    """Ring (or direct point-to-point) wire bytes: one domain, or a flat ring over several."""
    f = bus_factor(op, n)
    a2a_up = np.where(one, (n - 1.0) / n, (d - 1.0) / n) * s
    a2a_out = np.where(one, 0.0, (n - d) / n) * s
    sr_out = np.where(d < 2.0, s, 0.0)  # a send/recv pair on two domains (d = 1) crosses the NICs
    up = np.where(op == _A2A, a2a_up, np.where(op == _SR, s - sr_out, np.where(one, f * s, f * s * (d - 1.0) / d)))
    out = np.where(op == _A2A, a2a_out, np.where(op == _SR, sr_out, np.where(one, 0.0, f * s / d)))
    return up, out


def _tree_out(op: Num, s: Num, d: Num, domains: Num) -> Num:
    """Each rank's 1/d shard across the N domains on its rail: 2 (N-1)/N S/d (all-reduce), half that otherwise."""
    return np.where(op == _AR, 2.0, 1.0) * (domains - 1.0) / np.maximum(domains, 1.0) * s / d


def _algorithm_bytes(alg: int, op: Num, s: Num, n: Num, d: Num) -> tuple[Num, Num]:
    """One algorithm's (V_up, V_out), ``inf`` where it does not apply (module docstring)."""
    domains = n / d
    one = domains <= 1.0
    if alg == _RING:
        return _ring_bytes(op, s, n, d, one)
    if alg == _NVLS:
        ok = (op == _AR) & one
        return np.where(ok, (n + 1.0) / n * s, np.inf), np.where(ok, 0.0, np.inf)
    if alg == _TREE:
        ok = ((op == _AR) | (op == _AG) | (op == _RS)) & ~one
        up = np.where(op == _AR, 2.0, 1.0) * (d - 1.0) / d * s
        return np.where(ok, up, np.inf), np.where(ok, _tree_out(op, s, d, domains), np.inf)
    if alg == _NVLS_TREE:
        ok = (op == _AR) & ~one & (d >= 2.0)
        return np.where(ok, (d + 1.0) / d * s, np.inf), np.where(ok, _tree_out(op, s, d, domains), np.inf)
    return np.inf * s, np.inf * s


def wire_bytes(op: Num, algorithm: Num, size: Num, n: Num, d: Num) -> tuple[Num, Num]:
    """(V_up, V_out): bytes each rank moves per direction over its scale-up link and its NIC share.

    ``n`` ranks in domains of ``d`` (d = n: one domain); the equations are the module
    docstring's. A combination the algorithm does not implement gives ``inf`` (NVLS: all-reduce
    in one domain; ``tree`` and ``nvls_tree``: all-reduce, all-gather or reduce-scatter over more
    than one domain; ``nvls_tree`` all-reduce only). ``algorithm`` is one code, or an array of
    codes (each row its own).
    """
    s = np.asarray(size, dtype=float)
    n = np.asarray(n, dtype=float)
    d = np.minimum(np.asarray(d, dtype=float), n)
    if np.ndim(algorithm) == 0:
        up, out = _algorithm_bytes(int(algorithm), op, s, n, d)
    else:
        alg = np.asarray(algorithm)
        up, out = np.inf * s, np.inf * s
        for code in np.unique(alg):
            one_up, one_out = _algorithm_bytes(int(code), op, s, n, d)
            up, out = np.where(alg == code, one_up, up), np.where(alg == code, one_out, out)
    return plain(up), plain(out)


def latency_steps(op: Num, algorithm: Num, n: Num, d: Num) -> tuple[Num, Num]:
    """(h_up, h_out): the algorithm's latency steps inside a domain and across domains.

    Ring: 2 (n - 1) steps for all-reduce, n - 1 for all-gather, reduce-scatter, all-to-all and
    broadcast, 1 for send/recv, all of them across domains when the ring spans several (each
    step waits for its slowest edge). NVLS: 2 (a reduction into the switch and a multicast out).
    Tree: the domain's ring steps, and 2 log2 N across the N domains (a double binary tree, up
    and down); NVLS tree: 2 and 2 log2 N.
    """
    n = np.asarray(n, dtype=float)
    d = np.minimum(np.asarray(d, dtype=float), n)
    domains = n / d
    steps = np.where(op == _AR, 2.0 * (n - 1.0), np.where(op == _SR, 1.0, n - 1.0))
    crosses = (domains > 1.0) & ~((op == _SR) & (d >= 2.0))
    across = 2.0 * np.log2(np.maximum(domains, 1.0))
    ring = (np.where(crosses, 0.0, steps), np.where(crosses, steps, 0.0))
    tree = (np.where(op == _AR, 2.0 * (d - 1.0), d - 1.0), across)
    by_code = {_RING: ring, _NVLS: (2.0 + 0.0 * n, 0.0 * n), _TREE: tree, _NVLS_TREE: (2.0 + 0.0 * n, across)}
    if np.ndim(algorithm) == 0:
        up, out = by_code[int(algorithm)]
    else:
        alg = np.asarray(algorithm)
        up = np.select([alg == c for c in by_code], [v[0] for v in by_code.values()], 2.0)
        out = np.select([alg == c for c in by_code], [v[1] for v in by_code.values()], 0.0)
    return plain(up), plain(out)


def fill(per_rank: Num, half_size: Num, sharpness: Num) -> Num:
    """(x / (x + x_h))^g: the share of its large-message rate a collective of x bytes per rank reaches."""
    x = np.asarray(per_rank, dtype=float)
    return plain((x / (x + half_size)) ** sharpness)


def collective_time(
    op: Num, algorithm: Num, size: Num, n: Num, d: Num, *,
    up_rate: Num, out_rate: Num, up_efficiency: Num, out_efficiency: Num,
    base_latency: Num, up_latency: Num, out_latency: Num, half_size: Num, sharpness: Num,
) -> KernelTime:
    """t(S) = alpha + max(V_up / (e_up B_up), V_out / (e_out B_out)) / fill(x) (module docstring).

    Rates in bytes per second per direction, latencies in seconds, sizes in bytes. The bound is
    :attr:`Bound.LATENCY` where alpha exceeds the transfer term, :attr:`Bound.BANDWIDTH` otherwise;
    the efficiency is the binding link's bytes over the time, as a fraction of its nominal rate
    (at most e of that link). A combination the algorithm does not implement takes ``inf``.
    """
    up, out = wire_bytes(op, algorithm, size, n, d)
    h_up, h_out = latency_steps(op, algorithm, n, d)
    x = np.where(op == _SR, np.asarray(size, dtype=float), np.asarray(size, dtype=float) / n)
    share = fill(x, half_size, sharpness)
    with np.errstate(invalid="ignore", divide="ignore"):  # no bytes on a link: no time on it, whatever its rate
        up_time = np.where(np.asarray(up) > 0, np.asarray(up) / (np.asarray(up_efficiency) * up_rate), 0.0)
        out_time = np.where(np.asarray(out) > 0, np.asarray(out) / (np.asarray(out_efficiency) * out_rate), 0.0)
    transfer = np.maximum(up_time, out_time) / share
    alpha = base_latency + up_latency * np.asarray(h_up) + out_latency * np.asarray(h_out)
    time = alpha + transfer
    on_up = up_time >= out_time
    with np.errstate(invalid="ignore", divide="ignore"):
        used = np.where(on_up, np.asarray(up) / up_rate, np.asarray(out) / out_rate) / time
    efficiency = np.where(np.isfinite(time), np.clip(used, 0.0, 1.0), 0.0)
    bound = np.where(transfer >= alpha, int(Bound.BANDWIDTH), int(Bound.LATENCY))
    return KernelTime(plain(time), plain(efficiency), plain(bound))

