"""An assumptions file says when it is used outside the runs it was fitted on (issue 30, item 11).

A fit on a few data-parallel runs of a small model (GPT-2 here, 2 to 64 devices,
no tensor or pipeline parallelism) applied to Llama-3 70B on 512 GPUs at t = 8,
p = 4 gave no warning. The file now records the range of its runs (``[range]``)
and a result outside it carries a note naming each figure and the range.
"""

import pytest
import tomllib

from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models, Systems
from mlsysim.cli import main
from mlsysim.core.exceptions import ScenarioFileError
from mlsysim.engine.io.files import save_scenario
from mlsysim.validation.mine import assumptions_toml, fit_runs, load_assumptions
from tests.validation.test_mine import synthetic_runs

TRUTH = Assumptions.realistic().variant(intra_efficiency=0.7, inter_efficiency=0.6)
RUNS = synthetic_runs(TRUTH, noise=0.01, seed=5)  # GPT-2 (1.5e9 parameters), 2 to 64 devices


def _llama_70b(assumptions: Assumptions) -> DataParallelScaleOutScenario:
    """docs/parallelism.md's pipeline layout: 512 GPUs, t = 8, p = 4."""
    return DataParallelScaleOutScenario(
        workload=Models.Language.Llama3_70B, precision="bf16", node=Systems.Nodes.DGX_H100,
        nodes=64, fabric=Systems.Fabrics.InfiniBand_NDR, per_device_batch=1,
        accumulation_steps=32, zero_stage=1, tensor_parallel=8, pipeline_parallel=4,
        step_time=Q_(0.1798 * 32, "s"), training_time=Q_(1000, "hour"), assumptions=assumptions,
    )  # fmt: skip


@pytest.fixture
def mine(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(assumptions_toml(fit_runs(RUNS, Assumptions.realistic()), "runs.csv", "realistic", RUNS))
    return path


def test_the_file_records_the_range_of_its_runs(mine):
    recorded = tomllib.loads(mine.read_text())["range"]
    assert recorded == {
        "devices": [2, 64], "nodes": [1, 8], "parameters": [1_500_000_000, 1_500_000_000],
        "tensor_parallel": [1, 1], "pipeline_parallel": [1, 1],
    }  # fmt: skip


def test_a_layout_outside_the_runs_gets_a_note_naming_each_figure(mine):
    notes = _llama_70b(load_assumptions(mine)).result.constraint_trace
    note = next(n for n in notes if n.startswith("outside the fitted range"))
    assert "fitted on 7 runs" in note
    assert "512 devices (the runs: 2 to 64)" in note
    assert "8 tensor-parallel ranks (the runs: 1)" in note
    assert "4 pipeline stages (the runs: 1)" in note
    assert "7.06e+10 parameters (the runs: 1.5e+09)" in note


def test_a_layout_inside_the_runs_gets_none(mine):
    inside = RUNS[3].scenario.variant(assumptions=load_assumptions(mine))
    assert not any("outside the fitted range" in n for n in inside.result.constraint_trace)
    # the same layout under other assumptions: no fit, no note
    assert not any("fitted range" in n for n in _llama_70b(Assumptions.realistic()).result.constraint_trace)


def test_run_prints_the_note(mine, tmp_path, capsys):
    scenario = save_scenario(_llama_70b(Assumptions.realistic()), tmp_path / "llama.toml")
    assert main(["run", "--file", str(scenario), "--assumptions", str(mine)]) == 0
    out = capsys.readouterr().out
    assert "outside the fitted range" in out and "512 devices" in out


def test_a_file_without_a_range_still_loads_and_a_bad_range_names_its_line(tmp_path):
    path = tmp_path / "old.toml"
    path.write_text('[assumptions]\npreset = "realistic"\nintra_efficiency = 0.71\n')
    old = load_assumptions(path)
    assert not any("fitted range" in n for n in _llama_70b(old).result.constraint_trace)
    path.write_text(
        '[assumptions]\npreset = "realistic"\nintra_efficiency = 0.72\n[range]\ndevices = [64, 2]\n'
    )
    with pytest.raises(ScenarioFileError, match=r"old\.toml:5: range\.devices"):
        load_assumptions(path)
