"""``validate mine``: a cluster's constants fitted to its measured runs (issue 23)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim import Q_, Assumptions, DataParallelScaleOutScenario, Models
from mlsysim.core.exceptions import InputError, ScenarioFileError
from mlsysim.validation.mine import (
    RUNS_TEMPLATE,
    Run,
    fit_runs,
    free_constants,
    load_assumptions,
    load_runs,
)

LAYOUTS = [(2, 1, None), (4, 1, None), (8, 1, None), (8, 2, 1), (8, 2, 4), (8, 4, 4), (8, 8, 8)]


def synthetic_runs(truth: Assumptions, noise: float = 0.0, seed: int = 0) -> list[Run]:
    """Runs whose measured update time is the model's under ``truth`` (times exp(N(0, noise)))."""
    rng = np.random.default_rng(seed)
    runs = []
    for k, (d, n, nics) in enumerate(LAYOUTS):
        scenario = DataParallelScaleOutScenario(
            workload=Models.Language.GPT2,
            precision="fp16",
            step_time=Q_(30, "ms"),
            training_time=Q_(1, "hour"),
            per_device_batch=4,
            devices_per_node=d,
            nodes=n,
            intra_bandwidth=Q_(150, "GB/s"),
            inter_bandwidth=Q_(100, "Gbps") if n > 1 else None,
            nics_per_node=nics,
            assumptions=truth,
        )
        u = scenario.result.update_time.to("s").magnitude * float(np.exp(rng.normal(0, noise)))
        runs.append(Run(f"run{k}", scenario, u, k + 2))
    return runs


@settings(max_examples=8, deadline=None)
@given(
    st.floats(0.3, 0.95), st.floats(0.2, 0.95), st.floats(0.0005, 0.02)
)
def test_recovers_the_constants_the_runs_were_made_with(intra, inter, overhead):
    truth = Assumptions.realistic().variant(
        intra_efficiency=intra, inter_efficiency=inter, update_overhead=Q_(overhead, "s")
    )
    fit = fit_runs(synthetic_runs(truth), Assumptions.realistic(), leave_one_out=False)
    assert fit.fitted["intra_efficiency"] == pytest.approx(intra, rel=1e-3)
    assert fit.fitted["inter_efficiency"] == pytest.approx(inter, rel=1e-3)
    assert fit.fitted["update_overhead"] == pytest.approx(overhead, rel=1e-2, abs=1e-5)
    assert np.max(np.abs(fit.in_sample_errors)) < 1e-4


def test_leave_one_out_errors_and_scores_of_noisy_runs():
    truth = Assumptions.realistic().variant(intra_efficiency=0.7, inter_efficiency=0.6)
    fit = fit_runs(synthetic_runs(truth, noise=0.02, seed=3), Assumptions.realistic())
    assert np.all(np.isfinite(fit.held_out)) and np.all(np.isfinite(fit.scores))
    # a run left out is predicted less well than in sample, and within a few noise widths
    assert np.median(np.abs(fit.relative_errors)) >= np.median(np.abs(fit.in_sample_errors))
    assert np.max(np.abs(fit.relative_errors)) < 0.15
    assert all(len(v) == len(LAYOUTS) for v in fit.refits.values())


def test_only_constants_the_runs_tell_apart_are_fitted():
    runs = synthetic_runs(Assumptions.realistic())
    one_node = [r for r in runs if r.scenario.nodes == 1]
    assert free_constants(one_node) == ("intra_efficiency", "update_overhead")
    assert free_constants(runs) == ("intra_efficiency", "inter_efficiency", "update_overhead")


def _write_runs_csv(path, runs):
    lines = [
        "name,workload,precision,step_time,per_device_batch,devices_per_node,nodes,"
        "intra_bandwidth,inter_bandwidth,nics_per_node,measured_update_time"
    ]
    for r in runs:
        s = r.scenario
        inter = "100 Gbps" if s.nodes > 1 else ""
        nics = s.nics_per_node or ""
        lines.append(
            f"{r.name},GPT2,fp16,30 ms,4,{s.devices_per_node},{s.nodes},150 GB/s,{inter},{nics},"
            f"{r.measured_update_time * 1e3:.9g} ms"
        )
    path.write_text("\n".join(lines) + "\n")


def test_csv_and_json_files_give_the_same_runs(tmp_path):
    runs = synthetic_runs(Assumptions.realistic())
    csv_file = tmp_path / "runs.csv"
    _write_runs_csv(csv_file, runs)
    loaded = load_runs(csv_file, Assumptions.realistic())
    assert [r.line for r in loaded] == list(range(2, 2 + len(runs)))
    assert [r.measured_update_time for r in loaded] == pytest.approx(
        [r.measured_update_time for r in runs], rel=1e-8
    )
    rows = []
    for r in runs:
        s = r.scenario
        row = {
            "name": r.name, "workload": "GPT2", "precision": "fp16", "step_time": "30 ms",
            "per_device_batch": 4, "devices_per_node": s.devices_per_node, "nodes": s.nodes,
            "intra_bandwidth": "150 GB/s",
            # throughput (samples/s of the whole job) instead of the update time
            "measured_throughput": s.result.global_batch / r.measured_update_time,
        }
        if s.nodes > 1:
            row |= {"inter_bandwidth": "100 Gbps", "nics_per_node": s.nics_per_node}
        rows.append(row)
    json_file = tmp_path / "runs.json"
    json_file.write_text(json.dumps({"runs": rows}, indent=1))
    from_json = load_runs(json_file, Assumptions.realistic())
    assert [r.measured_update_time for r in from_json] == pytest.approx(
        [r.measured_update_time for r in runs], rel=1e-9
    )
    assert from_json[0].line < from_json[1].line


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("measured_update_time=-3 ms", "measured_update_time"),
        ("measured_update_time=3 GB", "measured_update_time"),
        ("nodes=0", "nodes"),
        ("precision=fp5", "precision"),
    ],
)
def test_a_bad_row_names_its_file_line_and_field(tmp_path, cell, expected):
    field, value = cell.split("=")
    header = "name,workload,precision,step_time,per_device_batch,devices_per_node,nodes,intra_bandwidth,measured_update_time"
    good = {"name": "a", "workload": "GPT2", "precision": "fp16", "step_time": "30 ms",
            "per_device_batch": "4", "devices_per_node": "8", "nodes": "1",
            "intra_bandwidth": "150 GB/s", "measured_update_time": "50 ms"}
    bad = dict(good, name="b", **{field: value})
    keys = header.split(",")
    text = header + "\n" + ",".join(good[k] for k in keys) + "\n" + ",".join(bad[k] for k in keys) + "\n"
    path = tmp_path / "runs.csv"
    path.write_text(text)
    with pytest.raises(ScenarioFileError) as info:
        load_runs(path)
    assert str(info.value).startswith(f"{path}:3: ") and expected in str(info.value)


def test_a_row_without_a_measurement_is_an_error(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(RUNS_TEMPLATE)  # the template's rows are to be filled in
    with pytest.raises(ScenarioFileError, match=r"runs\.csv:2: .*measured_update_time or measured_throughput"):
        load_runs(path)


def test_the_assumptions_file_round_trips_and_narrows_the_interval(tmp_path):
    from mlsysim.validation.mine import assumptions_toml

    truth = Assumptions.realistic().variant(intra_efficiency=0.7, inter_efficiency=0.6)
    runs = synthetic_runs(truth, noise=0.01, seed=5)
    fit = fit_runs(runs, Assumptions.realistic())
    path = tmp_path / "mine.toml"
    path.write_text(assumptions_toml(fit, "runs.csv", "realistic"))
    mine = load_assumptions(path)
    assert mine.intra_efficiency == pytest.approx(fit.fitted["intra_efficiency"], rel=1e-5)
    published, own = [], []
    for r in runs[1:]:
        low, high = r.scenario.variant(assumptions=Assumptions.realistic()).result.interval("efficiency")
        published.append(high - low)
        low, high = r.scenario.variant(assumptions=mine).result.interval("efficiency")
        own.append(high - low)
    assert np.median(own) < np.median(published) / 2


def test_a_bad_assumptions_file_names_the_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[assumptions]\npreset = "realistic"\ninter_efficiency = 3\n')
    with pytest.raises(ScenarioFileError, match=r"bad\.toml:3: assumptions\.inter_efficiency"):
        load_assumptions(path)
    path.write_text('[interval]\nscores = [0.1]\n')
    with pytest.raises(ScenarioFileError, match=r"\[assumptions\]"):
        load_assumptions(path)
    with pytest.raises(InputError):
        load_runs(tmp_path / "runs.txt")


def test_slow_links_and_a_large_overhead_are_recovered_too():
    """Found by the property test above: from the preset's start alone, the intra efficiency
    ran to its bound of 1 (where the fit cannot bring it back) and the overhead took its place;
    the fit's further starts recover the truth."""
    truth = Assumptions.realistic().variant(
        intra_efficiency=0.3125, inter_efficiency=0.25, update_overhead=Q_(0.015625, "s")
    )
    fit = fit_runs(synthetic_runs(truth), Assumptions.realistic(), leave_one_out=False)
    assert fit.fitted["intra_efficiency"] == pytest.approx(0.3125, rel=1e-3)
    assert fit.fitted["update_overhead"] == pytest.approx(0.015625, rel=1e-2)


def test_scores_over_another_difficulty_are_refused(tmp_path):
    """A file says which difficulty its scores are over; one written for another is refused,
    naming the line, rather than read on the wrong scale."""
    from mlsysim.engine.reports.bands import DIFFICULTY_FORMULA
    from mlsysim.validation.mine import assumptions_toml

    truth = Assumptions.realistic().variant(intra_efficiency=0.7, inter_efficiency=0.6)
    fit = fit_runs(synthetic_runs(truth, noise=0.01, seed=5), Assumptions.realistic())
    text = assumptions_toml(fit, "runs.csv", "realistic")
    assert f'difficulty = "{DIFFICULTY_FORMULA}"' in text
    path = tmp_path / "old.toml"
    named = f'difficulty = "{DIFFICULTY_FORMULA}"'
    path.write_text(text.replace(named, 'difficulty = "0.2 + e C / (A T1 + C)"'))
    with pytest.raises(ScenarioFileError, match=r"old\.toml:\d+: interval\.difficulty"):
        load_assumptions(path)


@pytest.mark.parametrize(("index", "constant"), [(0, "intra_efficiency"), (4, "inter_efficiency")])
def test_one_run_fits_the_slowest_link_it_crosses_and_is_not_left_out(index, constant, tmp_path, capsys):
    """Issue 41: one run is accepted; it pins one constant (the slowest link it crosses), recovered exactly
    where the others are at their true values; no leave-one-out error, no interval scores written."""
    truth = Assumptions.realistic().variant(intra_efficiency=0.6, inter_efficiency=0.4)
    run = synthetic_runs(truth)[index]
    assert free_constants([run]) == (constant,)
    fit = fit_runs([run], truth.variant(**{constant: 0.8}))  # every other constant at its true value
    assert set(fit.fitted) == {constant}
    assert fit.fitted[constant] == pytest.approx(getattr(truth, constant), rel=1e-3)
    assert np.isnan(fit.held_out).all() and fit.refits == {constant: []}
    from mlsysim.validation.mine import assumptions_toml

    text = assumptions_toml(fit, "one.csv", "realistic", [run])
    assert "[interval]" not in text and "[fit]" not in text and "no leave-one-out error" in text


def test_one_run_through_the_command_line(tmp_path, capsys):
    from mlsysim.cli import main

    path = tmp_path / "one.csv"
    path.write_text(RUNS_TEMPLATE.splitlines()[0] + "\n"
                    + "two-nodes,Llama2_7B,bf16,820 ms,4,8,2,450 GB/s,400 Gbps,8,1,900 ms,\n")
    out = tmp_path / "one.toml"
    code = main(["validate", "mine", str(path), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "inter_efficiency" in text and "not left out" in text
    assert load_assumptions(out).inter_efficiency < 1
