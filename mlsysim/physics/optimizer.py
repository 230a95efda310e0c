"""Time of the optimizer step: the state it reads and writes over the device's memory bandwidth.

An optimizer step is elementwise over the parameters and memory-bound: every
parameter's state is read and written once per pass, and the arithmetic is a
handful of operations per byte (far below any accelerator's ratio of FLOP/s
to bytes/s; Williams, Waterman and Patterson 2009, "Roofline: an insightful
visual performance model for multicore architectures"). So

    t_opt = P x beta / B_mem

with P parameters, beta bytes moved per parameter (read + write) and B_mem
the peak memory bandwidth of one device. It runs once per optimizer update,
after the last of the A micro-steps, so its share of an update is t_opt /
(A T1 + t_opt): a one-device baseline that accumulates more micro-steps per
update amortises it over more work than the scaled run.

Bytes per parameter, fp32 state, each tensor read or written once (the fused
multi-tensor kernels of NVIDIA apex, FusedAdam / FusedLAMB, do one pass):

* ``sgd`` (momentum): read weight, gradient, momentum; write weight,
  momentum: 5 x 4 = 20 B.
* ``adam`` / ``adamw`` (Kingma and Ba 2015): read weight, gradient, m, v;
  write weight, m, v: 7 x 4 = 28 B.
* ``rmsprop`` (with momentum, as TensorFlow and timm run it): read weight,
  gradient, mean square, momentum; write weight, mean square, momentum:
  7 x 4 = 28 B.
* ``lamb`` (You et al. 2020, "Large Batch Optimization for Deep Learning:
  Training BERT in 76 minutes", algorithm 2): the Adam moments pass (read
  gradient, m, v, weight; write m, v and the update: 28 B), then the
  per-layer norms of weight and update (read both: 8 B) and the scaled
  apply (read weight and update, write weight: 12 B): 48 B.
* ``novograd`` (Ginsburg et al. 2019, "Stochastic Gradient Methods with
  Layer-wise Adaptive Moments for Training of Deep Networks", algorithm 1):
  the second moment is one scalar per layer (from the layer's gradient
  norm, a read of the gradient fused with the step in apex's
  FusedNovoGrad), the first moment one value per weight: read weight,
  gradient, m; write weight, m: 5 x 4 = 20 B, as SGD with momentum.

Mixed-precision training also writes the 16-bit weight copy (2 B more); it
is left out, as are the gradient unscaling and clipping passes, so the
figure is a lower bound.
"""

from __future__ import annotations

from mlsysim.physics._array import Num

OPTIMIZER_BYTES_PER_PARAMETER: dict[str, float] = {
    "sgd": 20.0,
    "adam": 28.0,
    "adamw": 28.0,
    "rmsprop": 28.0,
    "lamb": 48.0,
    "novograd": 20.0,
}
"""Bytes read plus written per parameter by one optimizer step (fp32 state; see the module)."""


OPTIMIZER_EQUATION = "t_opt = P x beta / B_mem  (one step per update)"


def optimizer_step_time(parameters: Num, bytes_per_parameter: Num, memory_bandwidth: Num) -> Num:
    """One optimizer step: ``t_opt = P x beta / B_mem`` (seconds; 0 when B_mem is infinite)."""
    return parameters * bytes_per_parameter / memory_bandwidth
