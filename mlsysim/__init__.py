"""mlsysim: predict how a training job scales out (data, ZeRO/FSDP, tensor, pipeline, expert and context
parallelism), from a one-device profile or from the hardware and the model's shape.

The public API is listed once, in ``__all__`` below; names are imported on
first use so that ``import mlsysim`` stays fast.

>>> from mlsysim import Scenarios
>>> case = Scenarios.Gpt2DataParallelOneNode
>>> type(case.result).__name__
'DataParallelScaleOutResult'
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # units
    "ureg": "mlsysim.core.units",
    "Q_": "mlsysim.core.units",
    "Quantity": "mlsysim.core.units",
    # errors
    "MlsysimError": "mlsysim.core.exceptions",
    "InputError": "mlsysim.core.exceptions",
    "UnitsError": "mlsysim.core.exceptions",
    "UnknownNameError": "mlsysim.core.exceptions",
    "ScenarioFileError": "mlsysim.core.exceptions",
    "MissingDependencyError": "mlsysim.core.exceptions",
    "MlsysimWarning": "mlsysim.core.exceptions",
    # workloads and hardware
    "Workload": "mlsysim.models.types",
    "TransformerWorkload": "mlsysim.models.types",
    "Models": "mlsysim.models.registry",
    "Hardware": "mlsysim.hardware.registry",
    "Systems": "mlsysim.hardware.registry",
    "Infrastructure": "mlsysim.hardware.registry",
    "load_registry": "mlsysim.core.registry",
    # engine
    "Assumptions": "mlsysim.engine.inputs.assumptions",
    "TrainingScenario": "mlsysim.engine.scenario_types",
    "DataParallelScaleOutScenario": "mlsysim.engine.scenario_types",
    "DataParallelScaleOutResult": "mlsysim.engine.results",
    "DataParallelScaleOutModel": "mlsysim.engine.solvers",
    "Scenarios": "mlsysim.engine.scenarios",
    "estimate": "mlsysim.engine.shortcuts",
    "WholeRun": "mlsysim.engine.model.whole_run",
    "WholeRunFigures": "mlsysim.engine.model.whole_run",
    # planning
    "sweep": "mlsysim.planning.sweep",
    "SweepTable": "mlsysim.planning.table",
    "plan": "mlsysim.planning.plan",
    "Plan": "mlsysim.planning.plan",
    "PlanInterrupted": "mlsysim.planning.plan",
    "InfeasiblePlanError": "mlsysim.core.exceptions",
    # scenario files
    "load_scenario": "mlsysim.engine.io.files",
    "save_scenario": "mlsysim.engine.io.files",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mlsysim' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from mlsysim.core.exceptions import (
        InfeasiblePlanError,
        InputError,
        MissingDependencyError,
        MlsysimError,
        MlsysimWarning,
        ScenarioFileError,
        UnitsError,
        UnknownNameError,
    )
    from mlsysim.core.registry import load_registry
    from mlsysim.core.units import Q_, Quantity, ureg
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.engine.io.files import load_scenario, save_scenario
    from mlsysim.engine.model.whole_run import WholeRun, WholeRunFigures
    from mlsysim.engine.results import DataParallelScaleOutResult
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario, TrainingScenario
    from mlsysim.engine.scenarios import Scenarios
    from mlsysim.engine.shortcuts import estimate
    from mlsysim.engine.solvers import DataParallelScaleOutModel
    from mlsysim.hardware.registry import Hardware, Infrastructure, Systems
    from mlsysim.models.registry import Models
    from mlsysim.models.types import TransformerWorkload, Workload
    from mlsysim.planning.plan import Plan, PlanInterrupted, plan
    from mlsysim.planning.sweep import sweep
    from mlsysim.planning.table import SweepTable
