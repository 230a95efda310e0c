"""The public names are listed once (mlsysim.__all__) and pinned here."""

import subprocess
import sys

import mlsysim

EXPECTED = {
    "Assumptions",
    "DataParallelScaleOutModel",
    "DataParallelScaleOutResult",
    "DataParallelScaleOutScenario",
    "TrainingScenario",
    "Hardware",
    "InfeasiblePlanError",
    "Infrastructure",
    "InputError",
    "MissingDependencyError",
    "MlsysimError",
    "MlsysimWarning",
    "Models",
    "Q_",
    "Quantity",
    "Plan",
    "PlanInterrupted",
    "ScenarioFileError",
    "Scenarios",
    "Systems",
    "TransformerWorkload",
    "UnitsError",
    "UnknownNameError",
    "SweepTable",
    "WholeRun",
    "WholeRunFigures",
    "Workload",
    "estimate",
    "load_registry",
    "load_scenario",
    "plan",
    "save_scenario",
    "sweep",
    "ureg",
    "__version__",
}


def test_exported_names_are_pinned():
    assert set(mlsysim.__all__) == EXPECTED


def test_every_exported_name_resolves():
    for name in mlsysim.__all__:
        assert getattr(mlsysim, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    try:
        mlsysim.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_spec_module_paths_resolve():
    from mlsysim.engine import results, scenario_definitions, scenario_types  # noqa: F401
    from mlsysim.engine.results import DataParallelScaleOutResult
    from mlsysim.engine.scenario_definitions import training
    from mlsysim.engine.scenario_types import DataParallelScaleOutScenario
    from mlsysim.solvers import DataParallelScaleOutModel

    assert mlsysim.DataParallelScaleOutScenario is DataParallelScaleOutScenario
    assert mlsysim.DataParallelScaleOutResult is DataParallelScaleOutResult
    assert mlsysim.DataParallelScaleOutModel is DataParallelScaleOutModel
    assert training.Gpt2DataParallelOneNode is mlsysim.Scenarios.Gpt2DataParallelOneNode


def test_import_does_not_load_the_cli_plotting_or_torch():
    code = (
        "import sys, mlsysim; "
        "heavy = [m for m in ('typer', 'click', 'rich', 'matplotlib', 'torch', 'pandas', 'mlsysim.cli') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_seed_name_is_the_training_scenarios_data_parallel_face():
    """Issue 39, item 7: TrainingScenario prices every layout; DataParallelScaleOutScenario, the seed's name, is
    it exactly (the same inputs give the same figures, bit for bit), and the seed's scenarios keep their class."""
    from mlsysim import DataParallelScaleOutScenario, Scenarios, TrainingScenario

    seed = Scenarios.Gpt2DataParallelFourNodes10GbE
    assert type(seed) is DataParallelScaleOutScenario and isinstance(seed, TrainingScenario)
    assert type(seed.variant(nodes=2)) is DataParallelScaleOutScenario
    general = TrainingScenario(**seed.inputs())
    assert type(general.variant(nodes=2)) is TrainingScenario
    assert general.result.update_time == seed.result.update_time
    assert general.result.speedup == seed.result.speedup
    assert general != seed  # equal inputs, but not the same class
    assert repr(general).startswith("<TrainingScenario ") and repr(seed).startswith("<DataParallelScaleOutScenario ")
