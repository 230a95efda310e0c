"""Write the in-training matrix-product ceilings (``mlsysim/data/matmul_ceilings.json``).

The operator model prices every kernel with the device's measured kernels (:mod:`mlsysim.kernels`:
floors, tiles, waves, split-K, fused attention, streaming kernels, the clock under a power limit).
What isolated kernels reach and what they reach inside a training step differ: the clocks a whole
node sustains, the caches the other kernels leave, the host's launches. That share is the one thing
fitted on whole runs here, named: the in-training ceiling c_f of each architecture and format, the
fraction of the format's peak its products' main loops reach in training, never above the best
measured kernel of its GPU and format (:func:`mlsysim.validation.parallel.kernel_bound`). The
ceilings are those :func:`mlsysim.validation.parallel.validation` fits on the published
model-parallel runs (each run's exact ceiling found through the public scenario; a generation and
format's ceiling the median of its runs'), stored per architecture:

* ``Ampere``: the A100 runs' 16-bit ceiling;
* ``Hopper``: the 700 W H100 SXM runs' 16-bit ceiling (Llama 3 405B). Every other format is the same
  share of the best measured kernel in it (FP8 on an H100: 0.755 x 0.709 / 0.813), applied per accelerator
  by the derivation: one fitted number per architecture, the formats' relative speed measured;
* ``Hopper MoE``, ``Blackwell MoE``, ``Blackwell Ultra MoE``: the routed experts' ceilings
  (``expert_ceiling``) fitted on the mixtures of experts on H100 and H800, GB200 and GB300, their attention,
  dense and shared layers at the dense ceilings (:data:`mlsysim.validation.parallel.EXPERT_GENERATIONS`);
  the GB300's 16-bit one the GB200's (no 16-bit GB300 run is published here);
* ``Blackwell``, ``Blackwell Ultra``: the dense products, at the H100's share of the best measured kernel
  times theirs: every Blackwell run published here is a mixture of experts, and these are what the
  validation priced their attention and dense layers at (a transfer, stated).

Run ``python -m mlsysim.validation.ceilings`` after a change to the model or the data; the test
``tests/validation/test_ceilings.py`` fails while the stored file and the fit disagree.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from mlsysim.hardware.registry import Hardware
from mlsysim.kernels.device import device_kernels
from mlsysim.validation.parallel import HOPPER_EXPERTS, SIXTEEN_BIT, validation

ABOUT = (
    "In-training ceilings of the operator model (the c_f of mlsysim.physics.gemm inside a training step; every "
    "other kernel figure measured, mlsysim/data/kernel_fits): the fraction of a format's dense peak an "
    "architecture's products' main loops reach in training, fitted on the published model-parallel runs by "
    "python -m mlsysim.validation.ceilings, never above the best measured kernel of the GPU and format "
    "(one 16-bit ceiling per architecture: every other format the same share of its best measured kernel; "
    "'<architecture> MoE': the routed experts' "
    "ceilings of a mixture of experts, fitted on the H100/H800, GB200 and GB300 mixtures of experts with their "
    "other layers at the dense ceilings, the GB300's 16-bit one the GB200's; Blackwell and Blackwell Ultra dense: "
    "the H100's share of its best measured kernel times theirs, no dense Blackwell run being published); see "
    "docs/operators.md."
)


def fitted_table() -> dict[str, dict[str, float]]:
    """The in-training ceilings per architecture, from the in-sample fit (rounded to 3 digits): the 16-bit one of
    each dense architecture (every other format follows from it and the measured kernels: the same share of the
    best measured kernel, :func:`mlsysim.engine.inputs.derivation` applies it per accelerator), and the routed
    experts' ceilings of the mixtures of experts per format. Blackwell and Blackwell Ultra have no dense run
    published here: their 16-bit ceiling is the H100's share of its best measured kernel times theirs."""
    fit = validation().efficiency
    hopper_share = fit["H100"][SIXTEEN_BIT] / kernel_best("Hopper", SIXTEEN_BIT)
    table = {
        "Ampere": {SIXTEEN_BIT: fit["A100"][SIXTEEN_BIT]},
        "Hopper": {SIXTEEN_BIT: fit["H100"][SIXTEEN_BIT]},
        "Hopper MoE": {f: fit[HOPPER_EXPERTS][f] for f in (SIXTEEN_BIT, "fp8")},
        "Blackwell": {SIXTEEN_BIT: hopper_share * kernel_best("Blackwell", SIXTEEN_BIT)},
        "Blackwell MoE": {f: fit["GB200"][f] for f in (SIXTEEN_BIT, "mxfp8")},
        "Blackwell Ultra": {SIXTEEN_BIT: hopper_share * kernel_best("Blackwell Ultra", SIXTEEN_BIT)},
        "Blackwell Ultra MoE": {SIXTEEN_BIT: fit["GB300"][SIXTEEN_BIT], "mxfp8": fit["GB300"]["mxfp8"]},
    }
    return {arch: {fmt: round(min(v, kernel_best(arch.removesuffix(MOE), fmt)), 3) for fmt, v in sorted(formats.items())}
            for arch, formats in table.items()}


MOE = " MoE"


def kernel_best(architecture: str, matmul_format: str) -> float:
    """The least, over the registry's accelerators of ``architecture`` with measured kernels in the format, of
    their best measured kernel's efficiency (:func:`mlsysim.kernels.device.device_kernels`): the bound of an
    in-training ceiling (1 where no accelerator of it is measured in the format)."""
    bounds = []
    for _, entry in Hardware.walk():
        if getattr(entry, "architecture", None) != architecture:
            continue
        try:
            bounds.append(float(device_kernels(entry, matmul_format).matmul_ceiling))
        except ValueError:
            continue
    return min(bounds, default=1.0)


def document() -> dict[str, object]:
    return {"about": ABOUT, "ceilings": fitted_table()}


def write(path: Path | None = None) -> Path:
    """Write the fitted table (to the package's data file by default)."""
    target = path or Path(str(files("mlsysim.data").joinpath("matmul_ceilings.json")))
    target.write_text(json.dumps(document(), indent=2) + "\n", encoding="utf-8")
    return target


if __name__ == "__main__":
    print(write())
