"""docs/parallelism.md's worked example (DeepSeek-V3 on H800 and GB200 NVL72): every figure it states, recomputed.

``FIGURES`` is the one place the figures live: each is recomputed from the scenario files
of docs/examples (or the plan over them) and must appear, as written, in the docs.
"""

from pathlib import Path

import pytest

from mlsysim import plan
from mlsysim.engine.io.files import load_scenario

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "parallelism.md"
H800 = ROOT / "docs" / "examples" / "deepseek_v3_h800.toml"
GB200 = ROOT / "docs" / "examples" / "deepseek_v3_gb200.toml"
PUBLISHED_GPU_HOURS = 2.664e6
"""DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", Table 1: pre-training, H800 GPU-hours."""

AXES = dict(expert_parallel=[8, 16, 32, 64, 128, 256], context_parallel=[1, 2], pipeline_parallel=[4, 8, 16],
            accumulation_steps=[60, 120, 240])
"""The plan's axes, as the docs' command spells them (--axis)."""

FIGURES = {
    "h800_hours": "1,369.2 h",
    "h800_gpu_hours": "2.80M GPU-hours",
    "h800_error": "+5.3%",
    "h800_all_to_all": "0.0 ms",
    "h800_update": "20.95 s",
    "gb200_hours": "482.6 h",
    "gb200_update": "7.39 s",
    "gb200_all_to_all": "0.0 ms",
    "h800_best": "expert_parallel=256, context_parallel=2, pipeline_parallel=4, accumulation_steps=60",
    "h800_best_days": "54.1 days",
    "gb200_best": "expert_parallel=256, context_parallel=2, pipeline_parallel=4, accumulation_steps=60",
    "gb200_best_days": "19.7 days",
}


def _figures() -> dict[str, str]:
    h800, gb200 = load_scenario(H800), load_scenario(GB200)
    rh, rg = h800.result, gb200.result
    hours = rh.training_time.to("hour").magnitude
    gpu_hours = hours * 2048
    out = {
        "h800_hours": f"{hours:,.1f} h",
        "h800_gpu_hours": f"{gpu_hours / 1e6:.2f}M GPU-hours",
        "h800_error": f"{gpu_hours / PUBLISHED_GPU_HOURS - 1:+.1%}",
        "h800_all_to_all": f"{float(rh.figures.layout.expert_time) * 1e3:,.1f} ms",
        "h800_update": f"{rh.update_time.to('s').magnitude:.2f} s",
        "gb200_hours": f"{rg.training_time.to('hour').magnitude:,.1f} h",
        "gb200_update": f"{rg.update_time.to('s').magnitude:.2f} s",
        "gb200_all_to_all": f"{float(rg.figures.layout.expert_time) * 1e3:,.1f} ms",
    }
    for name, scenario in (("h800", h800), ("gb200", gb200)):
        p = plan(scenario, objective="time", max_global_batch=15360, **AXES)
        best = p.best
        out[f"{name}_best"] = ", ".join(f"{k}={getattr(best, k)}" for k in AXES)
        out[f"{name}_best_days"] = f"{best.result.training_time.to('day').magnitude:.1f} days"
    return out


@pytest.fixture(scope="module")
def computed() -> dict[str, str]:
    return _figures()


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_figure_of_the_worked_example_is_recomputed_and_in_the_docs(name, computed):
    assert computed[name] == FIGURES[name]
    assert FIGURES[name] in DOC.read_text(encoding="utf-8"), f"docs/parallelism.md no longer states {FIGURES[name]}"


def test_the_prediction_is_within_ten_percent_of_the_published_gpu_hours():
    hours = load_scenario(H800).result.training_time.to("hour").magnitude * 2048
    assert hours == pytest.approx(PUBLISHED_GPU_HOURS, rel=0.10)


def test_the_cli_plans_over_expert_and_context_parallelism(capsys):
    """The docs' command: --axis expert_parallel and context_parallel read as the fields' integers."""
    from mlsysim.cli import main

    code = main(["plan", "-f", str(H800), "--objective", "time", "--axis", "expert_parallel=8,16,32,64",
                 "--axis", "context_parallel=1,2"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "the fastest of 8 layouts (expert_parallel 8/16/32/64 x context_parallel 1/2)" in out
    best = plan(load_scenario(H800), objective="time", expert_parallel=[8, 16, 32, 64],
                context_parallel=[1, 2]).best  # the API's plan: the command's must be the same
    ep, cp = best.expert_parallel, best.context_parallel
    assert out.startswith(f"Best: expert_parallel={ep}, context_parallel={cp} -> 2048 devices")
    layout = f"t=1{f' cp={cp}' if cp > 1 else ''} p=16 d={2048 // (16 * cp)} ep={ep} ZeRO-1"
    assert layout in out
