"""``mlsysim validate published`` also reports the whole run: energy, emissions, failures."""

import json

from tests.runner import run


def test_text_report_has_energy_daly_llama3_and_opt(capsys):
    code, out, _ = run(capsys, "validate", "published")
    assert code == 0
    assert "Whole run: energy and emissions" in out
    assert "patterson-gpt3-175b" in out and "llama3.1-405b" in out
    assert "M = 24 h: printed 117 min" in out
    assert "Llama 3 405B" in out and "OPT-175B" in out


def test_json_report_has_the_whole_run(capsys):
    code, out, _ = run(capsys, "validate", "published", "--json")
    assert code == 0
    whole = json.loads(out)["whole_run"]
    assert whole["energy_worst_given"] <= whole["energy_limit"]
    assert len(whole["energy"]) == 24 and len(whole["daly"]) == 3
    assert 2.7 < whole["llama3_405b"]["job_mtbf_h"] < 2.9
