"""Predict published, measured data-parallel scale-out results and compare.

The cases are ``mlsysim/data/published_scaling.json``, a copy of the
project's ``shared/data/published_scaling.json``: each is a baseline (one GPU,
or one node) and a scaled run of the same job, with the measured scaling
efficiency ``measured_eff = (throughput_scaled / throughput_base) /
(devices_scaled / devices_base)`` and the hardware as published (sources in
each case). A case enters the data only when its figures are quoted from a
source in hand.

Prediction. A case becomes a :class:`DataParallelScaleOutScenario` with its
parameter count, gradient width, one-device step time, per-device batch,
devices per node, nodes, intra link (GB/s per direction), inter link (Gb/s per
NIC) and NICs per node. With a one-GPU baseline the predicted efficiency is
the scenario's ``efficiency``; with a one-node baseline it is the ratio of the
scaled layout's efficiency to the one-node layout's (each at its own
accumulation steps), which is the ratio of throughputs per device.

The seed model is given the link as the seed knows it: one inter-node link of
the NIC rate (``nics_per_node`` unset). Other assumptions receive the NIC count.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from mlsysim.core.units import quantity
from mlsysim.engine.assumptions import Assumptions
from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
from mlsysim.models.types import Workload

PRECISION_OF_GRADIENT_BYTES = {4: "fp32", 2: "fp16"}

MEDIAN_LIMIT = 0.04
"""The realistic preset's median absolute error must stay within 4 points of efficiency (issue 3)."""
MAX_LIMIT = 0.15
"""... and its worst case within 15 points."""


@dataclass(frozen=True)
class Case:
    """One published measurement, as in the data file."""

    id: str
    source: str
    measured_eff: float
    raw: dict[str, Any]


@dataclass(frozen=True)
class Comparison:
    """Measured and predicted efficiency of one case under one set of assumptions."""

    case: Case
    predicted: float

    @property
    def error(self) -> float:
        """Predicted minus measured efficiency (points of efficiency as a fraction)."""
        return self.predicted - self.case.measured_eff


def load_cases() -> list[Case]:
    """The published cases shipped with the package."""
    text = files("mlsysim.data").joinpath("published_scaling.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return [
        Case(id=c["id"], source=c["source"], measured_eff=float(c["measured_eff"]), raw=c)
        for c in data["cases"]
    ]


def scenario_for(
    case: Case,
    *,
    nodes: int | None = None,
    accumulation: int | None = None,
    assumptions: Assumptions | None = None,
) -> DataParallelScaleOutScenario:
    """The scaled layout of a case (or another node count / accumulation), as a scenario."""
    c = case.raw
    seed = assumptions is None or assumptions.is_seed()
    n_nodes = c["nodes"] if nodes is None else nodes
    inter = (
        None
        if c["inter_Gbps"] is None or n_nodes == 1
        else quantity(float(c["inter_Gbps"]), "Gbps")
    )
    return DataParallelScaleOutScenario(
        name=case.id,
        description=case.source,
        workload=Workload(name=case.id, parameters=quantity(float(c["params"]), "param")),
        precision=PRECISION_OF_GRADIENT_BYTES[c["grad_bytes"]],
        step_time=quantity(float(c["t1_s"]), "s"),
        training_time=quantity(1.0, "hour"),
        per_device_batch=int(c["batch"]),
        devices_per_node=int(c["devices_per_node"]),
        nodes=n_nodes,
        intra_bandwidth=quantity(float(c["intra_GBps"]), "GB/s"),
        inter_bandwidth=inter,
        nics_per_node=None if seed or inter is None else c["nics_per_node"],
        accumulation_steps=int(c["accumulation_scaled"] if accumulation is None else accumulation),
        assumptions=assumptions or Assumptions(),
    )


def predict(case: Case, assumptions: Assumptions | None = None) -> float:
    """Predicted scaling efficiency of a case, relative to its baseline (one GPU or one node)."""
    scaled = scenario_for(case, assumptions=assumptions).result.efficiency
    if case.raw["base"] == "1gpu":
        return scaled
    base = scenario_for(
        case, nodes=1, accumulation=int(case.raw["accumulation_base"]), assumptions=assumptions
    )
    return scaled / base.result.efficiency


def compare(
    assumptions: Assumptions | None = None, cases: list[Case] | None = None
) -> list[Comparison]:
    """Every case predicted under ``assumptions`` (the seed model by default)."""
    return [Comparison(case, predict(case, assumptions)) for case in (cases or load_cases())]


def summary(comparisons: list[Comparison]) -> tuple[float, float]:
    """(median, maximum) absolute error, as fractions of efficiency."""
    errors = [abs(c.error) for c in comparisons]
    return statistics.median(errors), max(errors)
