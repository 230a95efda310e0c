"""Calibrate the model from measurements: nccl-tests logs and runs of torch.distributed.

``from_nccl_tests(path)`` fits the alpha-beta line of a collective to an
nccl-tests / rccl-tests output; the fit's :meth:`~CollectiveFit.to_link` gives
the bandwidth and per-step latency of a scenario link. ``fit_matmul_ceilings``
fits the operator model's matrix-product ceilings to timed matrix multiplies
(:mod:`mlsysim.calibrate.matmuls`; timed by ``python -m mlsysim.calibrate.matmul_script``).
``read_profile(paths)`` reads PyTorch profiler traces of one run's ranks and says where each
step's time went by operator class (:mod:`mlsysim.calibrate.profile`); ``measured_tables``
gives their measured kernel tables (:mod:`mlsysim.calibrate.profile_tables`). The torch parts
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
from mlsysim.calibrate.profile import ProfileSummary, read_profile, read_traces
from mlsysim.calibrate.profile_tables import measured_tables
from mlsysim.calibrate.scenario_file import write_assumptions, write_link

__all__ = [
    "COLLECTIVES",
    "CollectiveFit",
    "Link",
    "MatmulFit",
    "MatmulRow",
    "ProfileSummary",
    "bus_factor",
    "fit_collective",
    "fit_matmul_ceilings",
    "from_nccl_tests",
    "measured_tables",
    "parse_nccl_tests",
    "read_matmul_table",
    "read_profile",
    "read_traces",
    "write_assumptions",
    "write_link",
]
