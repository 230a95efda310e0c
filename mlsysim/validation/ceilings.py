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
  (:data:`mlsysim.validation.parallel.HOPPER_EXPERTS`).

Run ``python -m mlsysim.validation.ceilings`` after a change to the model or the data; the test
``tests/validation/test_ceilings.py`` fails while the stored file and the fit disagree.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from mlsysim.validation.parallel import POWER_CAPPED_H100, SIXTEEN_BIT, validation

ABOUT = (
    "Fitted ceilings of the operator model (mlsysim.physics.matmul): the fraction of a format's dense peak an "
    "architecture's large matrix products reach in training, fitted on the published model-parallel runs by "
    "python -m mlsysim.validation.ceilings (Hopper's low-precision formats: the 16-bit ceiling of the H100 SXM "
    "runs times the FP8/16-bit ratio fitted on the 500 W H100 runs; Blackwell and Blackwell Ultra: the GB200 and "
    "GB300 runs, all mixtures of experts, the GB300's 16-bit ceiling the GB200's); see docs/operators.md."
)


def fitted_table() -> dict[str, dict[str, float]]:
    """The ceilings per architecture and format, from the in-sample fit (rounded to 3 digits)."""
    fit = validation().efficiency
    hopper = dict(fit["H100"])
    capped = fit[POWER_CAPPED_H100]
    for fmt, value in capped.items():
        if fmt not in (SIXTEEN_BIT, "mxfp8"):  # Hopper's tensor cores have no MX block-scaled formats
            hopper[fmt] = hopper[SIXTEEN_BIT] * value / capped[SIXTEEN_BIT]
    blackwell = {f: fit["GB200"][f] for f in (SIXTEEN_BIT, "mxfp8")}
    ultra = {SIXTEEN_BIT: blackwell[SIXTEEN_BIT], "mxfp8": fit["GB300"]["mxfp8"]}
    table = {"Ampere": {SIXTEEN_BIT: fit["A100"][SIXTEEN_BIT]}, "Hopper": hopper, "Blackwell": blackwell,
             "Blackwell Ultra": ultra}
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
