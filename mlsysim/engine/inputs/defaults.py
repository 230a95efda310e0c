"""The defaults of the inputs that are a choice of practice, each with its source, in one table.

An input left out takes its field's default (:mod:`mlsysim.engine.inputs.fields`). Most
defaults mean "not given" (no price, no latency); the ones below choose how the job runs,
and each says where the choice comes from: today's practice where the seed contract leaves
it free (fused attention kernels), the seed contract where it does not (16-bit gradients,
plain data parallelism, the seed's model). ``explain`` prints the rows in effect for a
scenario (:func:`defaults_in_effect`): every input given wins over its row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, NamedTuple

from mlsysim.engine.inputs.assumptions import Assumptions


class Default(NamedTuple):
    """A default that chooses how the job runs: the input, its value when not given, and why."""

    field: str
    value: str
    """The value as a user types it (``"1"``, ``"selective"``)."""
    meaning: str
    source: str
    applies: Callable[[Mapping[str, object]], bool]
    """Whether the default matters for a scenario's checked inputs (a transformer, a pipeline...)."""
    taken: Callable[[object], bool]
    """Whether a checked value is this default (not given, or given as it)."""


def _transformer(v: Mapping[str, object]) -> bool:
    workload = v.get("workload")
    return all(getattr(workload, name, None) is not None for name in ("layers", "hidden_dim", "heads", "seq_len"))


def _count(v: Mapping[str, object], name: str) -> int:
    value = v.get(name)
    return value if isinstance(value, int) else 1


def _modeled(assumptions: object) -> bool:
    """Whether the assumptions price what the seed leaves out (the input pipeline's jitter among it)."""
    return isinstance(assumptions, Assumptions) and not assumptions.is_seed()


def _is(*values: object) -> Callable[[object], bool]:
    return lambda value: value in values


def _off(field: str, meaning: str, source: str, size: str) -> Default:
    """A switch off by default (0) that matters where the layout count ``size`` is above 1."""
    return Default(field, "0", meaning, source, lambda v: _count(v, size) > 1, _is(None, 0))


DEFAULTS: Final = (
    Default(
        "flash_attention", "1", "fused attention kernels: the s x s attention matrices are never stored",
        "FlashAttention (Dao et al. 2022) and FlashAttention-2 (Dao 2023): PyTorch's scaled_dot_product_attention "
        "runs fused kernels by default since PyTorch 2.0 (March 2023), Megatron-Core Transformer Engine's fused "
        "attention, TorchTitan and NeMo both; flash_attention=0 prices the unfused kernels",
        _transformer, _is(None, 1),
    ),
    Default(
        "recompute", "selective",
        "the attention core (or the modules recompute_modules names) is recomputed in the backward, the rest stored",
        "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models', section 5 "
        "(what a fused attention kernel's backward does); none or full on request",
        _transformer, _is("selective"),
    ),
    Default(
        "reshard_after_forward", "1", "ZeRO-3 frees the gathered parameters after the forward and gathers them again",
        "PyTorch FSDP's default (FULL_SHARD; FSDP2 fully_shard(reshard_after_forward=True))",
        lambda v: v.get("zero_stage") == 3, _is(None, 1),
    ),
    _off(
        "sequence_parallel", "tensor parallelism without sequence parallelism",
        "Megatron-LM's default (--sequence-parallel is opt-in; Korthikanti et al. 2022 introduced it)",
        "tensor_parallel",
    ),
    _off(
        "tensor_overlap", "tensor-parallel collectives on the critical path",
        "Megatron-LM's default (--tp-comm-overlap and TorchTitan's async TP are opt-in)",
        "tensor_parallel",
    ),
    _off(
        "context_all_gather", "context parallelism as a ring of key/value blocks overlapped with attention",
        "Megatron-Core's default context-parallel communication (cp_comm_type 'p2p', ring attention: Liu et al. "
        "2023); Llama 3 and TorchTitan all-gather instead (context_all_gather=1)",
        "context_parallel",
    ),
    _off(
        "expert_overlap", "expert all-to-alls on the critical path",
        "Megatron-Core's default (--overlap-moe-expert-parallel-comm, like DeepSeek's DualPipe, is opt-in)",
        "expert_parallel",
    ),
    _off(
        "hierarchical_dispatch", "a flat all-to-all of the tokens to their experts",
        "Megatron-Core's all-to-all token dispatcher; DeepEP and HybridEP, which cross the NICs once per node, "
        "are opt-in there (--moe-enable-deepep, the flex dispatcher)",
        "expert_parallel",
    ),
    Default(
        "fused_elementwise", "0", "element-wise kernels unfused",
        "PyTorch's eager mode (torch.compile, which fuses them, is opt-in)",
        lambda v: _transformer(v) and v.get("step_time") is None and v.get("mfu") is None, _is(None, 0),
    ),
    Default(
        "inter_transport", "rdma", "the inter-node link carries RDMA (InfiniBand, RoCE)",
        "GPUDirect RDMA on the NICs of the registry's GPU servers; tcp on request",
        lambda v: _count(v, "nodes") > 1, _is(None, "rdma"),
    ),
    Default(
        "input_pipeline", "real", "batches prepared by a data loader on the host",
        "PyTorch's DataLoader with worker processes; device (DALI on the GPU) and synthetic on request",
        lambda v: _modeled(v.get("assumptions")),
        _is(None, "real"),
    ),
    Default(
        "precision", "fp16", "16-bit gradients (2 bytes per element)",
        "the seed contract (SPEC, section 3); today's GPUs train in bf16 (precision=bf16), the same 2 bytes",
        lambda v: True, _is("fp16"),
    ),
    Default(
        "zero_stage", "0", "plain data parallelism: the training state replicated",
        "the seed contract (PyTorch DDP); ZeRO and FSDP on request", lambda v: True, _is(0),
    ),
    Default(
        "assumptions", "seed", "the seed's model: a flat ring at full line rate, no overlap, no waits",
        "the seed contract (SPEC, section 4); assumptions=realistic is the preset fitted on published runs",
        lambda v: True, lambda value: isinstance(value, Assumptions) and value.is_seed(),
    ),
)
"""Every default that chooses how the job runs, with its source."""


def defaults_in_effect(values: Mapping[str, object]) -> tuple[Default, ...]:
    """The rows of :data:`DEFAULTS` that a scenario's checked ``values`` run with (the input at its
    default value, and the default mattering for this scenario)."""
    return tuple(d for d in DEFAULTS if d.taken(values.get(d.field)) and d.applies(values))
