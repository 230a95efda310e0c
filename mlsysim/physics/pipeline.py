"""Pipeline parallelism: the bubble of 1F1B and interleaved schedules, stage-to-stage transfers, memory.

Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", section 2.2: the L layers are cut into p stages;
an update runs m micro-batches through them. With the 1F1B schedule
(PipeDream-Flush) every stage idles (p - 1) forward + backward slots at the
start and the end of an update, so

    bubble fraction = (p - 1) / m                       (section 2.2.1)

of the ideal compute time m t_mb. The interleaved schedule gives each device
v chunks of L / (p v) layers, and the bubble shrinks v-fold:

    bubble fraction = (p - 1) / (v m)                   (section 2.2.2)

at the price of v times as many stage-to-stage transfers. Each transfer is one
micro-batch's b x s x h activations (16-bit) forward and their gradient
backward; with the scatter/gather optimization (section 4.1) each of the t
tensor-parallel ranks sends 1/t of them. The transfers are counted as
exposed, 2 (v m + p - 1) of them per update: one forward and one backward send
for each of the v m chunk-micro-batches a device processes, plus one for each
stage of the fill and the drain. This approximates the schedule's critical
path; Megatron-LM of 2021 does not overlap these transfers with compute.

Memory (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", section 4.2.3): under 1F1B the first stage holds the
activations of min(p, m) micro-batches in flight for its L / p layers, i.e.
as much as all L layers of one micro-batch when m >= p; the interleaved
schedule needs (1 + (p - 1)/(p v)) times that.
"""

from __future__ import annotations

from mlsysim.physics._array import Num, minimum, where

BUBBLE_EQUATION = "bubble = (p - 1) / (v m)  (v = 1: 1F1B)"
P2P_EQUATION = "T_p2p = 2 (v m + p - 1) (alpha + 2 b s h / (t B_pp))"
IN_FLIGHT_EQUATION = "A_first = (L / p) min(p, m) a_layer (1 + (p - 1)/(p v) if v > 1)"


def bubble_fraction(pipeline_parallel: Num, micro_batches: Num, chunks: Num = 1.0) -> Num:
    """Idle time of a pipeline over its ideal compute time: (p - 1) / (v m) (Narayanan et al. 2021, 2.2)."""
    return (pipeline_parallel - 1.0) / (chunks * micro_batches)


def pipeline_compute_time(
    stage_time: Num, pipeline_parallel: Num, micro_batches: Num, chunks: Num = 1.0
) -> Num:
    """Seconds of an update's pipelined compute: m t_mb (1 + (p - 1)/(v m)) = (m + (p - 1)/v) t_mb.

    ``stage_time`` t_mb is one micro-batch's forward + backward on one device
    (all its chunks together).
    """
    return (micro_batches + (pipeline_parallel - 1.0) / chunks) * stage_time


def p2p_message_bytes(micro_batch: Num, seq_len: Num, hidden: Num, tensor_parallel: Num = 1.0) -> Num:
    """Bytes each device sends per stage boundary: 2 b s h / t (16-bit; scatter/gather, Narayanan et al. 2021, 4.1)."""
    return 2.0 * micro_batch * seq_len * hidden / tensor_parallel


def pipeline_link_rate(
    tensor_parallel: Num,
    pipeline_parallel: Num,
    devices_per_node: Num,
    intra_bandwidth: Num,
    nic_bandwidth: Num,
    nics_per_node: Num,
) -> Num:
    """Bytes/s of one stage-to-stage transfer of one device.

        B_pp = B_intra                    if t p <= g (the whole pipeline in one node)
               B_nic min(k, g) / g        otherwise (stages on different nodes; each device's share of the NICs)
    """
    inter = nic_bandwidth * minimum(nics_per_node, devices_per_node) / devices_per_node
    return where(tensor_parallel * pipeline_parallel <= devices_per_node, intra_bandwidth, inter)


def p2p_time(
    message_bytes: Num,
    rate: Num,
    pipeline_parallel: Num,
    micro_batches: Num,
    chunks: Num = 1.0,
    latency: Num = 0.0,
) -> Num:
    """Exposed stage-to-stage transfer time per update: 2 (v m + p - 1) (alpha + M / B_pp); zero for p = 1."""
    transfers = where(pipeline_parallel > 1, 2.0 * (chunks * micro_batches + pipeline_parallel - 1.0), 0.0)
    return transfers * (latency + message_bytes / rate)


def in_flight_micro_batches(pipeline_parallel: Num, micro_batches: Num) -> Num:
    """Micro-batches whose activations the first stage holds at once under 1F1B: min(p, m)."""
    return minimum(pipeline_parallel, micro_batches)


def first_stage_activation_bytes(
    layers: Num,
    activation_per_layer: Num,
    pipeline_parallel: Num,
    micro_batches: Num,
    chunks: Num = 1.0,
) -> Num:
    """Activation bytes of the first stage: (L / p) min(p, m) a_layer, times (1 + (p-1)/(p v)) when interleaved.

    ``activation_per_layer`` is one micro-batch's bytes for one layer on one
    device (Korthikanti et al. 2022, section 4.2.3).
    """
    p = pipeline_parallel
    interleave = where(chunks > 1, 1.0 + (p - 1.0) / (p * chunks), 1.0)
    return layers / p * in_flight_micro_batches(p, micro_batches) * activation_per_layer * interleave
