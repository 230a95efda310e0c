"""Costs of a synchronous update beyond compute and communication.

Straggler effect: a synchronous step ends when the slowest of n devices ends.
For n independent step times with mean mu and standard deviation sigma, the
expected maximum is about mu + sigma * sqrt(2 ln n) (the leading term of the
expected maximum of n Gaussians; e.g. David and Nagaraja 2003, "Order
Statistics", section 10.5; the effect at scale: Dean and Barroso 2013, "The
Tail at Scale"; Chen et al. 2016, "Revisiting Distributed Synchronous SGD").
A local update of A micro-steps of T1 with coefficient of variation c per
micro-step has sigma = c T1 sqrt(A).
"""

from __future__ import annotations

from mlsysim.physics._array import Num, log, sqrt

STRAGGLER_EQUATION = "sync = c x T1 x sqrt(A) x sqrt(2 ln n) + overhead  (0 for n = 1)"
"""The synchronisation cost of :func:`straggler_delay` and :func:`update_overhead`."""


def straggler_delay(step_time: Num, accumulation_steps: Num, n_devices: Num, cv: Num) -> Num:
    """Expected wait for the slowest device: ``c * T1 * sqrt(A) * sqrt(2 ln n)`` (0 for n = 1)."""
    return cv * step_time * sqrt(accumulation_steps) * sqrt(2.0 * log(n_devices))


def update_overhead(n_devices: Num, overhead: Num) -> Num:
    """Fixed per-update cost of a distributed step (launch, bookkeeping, barrier); 0 for n = 1."""
    return overhead * (n_devices > 1)


JITTER_EQUATION = (
    "sync = sqrt((c T1)^2 + (p j)^2) x sqrt(A) x sqrt(2 ln n) + overhead  (0 for n = 1)"
)

INPUT_PIPELINE_JITTER: dict[str, float] = {"real": 1.0, "device": 0.0, "synthetic": 0.0}
"""Share p of the host jitter j a job's inputs bring (``input_pipeline``; 1 when not given).

``real``: a data loader fetches and preprocesses every batch on the host
(images decoded and augmented by CPU workers, text batches collated by
them) and hands it to the device; its stalls are the host jitter of the
realistic preset. ``device``: the host only reads the encoded files and the
decoding and augmentation run on the accelerator (NVIDIA DALI's GPU
pipeline: its documentation, "DALI addresses the problem of the CPU
bottleneck by offloading data preprocessing to the GPU"), so the host
work whose stalls the jitter stands for is off the step's path: p = 0.
``synthetic``: the inputs are made once on the device and reused (a
benchmark without a data loader), so the loader's noise is absent: p = 0.
Source: Mohan, Phanishayee, Raniwala and Chidambaram 2021, "Analyzing and
Mitigating Data Stalls in DNN Training" (VLDB): fetch and preprocessing
stalls often dominate training time, and because every GPU waits for the
others at the update, one worker's data stall delays them all; the paper
measures the stall-free rate with synthetic, in-memory inputs. In the
published set the one synthetic-data benchmark (Li et al. 2020's
``benchmark.py``: ``torch.rand`` inputs reused every iteration) is predicted
within 2 points with p = 0, and 15 points too pessimistic with p = 1; the one
GPU-decoding family (NVIDIA DeepLearningExamples' MXNet ResNet-50, whose
benchmark runs its ``runner`` default ``--data-backend dali-gpu``: DALI's
"mixed" JPEG decoder and GPU resize and crop) is predicted within 0.4 points
(median) with p = 0 and 7.5 points too pessimistic with p = 1 (docs/model.md
section 4.4). p = 0 is not fitted: it is the value that says no host
preprocessing waits on the step.
"""


def jittered_straggler_delay(
    step_time: Num, accumulation_steps: Num, n_devices: Num, cv: float, jitter: Num
) -> Num:
    """The wait for the slowest device when each micro-step also has host jitter of ``j`` seconds.

    A micro-step's time varies by ``c T1`` (proportional: clocks, thermals)
    and by ``j`` (absolute: operating-system noise, the Python host loop, the
    data loader's hand-off), independently (``jitter`` is ``p j``, the share
    of :data:`INPUT_PIPELINE_JITTER` the job's inputs bring):

        sigma = sqrt((c T1)^2 + j^2) sqrt(A);   delay = sigma sqrt(2 ln n)   (0 for n = 1)

    Absolute host noise is what makes fast steps lose most: it does not
    shrink with the step (Petrini, Kerbyson and Pakin 2003, "The Case of the
    Missing Supercomputer Performance: Achieving Optimal Performance on the
    8,192 Processors of ASCI Q": noise of fixed duration costs most to
    short, frequently synchronising steps; Hoefler, Schneider and Lumsdaine
    2010, "Characterizing the Influence of System Noise on Large-Scale
    Applications by Simulation"). With ``j = 0`` it is
    :func:`straggler_delay`.
    """
    sigma = sqrt((cv * step_time) ** 2 + jitter**2)
    return sigma * sqrt(accumulation_steps) * sqrt(2.0 * log(n_devices))
