"""One expert dispatch (or combine) of a mixture-of-experts layer: the bytes it moves over NVLink and
the NICs, and its time (DeepEP's kernels: DeepSeek-AI 2025, DeepEP README; NVIDIA's HybridEP).

A rank holds T tokens of h elements of b bytes (FP8 with one 4-byte scale per 128 elements:
b = 1 + 4/128; BF16: b = 2), each routed to k of E experts spread evenly over R ranks, q ranks to
an NVLink domain (N = R / q domains). With routing uniform over the experts, a token reaches

    R (1 - p(E, k, R))  ranks,  p(E, k, n) = C(E - E / n, k) / C(E, k)

(:func:`~mlsysim.physics.experts.none_in_domain`), and, when a token may use at most m of the N
domains (DeepSeek-V3's node-limited routing, m = 4; DeepEP's tests choose the m domains of the
highest scores, then the k experts among theirs), m (1 - p(m E / N, k, m)) domains, its own
among them with chance (m / N) (1 - p(m E / N, k, m)).

**Normal kernels** (training, prefill; DeepEP's hierarchical kernels, HybridEP): a token crosses
the NICs once per remote domain it reaches, to the rank of the same index there, which forwards
it over NVLink to the ranks of its experts (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report",
section 3.2.2). Per rank and direction:

    V_out = T h b (domains reached - own domain reached),
    V_up  = T h b R (1 - p(E, k, R)) (q - 1) / q        (one domain: T h b (R - 1) (1 - p(E, k, R)))

**Low-latency kernels** (decoding): each of a token's k copies goes straight to its expert's rank,
over NVLink inside the domain and the NICs outside it:

    V_up = T k h b (q - 1) / R,   V_out = T k h b (R - q) / R

**Time**: t = alpha + max(V_up / (e_up B_up), V_out / (e_out B_out)), the two links working at
once; B the nominal per-direction rates of a rank's NVLink and NIC share, e <= 1 the fraction the
kernels reach. A combine moves the same bytes back (in its own format).

The bandwidth DeepEP prints counts logical bytes, a rank's own copies included
(:func:`logical_bytes`): the tokens a rank receives, T h b R (1 - p(E, k, R)), for its NVLink
figure; the (token, domain) pairs it sends, T h b m (1 - p(m E / N, k, m)), for its RDMA figure;
T k h b for the low-latency kernels.

Every function takes floats or numpy arrays (broadcast together).
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from mlsysim.physics._array import Num, plain
from mlsysim.physics.bounds import Bound, KernelTime
from mlsysim.physics.experts import none_in_domain


class Kernel(IntEnum):
    """DeepEP's two kinds of dispatch and combine kernels."""

    NORMAL = 0
    """Hierarchical (NVLink forwarding of RDMA traffic): training and prefill."""
    LOW_LATENCY = 1
    """Direct to each expert's rank: decoding."""

    @property
    def label(self) -> str:
        return self.name.lower()


KERNELS = tuple(k.label for k in Kernel)
"""Labels of :class:`Kernel`, by code."""

FP8_BYTES = 1.0 + 4.0 / 128.0
"""Bytes per element of FP8 tokens with one float32 scale per 128 elements (DeepEP's per-token 1x128 FP8)."""


def ranks_reached(experts: Num, top_k: Num, ranks: Num) -> Num:
    """R (1 - p(E, k, R)): the ranks a token's k experts lie on (module docstring)."""
    return ranks * (1.0 - none_in_domain(experts, top_k, ranks))


def domains_reached(experts: Num, top_k: Num, domains: Num, limit: Num) -> tuple[Num, Num]:
    """(m (1 - p(m E / N, k, m)), (m / N) (1 - p(m E / N, k, m))): the domains a token reaches, and the
    chance its own is one of them, when it may use m = min(N, limit) of the N domains."""
    m = np.minimum(domains, limit)
    hit = 1.0 - none_in_domain(experts * m / domains, top_k, m)
    return m * hit, m / domains * hit


def dispatch_bytes(
    kernel: Num, tokens: Num, hidden: Num, element_bytes: Num, top_k: Num, experts: Num, ranks: Num,
    domain_ranks: Num, limit: Num,
) -> tuple[Num, Num]:
    """(V_up, V_out): bytes a rank moves per direction over NVLink and its NIC share (module docstring)."""
    q = np.minimum(domain_ranks, ranks)
    domains = ranks / q
    token = np.asarray(tokens) * hidden * element_bytes
    on_ranks = ranks_reached(experts, top_k, ranks)
    reached, own = domains_reached(experts, top_k, domains, limit)
    one = domains <= 1.0
    normal_up = np.where(one, token * (on_ranks - on_ranks / ranks), token * on_ranks * (q - 1.0) / q)
    normal_out = np.where(one, 0.0, token * (reached - own))
    direct = token * top_k
    up = np.where(np.asarray(kernel) == Kernel.LOW_LATENCY, direct * (q - 1.0) / ranks, normal_up)
    out = np.where(np.asarray(kernel) == Kernel.LOW_LATENCY, direct * (ranks - q) / ranks, normal_out)
    return plain(up), plain(out)


def logical_bytes(
    kernel: Num, tokens: Num, hidden: Num, element_bytes: Num, top_k: Num, experts: Num, ranks: Num,
    domain_ranks: Num, limit: Num,
) -> Num:
    """The bytes DeepEP's printed bandwidth counts for one rank (module docstring): received tokens on one
    domain, (token, domain) pairs across domains, T k h b for the low-latency kernels."""
    q = np.minimum(domain_ranks, ranks)
    domains = ranks / q
    token = np.asarray(tokens) * hidden * element_bytes
    reached, _ = domains_reached(experts, top_k, domains, limit)
    normal = np.where(domains <= 1.0, token * ranks_reached(experts, top_k, ranks), token * reached)
    return plain(np.where(np.asarray(kernel) == Kernel.LOW_LATENCY, token * top_k, normal))


def dispatch_time(
    up_bytes: Num, out_bytes: Num, *, up_rate: Num, out_rate: Num, up_efficiency: Num, out_efficiency: Num,
    latency: Num,
) -> KernelTime:
    """t = alpha + max(V_up / (e_up B_up), V_out / (e_out B_out)); the bound is the latency where alpha
    exceeds the transfer, else the bandwidth; the efficiency the binding link's bytes over the time,
    as a fraction of its nominal rate."""
    with np.errstate(invalid="ignore", divide="ignore"):
        up_time = np.where(np.asarray(up_bytes) > 0, np.asarray(up_bytes) / (np.asarray(up_efficiency) * up_rate), 0.0)
        out_time = np.where(np.asarray(out_bytes) > 0,
                            np.asarray(out_bytes) / (np.asarray(out_efficiency) * out_rate), 0.0)
        transfer = np.maximum(up_time, out_time)
        time = latency + transfer
        used = np.where(up_time >= out_time, np.asarray(up_bytes) / up_rate, np.asarray(out_bytes) / out_rate) / time
    bound = np.where(transfer >= latency, int(Bound.BANDWIDTH), int(Bound.LATENCY))
    return KernelTime(plain(time), plain(np.clip(used, 0.0, 1.0)), plain(bound))

