"""Sharded data parallelism per layer: ZeRO stages 1-3, FSDP full shard, HSDP; memory and exposed time.

Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", sections 5 and 7, and Zhao et al. 2023,
"PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
sections 3-4:

* **ZeRO-1 / ZeRO-2** shard the optimizer state (and the gradients) over the
  k ranks of the shard group. Once per update the gradients are
  reduce-scattered and, after each rank updates its shard, the parameters are
  all-gathered: (k-1)/k M + (k-1)/k M = f(k) M bytes per rank, the volume of
  one AllReduce (ZeRO section 7.2.1), so it is costed as one.
* **ZeRO-3 / FSDP full shard** also shard the 16-bit parameters. Every
  micro-step all-gathers each layer's parameters before its forward, again
  before its backward (unless they are kept unsharded after the forward:
  FSDP's ``reshard_after_forward=False``, ZeRO-3's persistence), and
  reduce-scatters each layer's gradients after its backward: 3 (k-1)/k M per
  micro-step, 1.5 times an AllReduce (ZeRO section 7.2.2).
* **Per-layer prefetch.** The gather of layer l+1 runs while layer l computes
  (FSDP's forward/backward prefetch, section 3.3.2), so what shows is the
  first layer's gather, and on every later layer whatever its communication
  exceeds its compute:

      exposed_fwd = c_ag + (L_s - 1) max(0, c_ag - t_f)
      exposed_bwd = r c_ag + (L_s - 1) max(0, r c_ag + c_rs - t_b) + c_rs

  with c_ag, c_rs one layer's all-gather and reduce-scatter, t_f, t_b one
  layer's forward and backward compute, r = 1 when the backward gathers again.
* **HSDP** (FSDP's hybrid shard; Zhao et al. 2023 section 3.2.2): the shard
  group of k_s ranks (typically one node) runs the collectives above; the
  gradient shard, M / k_s bytes, is then AllReduced across the r = d / k_s
  replicas once per update, so only the shard crosses the inter-node link.
* **Memory**: the state of :func:`sharded_state_bytes`, plus, under ZeRO-3,
  the unsharded 16-bit parameters and gradients of the layers in flight (the
  one computing and the one prefetched; FSDP's ``limit_all_gathers`` keeps
  it to two).

Every collective here is a ring: t = (k-1) alpha + M (k-1)/k / B per
all-gather or reduce-scatter (Thakur, Rabenseifner and Gropp 2005).
"""

from __future__ import annotations

from mlsysim.physics._array import Num, maximum, minimum, where
from mlsysim.physics.memory import GRADIENT_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES

SHARDED_STATE_EQUATION = (
    "(w + g + K) psi (stage 0); (w + g) psi + K psi/k (1); w psi + (g + K) psi/k (2); (w + g + K) psi/k (3)"
)
GATHER_EQUATION = "c(M, k) = (k - 1) alpha + M (k - 1)/k / B"
LAYERWISE_EQUATION = "c_ag + (L_s - 1) max(0, c_ag - t_f) + r c_ag + (L_s - 1) max(0, r c_ag + c_rs - t_b) + c_rs"
BUFFER_EQUATION = "n_flight (w + g) psi_layer"

LAYERS_IN_FLIGHT = 2.0
"""Unsharded layers held at once under ZeRO-3/FSDP: the one computing and the one prefetched
(FSDP ``limit_all_gathers``; Zhao et al. 2023, section 3.3.3)."""


def sharded_state_bytes(parameters: Num, zero_stage: Num, shard_group: Num) -> Num:
    """Bytes of weights, gradients and optimizer state per device, ZeRO stage 0-3 over k ranks.

    (Rajbhandari et al. 2020, section 5 and Figure 1; w = g = 2, K = 12 bytes per parameter.)
    The same figures as :func:`mlsysim.physics.memory.training_state_bytes`,
    written with ``where`` so that ``zero_stage`` may be an array.
    """
    w, g, k = WEIGHT_BYTES, GRADIENT_BYTES, OPTIMIZER_BYTES
    psi, n = parameters, shard_group
    weights = where(zero_stage >= 3, w * psi / n, w * psi)
    grads = where(zero_stage >= 2, g * psi / n, g * psi)
    state = where(zero_stage >= 1, k * psi / n, k * psi)
    return weights + grads + state


def gather_time(message_bytes: Num, group: Num, rate: Num, latency: Num = 0.0) -> Num:
    """One ring all-gather or reduce-scatter of an M-byte buffer over k ranks: (k-1) alpha + M (k-1)/k / B."""
    return (group - 1.0) * latency + message_bytes * (group - 1.0) / group / rate


def group_rate(
    ranks_per_node: Num,
    group: Num,
    devices_per_node: Num,
    intra_bandwidth: Num,
    nic_bandwidth: Num,
    nics_per_node: Num,
) -> Num:
    """Bytes/s per rank of a ring over a group with ``ranks_per_node`` of its k ranks in each node.

        B = B_intra                              if the group fits in one node (k <= ranks per node)
            min(k_nic, g) B_nic / (g / q)        otherwise: the ring's node-crossing edges share the
                                                 node's NICs with the g / q other groups in the node
    with q ranks of the group per node, g devices per node, k_nic NICs per node (the ``ring``
    rate of :func:`mlsysim.physics.collectives.inter_node_cost` for q = g).
    """
    share = ranks_per_node / devices_per_node
    inter = minimum(nics_per_node, devices_per_node) * nic_bandwidth * share
    return where(group <= ranks_per_node, intra_bandwidth, inter)


def layerwise_exposed(
    layers: Num,
    gather: Num,
    reduce_scatter: Num,
    forward: Num,
    backward: Num,
    backward_gathers: Num = 1.0,
) -> Num:
    """Exposed ZeRO-3/FSDP communication of one micro-step on one device, with one-layer prefetch.

        c_ag + (L_s - 1) max(0, c_ag - t_f) + r c_ag + (L_s - 1) max(0, r c_ag + c_rs - t_b) + c_rs

    ``gather`` c_ag and ``reduce_scatter`` c_rs are one layer's collectives,
    ``forward`` t_f and ``backward`` t_b one layer's compute, ``backward_gathers``
    r = 1 when the parameters are gathered again for the backward, 0 when kept
    unsharded after the forward (Zhao et al. 2023, section 3.3.2). A direct
    simulation of the schedule (one communication stream, the next layer's
    gather issued when a layer starts, its reduce-scatter when it ends) agrees
    exactly when the backward does not gather, and within one layer's gather
    otherwise (``tests/physics/test_sharding.py``).
    """
    rest = layers - 1.0
    fwd = gather + rest * maximum(0.0, gather - forward)
    bwd_comm = backward_gathers * gather + reduce_scatter
    bwd = backward_gathers * gather + rest * maximum(0.0, bwd_comm - backward) + reduce_scatter
    return fwd + bwd


def zero3_buffer_bytes(layer_parameters: Num, in_flight: Num = LAYERS_IN_FLIGHT) -> Num:
    """Unsharded 16-bit parameters and gradients of the layers in flight: n_flight (w + g) psi_layer."""
    return in_flight * (WEIGHT_BYTES + GRADIENT_BYTES) * layer_parameters


def replica_allreduce_bytes(gradient_bytes: Num, shard_group: Num) -> Num:
    """HSDP: bytes each rank AllReduces across replicas per update, the gradient shard M / k_s."""
    return gradient_bytes / shard_group
