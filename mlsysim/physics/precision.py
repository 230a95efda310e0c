"""Number formats: the storage width of one element, by precision name.

fp32 and tf32 store 4 bytes (TF32 is a compute mode over fp32 storage), fp16
and bf16 2, fp8 and int8 1, int4 half a byte (IEEE 754-2008 binary32/binary16;
Kalamkar et al. 2019, "A Study of BFLOAT16 for Deep Learning Training";
Micikevicius et al. 2022, "FP8 Formats for Deep Learning").
"""

from __future__ import annotations

from mlsysim.core.exceptions import InputError

BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}
"""Storage width of one element, in bytes, by precision name ."""



def check_precision(value: object) -> str:
    """A precision name (case-insensitive), returned in lower case."""
    if isinstance(value, str):
        key = value.lower()
        if key in BYTES_PER_ELEMENT:
            return key
    raise InputError(f"unknown precision {value!r}; supported: {', '.join(BYTES_PER_ELEMENT)}")
