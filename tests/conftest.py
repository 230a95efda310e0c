import pytest
from hypothesis import settings

from mlsysim import Q_, Models, Scenarios
from mlsysim.core.registry import reset_registry

# Shared, noisy machines: no per-example time limit (speed is measured in benchmarks/).
settings.register_profile("mlsysim", deadline=None)
settings.load_profile("mlsysim")


@pytest.fixture
def gpt2_one_node():
    return Scenarios.Gpt2DataParallelOneNode


@pytest.fixture
def base_inputs():
    """Valid keyword inputs of a scenario (the spec's one-node GPT-2 case)."""
    return dict(
        workload=Models.Language.GPT2,
        precision="fp16",
        step_time=Q_(1.8, "s"),
        training_time=Q_(25, "hour"),
        per_device_batch=16,
        devices_per_node=8,
        nodes=1,
        intra_bandwidth=Q_(450, "GB/s"),
        node_hour_rate=Q_(32, "USD/hour"),
    )


@pytest.fixture
def fresh_registry():
    """The built-in registries again after the test (which may load a user's file)."""
    yield
    reset_registry()
