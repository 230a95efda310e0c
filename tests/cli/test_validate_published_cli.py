"""``mlsysim validate published``: per-family errors, mean error, coverage, --cv (issue 12)."""

import json

from mlsysim.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_has_families_mean_and_coverage(capsys):
    code, out, _ = run(capsys, "validate", "published")
    assert code == 0
    assert "Error per family" in out
    assert "80% interval" in out and "covers" in out


def test_json_with_cross_validation(capsys):
    code, out, _ = run(capsys, "validate", "published", "--json", "--cv")
    assert code == 0
    data = json.loads(out)
    assert len(data["cases"]) == 111 and "family" in data["cases"][0]
    assert set(data["realistic"]) >= {"median_abs_error", "max_abs_error", "mean_error"}
    held = data["leave_one_family_out"]
    assert 0.75 <= held["coverage_80"] <= 0.85
    assert len(data["families"]) == len(held["families"]) == 20
    for row in data["cases"]:  # every case's interval holds its prediction
        low, high = row["realistic_interval_80"]
        assert low <= row["realistic_efficiency"] <= high
