"""A transformer's compute, operator by operator: one micro-batch's forward and backward on one device.

The step time of a decoder transformer is built from the kernels it runs, in four classes, each
kernel priced by the device's measured kernel models (:mod:`mlsysim.kernels`, constants in
:class:`~mlsysim.physics.records.KernelConstants`):

* **matrix products** of the linear layers, per layer: the query/key/value
  projection (M, N, K) = (b s, (a + 2 a_kv) d / t, h), the attention output
  projection (b s, h, h / t), the MLP's first (b s, f_in / t, h) and second
  (b s, h, f / t) matrices (f_in = 2 f for a gated MLP: gate and up), and
  the output layer (b s, V / t, h) spread over the layers; each priced
  forward and its two backward products at their own shapes as one kernel each
  (:func:`mlsysim.physics.gemm.training_product_time`: the launch and fill floor, the fastest
  tile either way round, split-K, waves over the SMs, the memory traffic), at the
  ceiling c_f of the products' format (:class:`~mlsysim.physics.records.Rates`); a mixture of
  experts' routed experts as one grouped kernel of the tokens each local expert receives
  (:class:`Experts`);
* **the attention core** in 16 bits: fused (FlashAttention, cuDNN), the forward and backward
  kernels of the causal call by the measured model of
  :func:`mlsysim.physics.attention.fused_attention_time` (the forward again where recomputed);
  unfused, two batched products per head and the score matrix through memory;
* **casts** to a low-precision format (FP8 and the block-scaled formats):
  each linear layer's operands X (M x K), W (K x N) and gradient dY (M x N)
  are read and written :data:`mlsysim.physics.matmul.CAST_BYTES` times,
  :data:`CAST_KERNELS_PER_PRODUCT` memory-bound kernels a product;
* **memory-bound element-wise work** (norms, activation functions, dropout,
  residual adds, the softmax where unfused, rotary embeddings): each byte of
  a layer's stored activations (Korthikanti et al. 2022, Table 2) crosses the
  memory bus n_pass times (:func:`elementwise_passes`: 4, 6 with full recomputation),
  in :data:`ELEMENTWISE_KERNELS` kernels a layer, half as often and half as many with
  fused element-wise kernels (:data:`FUSED_ELEMENTWISE_SHARE`; torch.compile). Casts and
  element-wise kernels each pay the measured floor t_0 and stream at the measured share f of
  the bandwidth (:func:`mlsysim.physics.streaming.memory_kernel_time`).

Recomputation reruns what it reruns: full, every layer's forward (products,
attention, casts); selective, the attention core's forward (Korthikanti et
al. 2022, section 5). Compute-bound kernels sustain the share of their rate the device's power
limit leaves (:func:`mlsysim.physics.clocks.sustained_fraction`). The optimizer step is priced
once per update by the layout model (:func:`mlsysim.physics.optimizer.optimizer_step_time`).

Without ``ffn_hidden`` the MLP's width is what the parameter count leaves
after attention and one embedding table: f = ((N - V h) / L - h (a + 2 a_kv) d
- h^2) / (2 h), two matrices; so the products' FLOPs add up to the model's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mlsysim.physics._array import Num, maximum, minimum, where
from mlsysim.physics.activations import MLP_RERUN_UNITS, NORM_OUTPUT_UNITS, recomputed_modules
from mlsysim.physics.attention import (
    UNFUSED_PASSES,
    Direction,
    attention_flops,
    fused_attention_time,
    pair_flops,
)
from mlsysim.physics.clocks import sustained_fraction
from mlsysim.physics.gemm import training_product_time
from mlsysim.physics.records import Cluster, KernelConstants, Layout, ModelShape, Rates, with_fields
from mlsysim.physics.tensor_parallel import tp_activation_bytes_per_layer

FUSED_ELEMENTWISE_SHARE = 0.5
"""Memory traffic of the element-wise work with fused kernels (torch.compile), over unfused: chains of
element-wise operations read and write their activations once instead of per operation. Order of
magnitude, not fitted."""


ELEMENTWISE_PASSES = 4.0
"""Times each stored activation byte crosses the memory bus per micro-batch (forward write and read,
backward read, gradient write and read); an order-of-magnitude count, not fitted."""

RECOMPUTE_PASSES = 2.0
"""Extra passes when full recomputation reruns the forward."""

def elementwise_passes(recompute: str) -> float:
    """n_pass: 4, or 6 when full recomputation runs the forward again."""
    return ELEMENTWISE_PASSES + (RECOMPUTE_PASSES if recompute == "full" else 0.0)


class Experts(NamedTuple):
    """A mixture of experts and where its experts live (Fedus, Zoph and Shazeer 2022, "Switch Transformers";
    Megatron-Core's expert parallelism).

    ``share`` of the layers are MoE layers; each routes every token to ``top_k`` of ``experts`` routed
    experts of inner width ``width`` (gated like the dense MLP), beside ``shared`` always-active experts of
    width ``shared_width``. ``parallel`` (ep) devices hold the experts, E / ep each, and ``tensor``
    (etp) devices split each expert's matrices; ``imbalance`` rho >= 1 is the busiest device's load over
    the mean (1: balanced routing). ``ceiling``: the fraction of the format's peak the routed experts'
    grouped products reach (NaN: the linear layers' ceiling): what a mixture of experts loses beyond its
    products' shapes (grouped kernels over ragged token counts, the tokens' permutation around the
    all-to-all, the router's bookkeeping) is priced there, in the routed experts, while the attention,
    the dense and shared MLPs and the output layer keep the dense ceilings (docs/operators.md).

    Per device and MoE layer, with the device's T tokens split over the t tensor ranks
    (sequence parallelism, as Megatron-Core requires with experts) into T / t:

    * routed experts: E / ep grouped products of M_e = ep etp (T / t) k rho / E tokens each,
      (M_e, f_in / etp, h) and (M_e, h, f / etp);
    * shared experts: (T, S f_s,in / t, h) and (T, h, S f_s / t), tensor-parallel like the dense MLP;
    * the router: (T / t, E, h).
    """

    share: Num
    experts: Num
    top_k: Num
    width: Num
    shared: Num = 0.0
    shared_width: Num = math.nan
    parallel: Num = 1.0
    tensor: Num = 1.0
    imbalance: Num = 1.0
    ceiling: Num = math.nan
    hierarchical: Num = 0.0
    """1: the all-to-alls cross the NICs once per remote domain a token's experts are in
    (:func:`mlsysim.physics.experts.all_to_all_shares`)."""

    def routed_tokens(self, tokens: Num, tensor_parallel: Num) -> Num:
        """M_e: tokens one local expert computes."""
        return self.parallel * self.tensor * tokens / tensor_parallel * self.top_k * self.imbalance / self.experts

    def products(self, tokens: Num, hidden: Num, tensor_parallel: Num, gated_mlp: Num, ceiling: Num) -> list[
        tuple[Num, Num, Num, Num, Num, Num]
    ]:
        """The (M, N, K, batch, weight, ceiling) products of the MoE layers (weight: their share of the
        layers; ceiling: :attr:`ceiling` for the routed experts', the linear layers' ``ceiling`` for the
        rest)."""
        t, h, w = tensor_parallel, hidden, self.share
        gate = where(gated_mlp > 0, 2.0, 1.0)
        m_e = self.routed_tokens(tokens, t)
        local = self.experts / self.parallel
        routed = where(self.ceiling == self.ceiling, self.ceiling, ceiling)
        out: list[tuple[Num, Num, Num, Num, Num, Num]] = [
            (m_e, gate * self.width / self.tensor, h, local, w, routed),
            (m_e, h, self.width / self.tensor, local, w, routed),
            (tokens / t, self.experts, h, 1.0, w, ceiling),
        ]
        shared_width = where(self.shared_width == self.shared_width, self.shared_width, self.width)
        if not (type(self.shared) is float and self.shared == 0.0):
            s_w = self.shared * shared_width
            out += [(tokens, gate * s_w / t, h, 1.0, where(self.shared > 0, w, 0.0), ceiling),
                    (tokens, h, s_w / t, 1.0, where(self.shared > 0, w, 0.0), ceiling)]
        return out


class OperatorTimes(NamedTuple):
    """One micro-batch's forward and backward on one device, by operator class (seconds, FLOPs, bytes)."""

    matmul_time: Num
    """The linear layers' matrix products (and the output layer's share)."""
    attention_time: Num
    """The attention core."""
    cast_time: Num
    """Scaling and casting the linear layers' operands to a low-precision format."""
    memory_time: Num
    """Memory-bound element-wise work."""
    matmul_flops: Num
    """FLOPs the linear layers' products execute (recomputation included)."""
    attention_flops: Num
    """FLOPs the attention kernels execute (a causal fused kernel: half the matrix)."""
    cast_bytes: Num
    memory_bytes: Num
    cast_kernels: Num = 0.0
    """Cast kernels run (each pays the memory-bound kernels' floor)."""
    memory_kernels: Num = 0.0
    """Memory-bound element-wise kernels run."""

    @property
    def total(self) -> Num:
        """t_c: the four classes in sequence (one stream: a kernel waits for the one before)."""
        return self.matmul_time + self.attention_time + self.cast_time + self.memory_time


def mlp_width(parameters: Num, layers: Num, hidden: Num, heads: Num, kv_heads: Num, vocab: Num) -> Num:
    """f = ((N - V h) / L - h (a + 2 a_kv) d - h^2) / (2 h), d = h / a: the MLP width the parameter count leaves
    (two matrices; at least 1)."""
    attention = hidden * (heads + 2.0 * kv_heads) * (hidden / heads) + hidden * hidden
    per_layer = (parameters - vocab * hidden) / layers
    return maximum((per_layer - attention) / (2.0 * hidden), 1.0)



def dense_mlp_widths(shape: ModelShape) -> tuple[Num, Num]:
    """(f_in, f): the dense MLP's first product's width (2 f when gated) and its hidden width f (given, or the
    one the parameter count leaves, :func:`mlp_width`)."""
    h, a = shape.hidden, shape.heads
    kv = _or(shape.kv_heads, a)
    given_width = shape.ffn_hidden == shape.ffn_hidden
    gated = where(given_width, shape.gated_mlp, 0.0) > 0
    f = where(given_width, shape.ffn_hidden, mlp_width(shape.parameters, shape.layers, h, a, kv, shape.vocab))
    return where(gated, 2.0 * f, f), f


def dense_mlp_parameters(shape: ModelShape) -> Num:
    """N_mlp = (f_in + f) h: the parameters of one dense MLP (:func:`dense_mlp_widths`)."""
    f_in, f = dense_mlp_widths(shape)
    return (f_in + f) * shape.hidden


Product = tuple[Num, Num, Num, Num, Num, Num, float]
"""One product of a layer: (M, N, K, batch, weight, ceiling, reruns), weight the share of the layers that run
it, reruns its forwards again in the backward (recomputation: 0 or 1)."""


def _or(value: Num, default: Num) -> Num:
    """``value``, or ``default`` where it is not given (NaN)."""
    return where(value == value, value, default)


def experts_in(shape: ModelShape, layout: Layout, rates: Rates) -> Experts | None:
    """The mixture of experts of ``shape`` placed by ``layout`` (ep, etp, the dispatch), at the ``rates``'
    expert ceiling and load imbalance; None for a dense model."""
    moe = shape.moe
    if moe is None:
        return None
    return Experts(
        share=moe.share, experts=moe.experts, top_k=moe.top_k, width=moe.width, shared=moe.shared,
        shared_width=moe.shared_width, parallel=layout.expert_parallel, tensor=layout.expert_tensor_parallel,
        imbalance=rates.expert_imbalance, ceiling=rates.expert_ceiling, hierarchical=layout.hierarchical_dispatch,
    )


def layer_products(shape: ModelShape, layout: Layout, tokens: Num, ceiling: Num, experts: Experts | None) -> list[
    Product
]:
    """The products of one layer on one device: attention's projections (multi-head, grouped-query or latent),
    the dense MLP's two matrices (the layers that are not MoE layers) and the experts' (:class:`Experts`)."""
    t, h, a = layout.tensor_parallel, shape.hidden, shape.heads
    kv = _or(shape.kv_heads, a)
    d = _or(shape.head_dim, h / a)
    c = ceiling
    rerun = recomputed_modules(layout.recompute, layout.recompute_modules)
    full = 1.0 if layout.recompute == "full" else 0.0
    mlp = 1.0 if "mlp" in rerun else 0.0
    products: list[Product] = []
    mla = shape.mla
    if mla is None:
        products += [(tokens, (a + 2.0 * kv) * d / t, h, 1.0, 1.0, c, full),
                     (tokens, h, a * d / t, 1.0, 1.0, c, full)]
    else:
        d_v = mla.value
        products += [
            (tokens, mla.q_rank, h, 1.0, 1.0, c, full),  # the down projections are not split by t
            (tokens, a * (mla.nope + mla.rope) / t, mla.q_rank, 1.0, 1.0, c, full),
            (tokens, mla.kv_rank + mla.rope, h, 1.0, 1.0, c, full),
            (tokens, a * (mla.nope + d_v) / t, mla.kv_rank, 1.0, 1.0, c, full),
            (tokens, h, a * d_v / t, 1.0, 1.0, c, full),
        ]
    dense = 1.0 if experts is None else 1.0 - experts.share
    if experts is None or experts.share < 1.0:
        f_in, f = dense_mlp_widths(shape)
        products += [(tokens, f_in / t, h, 1.0, dense, c, mlp), (tokens, h, f / t, 1.0, dense, c, mlp)]
    if experts is not None:
        products += [(*p, full) for p in experts.products(tokens, h, t, shape.gated_mlp, c)]
    return products


class LinearLayers(NamedTuple):
    """The linear layers' products of one micro-batch on the device's layers (and the output layer's share)."""

    time: Num
    flops: Num
    elements: Num
    """Operand and result elements of one pass of every product (what a cast to FP8 reads and writes)."""
    rerun_elements: Num
    """Operand elements of the forward products recomputation reruns (what it casts again)."""


class Device(NamedTuple):
    """What the operator classes read of the device: its kernels, peaks and ceilings (SI)."""

    kernels: KernelConstants
    compute_units: Num
    bandwidth: Num
    """Memory bandwidth, bytes/s."""
    matmul_peak: Num
    """The linear layers' format's dense peak."""
    matmul_ceiling: Num
    sixteen_bit_peak: Num
    """The 16-bit peak of the attention core and the output layer."""
    sixteen_bit_ceiling: Num
    sustained: Num
    """The share of the compute-bound kernels' rate sustained under the power limit."""


def product_times(device: Device, m: Num, n: Num, k: Num, batch: Num, ceiling: Num, in_bytes: Num,
                  peak: Num) -> tuple[Num, Num]:
    """A linear layer's forward kernel and its two backward kernels on ``device``
    (:func:`mlsysim.physics.gemm.training_product_time`)."""
    c = device.kernels
    return training_product_time(
        m, n, k, batch, peak=peak, ceiling=ceiling, compute_units=device.compute_units, bandwidth=device.bandwidth,
        in_bytes=in_bytes, launch=c.launch, fill=c.fill, epilogue_share=c.epilogue_share,
        memory_efficiency=c.stream_efficiency, sustained=device.sustained,
    )


def linear_layers(
    products: list[Product], here: Num, share: Num, tokens: Num, shape: ModelShape, layout: Layout, device: Device,
) -> LinearLayers:
    """Each product's forward kernel and its two backward kernels at their own shapes (:func:`product_times`),
    times the L_s layers (the forward again where recomputation reruns it: every product under full, the
    dense MLP's under Megatron-Core's ``mlp`` module), plus the share L_s / L of the output layer (b s, V / t, h)
    in 16 bits."""
    t, h, vocab = layout.tensor_parallel, shape.hidden, shape.vocab
    full = 1.0 if layout.recompute == "full" else 0.0
    forward: Num = 0.0
    backward: Num = 0.0
    elements: Num = 0.0
    rerun_elements: Num = 0.0
    layer_flops: Num = 0.0
    partial_forward: Num = 0.0  # the forwards a selective recomputation reruns (none under full: all are)
    partial_flops: Num = 0.0
    for m, n, k, batch, weight, c, reruns in products:
        fw, bw = product_times(device, m, n, k, batch, c, layout.matmul_bytes, device.matmul_peak)
        forward, backward = forward + weight * fw, backward + weight * bw
        operands = batch * (m * k + k * n)
        rerun_elements = rerun_elements + weight * reruns * operands
        elements = elements + weight * (operands + batch * m * n)
        flops = weight * 2.0 * m * n * k * batch
        layer_flops = layer_flops + flops
        if reruns > full:
            partial_forward, partial_flops = partial_forward + weight * fw, partial_flops + flops
    head_fw, head_bw = product_times(device, tokens, vocab / t, h, 1.0, device.sixteen_bit_ceiling, 2.0,
                                     device.sixteen_bit_peak)
    head_flops = 6.0 * tokens * vocab * h / t
    return LinearLayers(
        time=here * (forward * (1.0 + full) + backward) + here * partial_forward + share * (head_fw + head_bw),
        flops=here * layer_flops * (3.0 + full) + here * partial_flops + share * head_flops,
        elements=elements,
        rerun_elements=rerun_elements,
    )


ATTENTION_BYTES = 2.0
"""Bytes of a Q, K, V or O element: the attention core runs in 16 bits."""


def attention_core(shape: ModelShape, layout: Layout, here: Num, device: Device) -> tuple[Num, Num]:
    """Seconds and executed FLOPs of the attention core of one micro-batch on the device's L_s layers: a / t
    heads (a_kv / t key/value heads) of b causal sequences, Q K^T of width d_qk and attention x V of width
    d_v. Fused (FlashAttention, cuDNN): the forward kernel, the backward kernel and the forward again
    where it is recomputed (selective or full), each priced by
    :func:`mlsysim.physics.attention.fused_attention_time` with the device's measured constants; under
    context parallelism the device's queries are 1/cp of the sequence, against every key: 1/cp of the
    whole sequence's call (the load-balanced split gives each device as many causal pairs). Unfused: the
    two products of each head as batched kernels (:func:`product_times`) and the score matrix through
    memory (:data:`mlsysim.physics.attention.UNFUSED_PASSES` passes)."""
    t, b, s, a, cp = layout.tensor_parallel, layout.micro_batch, shape.seq_len, shape.heads, layout.context_parallel
    kv = _or(shape.kv_heads, a)
    mla = shape.mla
    if mla is None:
        d_qk = d_v = _or(shape.head_dim, shape.hidden / a)
    else:
        d_qk, d_v = mla.nope + mla.rope, mla.value
    reruns = 1.0 if "core_attn" in recomputed_modules(layout.recompute, layout.recompute_modules) else 0.0
    if layout.flash_attention:
        forward, backward = fused_attention_passes(device, b, a / t, kv / t, s, d_qk, d_v)
        flops = attention_flops(b, a / t, s, s, d_qk, d_v, 1.0, float(Direction.FORWARD_BACKWARD))
        forward_flops = attention_flops(b, a / t, s, s, d_qk, d_v, 1.0, float(Direction.FORWARD))
        return (here * (forward * (1.0 + reruns) + backward) / cp,
                here * (flops + reruns * forward_flops) / cp)
    local_heads = b * a / t
    peak, ceiling = device.sixteen_bit_peak, device.sixteen_bit_ceiling
    qk_fw, qk_bw = product_times(device, s / cp, s, d_qk, local_heads, ceiling, ATTENTION_BYTES, peak)
    av_fw, av_bw = product_times(device, s / cp, d_v, s, local_heads, ceiling, ATTENTION_BYTES, peak)
    scores = local_heads * s / cp * s
    passes = UNFUSED_PASSES[Direction.FORWARD] * (1.0 + reruns) + UNFUSED_PASSES[Direction.BACKWARD]
    softmax = passes * scores * ATTENTION_BYTES / (device.kernels.memory_fraction * device.bandwidth)
    counted = 2.0 * scores * (d_qk + d_v)  # forward FLOPs of the products, every score
    return (here * ((qk_fw + av_fw) * (1.0 + reruns) + qk_bw + av_bw + softmax),
            here * counted * (3.0 + reruns))


def in_training_share(device: Device) -> Num:
    """The share of their measured rate compute-bound kernels keep inside a training step: the in-training
    16-bit ceiling over the best measured 16-bit product (at most 1; 1 where the best is not known)."""
    best = device.kernels.sixteen_bit_best
    return where(best == best, minimum(device.sixteen_bit_ceiling / where(best == best, best, 1.0), 1.0), 1.0)


def fused_attention_passes(device: Device, batch: Num, heads: Num, kv_heads: Num, seq: Num, d_qk: Num,
                           d_v: Num) -> tuple[Num, Num]:
    """(forward, backward) seconds of one causal fused attention call of the whole sequence, by the device's
    measured constants of each pass, or of the two together where only that was measured (the forward its
    share of the FLOPs)."""
    c = device.kernels
    common = dict(batch=batch, heads=heads, kv_heads=kv_heads, seq_q=seq, seq_k=seq, head_dim=d_qk, head_dim_v=d_v,
                  causal=1.0, element_bytes=ATTENTION_BYTES, peak_flops=device.sixteen_bit_peak * device.sustained
                  * in_training_share(device),
                  bandwidth=device.bandwidth, compute_units=device.compute_units, head_overhead=c.head_overhead,
                  floor=c.attention_floor)
    if c.attention_forward is not None and c.attention_backward is not None:
        forward = fused_attention_time(direction=float(Direction.FORWARD), **c.attention_forward._asdict(), **common)
        backward = fused_attention_time(direction=float(Direction.BACKWARD), **c.attention_backward._asdict(),
                                        **common)
        return forward.time, backward.time
    assert c.attention_both is not None
    both = fused_attention_time(direction=float(Direction.FORWARD_BACKWARD), **c.attention_both._asdict(), **common)
    share = pair_flops(d_qk, d_v, float(Direction.FORWARD)) / pair_flops(d_qk, d_v, float(Direction.FORWARD_BACKWARD))
    return both.time * share, both.time * (1.0 - share)


def elementwise_bytes(shape: ModelShape, layout: Layout, here: Num) -> Num:
    """Bytes the memory-bound element-wise work of one micro-batch moves on the device's L_s layers:
    L_s n_pass a_layer, halved with fused element-wise kernels (:data:`FUSED_ELEMENTWISE_SHARE`)."""
    stored = tp_activation_bytes_per_layer(
        shape.seq_len / layout.context_parallel, layout.micro_batch, shape.hidden, shape.heads,
        layout.tensor_parallel, sequence_parallel=layout.sequence_parallel, recompute="none",
        flash_attention=layout.flash_attention, kv_len=shape.seq_len,
    )
    fusion = where(layout.fused_elementwise > 0, FUSED_ELEMENTWISE_SHARE, 1.0)
    return here * (elementwise_passes(layout.recompute) * stored + module_rerun_bytes(shape, layout)) * fusion


def module_rerun_bytes(shape: ModelShape, layout: Layout) -> Num:
    """Bytes one layer's element-wise work moves again where selective recomputation reruns Megatron-Core's
    ``mlp`` (the activation function reads and writes the 16 s b h / t between the MLP's products) or
    ``layernorm`` (the two norms read their inputs and write their outputs, 2 x 4 s b h, split by t under
    sequence parallelism); 0 otherwise (full recomputation's are in :func:`elementwise_passes`)."""
    rerun = recomputed_modules(layout.recompute, layout.recompute_modules)
    if layout.recompute != "selective" or not rerun - {"core_attn"}:
        return 0.0
    t = layout.tensor_parallel
    sbh = shape.seq_len / layout.context_parallel * layout.micro_batch * shape.hidden
    mlp = MLP_RERUN_UNITS / t if "mlp" in rerun else 0.0
    norms = 2.0 * NORM_OUTPUT_UNITS * (1.0 / t if layout.sequence_parallel else 1.0) if "layernorm" in rerun else 0.0
    return (mlp + norms) * sbh


ELEMENTWISE_KERNELS = 20.0
"""Memory-bound kernels of one layer and micro-batch, forward and backward, run one by one: the two norms,
the rotary embedding of the queries and keys, two residual additions and the gated activation in the
forward (seven), about twice as many in the backward. An order-of-magnitude count of an eager
PyTorch / Megatron-Core layer, not fitted; with fused element-wise kernels (torch.compile) half as many."""

CAST_KERNELS_PER_PRODUCT = 3.0
"""Cast kernels per linear product and micro-batch to a low-precision format: the input and the weight in
the forward, the output's gradient in the backward (their transposes written by the same kernels)."""


def memory_kernels_time(device: Device, bytes_moved: Num, kernels: Num) -> Num:
    """``kernels`` memory-bound kernels moving ``bytes_moved`` in all: each pays the floor, the bytes stream
    at the measured share of the bandwidth (:func:`mlsysim.physics.streaming.memory_kernel_time`)."""
    c = device.kernels
    return kernels * c.memory_floor + bytes_moved / (c.memory_fraction * device.bandwidth)


def operator_times(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, layers_here: Num = math.nan
) -> OperatorTimes:
    """The four operator classes of one micro-batch of b sequences on one device (see the module docstring).

    ``layers_here`` L_s: the layers of the device's pipeline stage (NaN: all L); the output layer is
    spread over the layers (the share L_s / L of it). Every kernel is priced with the device's measured
    kernels (``rates.kernels``): the linear layers' products at ``rates.matmul_peak`` (NaN: the cluster's
    peak) and ``rates.matmul_ceiling``, the attention core and output layer at the 16-bit
    ``rates.attention_peak`` and ``attention_ceiling`` (NaN: the same ceiling); the routed experts' grouped
    products at ``rates.expert_ceiling`` (NaN: the linear layers'). Context parallelism cp: the device
    holds s / cp tokens of each sequence, its queries attending to all s keys
    (:mod:`mlsysim.physics.context_parallel`).
    """
    if rates.kernels is None:
        raise ValueError("operator_times needs the device's measured kernels (rates.kernels)")
    here = _or(layers_here, shape.layers)
    share = here / shape.layers
    tokens = layout.micro_batch * shape.seq_len / layout.context_parallel
    ceiling = rates.matmul_ceiling
    c = rates.kernels
    device = Device(
        c, cluster.compute_units, cluster.memory_bandwidth, _or(rates.matmul_peak, cluster.peak_flops),
        ceiling, _or(rates.attention_peak, cluster.peak_flops), _or(rates.attention_ceiling, ceiling),
        sustained_fraction(_or(cluster.power_limit, c.reference_power), c.reference_power, c.power_exponent),
    )
    products = layer_products(shape, layout, tokens, ceiling, experts_in(shape, layout, rates))
    linear = linear_layers(products, here, share, tokens, shape, layout, device)
    attention, attention_flops_done = attention_core(shape, layout, here, device)
    cast = here * layout.cast_bytes * (linear.elements + linear.rerun_elements)
    fusion = where(layout.fused_elementwise > 0, FUSED_ELEMENTWISE_SHARE, 1.0)
    cast_kernels = where(layout.cast_bytes > 0, here * len(products) * CAST_KERNELS_PER_PRODUCT * fusion, 0.0)
    memory = elementwise_bytes(shape, layout, here)
    memory_kernels = here * ELEMENTWISE_KERNELS * fusion
    return OperatorTimes(
        matmul_time=linear.time,
        attention_time=attention,
        cast_time=memory_kernels_time(device, cast, cast_kernels),
        memory_time=memory_kernels_time(device, memory, memory_kernels),
        matmul_flops=linear.flops,
        attention_flops=attention_flops_done,
        cast_bytes=cast,
        memory_bytes=memory,
        cast_kernels=cast_kernels,
        memory_kernels=memory_kernels,
    )


OPERATOR_INPUTS: dict[str, tuple[str, ...]] = {
    "cluster": ("peak_flops", "memory_bandwidth", "compute_units", "power_limit"),
    "layout": ("tensor_parallel", "context_parallel", "expert_parallel", "expert_tensor_parallel", "micro_batch",
               "fused_elementwise", "cast_bytes", "matmul_bytes"),
    "rates": ("matmul_ceiling", "matmul_peak", "attention_ceiling", "attention_peak", "expert_ceiling",
              "expert_imbalance"),
}
"""The fields of the cluster, layout and rates :func:`operator_times` reads (the shape: all of it)."""

DEDUPLICATE_BELOW = 0.25
"""Price only the distinct rows when they are fewer than this share of all rows (else every row)."""


def operator_times_by_distinct_rows(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, layers_here: Num = math.nan
) -> OperatorTimes:
    """:func:`operator_times` of 1-D arrays of rows, computed once per distinct row.

    A layout search's rows repeat the few inputs the operators depend on (t, cp, b, the stage's layers,
    ep, etp) across many device counts, micro-batch counts and ZeRO stages: the classes are priced on
    the distinct rows and spread back. Every result is the element-wise arithmetic of the same inputs,
    so the numbers are those of pricing every row (a test holds them equal, bit for bit).
    """
    records = {"cluster": cluster, "layout": layout, "rates": rates}
    columns: dict[tuple[str, str], np.ndarray] = {
        (record, name): value
        for record, names in OPERATOR_INPUTS.items()
        for name in names
        if type(value := getattr(records[record], name)) is np.ndarray
    }
    if type(layers_here) is np.ndarray:
        columns[("stage", "layers")] = layers_here
    shape_arrays = [name for name, value in zip(ModelShape._fields, shape, strict=True) if type(value) is np.ndarray]
    lengths = {value.shape for value in columns.values()}
    if not columns or shape_arrays or len(lengths) != 1 or len(next(iter(lengths))) != 1:
        return operator_times(shape, cluster, layout, rates, layers_here)
    keys = np.ascontiguousarray(np.stack([value.astype(float) for value in columns.values()], axis=1))
    rows = keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    if len(first) > DEDUPLICATE_BELOW * len(rows):
        return operator_times(shape, cluster, layout, rates, layers_here)
    distinct: dict[str, dict[str, np.ndarray]] = {"cluster": {}, "layout": {}, "rates": {}}
    for (record, name), value in columns.items():
        if record != "stage":
            distinct[record][name] = value[first]
    priced = operator_times(
        shape, with_fields(cluster, distinct["cluster"]), with_fields(layout, distinct["layout"]),
        with_fields(rates, distinct["rates"]), layers_here[first] if type(layers_here) is np.ndarray else layers_here,
    )
    return OperatorTimes(*(value[inverse] if type(value) is np.ndarray else value for value in priced))
