"""The whole run of a parallel layout: who writes a checkpoint, what the bubble draws (issue 30, 4-5).

A replicated state (``zero_stage=0``) of a model split t x p ways is held in
distinct shards by every node of one replica, and each of them writes its
shards: the write time falls by the nodes a replica spans. The pipeline's
bubble is a wait: with ``idle_power`` given it draws idle power, as
docs/whole_run.md says, not ``device_power``.
"""

import math

import pytest

from mlsysim import Q_, DataParallelScaleOutScenario, Systems
from mlsysim.models.types import TransformerWorkload
from mlsysim.physics import reliability
from tests.planning.test_plan_wall_clock import LLAMA_70B

FAILURES = dict(
    failure_rate=Q_(2e-5, "failures/device/hour"),
    restart_time=Q_(10, "min"),
    checkpoint_bandwidth=Q_(2, "GB/s"),
)

# docs/parallelism.md, "A pipeline layout by hand": Llama-3 70B at t = 8, p = 4, d = 16, ZeRO-1, no failures
LLAMA_70B_T8_P4 = LLAMA_70B.variant(
    training_time=Q_(1000, "hour"), failure_rate=None, restart_time=None, checkpoint_bandwidth=None
)


def _405b_t8_p16(zero_stage: int) -> DataParallelScaleOutScenario:
    """405e9 parameters at t = 8, p = 16 on 128 DGX H100 nodes (d = 8); 128 layers so p divides them."""
    workload = TransformerWorkload(
        name="405B", parameters=Q_(405e9, "param"), layers=128, hidden_dim=16384, heads=128,
        seq_len=8192, vocab_size=128256,
    )  # fmt: skip
    return DataParallelScaleOutScenario(
        workload=workload, precision="bf16", node=Systems.Nodes.DGX_H100, nodes=128,
        fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1, accumulation_steps=32,
        zero_stage=zero_stage, tensor_parallel=8, pipeline_parallel=16, step_time=Q_(40, "s"),
        training_time=Q_(1000, "hour"), **FAILURES,
    )  # fmt: skip


def test_every_node_of_a_model_parallel_replica_writes_its_shards():
    r = _405b_t8_p16(zero_stage=0).result
    # S = 14 x 405e9 B = 5.67 TB; one replica spans t p / g = 8 x 16 / 8 = 16 nodes, each writing
    # at 2 GB/s: 5.67e12 / (16 x 2e9) = 177.19 s (one writer, before: 5.67e12 / 2e9 = 2,835 s)
    assert r.checkpoint_size.to("TB").magnitude == pytest.approx(5.67, rel=1e-12)
    assert r.checkpoint_time.to("s").magnitude == pytest.approx(5.67e12 / (16 * 2e9), rel=1e-12)
    assert "w = 16: the nodes of one replica" in _405b_t8_p16(zero_stage=0).explain()


def test_a_zero_sharded_state_is_written_by_every_node():
    r = _405b_t8_p16(zero_stage=1).result
    assert r.checkpoint_time.to("s").magnitude == pytest.approx(5.67e12 / (128 * 2e9), rel=1e-12)


@pytest.mark.parametrize(
    ("nodes", "devices_per_node", "model_parallel", "sharded", "writers"),
    [(128, 8, 128, False, 16), (128, 8, 8, False, 1), (128, 8, 2, False, 1), (4, 8, 64, False, 4),
     (64, 8, 32, True, 64), (3, 8, 12, False, 2)],
)  # fmt: skip
def test_checkpoint_writers(nodes, devices_per_node, model_parallel, sharded, writers):
    assert reliability.checkpoint_writers(nodes, devices_per_node, model_parallel, sharded) == writers


def test_a_replicated_state_without_model_parallelism_has_one_writer():
    s = LLAMA_70B_T8_P4.variant(zero_stage=0, tensor_parallel=8, pipeline_parallel=1, **FAILURES)
    # 70.6e9 x 14 B by one node (t p = 8 fits in one node)
    assert s.result.checkpoint_time.to("s").magnitude == pytest.approx(70.6e9 * 14 / 2e9, rel=1e-12)


def test_the_pipeline_bubble_draws_idle_power():
    s = LLAMA_70B_T8_P4.variant(device_power=Q_(700, "W"), idle_power=Q_(100, "W"))
    r, f = s.result, s.result.figures
    bubble, exposed, sync = f.bubble_time, f.exposed_communication_time, f.synchronization_time
    assert bubble > 0.6  # 0.665 s of the 7.86 s update
    busy = f.update_time - exposed - sync - bubble
    p_update = (700 * busy + 100 * (exposed + sync + bubble)) / f.update_time
    assert f.update_power == pytest.approx(p_update, rel=1e-12)
    energy = 512 * f.training_time * p_update  # PUE 1, no failures: E = n T_s P_update
    assert r.energy.to("J").magnitude == pytest.approx(energy, rel=1e-12)
    # 0.7344 MWh; with the bubble at device_power (before) it was 0.8035 MWh
    assert r.energy.to("MWh").magnitude == pytest.approx(0.7344088, rel=1e-6)
    assert "t_idle = synchronization + pipeline bubble" in s.explain()


def test_without_idle_power_every_state_still_draws_device_power():
    r = LLAMA_70B_T8_P4.variant(device_power=Q_(700, "W")).result
    assert r.figures.update_power == 700
    assert math.isclose(r.energy.to("J").magnitude, 512 * r.figures.training_time * 700, rel_tol=1e-12)
