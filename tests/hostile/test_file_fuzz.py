"""Fuzz scenario files (TOML and YAML) and nccl-tests logs: our error or a valid result."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.calibrate import from_nccl_tests
from mlsysim.calibrate.fit import CollectiveFit
from mlsysim.engine.io.files import load_scenario
from tests.hostile.conftest import FUZZ, ours_or_valid

TOML = """name = "job"
base = "Gpt2DataParallelOneNode"
step_time = "2.1 s"
nodes = 4
devices_per_node = 8
inter_bandwidth = "100 Gb/s"
device_memory = "H100"

[assumptions]
preset = "realistic"
overlap = false
"""
YAML = """name: job
base: Gpt2DataParallelOneNode
step_time: 2.1 s
nodes: 4
devices_per_node: 8
inter_bandwidth: 400G
assumptions:
  preset: realistic
  overlap: false
"""
INSERTS = [
    "\x00", "\xff", "é", "\ufeff", "[", "]", "{", "}", "&a", "*a", "!!python/name:os.system",
    "!!binary", "<<: *a", "010", "1:30", "0x10", "1_000", "9" * 5000, "'''", '"""', "\n",
    "=", ":", "- ", "#", "\t", "nan", "inf", ".inf", "1e308", "-1", "[" * 200, "\x1b]0;t\x07",
    "? ", "!", "%YAML 1.1\n---\n", "key = 1\nkey = 2\n", "1: 2\n", "preset = 5\n",
]  # fmt: skip


@st.composite
def mutated(draw, text: str) -> bytes:
    data = text
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        cut = draw(st.integers(0, 8))
        piece = draw(st.one_of(st.sampled_from(INSERTS), st.text(max_size=6)))
        data = data[:at] + piece + data[at + cut :]
    raw = data.encode("utf-8", errors="surrogatepass")
    if draw(st.booleans()):
        raw = draw(st.sampled_from([raw, raw.decode("utf-8", "ignore").encode("latin-1", "replace"),
                                    raw.decode("utf-8", "ignore").encode("utf-16")]))  # fmt: skip
    return raw


def _valid_scenario(scenario) -> None:
    result = scenario.result
    assert math.isfinite(result.efficiency)
    result.to_json()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile_files")


def _scenario_file(path: Path, raw: bytes) -> None:
    """``raw`` written to ``path`` loads as a valid scenario or fails with our error."""
    path.write_bytes(raw)
    ours_or_valid(f"{path.suffix[1:]} file", lambda: load_scenario(path), _valid_scenario)


@FUZZ
@given(st.one_of(mutated(TOML), st.binary(max_size=200)))
def test_toml_files(folder, raw):
    _scenario_file(folder / "s.toml", raw)


@FUZZ
@given(st.one_of(mutated(YAML), st.binary(max_size=200)))
def test_yaml_files(folder, raw):
    _scenario_file(folder / "s.yaml", raw)


LOG = (Path(__file__).parents[1] / "calibrate" / "fixtures" / "h100_8gpu_all_reduce.txt").read_text()
LOG_INSERTS = [
    "1.2.3", "-1", "nan", "inf", "1e-300", "1e308", "N/A", "0", "²", "9" * 5000, "# Avg bus bandwidth : 1.2.3\n",
    "#  Rank 99999999999999999999999999 Group 0\n", "NCCL INFO x", "\n", "   ", "```", "> ",
]  # fmt: skip


@st.composite
def mutated_log(draw) -> str:
    lines = LOG.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.integers(0, len(lines) - 1))
        words = lines[i].split(" ")
        j = draw(st.integers(0, max(0, len(words) - 1)))
        words[j] = draw(st.one_of(st.sampled_from(LOG_INSERTS), st.text(max_size=5)))
        lines[i] = " ".join(words)
        if draw(st.booleans()) and len(lines) > 2:
            del lines[draw(st.integers(0, len(lines) - 1))]
    return "".join(lines)


def _valid_fit(fit: CollectiveFit) -> None:
    link = fit.to_link()
    assert math.isfinite(link.bandwidth.magnitude) and link.bandwidth.magnitude > 0
    assert math.isfinite(link.latency.magnitude) and link.latency.magnitude >= 0
    import json

    json.dumps(fit.to_dict(), allow_nan=False)


@FUZZ
@given(mutated_log())
def test_nccl_tests_logs(folder, text):
    path = folder / "log.txt"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    ours_or_valid("nccl-tests log", lambda: from_nccl_tests(path), _valid_fit)
