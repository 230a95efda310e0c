"""Training scenarios: the three GPT-2 reference cases of the seed model, built from the registries.

Each scenario is declared by its name and description and built on first use
(:func:`~mlsysim.engine.scenario_definitions.named`), so listing them
(``mlsysim list``) loads neither the units nor the model. The scenarios are
attributes of this module as well: ``training.Gpt2DataParallelOneNode``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlsysim.engine.scenario_definitions import Declared, named

if TYPE_CHECKING:
    from mlsysim.engine.scenario_types import TrainingScenario

GPT2_STEP_SECONDS = 1.8
"""One-GPU profile of GPT-2 (1.5B) of the reference cases: one local step at batch 16, in seconds."""
GPT2_TRAINING_HOURS = 25
"""The whole run on one GPU, as the reference cases give it, in hours."""
GPT2_PER_DEVICE_BATCH = 16


@named("Gpt2DataParallelOneNode", "GPT-2 1.5B on one DGX H100 node (8 GPUs over NVLink 4).")
def _one_node(name: str, description: str) -> TrainingScenario:
    from mlsysim.core.units import quantity
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
    from mlsysim.hardware.registry import Infrastructure, Systems
    from mlsysim.models.registry import Models

    node = Systems.Nodes.DGX_H100
    gpu_hour = Infrastructure.Pricing.Cloud.GpuTrainingPerHour.rate
    return DataParallelScaleOutScenario(
        name=name,
        description=description,
        workload=Models.Language.GPT2,
        precision="fp16",
        step_time=quantity(GPT2_STEP_SECONDS, "s"),
        training_time=quantity(GPT2_TRAINING_HOURS, "hour"),
        per_device_batch=GPT2_PER_DEVICE_BATCH,
        devices_per_node=node.accelerators_per_node,
        nodes=1,
        intra_bandwidth=node.accelerator.nvlink.bandwidth_per_direction,
        node_hour_rate=gpu_hour * node.accelerators_per_node,
    )


@named(
    "Gpt2DataParallelFourNodes10GbE",
    "The one-node GPT-2 job on four DGX H100 nodes joined by 10 Gb Ethernet.",
)
def _four_nodes(name: str, description: str) -> TrainingScenario:
    from mlsysim.hardware.registry import Systems

    return SCENARIOS.build("Gpt2DataParallelOneNode").variant(
        name=name,
        description=description,
        nodes=4,
        inter_bandwidth=Systems.Fabrics.Ethernet_10G.bandwidth,
    )


@named(
    "Gpt2GradientAccumulationOneNode",
    "The one-node GPT-2 job with 4 gradient-accumulation micro-steps per update.",
)
def _accumulation(name: str, description: str) -> TrainingScenario:
    return SCENARIOS.build("Gpt2DataParallelOneNode").variant(
        name=name, description=description, accumulation_steps=4
    )


SCENARIOS = Declared(_one_node, _four_nodes, _accumulation)
"""Named, ready scenarios, defined from the registries (built on first use)."""


def __getattr__(name: str) -> TrainingScenario:
    if name in SCENARIOS.names():
        return SCENARIOS.build(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
