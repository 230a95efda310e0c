"""How the shipped run records are read: every field declared, read or refused, never guessed.

A record of ``published_parallel.json`` or ``published_frontier.json`` (one published training run) becomes a
scenario's inputs in :mod:`mlsysim.validation.parallel`. This module says, field by field, how: each path of a
record is declared in :data:`RECORD_FIELDS` with its reading (an input of the scenario, the measurement, the
evidence beside it, provenance), and the typed readers below turn a value into an input or refuse it with a
:class:`RecordError` naming the run, the field, the value and why: an unknown GPU is not a DGX A100, an NVFP4 run
not a bf16 one, an integer FSDP group a shard group, a gated MLP what the record says it is, ``"n/a"`` or null
where a number is needed an error that says so. ``null`` in a record means "not stated in what was read" (the
files' own ``about``): a field the prediction needs is then taken from the run's named assumptions
(``ASSUMED`` of :mod:`mlsysim.validation.parallel`) or the record is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from mlsysim.core.exceptions import InputError
from mlsysim.engine.inputs.derivation import peak_format

if TYPE_CHECKING:
    from mlsysim.hardware.types import Accelerator, Node

Record = Mapping[str, Any]


class RecordError(InputError):
    """A field of a run record the reader cannot read: the run, the field's path, its value and why."""


def refuse(entry: Record, path: str, why: str) -> RecordError:
    """The error of the field ``path`` of ``entry``: ``"<run>: <path> = <value>: <why>"``."""
    return RecordError(f"{entry.get('id', '?')}: {path} = {value_at(entry, path)!r}: {why}")


def value_at(entry: Record, path: str) -> object:
    """The value at a dotted ``path`` of a record (None where absent)."""
    value: object = entry
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def paths(entry: Record, prefix: str = "") -> Iterator[str]:
    """Every leaf path of a record (a mapping's keys recursively; ``model.moe`` null is a leaf)."""
    for key, value in entry.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from paths(value, path + ".")
        else:
            yield path


READ, MEASURE, EVIDENCE, PROVENANCE = "read", "measure", "evidence", "provenance"

RECORD_FIELDS: Final[Mapping[str, tuple[str, str]]] = {
    # what the record is and where it comes from: text for a person, never read by the prediction
    "id": (PROVENANCE, "the run's name"),
    "source": (PROVENANCE, "the publication"),
    "quote": (PROVENANCE, "the quoted rows"),
    "caveats": (PROVENANCE, "what the collector noted"),
    "verified_from": (PROVENANCE, "where the figures were checked"),
    "derived_fields": (PROVENANCE, "which figures the collector derived"),
    "family": (READ, "the run's family (the unit left out), before its parenthesis"),
    # the job
    "gpus": (READ, "devices; nodes = gpus / hardware.gpus_per_node"),
    "global_batch": (READ, "sequences per update (null: the run's ASSUMED global_batch, else refused)"),
    "micro_batch": (READ, "sequences per micro-batch (null: ASSUMED micro_batch, else refused)"),
    "precision": (READ, "the linear layers' number format (matmul_format), by FORMATS; absent from the 2021-2024 "
                        "file, whose runs all train in 16 bits: bf16"),
    # the hardware
    "hardware.gpu": (READ, "the GPU: its generation (the ceilings it is priced with and informs) and registry "
                           "node, by GPUS; an unknown GPU is refused"),
    "hardware.gpus_per_node": (READ, "devices per node"),
    "hardware.cluster": (READ, "a cluster whose links are not its node's (CLUSTER_NETWORK), else the node's"),
    "hardware.intra_node": (PROVENANCE, "the links inside a node as published: the registry node's figures"),
    "hardware.inter_node": (PROVENANCE, "the links between nodes as published: the registry node's figures"),
    "hardware.peak_tflops_16bit": (READ, "checked against the registry node's 16-bit peak (within 2%)"),
    "hardware.peak_tflops_fp8": (READ, "checked against the registry node's fp8 peak (within 2%)"),
    "hardware.scale_up_domain": (READ, "checked against the registry node's NVLink domain"),
    # the model
    "model.arch": (READ, "the architecture: a registry model (REGISTRY_WORKLOADS), the hybrid attention it "
                         "cannot express, and whether its MLP is gated (gated_mlp)"),
    "model.params_billion": (READ, "parameters"),
    "model.layers": (READ, "layers"),
    "model.hidden": (READ, "hidden size"),
    "model.heads": (READ, "attention heads"),
    "model.kv_heads": (READ, "key/value heads (null: as many as heads)"),
    "model.head_dim": (READ, "width of a head (null: hidden / heads)"),
    "model.seq_len": (READ, "tokens per sequence"),
    "model.vocab": (READ, "vocabulary (null: ASSUMED vocab, else refused)"),
    "model.ffn_hidden": (READ, "the MLP's width (null: derived from the parameters)"),
    "model.gated_mlp": (READ, "whether the MLP is gated (null: read from model.arch)"),
    "model.moe": (READ, "null: a dense model"),
    "model.moe.num_experts": (READ, "routed experts (the registry model's, checked by its shape)"),
    "model.moe.top_k": (READ, "experts a token is routed to"),
    "model.moe.expert_hidden": (READ, "a routed expert's width"),
    "model.moe.shared_experts": (READ, "shared experts"),
    "model.moe.moe_layers": (EVIDENCE, "the MoE layers (the registry model's dense_layers give them)"),
    "model.moe.moe_layer_freq": (EVIDENCE, "which layers are MoE (the registry model's)"),
    "model.moe.active_params_billion": (EVIDENCE, "active parameters as stated (the registry model's)"),
    "model.mtp_layers": (EVIDENCE, "multi-token-prediction layers: not in the scenario (ASSUMED says so)"),
    # the layout
    "layout.tensor_parallel": (READ, "t (null: ASSUMED tensor_parallel, else refused)"),
    "layout.pipeline_parallel": (READ, "p (null: ASSUMED pipeline_parallel, else refused)"),
    "layout.data_parallel": (READ, "d (null: ASSUMED data_parallel, else refused)"),
    "layout.context_parallel": (READ, "cp (null or 1: none)"),
    "layout.expert_parallel": (READ, "ep (null or 1: none)"),
    "layout.expert_tensor_parallel": (READ, "etp (null or 1: none)"),
    "layout.expert_data_parallel": (EVIDENCE, "the experts' data-parallel size (t cp d / (ep etp) in the model)"),
    "layout.interleave_chunks": (READ, "virtual stages per device (null: none; text: ASSUMED pipeline_chunks)"),
    "layout.num_layers_per_virtual_pipeline_stage": (EVIDENCE, "the interleaving's chunk size"),
    "layout.model_parallel_size_tp_x_pp": (EVIDENCE, "t p as published"),
    "layout.recompute": (READ, "full, selective, none, or Megatron-Core's module lists (priced as none, said "
                               "in ASSUMED); null: ASSUMED recompute, else refused"),
    "layout.sequence_parallel": (READ, "sequence parallelism (null: none at t = 1; else ASSUMED, else refused)"),
    "layout.zero_stage": (READ, "the ZeRO stage (null: from layout.fsdp and distributed_optimizer)"),
    "layout.zero_note": (PROVENANCE, "a note on the ZeRO stage"),
    "layout.fsdp": (READ, "FSDP: 'On' or true shards everything (ZeRO-3), an integer is the shard group (HSDP); "
                          "null, 'off' or false: none"),
    "layout.distributed_optimizer": (READ, "Megatron's distributed optimizer: ZeRO-1 (null or false: none)"),
    "layout.data_parallel_kind": (PROVENANCE, "the data-parallel implementation as published"),
    "layout.dp_grad_allreduce_overlap": (READ, "false: the gradient reduction after the backward"),
    "layout.ddp_impl": (EVIDENCE, "Megatron's DDP implementation (ASSUMED reads its overlap)"),
    "layout.async_tensor_parallel": (READ, "async TP: tensor_overlap (at t > 1)"),
    "layout.torch_compile": (READ, "fused element-wise kernels"),
    "layout.ep_a2a_overlap": (READ, "the all-to-alls overlapped: expert_overlap"),
    "layout.token_dispatcher": (READ, "DeepEP or HybridEP: hierarchical_dispatch"),
    "layout.note": (READ, "'1f1b overlap': expert_overlap; otherwise a note"),
    "layout.pipeline_schedule": (EVIDENCE, "1F1B or interleaved as published (DualPipe: ASSUMED says how it "
                                           "is priced)"),
    "layout.pipeline_layout": (EVIDENCE, "a custom stage layout: not in the scenario (ASSUMED says so)"),
    "layout.pp_partition": (EVIDENCE, "DeepSpeed's partition (ASSUMED reads the stages' layers)"),
    "layout.parallel_order": (EVIDENCE, "the ranks' order (the scenario's is t, cp, d, p)"),
    "layout.ep_span": (EVIDENCE, "where the expert-parallel group sits"),
    "layout.activation_offload": (EVIDENCE, "activation offload: not in the scenario (ASSUMED says so)"),
    "layout.optimizer_offload": (EVIDENCE, "optimizer offload: not in the scenario (ASSUMED says so)"),
    "layout.cuda_graphs": (EVIDENCE, "CUDA graphs: launch overheads the scenario does not price"),
    "layout.code_version": (PROVENANCE, "the software version"),
    "layout.techniques": (PROVENANCE, "the techniques as published"),
    "layout.grad_accum_steps": (EVIDENCE, "micro-batches per update (global_batch / (micro_batch d) gives them)"),
    "layout.local_batch_per_dp_rank": (EVIDENCE, "sequences per data-parallel rank per update"),
    # the measurement: one of these gives the measured update time; the others stand beside it as evidence
    "measured.iteration_time_s": (MEASURE, "seconds per update"),
    "measured.step_time_s": (MEASURE, "seconds per update"),
    "measured.tflops_per_gpu": (MEASURE, "teraFLOP/s per GPU under the source's FLOP count"),
    "measured.tokens_per_second_per_gpu": (MEASURE, "tokens per second per GPU"),
    "measured.pretrain_gpu_hours": (MEASURE, "GPU-hours of the whole run (with pretrain_tokens)"),
    "measured.pretrain_tokens": (MEASURE, "tokens of the whole run"),
    "measured.mfu": (MEASURE, "MFU in percent (where no rate is given)"),
    "measured.flops_definition": (PROVENANCE, "which FLOPs the source counts"),
    **{
        f"measured.{name}": (EVIDENCE, "a figure beside the measurement, not predicted")
        for name in ("aggregate_pflops", "approx_model_tflops_per_gpu", "gpu_hours_per_trillion_tokens", "hfu",
                     "mfu_derived", "mfu_palm_no_attn", "mfu_palm_with_attn", "pct_of_peak", "peak_memory_gib",
                     "samples_per_s", "tflops_per_gpu_dropless", "throughput_increase_vs_full_recompute_pct",
                     "tokens_per_batch", "tokens_per_s_derived", "tokens_per_second_per_gpu_derived",
                     "training_days_300B_tokens")
    },
}
"""Every field a run record may hold, with how the reader takes it: ``read`` (an input of the scenario, checked),
``measure`` (the measured time), ``evidence`` (a figure beside the measurement or a fact the scenario does not
price, said in the run's ASSUMED where it matters) or ``provenance`` (text for a person). A field not here is
refused: a new kind of field is declared before it is read."""


def check_fields(entry: Record) -> None:
    """Refuse a record holding a field :data:`RECORD_FIELDS` does not declare."""
    for path in paths(entry):
        if path not in RECORD_FIELDS:
            raise refuse(entry, path, "a field the reader does not declare (mlsysim.validation.records."
                                      "RECORD_FIELDS says how each field is read): declare it, or leave it out")


NOT_STATED = ("n/a", "na", "unknown", "not stated", "")
"""Texts a record uses for a figure it does not state (as null does)."""


def number(entry: Record, path: str, *, assumed: Mapping[str, Any] | None = None, key: str | None = None,
           integer: bool = False) -> float:
    """The number at ``path``, or the run's assumed ``key`` where the record does not state it (null or
    :data:`NOT_STATED`); refused where neither gives a positive number."""
    value = value_at(entry, path)
    if value is None or (isinstance(value, str) and value.strip().lower() in NOT_STATED):
        if assumed is not None and key is not None and key in assumed:
            value = assumed[key]
        else:
            raise refuse(entry, path, "not stated, and the run's ASSUMED gives no "
                                      f"{key or path.rsplit('.', 1)[-1]}: the prediction needs it")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise refuse(entry, path, f"expected a positive {'integer' if integer else 'number'}")
    if integer and float(value) != int(value):
        raise refuse(entry, path, "expected an integer")
    return float(value)


REQUIRED_NUMBERS: Final = ("gpus", "hardware.gpus_per_node", "model.params_billion", "model.layers",
                            "model.hidden", "model.heads", "model.seq_len")
"""The figures every prediction needs from the record itself (integers but the parameters in billions)."""


def check_numbers(entry: Record) -> None:
    """Refuse a record whose :data:`REQUIRED_NUMBERS` are not stated or not positive numbers."""
    for path in REQUIRED_NUMBERS:
        number(entry, path, integer=path != "model.params_billion")


def optional_count(entry: Record, path: str) -> int | None:
    """A count the record may leave out (null, or not stated: None); refused where it is not a whole number."""
    value = value_at(entry, path)
    if value is None or (isinstance(value, str) and value.strip().lower() in NOT_STATED):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise refuse(entry, path, "expected a whole number of at least 1")
    return value


GPUS: Final = (
    ("GB300", "GB300", "GB300_NVL72"),
    ("GB200", "GB200", "GB200_NVL72"),
    ("B200", "B200", "DGX_B200"),
    ("H800", "H100", "HGX_H800"),
    ("H100", "H100", "DGX_H100"),
    ("A100", "A100", "DGX_A100"),
)
"""A record's GPU by the start of its text: (prefix, generation, registry node). The generation is the one whose
ceilings the run is priced with and informs (the H800 is the H100's die at its clocks and peak, on its own node);
a GPU not here is refused, never read as another."""


def gpu(entry: Record) -> tuple[str, str]:
    """(generation, registry node) of a record's ``hardware.gpu`` (:data:`GPUS`)."""
    text = str(value_at(entry, "hardware.gpu") or "").strip().upper()
    for prefix, generation, node in GPUS:
        if text.startswith(prefix):
            return generation, node
    raise refuse(entry, "hardware.gpu", f"no registry node for this GPU (known: {', '.join(p for p, _, _ in GPUS)})")


FORMATS: Final = (
    ("mxfp8", "mxfp8"), ("nvfp4", "nvfp4"), ("bf16", "bf16"), ("fp16", "fp16"),
    ("fp8-rowwise", "fp8_rowwise"), ("fp8-tensorwise", "fp8"), ("fp8-blockwise", "fp8"),
    ("fp8 (fine-grained", "fp8"), ("fp8 (torchao float8", "fp8"),
)
"""A record's ``precision`` by the start of its text (lower case): the linear layers' format. Block-wise and
fine-grained FP8 scales (Megatron-Core's 128 x 128 blocks, DeepSeek-V3's 1 x 128 tiles) are priced as the
tensorwise ``fp8`` format, which the runs' ASSUMED says (a record whose ASSUMED does not is refused); a text
not here is refused, never read as bf16."""

APPROXIMATED_FORMATS: Final = {"fp8-blockwise": ("blockwise", "fp8"), "fp8 (fine-grained": ("fine-grained", "fp8")}
"""Formats priced as another: the word the run's ASSUMED must say, and the format priced."""


def matmul_format(entry: Record, assumed_why: str) -> str:
    """The linear layers' format of a record (:data:`FORMATS`); bf16 where the record has no ``precision``
    (``published_parallel.json``: 16-bit runs)."""
    if "precision" not in entry:
        return "bf16"
    text = str(entry["precision"] or "").strip().lower()
    for prefix, fmt in FORMATS:
        if text.startswith(prefix):
            said = APPROXIMATED_FORMATS.get(prefix)
            if said is not None and said[0] not in assumed_why.lower():
                raise refuse(entry, "precision", f"priced as {said[1]} only where the run's ASSUMED says so "
                                                 f"('{said[0]}' in its why)")
            return fmt
    raise refuse(entry, "precision", f"not a format the reader knows ({', '.join(p for p, _ in FORMATS)})")


def check_format_on(entry: Record, fmt: str, accelerator: Accelerator) -> None:
    """Refuse a format the record's accelerator has no peak for (an A100 does not run FP8)."""
    peak_of = peak_format(fmt)
    if peak_of not in accelerator.dense_flops:
        raise refuse(entry, "precision", f"the {accelerator.name} has no {peak_of} peak in the registry (its "
                                         f"peaks: {', '.join(accelerator.dense_flops)})")


def check_peaks(entry: Record, node: Node) -> None:
    """The record's stated peaks and NVLink domain against the registry node's (2%): a record that states
    another GPU's figures is refused, not priced at the node's."""
    from mlsysim.core.units import to_canonical

    accelerator = node.accelerator
    for path, fmt in (("hardware.peak_tflops_16bit", "bf16"), ("hardware.peak_tflops_fp8", "fp8")):
        stated = value_at(entry, path)
        if stated is None:
            continue
        if fmt not in accelerator.dense_flops:
            raise refuse(entry, path, f"the {accelerator.name} has no {fmt} peak in the registry")
        peak = to_canonical(accelerator.peak_flops(fmt), "compute_rate") / 1e12
        if not isinstance(stated, int | float) or abs(float(stated) - peak) > 0.02 * peak:
            raise refuse(entry, path, f"the registry's {accelerator.name} peaks at {peak:g} teraFLOP/s in {fmt}")
    domain = value_at(entry, "hardware.scale_up_domain")
    if domain is not None:
        registered = node.scale_up_domain or node.accelerators_per_node
        if domain != registered:
            raise refuse(entry, "hardware.scale_up_domain", f"the registry's {node.name} has {registered}")


def sharding(entry: Record) -> tuple[int, int | None]:
    """(ZeRO stage, shard group) of a record's Megatron options: FSDP shards everything (3; an integer FSDP
    group is HSDP's shard group), the distributed optimizer the optimizer state (1); neither: 0."""
    fsdp = value_at(entry, "layout.fsdp")
    if isinstance(fsdp, bool):
        return (3 if fsdp else _optimizer_stage(entry)), None
    if isinstance(fsdp, int):
        if fsdp < 1:
            raise refuse(entry, "layout.fsdp", "an FSDP group of at least 1 device")
        return 3, fsdp
    text = str(fsdp or "").strip().lower()
    if text.startswith("on"):
        return 3, None
    if text in ("", "off", "no", "none", "false", *NOT_STATED):
        return _optimizer_stage(entry), None
    raise refuse(entry, "layout.fsdp", "expected 'On', 'off', true, false or an FSDP group size")


def _optimizer_stage(entry: Record) -> int:
    value = value_at(entry, "layout.distributed_optimizer")
    if value not in (None, True, False):
        raise refuse(entry, "layout.distributed_optimizer", "expected true, false or null")
    return 1 if value else 0


GATED: Final = ("swiglu", "geglu", "reglu", "gated mlp", "swiglu experts")
"""Words of ``model.arch`` that name a gated MLP (three matrices h x f; Shazeer 2020)."""
UNGATED: Final = ("gelu", "relu", "gpt")
"""Words that name a two-matrix MLP (GPT's GeLU, ReLU), where no gated word is said."""


def gated_mlp(entry: Record) -> bool | None:
    """Whether a record's MLP is gated: ``model.gated_mlp`` where stated, else its ``model.arch`` words
    (:data:`GATED`, :data:`UNGATED`); None where neither says (a record that needs it is then refused)."""
    stated = value_at(entry, "model.gated_mlp")
    if stated is not None:
        if not isinstance(stated, bool):
            raise refuse(entry, "model.gated_mlp", "expected true or false")
        return stated
    arch = str(value_at(entry, "model.arch") or "").lower()
    if any(word in arch for word in GATED):
        return True
    if any(word in arch for word in UNGATED):
        return False
    return None


def required_gated_mlp(entry: Record) -> bool:
    """:func:`gated_mlp` where the prediction needs it (the MLP's width is given, or its FLOPs are counted)."""
    gated = gated_mlp(entry)
    if gated is None:
        raise refuse(entry, "model.arch", "does not say whether the MLP is gated (SwiGLU, GeGLU) or not (GeLU): "
                                          "give model.gated_mlp")
    return gated
