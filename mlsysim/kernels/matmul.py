"""The time of a matrix-product kernel on a registry accelerator, in a number format, at a power limit.

:func:`matmul` answers for ``batch`` products (M x K)(K x N) in one kernel,
:func:`grouped_matmul` for a mixture of experts' grouped product (groups of tokens, one
K x N matrix each); both return a :class:`~mlsysim.kernels.result.KernelEstimate`. The
engine calls the SI level: :func:`matmul_params` once per accelerator, format and power
limit, then :func:`matmul_kernel_time` / :func:`grouped_matmul_kernel_time` on floats or
numpy arrays (a :class:`~mlsysim.physics.bounds.KernelTime`).

The formulas are :mod:`mlsysim.physics.gemm` and :mod:`mlsysim.physics.clocks`; their
fitted constants (:class:`MatmulFit`) come from ``mlsysim/data/kernel_fits/matmul.json``,
written by ``python -m mlsysim.validation.kernels_matmul`` from the shipped tables
(``mlsysim/data/kernels/matmul_*.json``), or from a user's own tables
(``fit_matmul_constants`` there). The launch latency, the pipeline's fill and drain, the
exposed share of each wave's epilogue and the memory efficiency are one set for every GPU; the ceiling is per architecture and format
(the registry's ``architecture``), and a GPU whose own tables measure that format never
gets more than the best of its measured kernels. A format on an architecture no table
measures is refused with an :class:`~mlsysim.core.exceptions.InputError` naming the
missing table, never priced at another format's or GPU's ceiling; fp16 takes bf16's
ceiling where no fp16 table exists (one tensor-core rate, as every NVIDIA datasheet gives).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any, NamedTuple

import numpy as np

from mlsysim.core.exceptions import InputError, UnknownNameError
from mlsysim.core.units import positive_canonical, to_canonical
from mlsysim.hardware.registry import Hardware
from mlsysim.hardware.types import Accelerator
from mlsysim.kernels.result import KernelEstimate
from mlsysim.physics._array import Num, is_array
from mlsysim.physics.bounds import KernelTime
from mlsysim.physics.clocks import EXPONENT_BOUNDS, sustained_fraction
from mlsysim.physics.gemm import SPLITS, TILES, gemm_time, grouped_gemm_time
from mlsysim.physics.matmul import MATMUL_FORMATS, check_matmul_format
from mlsysim.physics.precision import BYTES_PER_ELEMENT

__all__ = [
    "SPLITS", "STRUCTURE_BOUNDS", "TILES", "MatmulFit", "MatmulParams", "MatmulStructure", "accelerator_entry",
    "check_matmul_format", "format_figures", "grouped_matmul", "grouped_matmul_kernel_time", "matmul",
    "matmul_kernel_time", "matmul_params", "modelled_time", "shipped_fit", "sustained_fraction",
]
"""SPLITS, TILES, check_matmul_format and sustained_fraction are the physics layer's, named here for the
layers above (validation reads the model through the kernel level only)."""

WIDE_OUTPUT = ("fp32", "tf32")
"""Formats whose products write fp32 results (4 bytes); every other format writes bf16 (2 bytes)."""

SHARED_CEILINGS: Mapping[str, str] = {"fp16": "bf16"}
"""A format priced at another's ceiling where no table measures it: fp16 and bf16 run at one
tensor-core rate (NVIDIA's datasheets give one figure for both)."""

CALIBRATE_HINT = (
    "supply a table of your own measurements (m, n, k, format, time) with `mlsysim calibrate kernels FILE`"
)


class MatmulStructure(NamedTuple):
    """The constants of :mod:`mlsysim.physics.gemm` shared by every GPU (SI)."""

    launch: float
    """t_L, s."""
    fill: float
    """t_F, s."""
    epilogue_share: float
    """phi."""
    memory_efficiency: float
    """eta."""
    power_exponent: float
    """alpha of :func:`~mlsysim.physics.clocks.sustained_fraction`."""


STRUCTURE_BOUNDS: Mapping[str, tuple[float, float]] = {
    "launch": (0.2e-6, 10e-6), "fill": (0.0, 10e-6), "epilogue_share": (0.0, 1.0), "memory_efficiency": (0.3, 1.0),
    "power_exponent": EXPONENT_BOUNDS,
}
"""The range each shared constant may take (by :class:`MatmulStructure` field): t_L 0.2-10 us, t_F 0-10 us,
phi 0-1, eta 0.3-1, alpha the physical 1-3."""


def format_figures(device: Accelerator, matmul_format: str) -> tuple[str, float, float, float]:
    """(tensor-core format, dense peak FLOP/s, operand bytes, result bytes) of ``device`` in ``matmul_format``."""
    name = check_matmul_format(matmul_format)
    tensor = MATMUL_FORMATS[name]
    peak = to_canonical(device.peak_flops(tensor), "compute_rate")
    return tensor, peak, BYTES_PER_ELEMENT[tensor], 4.0 if name in WIDE_OUTPUT else 2.0


def modelled_time(
    structure: MatmulStructure, ceiling: Num, *, m: Num, n: Num, k: Num, batch: Num, peak: Num,
    compute_units: Num, bandwidth: Num, in_bytes: Num, out_bytes: Num, power_ratio: Num = 1.0,
) -> Num:
    """Seconds of ``batch`` products under ``structure`` and ``ceiling``, at ``power_ratio`` = limit / TDP (SI)."""
    return gemm_time(
        m, n, k, batch, peak=peak, ceiling=ceiling, compute_units=compute_units, bandwidth=bandwidth,
        in_bytes=in_bytes, out_bytes=out_bytes, launch=structure.launch, fill=structure.fill,
        epilogue_share=structure.epilogue_share, memory_efficiency=structure.memory_efficiency,
        sustained=sustained_fraction(power_ratio, 1.0, structure.power_exponent),
    ).time


@dataclass(frozen=True)
class MatmulFit:
    """The fitted constants of the matrix-product model and what they rest on.

    ``launch`` (t_L, s), ``fill`` (t_F, s), ``epilogue_share`` (phi) and
    ``memory_efficiency`` (eta) are one set for every GPU; ``power_exponent`` is alpha of
    :func:`~mlsysim.physics.clocks.sustained_fraction`; ``ceilings[architecture][format]``
    is c_f; ``device_best[accelerator name][tensor-core format]`` the best efficiency a
    GPU's own tables measured on those tensor cores (fp8 for every FP8 scaling; at its
    default power), the cap of its ceiling;
    ``provenance`` says, per constant, what it is, the tables it was fitted on and its
    bound (the JSON file's text).
    """

    launch: float
    fill: float
    epilogue_share: float
    memory_efficiency: float
    power_exponent: float
    ceilings: Mapping[str, Mapping[str, float]]
    device_best: Mapping[str, Mapping[str, float]]
    provenance: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def structure(self) -> MatmulStructure:
        """The shared constants."""
        return MatmulStructure(self.launch, self.fill, self.epilogue_share, self.memory_efficiency,
                               self.power_exponent)

    def ceiling(self, accelerator: Accelerator, matmul_format: str) -> float:
        """c_f of this accelerator and format (its architecture's, capped at its own best); an error if none."""
        architecture = accelerator.architecture or ""
        table = self.ceilings.get(architecture, {})
        key = matmul_format if matmul_format in table else SHARED_CEILINGS.get(matmul_format, matmul_format)
        value = table.get(key)
        if value is None:
            measured = ", ".join(table) or "no format"
            raise InputError(
                f"no matmul table measures {matmul_format} on {architecture or accelerator.name} "
                f"(the tables for {accelerator.name}'s architecture measure {measured}); {CALIBRATE_HINT}",
                field="format",
            )
        best = self.device_best.get(accelerator.name, {}).get(MATMUL_FORMATS[key])
        return float(value) if best is None else min(float(value), float(best))

    def to_json(self) -> dict[str, Any]:
        """The JSON document of ``mlsysim/data/kernel_fits/matmul.json``."""
        return {
            "about": self.provenance.get("about", ""),
            "structure": {
                "launch_s": self.launch, "fill_s": self.fill, "epilogue_share": self.epilogue_share,
                "memory_efficiency": self.memory_efficiency, "power_exponent": self.power_exponent,
            },
            "ceilings": {a: dict(sorted(f.items())) for a, f in sorted(self.ceilings.items())},
            "device_best": {d: dict(sorted(f.items())) for d, f in sorted(self.device_best.items())},
            "provenance": {k: v for k, v in self.provenance.items() if k != "about"},
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> MatmulFit:
        """The fit stored by :meth:`to_json`."""
        structure = document["structure"]
        provenance = dict(document.get("provenance", {}))
        provenance["about"] = document.get("about", "")
        return cls(
            launch=float(structure["launch_s"]), fill=float(structure["fill_s"]),
            epilogue_share=float(structure["epilogue_share"]), memory_efficiency=float(structure["memory_efficiency"]),
            power_exponent=float(structure["power_exponent"]),
            ceilings={a: {f: float(v) for f, v in t.items()} for a, t in document["ceilings"].items()},
            device_best={d: {f: float(v) for f, v in t.items()} for d, t in document["device_best"].items()},
            provenance=provenance,
        )


@cache
def shipped_fit() -> MatmulFit:
    """The constants fitted on the shipped tables (``mlsysim/data/kernel_fits/matmul.json``)."""
    text = files("mlsysim.data").joinpath("kernel_fits").joinpath("matmul.json").read_text(encoding="utf-8")
    return MatmulFit.from_json(json.loads(text))


class MatmulParams(NamedTuple):
    """Everything :mod:`mlsysim.physics.gemm` needs of one accelerator, format and power limit (SI)."""

    peak: float
    """The format's dense peak, FLOP/s."""
    ceiling: float
    compute_units: float
    bandwidth: float
    """Memory bandwidth, bytes/s."""
    in_bytes: float
    out_bytes: float
    launch: float
    fill: float
    epilogue_share: float
    memory_efficiency: float
    sustained: float
    """The share of the default-power rate sustained at the power limit."""

    def kernel(self) -> dict[str, float]:
        """The keyword arguments of :func:`~mlsysim.physics.gemm.gemm_time`."""
        return self._asdict()


def accelerator_entry(accelerator: Accelerator | str) -> Accelerator:
    """A registry accelerator from itself or its name."""
    if isinstance(accelerator, Accelerator):
        return accelerator
    if isinstance(accelerator, str):
        try:
            entry = Hardware.get(accelerator.strip())
        except UnknownNameError as error:
            raise InputError(f"accelerator: {error}", field="accelerator") from None
        if isinstance(entry, Accelerator):
            return entry
    raise InputError(f"expected a registry accelerator or its name (e.g. 'H100'), got {accelerator!r}",
                     field="accelerator")


def power_limit_watts(accelerator: Accelerator, power_limit: object) -> float:
    """The power limit in watts (None: the device's TDP); refused above the TDP or without one."""
    tdp = None if accelerator.power is None else to_canonical(accelerator.power.tdp, "power")
    if power_limit is None:
        return math.nan if tdp is None else tdp
    try:
        watts = positive_canonical(power_limit, "power")
    except InputError as error:
        raise InputError(f"power_limit: {error.message}", field="power_limit") from None
    if tdp is None:
        raise InputError(f"power_limit: {accelerator.name} has no TDP in the registry to scale from",
                         field="power_limit")
    if watts > tdp:
        raise InputError(
            f"power_limit: {watts:g} W is above {accelerator.name}'s {tdp:g} W TDP, the most it can be set to",
            field="power_limit",
        )
    return watts


def matmul_params(
    accelerator: Accelerator | str, matmul_format: str = "bf16", *, power_limit: object = None,
    fit: MatmulFit | None = None,
) -> MatmulParams:
    """The SI constants of one accelerator, format and power limit (``fit``: the shipped one if None)."""
    device = accelerator_entry(accelerator)
    name = check_matmul_format(matmul_format)
    constants = fit or shipped_fit()
    _, peak, in_bytes, out_bytes = format_figures(device, name)
    if device.compute_units is None:
        raise InputError(
            f"{device.name} has no SM count in the registry (compute_units), which the matmul model's waves need; "
            "add one with its source (mlsysim.load_registry)", field="accelerator",
        )
    watts = power_limit_watts(device, power_limit)
    tdp = watts if device.power is None else to_canonical(device.power.tdp, "power")
    return MatmulParams(
        peak=peak, ceiling=constants.ceiling(device, name), compute_units=float(device.compute_units.count),
        bandwidth=to_canonical(device.memory.bandwidth, "bandwidth"), in_bytes=in_bytes,
        out_bytes=out_bytes, launch=constants.launch, fill=constants.fill,
        epilogue_share=constants.epilogue_share, memory_efficiency=constants.memory_efficiency,
        sustained=1.0 if math.isnan(watts) else float(sustained_fraction(watts, tdp, constants.power_exponent)),
    )


def matmul_kernel_time(params: MatmulParams, m: Num, n: Num, k: Num, batch: Num = 1.0) -> KernelTime:
    """Seconds, efficiency and binding term of ``batch`` products (m x k)(k x n): floats or arrays (SI).

    One product's answer (floats) is kept per shape and parameters (:func:`_one_product`): a scenario
    prices the same few shapes again and again."""
    if is_array(m, n, k, batch):
        return gemm_time(m, n, k, batch, **params.kernel())
    return _one_product(params, float(m), float(n), float(k), float(batch))


@lru_cache(maxsize=65536)
def _one_product(params: MatmulParams, m: float, n: float, k: float, batch: float) -> KernelTime:
    return gemm_time(m, n, k, batch, **params.kernel())


def grouped_matmul_kernel_time(params: MatmulParams, tokens: Num, n: Num, k: Num) -> KernelTime:
    """The same for one grouped kernel over groups of ``tokens`` rows (last axis), each with its own k x n matrix."""
    return grouped_gemm_time(tokens, n, k, **params.kernel())


def _whole(name: str, value: object, least: float) -> np.ndarray:
    """``value`` as an array of whole numbers of at least ``least``; an error naming ``name`` otherwise."""
    wrong = InputError(f"{name}: expected whole numbers of at least {least:g}, got {value!r}", field=name)
    if isinstance(value, (bool, str, bytes)):
        raise wrong
    try:
        numbers = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise wrong from None
    if numbers.size == 0 or not np.all(np.isfinite(numbers)) or np.any(numbers < least) or np.any(
        numbers != np.floor(numbers)
    ):
        raise wrong
    return numbers


def _dimension(name: str, value: object) -> float | np.ndarray:
    """A shape dimension: a whole number of at least 1, or an array of them."""
    numbers = _whole(name, value, 1.0)
    return float(numbers) if numbers.ndim == 0 else numbers


def matmul(
    accelerator: Accelerator | str, m: object, n: object, k: object, *, batch: object = 1,
    format: str = "bf16", power_limit: object = None, fit: MatmulFit | None = None,  # noqa: A002 - the user's word
) -> KernelEstimate:
    """One kernel of ``batch`` products (m x k)(k x n) on ``accelerator`` in ``format``.

    ``power_limit``: a power Quantity (``Q_(500, "W")``) at or below the device's TDP
    (None: the TDP). Shapes may be numpy arrays (one estimate per element).

    >>> from mlsysim.kernels.matmul import matmul
    >>> est = matmul("H100", 4096, 4096, 4096)
    >>> est.bound
    'compute'
    """
    params = matmul_params(accelerator, format, power_limit=power_limit, fit=fit)
    dims = [_dimension(name, value) for name, value in (("m", m), ("n", n), ("k", k), ("batch", batch))]
    device = accelerator_entry(accelerator)
    what = f"matmul on {device.name} in {check_matmul_format(format)}"
    return KernelEstimate.of(what, matmul_kernel_time(params, *dims))


def grouped_matmul(
    accelerator: Accelerator | str, tokens: object, n: object, k: object, *, format: str = "bf16",
    power_limit: object = None, fit: MatmulFit | None = None,  # noqa: A002 - the user's word
) -> KernelEstimate:
    """One grouped kernel: ``tokens`` rows per group (a sequence: a mixture of experts' tokens per expert),
    each group times its own (k x n) matrix, as DeepGEMM's and CUTLASS's grouped GEMMs run it."""
    params = matmul_params(accelerator, format, power_limit=power_limit, fit=fit)
    counts = _whole("tokens", tokens, 0.0)
    if counts.ndim != 1 or not np.any(counts > 0):
        raise InputError(f"tokens: expected a sequence of tokens per group, at least one above 0, got {tokens!r}",
                         field="tokens")
    n_, k_ = _dimension("n", n), _dimension("k", k)
    device = accelerator_entry(accelerator)
    what = f"grouped matmul of {counts.size} groups on {device.name} in {check_matmul_format(format)}"
    return KernelEstimate.of(what, grouped_matmul_kernel_time(params, counts, n_, k_))
