"""A trace made here by torch.profiler on the CPU (a tiny transformer's training steps): read, gzip and
all, as a CPU-only trace: no GPU kernels, said so, and its CPU operators classified."""

import os
from importlib.util import find_spec

import pytest

from mlsysim.calibrate.profile import _cpu_classes, read_traces, summarise
from mlsysim.calibrate.profile_tables import attention_shape, product_shape
from mlsysim.cli import main

if find_spec("torch") is None and os.environ.get("MLSYSIM_REQUIRE_TORCH") == "1":
    pytest.fail("torch is required here (MLSYSIM_REQUIRE_TORCH=1): pip install torch==2.13.0", pytrace=False)
torch = pytest.importorskip(
    "torch", reason="needs torch: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
)

STEPS = 3


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory):
    """Four training steps of a two-block transformer (SDPA, causal) under AdamW: one warm-up, three traced."""
    from torch import nn
    from torch.nn import functional as F  # noqa: N812
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    class Block(nn.Module):
        def __init__(self, width=64, heads=4):
            super().__init__()
            self.heads = heads
            self.norm = nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.out = nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            x = x + self.out(y)
            return x + self.mlp(x)

    folder = tmp_path_factory.mktemp("trace")
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = nn.Sequential(Block(), Block())
    optimizer = torch.optim.AdamW(model.parameters())
    x = torch.randn(2, 16, 64)
    try:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, acc_events=True,
                     schedule=schedule(wait=0, warmup=1, active=STEPS),
                     on_trace_ready=tensorboard_trace_handler(str(folder), use_gzip=True)) as prof:
            for _ in range(1 + STEPS):
                model(x).square().mean().backward()
                optimizer.step()
                optimizer.zero_grad()
                prof.step()
    finally:
        torch.set_num_threads(threads)
    (path,) = folder.glob("*.pt.trace.json.gz")
    return path


def test_a_cpu_trace_is_read_and_said_to_have_no_gpu_kernels(cpu_trace):
    (trace,) = read_traces([cpu_trace])
    summary = summarise([trace])
    assert not summary.gpu and summary.subject == "cpu operators" and summary.shapes
    assert len(summary.steps) == STEPS and list(summary.steps) == list(range(summary.steps[0], summary.steps[0] + STEPS))
    assert summary.notes[0].startswith("no GPU kernels in the trace (a CPU-only profile)")
    assert "record_shapes=True" in summary.notes[0]
    times = {k: v.time.to("s").magnitude for k, v in summary.classes.items()}
    assert {"matmul", "attention", "memory_bound", "optimizer"} <= {k for k, t in times.items() if t > 0}
    assert sum(times.values()) <= summary.step_time.to("s").magnitude
    # 8 linear layers a step: aten::linear and its aten::addmm forward, two aten::mm backward
    assert summary.classes["matmul"].count == 8 * (1 + 1 + 2)


def test_every_cpu_operator_of_a_step_is_counted_once(cpu_trace):
    (trace,) = read_traces([cpu_trace])
    for step in trace.steps:
        inside = [op for op in trace.ops if step.start <= op.start <= step.end and not op.name.startswith("ProfilerStep")]
        classes = _cpu_classes(trace, step)
        assert sum(n for _, n in classes.values()) == len(inside)
        top = [op for op in inside if trace.ops[op.parent].name.startswith("ProfilerStep")]
        assert sum(t for t, _ in classes.values()) == pytest.approx(sum(op.end - op.start for op in top), rel=1e-9)


def test_the_cpu_trace_records_the_shapes_the_tables_read(cpu_trace):
    (trace,) = read_traces([cpu_trace])
    sdpa = next(op for op in trace.ops if op.name == "aten::scaled_dot_product_attention")
    assert attention_shape(sdpa.name, sdpa.args) == (2, 4, 16, 16, 4, 16, 1, "fp32", "forward")
    backward = next(op for op in trace.ops if op.name.startswith("aten::_scaled_dot_product_flash_attention_for_cpu_b"))
    assert attention_shape(backward.name, backward.args) == (2, 4, 16, 16, 4, 16, 1, "fp32", "backward")
    shapes = {product_shape(op.name, op.args) for op in trace.ops if op.name == "aten::addmm"}
    assert (32, 192, 64, 1, "fp32") in shapes and (32, 256, 64, 1, "fp32") in shapes  # qkv and the MLP's first


def test_the_command_prints_the_cpu_summary_and_exits_2(cpu_trace, capsys):
    code = main(["calibrate", "profile", str(cpu_trace)])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("mlsysim: error: no GPU kernels in ")
    assert "(a CPU-only trace)" in err and "ProfilerActivity.CUDA" in err
    assert "(cpu operators; median over the steps" in out
    assert any(line.split()[:1] == ["optimizer"] for line in out.splitlines())

