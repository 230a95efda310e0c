"""Number formats: the storage width of one element, by precision name.

fp32 and tf32 store 4 bytes (TF32 is a compute mode over fp32 storage), fp16
and bf16 2, fp8 and int8 1, int4 half a byte (IEEE 754-2008 binary32/binary16;
Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep Learning Training";
Micikevicius et al. 2022, "FP8 Formats for Deep Learning").

The block-scaled formats count their scales in the width, spread over the block:

* mxfp8: one FP8 (E4M3 or E5M2) byte per element and one shared 8-bit
  power-of-two scale (E8M0) per block of 32, so 1 + 1/32 = 1.03125 bytes
  (Open Compute Project, "OCP Microscaling Formats (MX) Specification" v1.0,
  2023: blocks of 32, scale E8M0);
* nvfp4: one FP4 (E2M1) half byte per element and one FP8 (E4M3) scale per
  block of 16, so 0.5 + 1/16 = 0.5625 bytes; the one FP32 scale per tensor
  it also carries is left out, a few bytes per tensor (NVIDIA Technical Blog,
  "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025).

Peak compute is quoted for a few formats that are no training storage format
of their own: ``fp6`` and ``fp4``, the rows "FP6" and "FP4 Tensor Core" of
NVIDIA's Blackwell datasheets. :data:`COMPUTE_FORMATS` lists every name a
peak rate may be stored under; :data:`BYTES_PER_ELEMENT` the precisions a
scenario accepts.
"""

from __future__ import annotations

from collections.abc import Collection

from mlsysim.core.exceptions import InputError

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "mxfp8": 1.0 + 1.0 / 32.0,
    "nvfp4": 0.5 + 1.0 / 16.0,
}
"""Storage width of one element, in bytes, by precision name (block scales included)."""

COMPUTE_FORMATS: tuple[str, ...] = (*BYTES_PER_ELEMENT, "fp6", "fp4")
"""Every name an accelerator's peak rate may be stored under: the precisions and fp6, fp4."""


def check_precision(value: object) -> str:
    """A precision name (case-insensitive), returned in lower case."""
    return _known_name(value, BYTES_PER_ELEMENT, "precision")


def check_compute_format(value: object) -> str:
    """A number format a peak rate is quoted for (case-insensitive), returned in lower case."""
    return _known_name(value, COMPUTE_FORMATS, "number format")


def _known_name(value: object, names: Collection[str], what: str) -> str:
    """``value`` in lower case where it is one of ``names`` (case-insensitive); else an InputError naming ``what``."""
    if isinstance(value, str):
        key = value.lower()
        if key in names:
            return key
    raise InputError(f"unknown {what} {value!r}; supported: {', '.join(names)}")
