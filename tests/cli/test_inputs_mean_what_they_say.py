"""Issue 40, "Every input means what it says", typed on the command line as a user types it."""

import json

import pytest

from tests.runner import run

LLAMA_ON_ONE_H100 = [
    "--set", "workload=Llama3_8B",
    "--set", "node=DGX_H100",
    "--set", "devices_per_node=1",
    "--set", "per_device_batch=1",
    "--set", "training_tokens=1e9 token",
]  # fmt: skip


def run_json(capsys, *argv):
    code, out, err = run(capsys, "run", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("layout", [[], ["--set", "tensor_parallel=1"]], ids=["data-parallel", "layout"])
def test_a_published_mfu_comes_back_out_of_one_device(capsys, recompute, layout):
    """A published MFU typed as mfu: one device achieves it, whatever the recompute mode (it is inside
    a measured MFU), in the data-parallel model and in a layout alike."""
    doc = run_json(capsys, *LLAMA_ON_ONE_H100, "--set", "mfu=0.4", "--set", f"recompute={recompute}", *layout)
    assert doc["result"]["achieved_mfu"] == pytest.approx(0.4, rel=1e-12)
    # T1 = b F / (P u) = 5.0024e14 / (989.4e12 x 0.4) = 1.264 s: nothing added to the model FLOPs
    assert doc["result"]["compute_time"]["value"] == pytest.approx(1264.007671989327, rel=1e-12)


def test_explain_says_what_mfu_is(capsys):
    code, out, err = run(capsys, "explain", *LLAMA_ON_ONE_H100, "--set", "mfu=0.4")
    assert code == 0, err
    assert "T1 = b F / (P u)" in out
    assert "model FLOPs utilisation" in out and "matmul_ceiling" in out


def test_a_transformer_runs_fused_attention_by_default_and_explain_says_so(capsys):
    """Item 5: fused attention kernels unless flash_attention=0; explain prints the defaults in effect with
    their sources."""
    base = [*LLAMA_ON_ONE_H100, "--set", "recompute=none"]
    default = run_json(capsys, *base)
    unfused = run_json(capsys, *base, "--set", "flash_attention=0")
    fused = run_json(capsys, *base, "--set", "flash_attention=1")
    assert default["result"] == fused["result"]
    # 32 layers x 8192 tokens x 4096 = 2^30 bytes per unit: 34 units fused, 354 with the s x s matrices stored
    assert default["inputs"]["activation_memory"]["value"] == 34 * 2**30
    assert unfused["inputs"]["activation_memory"]["value"] == 354 * 2**30
    # a step from the operators: the unfused attention core is slower
    assert unfused["result"]["compute_time"]["value"] > 1.2 * default["result"]["compute_time"]["value"]
    code, out, err = run(capsys, "explain", *base)
    assert code == 0, err
    assert "Defaults in effect" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("flash_attention = 1"))
    assert "Dao et al. 2022" in line and "PyTorch 2.0" in line
    code, out, err = run(capsys, "explain", *base, "--set", "flash_attention=0")
    assert not any(x.strip().startswith("flash_attention = 1") for x in out.splitlines())


def test_the_seed_scenarios_keep_their_figures_under_the_new_defaults(capsys):
    """The three GPT-2 scenarios give a measured step and recompute selective: fused attention changes
    nothing of theirs (SPEC's figures, and the activations 34 L s b h)."""
    doc = run_json(capsys, "Gpt2DataParallelFourNodes10GbE")
    assert doc["result"]["update_time"]["value"] == pytest.approx(6461.66666666, rel=1e-9)
    assert doc["inputs"]["activation_memory"]["value"] == 34 * 48 * 1024 * 16 * 1600  # 34 L s b h


def refused(capsys, *argv):
    """The one line a refused command prints (exit 2, nothing on stdout)."""
    code, out, err = run(capsys, "run", *argv)
    assert (code, out, err.count("\n")) == (2, "", 1), err
    return err


@pytest.mark.parametrize("node, fmt", [("DGX_A100", "fp8"), ("DGX_B200", "bf16"), ("DGX_B200", "fp8"),
                                       ("DGX_B200", "nvfp4")])
def test_matmul_format_beside_mfu_is_refused_with_the_reason(capsys, node, fmt):
    """Item 3: a step from mfu is the model FLOPs at the precision's peak x mfu; the products' format was
    dropped (A100 + fp8 accepted, B200 bf16 / fp8 / nvfp4 identical)."""
    err = refused(capsys, *LLAMA_ON_ONE_H100, "--set", f"node={node}", "--set", "mfu=0.4",
                  "--set", f"matmul_format={fmt}")
    assert f"matmul_format: matmul_format={fmt} prices the linear layers' products" in err
    assert "comes from mfu" in err and "--set mfu=none" in err


def test_an_operator_input_beside_a_measured_step_is_refused(capsys):
    err = refused(capsys, *LLAMA_ON_ONE_H100, "--set", "step_time=3 s", "--set", "fused_elementwise=1")
    assert "fused_elementwise: fused_elementwise=1" in err and "comes from step_time (the step is measured)" in err


@pytest.mark.parametrize("switch, size", [
    ("sequence_parallel", "tensor_parallel"), ("tensor_overlap", "tensor_parallel"),
    ("context_all_gather", "context_parallel"), ("expert_overlap", "expert_parallel"),
    ("hierarchical_dispatch", "expert_parallel"),
])
def test_a_switch_without_the_layout_it_acts_on_is_refused(capsys, switch, size):
    """Item 3: hierarchical_dispatch or expert_overlap at ep 1, context_all_gather without cp, tensor_overlap
    and sequence_parallel at t 1 did nothing and were accepted."""
    err = refused(capsys, *LLAMA_ON_ONE_H100, "--set", "mfu=0.4", "--set", f"{switch}=1")
    assert f"{switch}: {switch}=1" in err and f"but {size} is 1: it does nothing here" in err
    assert f"give {size} > 1" in err
    # off, or with the layout it acts on, it is accepted
    assert run(capsys, "run", *LLAMA_ON_ONE_H100, "--set", "mfu=0.4", "--set", f"{switch}=0")[0] == 0


def test_sequence_parallel_with_tensor_parallel_is_priced(capsys):
    base = [*LLAMA_ON_ONE_H100[:4], "--set", "devices_per_node=2", *LLAMA_ON_ONE_H100[6:], "--set", "mfu=0.4",
            "--set", "tensor_parallel=2", "--set", "recompute=none"]
    plain = run_json(capsys, *base)
    split = run_json(capsys, *base, "--set", "sequence_parallel=1")
    assert split["result"]["memory_per_device"]["value"] < plain["result"]["memory_per_device"]["value"]


def test_a_format_without_measured_kernels_is_named_with_what_is_missing(capsys):
    """Item 6: the error named step_time and suggested an input the command line refused. A format the GPU's
    kernel tables do not measure (MXFP8 on a GB300) is refused at matmul_format, naming what the tables measure;
    NVFP4 on a B200 is priced by its measured NVFP4 kernels."""
    job = [*LLAMA_ON_ONE_H100, "--set", "node=GB300_NVL72", "--set", "matmul_format=mxfp8"]
    err = refused(capsys, *job)
    assert "matmul_format: no matmul table measures mxfp8 on Blackwell Ultra" in err
    assert "step_time:" not in err and "measure bf16" in err and "mlsysim calibrate kernels FILE" in err
    doc = run_json(capsys, *LLAMA_ON_ONE_H100, "--set", "node=DGX_B200", "--set", "matmul_format=nvfp4")
    sixteen = run_json(capsys, *LLAMA_ON_ONE_H100, "--set", "node=DGX_B200")
    assert doc["result"]["update_time"]["value"] < sixteen["result"]["update_time"]["value"]


def test_a_format_the_accelerator_does_not_run_is_refused(capsys):
    err = refused(capsys, *LLAMA_ON_ONE_H100, "--set", "node=DGX_A100", "--set", "matmul_format=fp8")
    assert "matmul_format: the NVIDIA A100 SXM4 80GB (Ampere) has no fp8 peak in the registry" in err


def test_a_step_faster_than_the_peak_allows_is_refused(capsys):
    """Item 4: never a utilisation above 100%: a measured step shorter than the model FLOPs at the peak."""
    err = refused(capsys, *LLAMA_ON_ONE_H100, "--set", "step_time=100 ms")
    assert "step_time: step_time (100 ms) is shorter than one step's model FLOPs" in err
    assert "model FLOPs utilisation of 5.056, above 1" in err


def test_mixtral_8x22b_trains_at_the_length_a_job_gives_not_its_context_window(capsys, tmp_path):
    """Item 6: the registry's Mixtral 8x22B carried its 64K context window as the training sequence; its
    training length is not published, so a job gives its own: on the command line, in a file, on an axis."""
    job = ["--set", "workload=Mixtral_8x22B", "--set", "node=DGX_H100", "--set", "nodes=4", "--set",
           "fabric=InfiniBand_NDR", "--set", "zero_stage=3", "--set", "mfu=0.4", "--set", "per_device_batch=1",
           "--set", "training_tokens=1e9 token"]
    err = refused(capsys, *job)
    assert "Mixtral 8x22B has no seq_len" in err and "65,536 tokens is its context window" in err
    assert "--set workload.seq_len=4096" in err
    doc = run_json(capsys, *job, "--set", "workload.seq_len=4096")
    assert doc["inputs"]["workload"] == "Mixtral 8x22B [seq_len=4096]"
    # 1e9 tokens / 4096 = 244,140.625 sequences
    assert doc["derived"]["training_time"] == "training_tokens"
    path = tmp_path / "job.toml"
    path.write_text("\n".join(f"{k} = {v}" for k, v in (
        ("node", '"DGX_H100"'), ("nodes", 4), ("fabric", '"InfiniBand_NDR"'), ("zero_stage", 3), ("mfu", 0.4),
        ("per_device_batch", 1), ("training_tokens", '"1e9 token"'))) + '\n[workload]\nbase = "Mixtral_8x22B"\nseq_len = 4096\n')
    from_file = run_json(capsys, "--file", path)
    assert from_file["result"] == doc["result"]
    code, out, err = run(capsys, "sweep", *job, "--axis", "workload.seq_len=2048,4096", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [row["workload"] for row in rows] == ["Mixtral 8x22B [seq_len=2048]", "Mixtral 8x22B [seq_len=4096]"]
    assert rows[1]["update_time"]["value"] == pytest.approx(doc["result"]["update_time"]["value"], rel=1e-12)


def test_a_workload_figure_is_checked_as_the_workload_checks_it(capsys):
    err = refused(capsys, "Gpt2DataParallelOneNode", "--set", "workload.seq_len=0")
    assert "workload.seq_len" in err
    err = refused(capsys, "Gpt2DataParallelOneNode", "--set", "workload.seqlen=1024")
    assert "did you mean 'seq_len'" in err
    # DeepSeek-V3 with 300B active parameters (item 4), typed on the command line
    err = refused(capsys, "--set", "workload=DeepSeek_V3", "--set", "workload.active_parameters=300e9 param",
                  "--set", "node=HGX_H800", "--set", "per_device_batch=1", "--set", "mfu=0.4",
                  "--set", "training_tokens=1e9 token")
    assert "workload.active_parameters: active_parameters (3e+11) disagrees with the shape" in err


def test_a_sweep_whose_axes_complete_its_base_runs(capsys):
    """Item 7: a one-node scenario with --set nodes=4 and the inter-node link on an axis was refused
    although every combination is complete."""
    code, out, err = run(capsys, "sweep", "Gpt2DataParallelOneNode", "--set", "nodes=4",
                         "--axis", "inter_bandwidth=10 Gbps,100 Gbps", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["scenario"] == "Gpt2DataParallelOneNode [nodes=4]"
    # the 10 Gb row is SPEC's Gpt2DataParallelFourNodes10GbE
    assert doc["rows"][0]["update_time"]["value"] == pytest.approx(6461.666666666667, rel=1e-12)
    # an axis that completes nothing leaves the base's own error
    code, out, err = run(capsys, "sweep", "Gpt2DataParallelOneNode", "--set", "nodes=4",
                         "--axis", "accumulation_steps=1,2")
    assert code == 2 and "inter_bandwidth: required when nodes > 1" in err


def test_a_token_count_without_a_unit_counts_tokens(capsys):
    """Item 7: training_tokens=1e12 was refused for its missing unit; a count has one unit."""
    base = [*LLAMA_ON_ONE_H100[:8], "--set", "mfu=0.4"]
    bare = run_json(capsys, *base, "--set", "training_tokens=1e12")
    spelled = run_json(capsys, *base, "--set", "training_tokens=1e12 token")
    assert bare["result"] == spelled["result"]
    assert bare["inputs"]["training_tokens"] == {"value": 1e12, "unit": "token"}
    assert run_json(capsys, *base, "--set", "training_samples=1e8")["inputs"]["training_samples"]["unit"] == "sample"
    err = refused(capsys, *base, "--set", "training_tokens=1e12 s")
    assert "training_tokens: expected a number of tokens" in err


def test_a_node_name_with_a_dot_is_quoted_whole(capsys):
    """Item 7: --set node=p5.48xlarge said '48xlarge'."""
    err = refused(capsys, "Gpt2DataParallelOneNode", "--set", "node=p5.48xlarge")
    assert "unknown Nodes entry 'p5.48xlarge'; did you mean 'AWS_p5_48xlarge'?" in err
    assert run(capsys, "run", "Gpt2DataParallelOneNode", "--set", "node=Systems.Nodes.DGX_H100")[0] == 0


def test_a_run_shorter_than_one_update_says_so(capsys):
    """Item 7: 100,000 nodes gave a training time shorter than one update, unsaid."""
    code, out, err = run(capsys, "run", "Gpt2DataParallelFourNodes10GbE", "--set", "nodes=100000")
    assert code == 0, err
    assert "training time on 800000 devices 0.4 s (less than one update: see the notes)" in out
    assert "the whole run, 800,000 samples, is less than one update's global batch of 12,800,000" in out
    assert "at most 6,250 nodes fill one update" in out
    code, out, err = run(capsys, "run", "Gpt2DataParallelFourNodes10GbE", "--set", "nodes=6250")
    assert "less than one update" not in out


def test_the_bubble_is_shown_as_a_share_of_the_update(capsys):
    """Item 7: 'bubble fraction' printed 300% (its ratio (p-1)/(v m) to the compute)."""
    job = ["--set", "workload=Llama3_8B", "--set", "node=DGX_H100", "--set", "per_device_batch=1",
           "--set", "training_tokens=1e9", "--set", "mfu=0.4", "--set", "pipeline_parallel=4",
           "--set", "accumulation_steps=1"]
    doc = run_json(capsys, *job)
    share = doc["result"]["bubble_fraction"]
    assert share == pytest.approx(doc["result"]["bubble_time"]["value"] / doc["result"]["update_time"]["value"])
    assert 0.5 < share < 0.75  # 3 of 4 slots idle, less the stage transfers
    code, out, err = run(capsys, "run", *job)
    line = next(x for x in out.splitlines() if x.startswith("bubble, share of the update"))
    assert f"({share:.1%})" in line
    code, out, err = run(capsys, "explain", *job)
    assert "(4 - 1) / (1 x 1)" in out  # explain keeps the schedule's ratio to the compute
