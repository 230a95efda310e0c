"""Training scenarios: the three GPT-2 reference cases of the seed model, built from the registries."""

from __future__ import annotations

from mlsysim.core.units import quantity
from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
from mlsysim.hardware.registry import Infrastructure, Systems
from mlsysim.models.registry import Models

GPT2_STEP_TIME = quantity(1.8, "s")
"""One-GPU profile of GPT-2 (1.5B) of the reference cases: one local step at batch 16."""
GPT2_TRAINING_TIME = quantity(25, "hour")
"""The whole run on one GPU, as the reference cases give it."""
GPT2_PER_DEVICE_BATCH = 16

_node = Systems.Nodes.DGX_H100
_gpu_hour = Infrastructure.Pricing.Cloud.GpuTrainingPerHour.rate

Gpt2DataParallelOneNode = DataParallelScaleOutScenario(
    name="Gpt2DataParallelOneNode",
    description="GPT-2 1.5B on one DGX H100 node (8 GPUs over NVLink 4).",
    workload=Models.Language.GPT2,
    precision="fp16",
    step_time=GPT2_STEP_TIME,
    training_time=GPT2_TRAINING_TIME,
    per_device_batch=GPT2_PER_DEVICE_BATCH,
    devices_per_node=_node.accelerators_per_node,
    nodes=1,
    intra_bandwidth=_node.accelerator.nvlink.bandwidth_per_direction,
    node_hour_rate=_gpu_hour * _node.accelerators_per_node,
)

Gpt2DataParallelFourNodes10GbE = Gpt2DataParallelOneNode.variant(
    name="Gpt2DataParallelFourNodes10GbE",
    description="The one-node GPT-2 job on four DGX H100 nodes joined by 10 Gb Ethernet.",
    nodes=4,
    inter_bandwidth=Systems.Fabrics.Ethernet_10G.bandwidth,
)

Gpt2GradientAccumulationOneNode = Gpt2DataParallelOneNode.variant(
    name="Gpt2GradientAccumulationOneNode",
    description="The one-node GPT-2 job with 4 gradient-accumulation micro-steps per update.",
    accumulation_steps=4,
)

SCENARIOS = (
    Gpt2DataParallelOneNode,
    Gpt2DataParallelFourNodes10GbE,
    Gpt2GradientAccumulationOneNode,
)
