"""ZeRO memory per stage and the straggler term."""

import math

import pytest

from mlsysim.physics.memory import communication_volume_factor, training_state_bytes
from mlsysim.physics.synchronization import straggler_delay, update_overhead


@pytest.mark.parametrize(
    "stage, expected", [(0, 16e9), (1, 4e9 + 12e9 / 8), (2, 2e9 + 14e9 / 8), (3, 16e9 / 8)]
)
def test_zero_stages_per_rajbhandari_2020(stage, expected):
    assert training_state_bytes(1e9, stage, 8) == pytest.approx(expected)


def test_stages_never_increase_memory():
    values = [training_state_bytes(1e9, s, 64) for s in range(4)]
    assert values == sorted(values, reverse=True)


def test_unknown_stage_is_an_error():
    with pytest.raises(ValueError, match="ZeRO stage"):
        training_state_bytes(1e9, 4, 8)


def test_zero3_moves_half_again_as_much():
    assert [communication_volume_factor(s) for s in range(4)] == [1.0, 1.0, 1.0, 1.5]


def test_straggler_delay():
    assert straggler_delay(2.0, 4, 1, 0.1) == 0
    assert straggler_delay(2.0, 4, 16, 0.1) == pytest.approx(
        0.1 * 2.0 * 2 * math.sqrt(2 * math.log(16))
    )
    assert update_overhead(1, 1e-3) == 0 and update_overhead(2, 1e-3) == 1e-3
