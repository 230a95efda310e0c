"""A transformer's compute, operator by operator: one micro-batch's forward and backward on one device.

The step time of a decoder transformer is built from what its kernels do, in
four classes, each priced at the bound that limits it (Williams, Waterman and
Patterson 2009, "Roofline": time >= FLOPs / peak and >= bytes / memory
bandwidth):

* **matrix products** of the linear layers, per layer: the query/key/value
  projection (M, N, K) = (b s, (a + 2 a_kv) d / t, h), the attention output
  projection (b s, h, h / t), the MLP's first (b s, f_in / t, h) and second
  (b s, h, f / t) matrices (f_in = 2 f for a gated MLP: gate and up), and
  the output layer (b s, V / t, h) spread over the layers; each priced
  forward and its two backward products at their own shapes by
  :func:`mlsysim.physics.matmul.training_matmul_time`, at the peak and
  fitted ceiling of the matrix products' format; a mixture of experts' routed
  experts as grouped products of the tokens each local expert receives, at
  the experts' own ceiling (:class:`Experts`);
* **the attention core** (Q K^T and attention x V), in the 16-bit format:
  fused (FlashAttention, Dao 2023) it runs the causal half of the products
  (blocks above the diagonal skipped), the backward 2.5 times the forward
  (five products against two), at a fraction :data:`FUSED_ATTENTION_SHARE`
  of the 16-bit ceiling; unfused it is two batched products per head, (s, s,
  d) and (s, d, s), priced like the linear layers (small K: a low efficiency);
* **casts** to a low-precision format (FP8 and the block-scaled formats):
  each linear layer's operands X (M x K), W (K x N) and gradient dY (M x N)
  are read and written :data:`mlsysim.physics.matmul.CAST_BYTES` times,
  at the memory bandwidth;
* **memory-bound element-wise work** (norms, activation functions, dropout,
  residual adds, the softmax where unfused, rotary embeddings): each byte of
  a layer's stored activations (Korthikanti et al. 2022, Table 2) crosses the
  memory bus n_pass times (:func:`elementwise_passes`:
  4, 6 with full recomputation), half as often with fused element-wise
  kernels (:data:`FUSED_ELEMENTWISE_SHARE`; torch.compile).

Recomputation reruns what it reruns: full, every layer's forward (products,
attention, casts); selective, the attention core's forward (Korthikanti et
al. 2022, section 5). The optimizer step is priced once per update by the
layout model (:func:`mlsysim.physics.optimizer.optimizer_step_time`).

Without ``ffn_hidden`` the MLP's width is what the parameter count leaves
after attention and one embedding table: f = ((N - V h) / L - h (a + 2 a_kv) d
- h^2) / (2 h), two matrices; so the products' FLOPs add up to the model's.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mlsysim.physics._array import Num, maximum, where
from mlsysim.physics.matmul import k_overhead, training_matmul_time
from mlsysim.physics.records import Cluster, Layout, ModelShape, Rates, with_fields
from mlsysim.physics.tensor_parallel import tp_activation_bytes_per_layer

FUSED_ATTENTION_SHARE = 0.7
"""Efficiency of a fused attention kernel relative to the large matrix products' ceiling: FlashAttention-2
reaches 50-73% of the A100's peak forward and backward (Dao 2023, section 4.1) where the matrix products
reach about 80-90%; FlashAttention-3 75% of the H100's in the forward (Shah et al. 2024). Not fitted."""

CAUSAL_SHARE = 0.5
"""Share of the attention matrix a causal fused kernel computes (the blocks on and below the diagonal)."""

ATTENTION_BACKWARD = 2.5
"""Backward over forward work of fused attention: five products against two (Dao 2023, algorithm 2)."""

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



Product = tuple[Num, Num, Num, Num, Num, Num]
"""One product of a layer: (M, N, K, batch, weight, ceiling), weight the share of the layers that run it."""


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
    products: list[Product] = []
    mla = shape.mla
    if mla is None:
        products += [(tokens, (a + 2.0 * kv) * d / t, h, 1.0, 1.0, c), (tokens, h, a * d / t, 1.0, 1.0, c)]
    else:
        d_v = mla.value
        products += [
            (tokens, mla.q_rank, h, 1.0, 1.0, c),  # the down projections are not split by t
            (tokens, a * (mla.nope + mla.rope) / t, mla.q_rank, 1.0, 1.0, c),
            (tokens, mla.kv_rank + mla.rope, h, 1.0, 1.0, c),
            (tokens, a * (mla.nope + d_v) / t, mla.kv_rank, 1.0, 1.0, c),
            (tokens, h, a * d_v / t, 1.0, 1.0, c),
        ]
    dense = 1.0 if experts is None else 1.0 - experts.share
    given_width = shape.ffn_hidden == shape.ffn_hidden
    gated = where(given_width, shape.gated_mlp, 0.0) > 0
    if experts is None or experts.share < 1.0:
        f = where(given_width, shape.ffn_hidden, mlp_width(shape.parameters, shape.layers, h, a, kv, shape.vocab))
        f_in = where(gated, 2.0 * f, f)
        products += [(tokens, f_in / t, h, 1.0, dense, c), (tokens, h, f / t, 1.0, dense, c)]
    if experts is not None:
        products += experts.products(tokens, h, t, shape.gated_mlp, c)
    return products


class LinearLayers(NamedTuple):
    """The linear layers' products of one micro-batch on the device's layers (and the output layer's share)."""

    time: Num
    flops: Num
    elements: Num
    """Operand and result elements of one pass of every product (what a cast to FP8 reads and writes)."""
    forward_elements: Num
    """Operand elements of the forward products (what recomputation casts again)."""


def linear_layers(
    products: list[Product], here: Num, share: Num, tokens: Num, shape: ModelShape, layout: Layout,
    peaks: tuple[Num, Num], ceiling: Num, units: Num,
) -> LinearLayers:
    """Each product forward and its two backward products at their own shapes
    (:func:`~mlsysim.physics.matmul.training_matmul_time`), times the L_s layers (the forward twice under
    full recomputation), plus the share L_s / L of the output layer (b s, V / t, h) at the 16-bit peak and
    ``ceiling``; ``peaks`` the linear layers' and the 16-bit one."""
    matmul_peak, sixteen_bit_peak = peaks
    t, h, vocab = layout.tensor_parallel, shape.hidden, shape.vocab
    k0 = k_overhead(layout.matmul_bytes)
    forward: Num = 0.0
    backward: Num = 0.0
    elements: Num = 0.0
    forward_elements: Num = 0.0
    layer_flops: Num = 0.0
    for m, n, k, batch, weight, c in products:
        fw, bw = training_matmul_time(m, n, k, matmul_peak, c, units, batch, k0)
        forward, backward = forward + weight * fw, backward + weight * bw
        operands = batch * (m * k + k * n)
        forward_elements = forward_elements + weight * operands
        elements = elements + weight * (operands + batch * m * n)
        layer_flops = layer_flops + weight * 2.0 * m * n * k * batch
    head_fw, head_bw = training_matmul_time(tokens, vocab / t, h, sixteen_bit_peak, ceiling, units)
    head_flops = 6.0 * tokens * vocab * h / t
    reruns = 1.0 if layout.recompute == "full" else 0.0
    return LinearLayers(
        time=here * (forward * (1.0 + reruns) + backward) + share * (head_fw + head_bw),
        flops=here * layer_flops * (3.0 + reruns) + share * head_flops,
        elements=elements,
        forward_elements=forward_elements,
    )


def attention_core(shape: ModelShape, layout: Layout, here: Num, peak: Num, ceiling: Num, units: Num) -> tuple[
    Num, Num
]:
    """Seconds and executed FLOPs of the attention core of one micro-batch on the device's L_s layers: a / t
    heads of b sequences, Q K^T of width d_qk and attention x V of width d_v; fused (the causal half, the
    backward :data:`ATTENTION_BACKWARD` times the forward, at :data:`FUSED_ATTENTION_SHARE` of the 16-bit
    ceiling) or as batched products."""
    t, b, s, a, cp = layout.tensor_parallel, layout.micro_batch, shape.seq_len, shape.heads, layout.context_parallel
    mla = shape.mla
    if mla is None:
        d_qk = d_v = _or(shape.head_dim, shape.hidden / a)
    else:
        d_qk, d_v = mla.nope + mla.rope, mla.value
    counted = 2.0 * b * s * s * a * (d_qk + d_v) / (t * cp)  # forward FLOPs, the whole matrix (4 b s^2 h: MHA)
    reruns = 1.0 if layout.recompute in ("full", "selective") else 0.0
    if layout.flash_attention:
        executed = CAUSAL_SHARE * counted * (1.0 + ATTENTION_BACKWARD + reruns)
        return here * executed / (peak * ceiling * FUSED_ATTENTION_SHARE), here * executed
    local_heads = b * a / t
    qk_fw, qk_bw = training_matmul_time(s / cp, s, d_qk, peak, ceiling, units, local_heads)
    av_fw, av_bw = training_matmul_time(s / cp, d_v, s, peak, ceiling, units, local_heads)
    executed = counted * (3.0 + reruns)
    return here * ((qk_fw + av_fw) * (1.0 + reruns) + qk_bw + av_bw), here * executed


def elementwise_bytes(shape: ModelShape, layout: Layout, here: Num) -> Num:
    """Bytes the memory-bound element-wise work of one micro-batch moves on the device's L_s layers:
    L_s n_pass a_layer, halved with fused element-wise kernels (:data:`FUSED_ELEMENTWISE_SHARE`)."""
    stored = tp_activation_bytes_per_layer(
        shape.seq_len / layout.context_parallel, layout.micro_batch, shape.hidden, shape.heads,
        layout.tensor_parallel, sequence_parallel=layout.sequence_parallel, recompute="none",
        flash_attention=layout.flash_attention, kv_len=shape.seq_len,
    )
    fusion = where(layout.fused_elementwise > 0, FUSED_ELEMENTWISE_SHARE, 1.0)
    return here * elementwise_passes(layout.recompute) * stored * fusion


def operator_times(
    shape: ModelShape, cluster: Cluster, layout: Layout, rates: Rates, layers_here: Num = math.nan
) -> OperatorTimes:
    """The four operator classes of one micro-batch of b sequences on one device (see the module docstring).

    ``layers_here`` L_s: the layers of the device's pipeline stage (NaN: all L); the output layer is
    spread over the layers (the share L_s / L of it). The linear layers run at ``rates.matmul_peak``
    (NaN: the cluster's peak) and ``rates.matmul_ceiling``, the attention core and output layer at the
    16-bit ``rates.attention_peak`` and ``attention_ceiling`` (NaN: the same ceiling); the routed experts
    at ``rates.expert_ceiling``. Context parallelism cp: the device holds s / cp tokens of each sequence,
    its queries attending to all s keys (:mod:`mlsysim.physics.context_parallel`).
    """
    here = _or(layers_here, shape.layers)
    share = here / shape.layers
    tokens = layout.micro_batch * shape.seq_len / layout.context_parallel
    ceiling = rates.matmul_ceiling
    units = cluster.compute_units
    attention_peak = _or(rates.attention_peak, cluster.peak_flops)
    attention_ceiling = _or(rates.attention_ceiling, ceiling)
    products = layer_products(shape, layout, tokens, ceiling, experts_in(shape, layout, rates))
    linear = linear_layers(products, here, share, tokens, shape, layout,
                           (_or(rates.matmul_peak, cluster.peak_flops), attention_peak), attention_ceiling, units)
    attention, attention_flops = attention_core(shape, layout, here, attention_peak, attention_ceiling, units)
    reruns = 1.0 if layout.recompute == "full" else 0.0
    cast = here * layout.cast_bytes * (linear.elements + reruns * linear.forward_elements)
    memory = elementwise_bytes(shape, layout, here)
    return OperatorTimes(
        matmul_time=linear.time,
        attention_time=attention,
        cast_time=cast / cluster.memory_bandwidth,
        memory_time=memory / cluster.memory_bandwidth,
        matmul_flops=linear.flops,
        attention_flops=attention_flops,
        cast_bytes=cast,
        memory_bytes=memory,
    )


OPERATOR_INPUTS: dict[str, tuple[str, ...]] = {
    "cluster": ("peak_flops", "memory_bandwidth", "compute_units"),
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
