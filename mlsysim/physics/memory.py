"""Memory per device of data-parallel training with mixed-precision Adam and ZeRO.

Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", section 3.1 and Figure 1: mixed-precision Adam keeps
2 bytes (fp16 weights) + 2 bytes (fp16 gradients) + K = 12 bytes (fp32 master
weights, momentum, variance) per parameter, 16 in all. Over N_d data-parallel
ranks, stage 1 shards the optimizer state, stage 2 also the gradients, stage
3 also the weights:

    stage 0: (2 + 2 + K) psi
    stage 1: (2 + 2) psi + K psi / N_d
    stage 2: 2 psi + (2 + K) psi / N_d
    stage 3: (2 + 2 + K) psi / N_d

Section 7 of the same paper: stages 1 and 2 move the same volume as a plain
AllReduce; stage 3 moves 1.5 times as much (an extra parameter all-gather).
"""

from __future__ import annotations

from mlsysim.physics._array import Num

WEIGHT_BYTES = 2.0
GRADIENT_BYTES = 2.0
OPTIMIZER_BYTES = 12.0
"""K in ZeRO's notation: fp32 master weights, Adam momentum and variance (4 + 4 + 4)."""

ZERO_STAGES = (0, 1, 2, 3)


STATE_EQUATIONS = {
    0: "(w + g + K) psi",
    1: "(w + g) psi + K psi / n",
    2: "w psi + (g + K) psi / n",
    3: "(w + g + K) psi / n",
}
"""Bytes of training state per device by ZeRO stage, as :func:`training_state_bytes` computes
them (w, g = 2 bytes of 16-bit weights and gradients, K = 12 bytes of optimizer state)."""

ZERO3_VOLUME_EQUATION = "G_c = 1.5 G (extra parameter all-gather; Rajbhandari et al. 2020, section 7)"


def training_state_bytes(parameters: Num, zero_stage: int, n_devices: Num) -> Num:
    """Bytes of weights, gradients and optimizer state on one device (ZeRO section 3.1)."""
    psi, nd = parameters, n_devices
    w, g, k = WEIGHT_BYTES, GRADIENT_BYTES, OPTIMIZER_BYTES
    if zero_stage == 0:
        return (w + g + k) * psi
    if zero_stage == 1:
        return (w + g) * psi + k * psi / nd
    if zero_stage == 2:
        return w * psi + (g + k) * psi / nd
    if zero_stage == 3:
        return (w + g + k) * psi / nd
    raise ValueError(f"unknown ZeRO stage {zero_stage!r}; expected one of {ZERO_STAGES}")


def communication_volume_factor(zero_stage: int) -> float:
    """Communication volume relative to plain DDP: 1.5 for ZeRO-3, else 1 (ZeRO section 7)."""
    return 1.5 if zero_stage == 3 else 1.0
