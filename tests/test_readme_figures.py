"""README's figures of time and tests are the block ``benchmarks/bench_readme.py --write`` writes
(issue 40, item 10): the rows it measures, the machine they ran on, no figure typed beside them.
The figures' values are never checked here (no test depends on wall-clock time)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import bench_readme
finally:
    sys.path.pop(0)


def _block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count(bench_readme.BEGIN) == 1 and readme.count(bench_readme.END) == 1
    return readme.split(bench_readme.BEGIN, 1)[1].split(bench_readme.END, 1)[0]


def test_readme_quotes_the_generated_block_with_its_machine():
    block = _block()
    first = block.strip().splitlines()[0]
    assert first.startswith("Measured by `python benchmarks/bench_readme.py` on ")
    for part in ("logical CPUs usable of", "Python 3.", "commit "):
        assert part in first, part
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", first)  # the date
    table = [line for line in block.splitlines() if line.startswith("| ")][1:]  # under the header
    rows = [line.removeprefix("| ").rsplit(" | ", 1)[0] for line in table]
    assert tuple(rows) == bench_readme.ROWS
    assert "not measured" not in block


def test_the_block_is_what_the_script_writes(tmp_path):
    """``--write`` replaces the block between the markers, and only it."""
    found = bench_readme.Machine("CPU X", 2, 4, 8.0, 0.5, "Linux 6", "3.11.7", "2026-01-02", "abc1234")
    figures = dict.fromkeys(bench_readme.ROWS, "1.00 s")
    text = bench_readme.block(found, figures)
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{bench_readme.BEGIN}\nold\n{bench_readme.END}\nafter\n", encoding="utf-8")
    bench_readme.write(text, readme)
    assert readme.read_text(encoding="utf-8") == f"before\n{text}\nafter\n"
    assert "CPU X, 2 logical CPUs usable of 4" in text


def test_the_quick_start_paragraph_types_no_figure_of_time_or_tests():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert not re.search(r"\d[\d,.]* (passed|skipped|s\b|min\b|seconds|minutes)", quick), quick
