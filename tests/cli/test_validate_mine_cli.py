"""``mlsysim validate mine``, ``mlsysim init --runs`` and ``--assumptions FILE`` (issue 23)."""

import json
import shutil
from pathlib import Path

from tests.runner import run

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "cluster_runs.csv"


def test_fit_writes_an_assumptions_file_that_run_loads(capsys, tmp_path):
    out = tmp_path / "mine.toml"
    code, text, _ = run(capsys, "validate", "mine", str(EXAMPLE), "--out", str(out))
    assert code == 0
    assert "inter_efficiency" in text and "each run predicted without it" in text
    assert out.exists() and "[interval]" in out.read_text()
    code, text, _ = run(
        capsys, "run", "Gpt2DataParallelFourNodes10GbE", "--assumptions", str(out), "--json"
    )
    assert code == 0
    data = json.loads(text)
    assert "intervals_80" in data


def test_json_report(capsys):
    code, text, _ = run(capsys, "validate", "mine", str(EXAMPLE), "--json")
    assert code == 0
    data = json.loads(text)
    assert len(data["runs"]) == 10
    assert set(data["fitted"]) == {"intra_efficiency", "inter_efficiency", "update_overhead"}
    assert 0 <= data["median_abs_relative_error"] <= data["worst_abs_relative_error"]
    widths = data["median_interval_width_80"]
    assert 0 < widths["runs"] < widths["published"]  # the example's runs narrow the interval


def test_a_bad_row_is_one_line_with_file_and_line(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    shutil.copy(EXAMPLE, path)
    lines = path.read_text().splitlines()
    lines[4] = lines[4].replace(",8,1,", ",8,0,")  # nodes = 0 on line 5
    path.write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "validate", "mine", str(path))
    assert code == 2
    assert err.strip().count("\n") == 0 and f"{path}:5:" in err and "nodes" in err


def test_init_runs_writes_the_template(capsys, tmp_path):
    path = tmp_path / "runs.csv"
    code, text, _ = run(capsys, "init", "--runs", str(path))
    assert code == 0 and "validate mine" in text
    assert path.read_text().startswith("name,workload,precision,step_time")
    code, _, err = run(capsys, "init", "--runs", str(tmp_path / "runs.toml"))
    assert code == 2 and ".csv" in err


def test_the_fit_table_writes_readable_figures_when_a_constant_fits_at_zero(capsys, tmp_path):
    """Runs measured just under the compute: the overhead fits at ~1e-16 s, times are tens of
    seconds; the table printed "9.36e-14 ms" and "1.199e+04 ms" (issue 30)."""
    import csv
    import re

    rows = list(csv.DictReader(EXAMPLE.open()))
    for row in rows:
        row["step_time"] = "12 s"
        row["measured_update_time"] = f"{12_000 * int(row['accumulation_steps']) * 0.999:.1f} ms"
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    code, text, err = run(capsys, "validate", "mine", str(path))
    assert code == 0, err
    assert not re.search(r"\de[+-]\d", text), text
    assert "update_overhead       0.00 ms" in text and "11,988.0 ms" in text
