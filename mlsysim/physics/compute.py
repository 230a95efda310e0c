"""Training compute: FLOPs per sample, step time from peak FLOPs, one-device time from job size.

Pure formulas on floats and numpy arrays alike (flop, seconds, flop/s). They let
a job be planned without a profile: the one-device ``step_time`` and
``training_time`` of the seed model follow from the model's size, the
accelerator's peak throughput and an assumed model FLOPs utilisation (MFU).

Sources:

* Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1
  and Table 1: a forward pass costs about 2 N FLOPs per token (N non-embedding
  parameters), and training (forward + backward) three times the forward, so
  C = 6 N FLOPs per token.
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
  Clusters Using Megatron-LM", appendix "Floating-Point Operations": the
  attention score and attention-over-value matrix products add 4 b s^2 h FLOPs per layer in the forward pass (2 b s^2 h each), so
  12 b s^2 h per layer for forward and backward without activation
  recomputation (the paper's 96 B s l h^2 (1 + s / 6h + V / 16 l h) counts a
  second forward for full recomputation; model FLOPs, as MFU counts them,
  leave that out).
* Chowdhery et al. 2022, "PaLM: Scaling Language Modeling with Pathways",
  section 4.1 and appendix B: model FLOPs utilisation (MFU) is the model FLOPs
  per second achieved (recomputation not counted) over the accelerator's peak.
"""

from __future__ import annotations

import math

from mlsysim.physics._array import Num

TRAINING_FLOPS_PER_FORWARD = 3.0
"""Forward + backward cost as a multiple of the forward cost: the backward pass
computes gradients with respect to both activations and weights, about twice
the forward (Kaplan et al. 2020, section 2.1)."""

PARAMETER_FLOPS_PER_TOKEN = 6.0
"""Training FLOPs per parameter per token: 2 in the forward pass, times 3 (Kaplan et al. 2020, Table 1)."""

ATTENTION_FLOPS_COEFFICIENT = 12.0
"""Training FLOPs of the attention matrices per layer: 12 s^2 h per sample (Narayanan et al. 2021, appendix)."""


def transformer_flops_per_sample(
    parameters: Num, layers: Num, hidden: Num, seq_len: Num, attention_width: Num = math.nan
) -> Num:
    """Training FLOPs of one sample (one sequence) of a decoder transformer.

        F = 6 N s + 12 L h_att s^2

    (``attention_width`` h_att = a (d_qk + d_v) / 2: h for multi-head attention, the default;
    multi-head latent attention's heads are wider; N the parameters a token uses: a mixture
    of experts' active ones.)

    N parameters, s tokens per sample (sequence length), L layers, h hidden
    size. The first term is Kaplan et al. 2020 (6 N FLOPs per token, Table 1);
    the second is the attention score and value products of Narayanan et al.
    2021 (appendix "Floating-Point Operations": 4 s^2 h per layer forward,
    times 3 for training), which the parameter count does not see. Recomputed activations are not counted
    (model FLOPs, as MFU uses them). N counts every parameter, embeddings
    included, as the registry states it: this overstates the work of the
    embedding look-up by 6 V h s, a few percent for large vocabularies.
    """
    s = seq_len
    width = hidden if (type(attention_width) is float and attention_width != attention_width) else attention_width
    return (
        PARAMETER_FLOPS_PER_TOKEN * parameters * s
        + ATTENTION_FLOPS_COEFFICIENT * layers * width * s * s
    )


def cnn_flops_per_sample(forward_flops: Num) -> Num:
    """Training FLOPs of one sample of a network whose forward cost is known.

        F = 3 F_forward

    (forward + backward, the backward about twice the forward; Kaplan et al.
    2020, section 2.1). ``forward_flops`` counts a multiply-add as 2 FLOPs.
    """
    return TRAINING_FLOPS_PER_FORWARD * forward_flops


def step_time_from_flops(
    flops_per_sample: Num,
    per_device_batch: Num,
    peak_flops: Num,
    mfu: Num,
) -> Num:
    """Seconds of one local step of one device from its model FLOPs utilisation.

        T1 = b F / (P u)

    F model FLOPs per sample (recomputation not counted), b per-device
    (micro-)batch, P the device's dense peak FLOP/s at the training precision,
    u the model FLOPs utilisation in (0, 1] as Megatron-LM, NeMo and the PaLM
    paper report it (Chowdhery et al. 2022, appendix B: achieved model FLOP/s
    over peak). Nothing is added on top: a measured MFU already holds the
    recomputed forward, the element-wise kernels and every other loss of the
    device's step, so one device at this T1 achieves MFU u. The fraction of the
    peak the matrix products alone reach is a different quantity (the
    ``matmul_ceiling`` assumption of a step priced operator by operator).
    """
    return flops_per_sample * per_device_batch / (peak_flops * mfu)


def samples_from_tokens(tokens: Num, seq_len: Num) -> Num:
    """Number of samples (sequences) in ``tokens`` tokens: S = D / s."""
    return tokens / seq_len


def one_device_training_time(samples: Num, step_time: Num, per_device_batch: Num) -> Num:
    """Seconds one device takes for the whole run: the steps times the step time.

        T_train = S T1 / b

    S samples, T1 seconds per local step of b samples.
    """
    return samples * step_time / per_device_batch
