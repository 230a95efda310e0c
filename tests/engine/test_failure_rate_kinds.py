"""A failure rate per device and a whole job's rate are two spellings (issue 30, item 3).

Sources report interruptions of a job (Llama 3: 466 in 54 days on 16,384 GPUs,
8.6 a day). ``failure_rate="8.6 interruptions/day"`` was read per device: on
16,384 GPUs a job MTBF of 0.6 s and a goodput of 0, silently. Now a rate per
device says so in its unit (``failures/device/hour``); a job's rate comes with
the devices it was observed on (``failure_rate_devices``) and is divided by
them (a step of ``explain``); a rate that says neither is refused, naming both.
"""

import json

import numpy as np
import pytest

from mlsysim import Q_, InputError, Scenarios, sweep
from mlsysim.cli import main

FOUR = Scenarios.Gpt2DataParallelFourNodes10GbE.variant(
    restart_time=Q_(10, "min"), checkpoint_bandwidth=Q_(2, "GB/s")
)
LLAMA3_JOB = dict(failure_rate=Q_(8.6, "interruptions/day"), failure_rate_devices=16_384)


@pytest.mark.parametrize("rate", [Q_(8.6, "interruptions/day"), "8.6 interruptions/day", Q_(2e-5, "failures/hour")])
def test_a_rate_that_could_be_either_is_refused_naming_both_spellings(rate):
    with pytest.raises(InputError) as info:
        FOUR.variant(failure_rate=rate)
    message = str(info.value)
    assert "failure_rate" in message and "per device or of a whole job" in message
    assert "failures/device/" in message  # the spelling per device
    assert "failure_rate_devices=" in message  # the spelling of a job's rate


def test_a_job_rate_is_divided_by_the_devices_it_was_observed_on():
    r = FOUR.variant(**LLAMA3_JOB).result
    # 8.6 / 16,384 per device-day; 32 devices: M = 16,384 / (8.6 x 32) days = 59.5 days
    # (read per device before: M = 1 / (8.6 x 32) days = 5.2 min; on 16,384 GPUs 0.6 s)
    assert r.job_mtbf.to("day").magnitude == pytest.approx(16_384 / (8.6 * 32), rel=1e-12)
    text = FOUR.variant(**LLAMA3_JOB).explain()
    assert "failure rate per device: lambda = lambda_job / n_obs" in text
    assert "8.6 per day / 16384 devices" in text and "2.18709e-05 per device-hour" in text


def test_a_rate_per_device_says_so_in_its_unit():
    r = FOUR.variant(failure_rate=Q_(2e-5, "failures/device/hour")).result
    assert r.job_mtbf.to("hour").magnitude == pytest.approx(1 / (2e-5 * 32), rel=1e-12)
    text = FOUR.variant(failure_rate="2e-5 failures/device/hour").result
    assert text.job_mtbf == r.job_mtbf


def test_a_rate_per_device_with_failure_rate_devices_is_refused():
    with pytest.raises(InputError, match="failure_rate_devices: failure_rate .* is already per device"):
        FOUR.variant(failure_rate=Q_(2e-5, "failures/device/hour"), failure_rate_devices=8)


def test_a_registry_run_is_per_device():
    s = FOUR.variant(failure_rate="Llama3_405B_all")
    assert s.failure_rate.to("failures/device/hour").magnitude == pytest.approx(2.1946e-5)
    # 466 interruptions in 54 days on 16,384 GPUs, given as the job's rate: the same figure
    job = FOUR.variant(failure_rate=Q_(466 / 54, "interruptions/day"), failure_rate_devices=16_384)
    assert job.result.job_mtbf.to("hour").magnitude == pytest.approx(
        s.result.job_mtbf.to("hour").magnitude, rel=1e-4
    )


def test_a_sweep_converts_each_row_with_its_devices():
    table = sweep(FOUR.variant(**LLAMA3_JOB), failure_rate_devices=[8192, 16_384])
    mtbf = np.asarray(table["job_mtbf"], dtype=float)
    assert mtbf[1] == pytest.approx(2 * mtbf[0], rel=1e-12)
    with pytest.raises(InputError, match="failure_rate without 'per device'"):
        sweep(FOUR, failure_rate=[Q_(8.6, "interruptions/day")], nodes=[1, 4])


def test_the_command_line_takes_both_spellings_and_refuses_a_bare_rate(capsys):
    name = "Gpt2DataParallelFourNodes10GbE"
    given = ["--set", "restart_time=10 min", "--set", "checkpoint_bandwidth=2 GB/s"]
    job = ["--set", "failure_rate=8.6 interruptions/day", "--set", "failure_rate_devices=16384"]
    assert main(["run", name, *given, *job, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["job_mtbf"]["value"] == pytest.approx(16_384 / (8.6 * 32) * 24, rel=1e-12)
    assert main(["run", name, *given, "--set", "failure_rate=8.6 interruptions/day"]) == 2
    _, err = capsys.readouterr()
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert '"8.6 failures/device/day"' in err and "failure_rate_devices=N" in err
