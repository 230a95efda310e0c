"""Write the operator model's fitted matrix-product ceilings (``mlsysim/data/matmul_ceilings.json``).

The ceilings are those :func:`mlsysim.validation.parallel.validation` fits on the published
model-parallel runs (each run's exact ceiling found through the public scenario; a generation
and format's ceiling the median of its runs'), stored per architecture:

* ``Ampere``: the A100 runs' 16-bit ceiling;
* ``Hopper``: the 700 W H100 SXM runs' 16-bit ceiling (Llama 3 405B); the low-precision
  formats were measured only on the 500 W Grand Teton H100s of the TorchTitan runs, so the
  stored FP8 ceilings are the SXM 16-bit ceiling times the ratio FP8 / 16-bit fitted there
  (the formats' relative speed assumed to carry across the power limit; said in docs/operators.md);
* ``Blackwell``: the GB200 runs' ceilings (16-bit and MXFP8), ``Blackwell Ultra`` the GB300 runs' (MXFP8; its
  16-bit ceiling the GB200's, no 16-bit GB300 run being published here). Every Blackwell run is a mixture of
  experts of the Megatron-Core MoE report or the Megatron-MoE-ModelZoo: what the operator model does not price in
  those (grouped expert products, token permutation) lands in these ceilings, so a dense model on Blackwell is
  predicted conservatively (said in docs/parallelism.md). The H100 mixtures of experts do not enter ``Hopper``
  (:data:`mlsysim.validation.parallel.HOPPER_EXPERTS`): they are stored as ``Hopper MoE``, and the
  Blackwell fits as ``Blackwell MoE`` and ``Blackwell Ultra MoE``: a scenario whose workload is a mixture
  of experts reads those (what its users get is what was validated). A dense model on Blackwell reads
  the MoE ceilings times Hopper's ratio of dense to MoE 16-bit ceilings (a transfer, stated).

Run ``python -m mlsysim.validation.ceilings`` after a change to the model or the data; the test
``tests/validation/test_ceilings.py`` fails while the stored file and the fit disagree.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from mlsysim.validation.parallel import HOPPER_EXPERTS, POWER_CAPPED_H100, SIXTEEN_BIT, validation

ABOUT = (
    "Fitted ceilings of the operator model (mlsysim.physics.matmul): the fraction of a format's dense peak an "
    "architecture's large matrix products reach in training, fitted on the published model-parallel runs by "
    "python -m mlsysim.validation.ceilings (Hopper's low-precision formats: the 16-bit ceiling of the H100 SXM "
    "runs times the FP8/16-bit ratio fitted on the 500 W H100 runs; Blackwell and Blackwell Ultra: the GB200 and "
    "GB300 runs, all mixtures of experts, the GB300's 16-bit ceiling the GB200's; a mixture of experts reads the "
    "'<architecture> MoE' ceilings, fitted on mixtures of experts; a dense model on Blackwell the MoE ceilings "
    "times Hopper's ratio of dense to MoE); see docs/operators.md."
)


def fitted_table() -> dict[str, dict[str, float]]:
    """The ceilings per architecture and format, from the in-sample fit (rounded to 3 digits)."""
    fit = validation().efficiency
    hopper = dict(fit["H100"])
    capped = fit[POWER_CAPPED_H100]
    for fmt, value in capped.items():
        if fmt not in (SIXTEEN_BIT, "mxfp8"):  # Hopper's tensor cores have no MX block-scaled formats
            hopper[fmt] = hopper[SIXTEEN_BIT] * value / capped[SIXTEEN_BIT]
    hopper_moe = {f: v for f, v in fit[HOPPER_EXPERTS].items() if f in (SIXTEEN_BIT, "fp8")}
    blackwell_moe = {f: fit["GB200"][f] for f in (SIXTEEN_BIT, "mxfp8")}
    ultra_moe = {SIXTEEN_BIT: blackwell_moe[SIXTEEN_BIT], "mxfp8": fit["GB300"]["mxfp8"]}
    # a dense model on Blackwell: its mixtures-of-experts ceilings over Hopper's ratio of MoE to dense (16-bit)
    dense_over_moe = hopper[SIXTEEN_BIT] / hopper_moe[SIXTEEN_BIT]
    table = {
        "Ampere": {SIXTEEN_BIT: fit["A100"][SIXTEEN_BIT]},
        "Hopper": hopper,
        "Hopper MoE": hopper_moe,
        "Blackwell": {f: min(v * dense_over_moe, 1.0) for f, v in blackwell_moe.items()},
        "Blackwell MoE": blackwell_moe,
        "Blackwell Ultra": {f: min(v * dense_over_moe, 1.0) for f, v in ultra_moe.items()},
        "Blackwell Ultra MoE": ultra_moe,
    }
    return {arch: {fmt: round(v, 3) for fmt, v in sorted(formats.items())} for arch, formats in table.items()}


def document() -> dict[str, object]:
    return {"about": ABOUT, "ceilings": fitted_table()}


def write(path: Path | None = None) -> Path:
    """Write the fitted table (to the package's data file by default)."""
    target = path or Path(str(files("mlsysim.data").joinpath("matmul_ceilings.json")))
    target.write_text(json.dumps(document(), indent=2) + "\n", encoding="utf-8")
    return target


if __name__ == "__main__":
    print(write())
