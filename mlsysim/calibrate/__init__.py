"""Calibrate the model from measurements: nccl-tests logs and runs of torch.distributed.

``from_nccl_tests(path)`` fits the alpha-beta line of a collective to an
nccl-tests / rccl-tests output; the fit's :meth:`~CollectiveFit.to_link` gives
the bandwidth and per-step latency of a scenario link. ``fit_matmul_ceilings``
fits the operator model's matrix-product ceilings to timed matrix multiplies
(:mod:`mlsysim.calibrate.matmuls`; timed by ``python -m mlsysim.calibrate.matmul_script``). The torch parts
(:mod:`mlsysim.calibrate.torch_measure`, :mod:`mlsysim.calibrate.ddp`) import
torch only when called; install it with ``pip install 'mlsysim[calibrate]'``.
"""

from __future__ import annotations

from mlsysim.calibrate.fit import (
    COLLECTIVES,
    CollectiveFit,
    Link,
    bus_factor,
    fit_collective,
)
from mlsysim.calibrate.matmuls import MatmulFit, MatmulRow, fit_matmul_ceilings, read_matmul_table
from mlsysim.calibrate.nccl_tests import from_nccl_tests, parse_nccl_tests
from mlsysim.calibrate.scenario_file import write_assumptions, write_link

__all__ = [
    "COLLECTIVES",
    "CollectiveFit",
    "Link",
    "MatmulFit",
    "MatmulRow",
    "bus_factor",
    "fit_collective",
    "fit_matmul_ceilings",
    "from_nccl_tests",
    "parse_nccl_tests",
    "read_matmul_table",
    "write_assumptions",
    "write_link",
]
