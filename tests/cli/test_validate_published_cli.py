"""``mlsysim validate published``: per-family errors, mean error, coverage, --cv (issue 12)."""

import json

from tests.runner import run


def test_table_has_families_mean_and_coverage(capsys):
    code, out, _ = run(capsys, "validate", "published")
    assert code == 0
    assert "Error per family" in out
    assert "80% interval" in out and "covers" in out
    # the figure on families left out comes first, the in-sample one second, labelled
    held, in_sample = out.index("each family left out"), out.index("in sample (fitted on every")
    assert held < in_sample and "the floor for the loss no term models" in out
    assert "host jitter, held out" not in out  # --cv prints it


def test_cv_prints_the_host_jitter_check(capsys):
    code, out, _ = run(capsys, "validate", "published", "--cv")
    assert code == 0
    assert "host jitter, held out: median |error| 4.32 pt with it" in out and ": kept" in out
    assert "realistic, fully nested (each family left out of" in out and "the 80% interval covers 82%" in out


def test_json_with_cross_validation(capsys):
    code, out, _ = run(capsys, "validate", "published", "--json", "--cv")
    assert code == 0
    data = json.loads(out)
    assert len(data["cases"]) == 111 and "family" in data["cases"][0]
    assert set(data["realistic"]) >= {"median_abs_error", "max_abs_error", "mean_error"}
    held = data["leave_one_family_out"]
    assert 0.75 <= held["coverage_80"] <= 0.85 and 0.75 <= held["coverage_80_of_the_average_family"] <= 0.85
    nested = data["nested_leave_one_family_out"]
    assert 0.75 <= nested["coverage_80"] <= 0.85 and len(nested["weights"]) == 20
    # the headline leads with the families left out, the in-sample figure second
    body = [key for key in data if key not in ("schema_version", "kind")]
    assert body[0] == "headline" and list(data["headline"]) == ["held_out", "in_sample"]
    assert data["headline"]["held_out"]["median_abs_error"] == held["median_abs_error"]
    assert data["headline"]["in_sample"]["median_abs_error"] == data["realistic"]["median_abs_error"]
    assert data["host_jitter_check"]["kept"] is True
    assert len(data["families"]) == len(held["families"]) == 20
    for row in data["cases"]:  # every case's interval holds its prediction
        low, high = row["realistic_interval_80"]
        assert low <= row["realistic_efficiency"] <= high


def test_the_issue_set_alone(capsys):
    """--cases issue: the 61 shared cases, held out among themselves (the jitter refitted and
    the bands built from those families only)."""
    from mlsysim.engine.inputs.assumptions import Assumptions
    from mlsysim.validation.published import cross_validate

    code, out, _ = run(capsys, "validate", "published", "--json", "--cv", "--cases", "issue")
    assert code == 0
    data = json.loads(out)
    assert len(data["cases"]) == 61 and data["seed"]["count"] == 61
    held = data["leave_one_family_out"]
    lofo = cross_validate(Assumptions.realistic(), subset="issue")
    assert held["count"] == 61 and held["coverage_80"] == lofo.coverage
    assert held["median_abs_error"] == lofo.summary.median_abs


def test_an_unknown_case_set_is_one_line_and_status_2(capsys):
    code, out, err = run(capsys, "validate", "published", "--cases", "mine")
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "--cases" in err and "'mine'" in err
