"""``mlsysim explain ... --plot FILE``: the derivation, then the timeline of one update written where asked."""

import pytest

from tests.runner import run

pytest.importorskip("matplotlib")

LAYOUT = [
    "Gpt2DataParallelOneNode",
    "--set", "workload=Llama3_70B", "--set", "node=DGX_H100", "--set", "fabric=InfiniBand_NDR",
    "--set", "nodes=16", "--set", "mfu=0.5", "--set", "step_time=none", "--set", "training_time=none",
    "--set", "training_tokens=1e12 token", "--set", "tensor_parallel=8", "--set", "pipeline_parallel=4",
    "--set", "accumulation_steps=8",
]


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_explain_writes_the_timeline_and_says_where(capsys, tmp_path, suffix):
    target = tmp_path / f"update{suffix}"
    code, out, err = run(capsys, "explain", *LAYOUT, "--plot", str(target))
    assert code == 0, err
    assert out.rstrip().splitlines()[-1] == f"wrote {target}"
    assert "Derivation" in out and "bubble time" in out  # the derivation is printed as without --plot
    data = target.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]
    assert len(data) > 5000


def test_with_json_the_line_goes_to_stderr(capsys, tmp_path):
    import json

    target = tmp_path / "update.png"
    code, out, err = run(capsys, "explain", "Gpt2GradientAccumulationOneNode", "--json", "--plot", str(target))
    assert code == 0 and json.loads(out)["steps"]
    assert err == f"wrote {target}\n" and target.exists()


@pytest.mark.parametrize(
    ("path", "needle"),
    [("update.gif", ".png or .svg"), ("/no/such/dir/update.png", "does not exist")],
)
def test_a_bad_plot_path_is_one_line_and_status_2_before_any_work(capsys, path, needle):
    code, out, err = run(capsys, "explain", "Gpt2GradientAccumulationOneNode", "--plot", path)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mlsysim: error: --plot") and needle in err


def test_a_folder_in_place_of_the_plot_file_is_one_line_and_status_2(capsys, tmp_path):
    (tmp_path / "update.png").mkdir()
    code, out, err = run(capsys, "explain", "Gpt2GradientAccumulationOneNode", "--plot", str(tmp_path / "update.png"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "is a folder" in err


def test_a_read_only_plot_file_is_refused_and_replaced_with_force(capsys, tmp_path):
    target = tmp_path / "update.png"
    target.write_bytes(b"old")
    target.chmod(0o444)
    code, out, err = run(capsys, "explain", "Gpt2DataParallelOneNode", "--plot", str(target))
    assert code == 2 and out == "" and "pass --force" in err and err.count("\n") == 1
    code, out, err = run(capsys, "explain", "Gpt2DataParallelOneNode", "--plot", str(target), "--force")
    assert code == 0, err
    assert target.read_bytes()[:4] == b"\x89PNG"
