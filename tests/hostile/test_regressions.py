"""Each example of the reliability audit, as a regression test: one line and status 2, or a right answer."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from mlsysim import Q_, Scenarios
from mlsysim.calibrate import from_nccl_tests
from mlsysim.cli import main
from mlsysim.core.exceptions import InputError
from mlsysim.core.units import parse_quantity
from mlsysim.engine.io.files import load_scenario

FIXTURE = Path(__file__).parents[1] / "calibrate" / "fixtures" / "h100_8gpu_all_reduce.txt"
SWEEP = ["sweep", "Gpt2DataParallelOneNode", "--axis", "nodes=1..3", "--set", "inter_bandwidth=100 Gbps", "--rows", "0"]  # fmt: skip


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, *argv, match: str = "") -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith("mlsysim: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert match in err, err
    return err


# -- files destroyed ---------------------------------------------------------------------


def test_csv_onto_a_device_is_refused(capsys, tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    one_line_error(capsys, *SWEEP, "--csv", str(tmp_path / "pipe.csv"), match="not a regular file")
    one_line_error(capsys, *SWEEP, "--csv", "/dev/null", match="expected a .csv file")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_csv_through_a_symlink_keeps_the_link(capsys, tmp_path):
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old\n")
    link.symlink_to(real)
    code, _, err = run(capsys, *SWEEP, "--csv", str(link))
    assert code == 0, err
    assert link.is_symlink() and real.read_text().startswith("n_devices") is False
    assert "nodes" in real.read_text().splitlines()[0]


def test_read_only_target_needs_force(capsys, tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("keep\n")
    target.chmod(0o444)
    one_line_error(capsys, *SWEEP, "--csv", str(target), match="read-only; pass --force")
    assert target.read_text() == "keep\n"
    code, _, err = run(capsys, *SWEEP, "--csv", str(target), "--force")
    assert code == 0, err
    assert target.read_text() != "keep\n" and not target.stat().st_mode & 0o222


def test_write_scenario_suffix_must_match(capsys, tmp_path):
    log = os.path.join(os.path.dirname(__file__), "..", "calibrate", "fixtures", "h100_8gpu_all_reduce.txt")
    one_line_error(capsys, "calibrate", "nccl-tests", log, "--write-scenario", str(tmp_path / "x.json"),
                   "--link", "intra", match="expected a .toml file")  # fmt: skip
    assert not (tmp_path / "x.json").exists()


def test_csv_onto_a_folder_fails_before_the_sweep(capsys, tmp_path):
    one_line_error(capsys, *SWEEP, "--csv", str(tmp_path), match="expected a .csv file")
    (tmp_path / "d.csv").mkdir()
    one_line_error(capsys, *SWEEP, "--csv", str(tmp_path / "d.csv"), match="is a folder")


def test_home_is_expanded(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(capsys, *SWEEP, "--csv", "~/out.csv")
    assert code == 0, err
    assert (tmp_path / "out.csv").exists()


# -- tracebacks instead of one line ------------------------------------------------------

ONE_LINE = [
    ("nodes=+-5", "expected an integer"),
    ("nodes=²", "expected an integer"),
    ("nodes=" + "9" * 5000, "at most"),
    ("step_time=2**1100 s", "expressions are not evaluated"),
    ("step_time=9**9**9 s", "expressions are not evaluated"),
    ("intra_bandwidth=1e-300 B/s", "physical range"),
    ("step_time=1e308 s", "physical range"),
    ("step_time=nan s", "expected a time"),
    ("device_memory=NoSuchGPU", "device_memory"),
]


@pytest.mark.parametrize("assignment, match", ONE_LINE)
def test_set_mistakes_are_one_line(capsys, assignment, match):
    one_line_error(capsys, "run", "Gpt2DataParallelOneNode", "--json", "--set", assignment, match=match)


FILES = [
    ("latin1.toml", 'name = "été"\n'.encode("latin-1"), "not valid UTF-8"),
    ("utf16.toml", 'name = "x"\n'.encode("utf-16"), "UTF-16"),
    ("deep.toml", b"x = " + b"[" * 3000 + b"]" * 3000, "deep"),
    ("recursive.yaml", b"a: &a [*a]\n", "recursion"),
    ("key.yaml", b"base: Gpt2DataParallelOneNode\n1: 2\n", "mapping key must be a name"),
    ("tag.yaml", b"name: !!python/name:os.system\n", "not accepted"),
    ("preset.toml", b'base = "Gpt2DataParallelOneNode"\n[assumptions]\npreset = 5\n', "preset"),
    ("octal.yaml", b"base: Gpt2DataParallelOneNode\ndevices_per_node: 010\n", "YAML 1.1"),
    ("sexagesimal.yaml", b"base: Gpt2DataParallelOneNode\nnodes: 1:30\n", "YAML 1.1"),
]


@pytest.mark.parametrize("name, content, match", FILES)
def test_scenario_file_mistakes_are_one_line(capsys, tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    one_line_error(capsys, "run", "--file", str(path), match=match)


def test_malformed_average_header_names_the_line(tmp_path):
    path = tmp_path / "log.txt"
    lines = FIXTURE.read_text().splitlines()
    lines.append("# Avg bus bandwidth    : 1.2.3")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"log.txt:{len(lines)}: .*1\.2\.3"):
        from_nccl_tests(path)


# -- hangs and blowups from tiny inputs --------------------------------------------------


def test_long_line_in_a_toml_string_is_read_at_once(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('base = "Gpt2DataParallelOneNode"\ndescription = """\n' + "[ a" * 4000 + '\n"""\n')
    assert load_scenario(path).nodes == 1  # the former key-line regex backtracked for 31 s


def test_nested_yaml_aliases_are_refused_before_expansion(tmp_path):
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 10):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n"
    path = tmp_path / "laughs.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match="refusing to expand"):
        load_scenario(path)


def test_four_thousand_row_log_fits_quickly(tmp_path):
    from benchmarks.bench_nccl import make_log

    path = tmp_path / "big.txt"
    path.write_text(make_log(0.5))  # ~4,000 rows: 220 s with the former cubic fit
    fit = from_nccl_tests(path)
    assert 350 < fit.bus_bandwidth.to("GB/s").magnitude < 450


# -- silent wrong answers ----------------------------------------------------------------


def test_json_is_strict(capsys):
    code, out, _ = run(capsys, "run", "Gpt2DataParallelOneNode", "--json", "--set", "step_time=1e-6 s")
    assert code == 0
    json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def test_tiny_time_in_a_log_is_refused(tmp_path):
    text = FIXTURE.read_text().replace("    17.80    0.00", "  1e-300    0.00", 1)
    path = tmp_path / "log.txt"
    path.write_text(text)
    with pytest.raises(InputError, match="at least 0.001 us"):
        from_nccl_tests(path)


# -- what people type --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, gbps",
    [("100 Gb/s", 100), ("100 Gbps", 100), ("100 gbit/s", 100), ("100Gbit/s", 100), ("400G", 400),
     ("400 GbE", 400), ("12.5 GB/s", 100), ("1 Tb/s", 1000), ("100000 Mb/s", 100), ("1e8 Kb/s", 100)],
)  # fmt: skip
def test_network_spellings_are_bits(text, gbps):
    assert parse_quantity(text, "bandwidth").to("Gbps").magnitude == pytest.approx(gbps)


def test_gb_is_bits_in_python_too():
    assert Q_(100, "Gb/s").to("GB/s").magnitude == pytest.approx(12.5)
    assert Q_(8, "Mb").to("MB").magnitude == pytest.approx(1)


def test_ambiguous_and_unknown_units_list_the_spellings():
    with pytest.raises(InputError, match=r"ambiguous: write GB/s \(gigabyte / second\) or Gb/s"):
        parse_quantity("100 gb/s", "bandwidth")
    with pytest.raises(InputError, match="accepted spellings for a bandwidth: .*Gbps"):
        parse_quantity("100 blorps", "bandwidth")


def test_python_takes_the_same_text():
    base = Scenarios.Gpt2DataParallelOneNode
    assert base.variant(nodes=2, inter_bandwidth="100 Gb/s").inter_bandwidth == Q_(100, "Gb/s")
    assert base.variant(device_memory="H100").result.fits is True


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("mlsysim ")


def test_control_characters_are_escaped(capsys, tmp_path):
    path = tmp_path / "evil.toml"
    path.write_text('base = "Gpt2DataParallelOneNode"\nname = "x\\u001b]0;title\\u0007\\u001b[2J"\n')
    for command in ("run", "explain"):
        code, out, _ = run(capsys, command, "--file", str(path))
        assert code == 0 and "\x1b]" not in out and "\x1b[2J" not in out and "\\x1b" in out
    err = one_line_error(capsys, "run", "--file", str(path), "--set", "nodes=\x1b[2J")
    assert "\x1b" not in err


def test_nproc_one_is_refused_before_work(capsys):
    one_line_error(capsys, "calibrate", "torch", "--nproc", "1", match="at least 2 ranks")


def test_axis_with_a_huge_number_is_one_line(capsys):
    one_line_error(capsys, "sweep", "Gpt2DataParallelOneNode", "--axis", "nodes=1.." + "9" * 5000,
                   match="--axis nodes")  # fmt: skip
    one_line_error(capsys, "sweep", "Gpt2DataParallelOneNode", "--axis", "nodes=1.." + "9" * 40,
                   match="at most 18 digits")  # fmt: skip


def test_an_integer_beyond_any_float_in_a_quantity_is_refused_at_its_field():
    """Q_(10**5000, "Gbps") overflowed the conversion to a float: a bare OverflowError."""
    from mlsysim import Q_, InputError, Scenarios

    with pytest.raises(InputError, match=r"inter_bandwidth: expected a finite value, got an integer of about 5001 digits"):
        Scenarios.Gpt2DataParallelFourNodes10GbE.variant(inter_bandwidth=Q_(10**5000, "Gbps"))
