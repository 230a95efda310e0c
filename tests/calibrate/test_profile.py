"""Reading PyTorch profiler traces: real multi-GPU training traces (HTA's test data, trimmed), the rules
that put each kernel in a class, the measured tables, and what a bad trace is told."""

import copy
import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlsysim.calibrate.profile import (
    CLASSES,
    _union,
    classify,
    collective_of,
    load_trace,
    read_trace,
    read_traces,
    summarise,
)
from mlsysim.calibrate.profile_tables import (
    attention_shape,
    match_accelerator,
    measured_tables,
    product_shape,
)
from mlsysim.core.exceptions import InputError
from mlsysim.kernels.tables import KernelTable

TRACES = Path(__file__).parents[1] / "data" / "traces"
CONTROL = TRACES / "hta_trace_diff_control_rank3.json.gz"  # rank 3 of 8, A100 40 GB, shapes, no comm sizes
NCCL = TRACES / "hta_nccl_data_rank0.json.gz"  # rank 0 of 2, A100 40 GB, comm sizes, no shapes


def ms(quantity):
    return quantity.to("ms").magnitude


@pytest.fixture(scope="module")
def control():
    return read_traces([CONTROL])


@pytest.fixture(scope="module")
def nccl():
    return read_traces([NCCL])


def write_trace(path, document):
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    return path


# -- the real traces ---------------------------------------------------------------------------


def test_a_real_eight_gpu_trace_is_summarised_by_class(control):
    summary = summarise(control)
    assert summary.gpu and summary.shapes and summary.subject == "gpu kernels"
    assert summary.steps == (1010, 1011) and summary.world_size == 8 and control[0].rank == 3
    assert summary.device == "NVIDIA A100-PG509-200"
    assert ms(summary.step_time) == pytest.approx((76.940 + 76.212) / 2)  # the two ProfilerStep spans
    figures = {k: round(ms(v.time), 2) for k, v in summary.classes.items()}
    assert figures == {"matmul": 14.01, "memory_bound": 25.3, "optimizer": 8.54, "communication": 26.3, "other": 10.07}
    assert {k: round(ms(v.time), 2) for k, v in summary.collectives.items()} == {"all_reduce": 5.57, "all_to_all": 20.74}
    assert summary.collectives["all_to_all"].count == 7  # nccl:all_to_all around SendRecv kernels
    assert ms(summary.busy) + ms(summary.idle) == pytest.approx(ms(summary.step_time), rel=1e-9)
    assert round(ms(summary.busy), 2) == 63.97 and round(ms(summary.overlap), 2) == 13.21
    assert summary.seconds("matmul") == pytest.approx(0.014010, abs=5e-6)
    assert summary.seconds("attention") == 0.0


def test_every_kernel_of_a_step_is_counted_once_in_one_class(nccl):
    """The trimmed file holds the kernels, copies and sets of one step: the classes add up to all of them."""
    document = json.loads(gzip.decompress(NCCL.read_bytes()))
    gpu = [e for e in document["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    summary = summarise(nccl)
    assert sum(c.count for c in summary.classes.values()) == len(gpu) == 1258
    total = sum(ms(c.time) for c in summary.classes.values())
    assert total == pytest.approx(sum(e["dur"] for e in gpu) / 1e3, rel=1e-12)
    comm = summary.classes["communication"]
    assert sum(ms(c.time) for c in summary.collectives.values()) == pytest.approx(ms(comm.time))
    assert ms(summary.overlap) + ms(summary.exposed_communication) <= ms(comm.time) + 1e-9


def test_collective_rows_come_from_the_recorded_sizes_groups_and_types(nccl):
    tables, notes = measured_tables(nccl, accelerator="A100_40GB", link="intra")
    assert [m.table.kind for m in tables] == ["collective"]
    assert notes == ("matmul: 3 matrix-product call(s) without readable shapes are left out",)
    table = tables[0].table
    rows = list(zip(table.columns["op"], table.columns["bytes"], table.columns["group"], table.columns["format"],
                    strict=True))
    # In msg nelems x 4 bytes (Float): DDP's gradient buckets, and the two broadcasts of the initial state
    assert rows == [
        ("all_reduce", 8196000.0, 2.0, "fp32"), ("all_reduce", 9724160.0, 2.0, "fp32"),
        ("all_reduce", 26255360.0, 2.0, "fp32"), ("all_reduce", 26550272.0, 2.0, "fp32"),
        ("all_reduce", 31502336.0, 2.0, "fp32"), ("broadcast", 424.0, 2.0, "int64"),
        ("broadcast", 212480.0, 2.0, "fp32"),
    ]
    assert set(table.columns["link"]) == {"intra"}
    assert table.time[0] == pytest.approx(2520.607e-6, rel=1e-9)  # 8.2 MB all-reduce in 2.52 ms (RING_LL)
    assert list(table.columns["calls"]) == [1.0] * 7  # one step of one rank
    assert "ranks 0 of 2" in table.source.hardware and "NCCL 2.17.1" in table.source.software


def test_matmul_rows_give_each_product_shape_its_kernel_time(control):
    tables, notes = measured_tables(control, accelerator="A100_40GB")
    assert notes == ("collective: 20 collective kernel(s) without recorded sizes are left out "
                     "(PyTorch 2.1 and later record them)",)
    (matmul,) = tables
    table = matmul.table
    assert isinstance(table, KernelTable) and table.kind == "matmul" and table.accelerator == "A100_40GB"
    assert len(table) == 133 and matmul.file_name == "matmul_A100_40GB_profile.json"
    assert set(table.columns["format"]) == {"fp32", "tf32"}  # fp32 products on TF32 tensor-core kernels: tf32
    keys = list(zip(*(table.columns[c] for c in ("m", "n", "k", "batch", "format")), strict=True))
    assert len(set(keys)) == len(keys)
    row = keys.index((1024.0, 1440.0, 256.0, 1.0, "tf32"))  # [1024, 256] x [256, 1440], 5 calls a step
    assert table.time[row] == pytest.approx(17.0e-6) and table.columns["calls"][row] == 10
    assert table.columns["kernel"][row] == "cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4"
    assert set(table.columns["calls"]) >= {2.0, 4.0}  # most shapes run once or twice a step
    assert "steps #1010-#1011" in table.source.notes and "ranks 3 of 8" in table.source.hardware


def test_two_ranks_of_one_run_give_the_median_of_their_figures(tmp_path):
    document = json.loads(gzip.decompress(CONTROL.read_bytes()))
    slower = copy.deepcopy(document)
    slower["distributedInfo"]["rank"] = 4
    for event in slower["traceEvents"]:
        if event.get("cat") == "kernel":
            event["dur"] *= 1.5
    traces = read_traces([CONTROL, write_trace(tmp_path / "rank4.json.gz", slower)])
    one = summarise(traces[:1])
    both = summarise(traces)
    assert [r.rank for r in both.ranks] == [3, 4]
    matmul = ms(one.classes["matmul"].time)
    assert ms(both.classes["matmul"].time) == pytest.approx(matmul * 1.25)  # the median of x and 1.5 x
    assert ms(both.step_time) == pytest.approx(ms(one.step_time))


def test_ranks_that_disagree_in_steps_are_refused(tmp_path):
    document = json.loads(gzip.decompress(CONTROL.read_bytes()))
    document["distributedInfo"]["rank"] = 4
    for event in document["traceEvents"]:
        if str(event.get("name", "")).startswith("ProfilerStep#"):
            event["name"] = f"ProfilerStep#{int(event['name'].split('#')[1]) + 1}"
    other = write_trace(tmp_path / "rank4.json.gz", document)
    with pytest.raises(InputError, match=r"the ranks disagree in steps \(rank 3 .* has steps #1010-#1011; "
                                         r"rank 4 .* has steps #1011-#1012\)"):
        read_traces([CONTROL, other])


def test_one_rank_given_twice_is_refused():
    with pytest.raises(InputError, match="rank 3 is given twice"):
        read_traces([CONTROL, CONTROL])


def test_a_trace_without_shapes_says_what_to_record(nccl):
    summary = summarise(nccl)
    assert not summary.shapes
    assert any("record_shapes=True" in note for note in summary.notes)


# -- classes -------------------------------------------------------------------------------------

ELEMENTWISE_LAMBDA = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
                      "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
                      "at::native::AUnaryFunctor<float, float, float, {lambda(float, float)#1}>)")


@pytest.mark.parametrize(("name", "ops", "kind", "expected"), [
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", [], "kernel",
     "communication"),
    ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)", [], "kernel",
     "communication"),
    ("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4> >(Flash_fwd_params)",
     [], "kernel", "attention"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)",
     ["aten::_softmax", "aten::softmax", "aten::_scaled_dot_product_attention_math",
      "aten::scaled_dot_product_attention"], "kernel", "attention"),  # the math fallback's softmax
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel",
     ["aten::mm", "aten::matmul"], "kernel", "matmul"),
    ("void splitKreduce_kernel<float, float, float, float, true, false>(cublasSplitKParams<float>)", ["aten::mm"],
     "kernel", "matmul"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", ["aten::cudnn_convolution"], "kernel",
     "matmul"),
    ("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>(cudnn::ops::nchw2nhwc_params_t<float>)",
     ["aten::cudnn_convolution"], "kernel", "memory_bound"),  # a layout change inside a convolution
    ("void fbgemm_gpu::permute_indices_weights_kernel<false, int, decltype(nullptr)>(int, int)",
     ["fbgemm::permute_sparse_features"], "kernel", "memory_bound"),  # fbgemm is no GEMM
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>(int, TensorListMetadata<4>)",
     ["aten::_fused_adamw_"], "kernel", "optimizer"),
    (ELEMENTWISE_LAMBDA, ["aten::mul_", "aten::_foreach_mul_", "Optimizer.step#AdamW.step"], "kernel", "optimizer"),
    (ELEMENTWISE_LAMBDA, ["aten::mul"], "kernel", "memory_bound"),  # a lambda is no LAMB optimizer
    ("void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*)",
     ["_C::static_scaled_fp8_quant"], "kernel", "cast"),
    ("triton_poi_fused_add_mul_0", ["## Call CompiledFxGraph ##"], "kernel", "memory_bound"),
    ("Memcpy HtoD (Pinned -> Device)", [], "memcpy", "other"),
    ("Memcpy DtoD (Device -> Device)", [], "memcpy", "memory_bound"),
    ("Memset (Device)", [], "memset", "memory_bound"),
    ("void bounds_check_indices_kernel<long>(at::GenericPackedTensorAccessor<long, 1ul>)", [], "kernel", "other"),
    ("aten::addmm", ["aten::linear"], "cpu", "matmul"),
    ("aten::add_", ["Optimizer.step#SGD.step"], "cpu", "optimizer"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", ["aten::scaled_dot_product_attention"], "cpu", "attention"),
    ("aten::gelu", ["aten::gelu"], "cpu", "memory_bound"),
    ("record_param_comms", ["c10d::allreduce_"], "cpu", "communication"),
    ("autograd::engine::evaluate_function: AddmmBackward0", [], "cpu", "other"),
])
def test_each_kernel_goes_to_the_class_its_name_and_operators_say(name, ops, kind, expected):
    assert classify(name, ops, kind) == expected
    assert expected in CLASSES


def test_the_collective_is_named_by_its_arguments_then_its_annotation_then_its_kernel():
    send_recv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"
    assert collective_of(send_recv, None) == "send_recv"
    assert collective_of(send_recv, None, ["nccl:all_to_all", "record_param_comms"]) == "all_to_all"
    assert collective_of(send_recv, {"Collective name": "_reduce_scatter_base"}, ["nccl:all_to_all"]) == (
        "reduce_scatter"
    )
    assert collective_of("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                         {"Collective name": "_allgather_base"}) == "all_gather"
    assert collective_of("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)", None) == "broadcast"
    assert collective_of("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", None) == "unknown"


# -- shapes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "dims", "types", "expected"), [
    ("aten::mm", [[512, 1024], [1024, 64]], ["float", "float"], (512, 64, 1024, 1, "fp32")),
    ("aten::addmm", [[96], [1024, 512], [512, 96], [], []], ["float", "float", "float", "Scalar", "Scalar"],
     (1024, 96, 512, 1, "fp32")),
    ("aten::bmm", [[8, 128, 64], [8, 64, 256]], ["c10::BFloat16", "c10::BFloat16"], (128, 256, 64, 8, "bf16")),
    ("aten::baddbmm", [[8, 128, 256], [8, 128, 64], [8, 64, 256]], ["c10::Half"] * 3, (128, 256, 64, 8, "fp16")),
    ("aten::linear", [[4, 2048, 4096], [11008, 4096], []], ["c10::BFloat16"] * 2, (8192, 11008, 4096, 1, "bf16")),
    ("aten::matmul", [[4, 16, 64], [64, 32]], ["float", "float"], (64, 32, 64, 1, "fp32")),
    ("aten::_scaled_mm", [[8192, 4096], [4096, 1024], [8192, 1], [1, 1024]],
     ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float"], (8192, 1024, 4096, 1, "fp8_rowwise")),
    ("aten::_scaled_mm", [[8192, 4096], [4096, 1024], [], []],
     ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float"], (8192, 1024, 4096, 1, "fp8")),
    ("aten::mm", [[512, 1024], [512, 64]], ["float", "float"], None),  # inner dimensions disagree
    ("aten::mm", [[], []], ["float", "float"], None),  # not recorded
    ("aten::add", [[4, 4], [4, 4]], ["float", "float"], None),
])
def test_product_shapes_are_read_from_the_recorded_inputs(name, dims, types, expected):
    assert product_shape(name, {"Input Dims": dims, "Input type": types}) == expected


def test_attention_shapes_need_the_recorded_is_causal():
    args = {"Input Dims": [[2, 32, 2048, 128], [2, 8, 2048, 128], [2, 8, 2048, 128], [], [], [], []],
            "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 4,
            "Concrete Inputs": ["", "", "", "0.", "True", "False", ""]}
    assert attention_shape("aten::_scaled_dot_product_flash_attention", args) == (
        2, 32, 2048, 128, 8, 2048, 1, "bf16", "forward"
    )
    assert attention_shape("aten::_scaled_dot_product_flash_attention", {**args, "Concrete Inputs": None}) is None
    backward = {"Input Dims": [[2, 32, 2048, 128]] * 5, "Input type": ["c10::BFloat16"] * 5,
                "Concrete Inputs": [""] * 11 + ["False"]}
    assert attention_shape("aten::_scaled_dot_product_efficient_attention_backward", backward)[6:] == (
        0, "bf16", "backward"
    )


@pytest.mark.parametrize(("device", "memory", "expected"), [
    ("NVIDIA A100-PG509-200", 42505273344, "A100_40GB"),  # the vendored traces' GPU (40 GB)
    ("NVIDIA A100-SXM4-80GB", 85e9, "A100"),
    ("NVIDIA H100 80GB HBM3", 85e9, "H100"),
    ("NVIDIA B200", 191503138816, "B200"),
    ("NVIDIA H100 PCIe", 85e9, None),  # the registry's H100 is the SXM part
    ("AMD Radeon Graphics", 68e9, None),
    (None, None, None),
])
def test_a_traced_device_is_matched_to_the_registry_only_when_sure(device, memory, expected):
    assert match_accelerator(device, memory) == expected


# -- bad files -----------------------------------------------------------------------------------


def test_gzip_and_plain_json_and_a_bare_event_list_read_alike(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 5, "pid": 1, "tid": 1}]
    (tmp_path / "a.json").write_text(json.dumps({"traceEvents": events}))
    write_trace(tmp_path / "b.json.gz", {"traceEvents": events})
    (tmp_path / "c.json").write_text(json.dumps(events))
    read = [read_trace(tmp_path / n) for n in ("a.json", "b.json.gz", "c.json")]
    assert {(len(t.ops), t.ops[0].name, round(t.ops[0].end - t.ops[0].start, 12)) for t in read} == {
        (1, "aten::mm", 5e-6)
    }


@pytest.mark.parametrize(("content", "message"), [
    (b"rank,step\n0,1\n", r"x: is not JSON \(starts with b'rank,step\\n0,'\); expected a PyTorch profiler Chrome trace"),
    (b"", r"is not JSON \(empty\)"),
    (b'{"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1', r"the JSON ends mid-way .* the file is truncated"),
    (b'{"traceEvents": [{"ph": "X", "name": "aten::m', r"the JSON ends mid-way"),
    (b'{"traceEvents": [}', r"is not valid JSON \(Expecting value at line 1\)"),
    (b'{"schema": "1.0.1", "nodes": []}', r"no traceEvents list \(found nodes, schema\) \(an execution trace"),
    (gzip.compress(b'{"traceEvents": []}' * 200)[:60], r"the gzip stream ends mid-way: the file is truncated"),
    (b"\x1f\x8bnot gzip at all", r"is not a readable gzip file"),
    (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]}',
     r"event 0 \('k'\): ts is not a number, got 'soon'"),
])
def test_a_file_that_is_no_trace_is_refused_with_what_it_is(tmp_path, content, message):
    path = tmp_path / "x"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        load_trace(path) if b"soon" not in content else read_trace(path)


# -- the union of intervals ------------------------------------------------------------------------

spans = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)).map(lambda p: (p[0], p[0] + p[1])), max_size=12)


@given(spans)
def test_the_union_of_spans_is_the_time_covered(intervals):
    covered = sum(1 for t in range(100) if any(a <= t < b for a, b in intervals))
    assert _union(intervals) == covered
    assert _union(intervals) <= sum(b - a for a, b in intervals)
    assert math.isclose(_union(intervals * 2), _union(intervals))


# -- a trace in the newest format, made here: attention both ways, links by External id, sizes on the kernel --


def modern_trace():
    """One step: flash attention forward (main thread) and backward (autograd thread, two kernels), a product
    linked by External id alone, and an all-reduce whose sizes sit on its kernel (PyTorch 2.2 and later)."""
    bf16, sdpa_dims = "c10::BFloat16", [[2, 8, 1024, 64]] * 3

    def op(name, ts, dur, ext, tid=10, **args):
        return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 10, "tid": tid,
                "args": {"External id": ext, **args}}

    def launch(ts, corr, ext, tid=10):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 3, "pid": 10,
                "tid": tid, "args": {"correlation": corr, "External id": ext}}

    def kernel(name, ts, dur, corr, ext, stream=7, **args):
        return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": stream,
                "args": {"correlation": corr, "External id": ext, "stream": stream, "device": 0, **args}}

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 10, "tid": 10},
        op("aten::scaled_dot_product_attention", 100, 50, 5, **{
            "Input Dims": [*sdpa_dims, [], [], [], [], []], "Input type": [bf16] * 3 + ["", "Scalar", "Scalar"],
            "Concrete Inputs": ["", "", "", "", "0.", "True", "", "False"]}),
        op("aten::_scaled_dot_product_flash_attention", 105, 40, 6, **{
            "Input Dims": [*sdpa_dims, [], [], [], []], "Input type": [bf16] * 3,
            "Concrete Inputs": ["", "", "", "0.", "True", "False", ""]}),
        op("aten::_flash_attention_forward", 110, 30, 7),
        launch(120, 100, 7),
        kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4> >(Flash_fwd_params)", 200, 80, 100, 7),
        op("aten::mm", 300, 20, 9, **{"Input Dims": [[2048, 512], [512, 512]], "Input type": [bf16, bf16]}),
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 320, 30, 103, 9),  # no runtime call
        op("aten::_scaled_dot_product_flash_attention_backward", 400, 60, 12, tid=11, **{
            "Input Dims": [[2, 8, 1024, 64]] * 5 + [[2, 8, 1024]] + [[]] * 9, "Input type": [bf16] * 5,
            "Concrete Inputs": [""] * 10 + ["0.", "True", "", "", ""]}),
        launch(410, 101, 12, tid=11),
        launch(415, 102, 12, tid=11),
        kernel("void flash_bwd_dot_do_o_kernel<true>(Flash_bwd_params)", 480, 10, 102, 12),
        kernel("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>(Flash_bwd_params)",
               600, 150, 101, 12),
        op("record_param_comms", 600, 10, 11),
        launch(605, 104, 11),
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 700, 100, 104, 11,
               stream=20, **{"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
                             "Group size": 8, "dtype": "BFloat16", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}),
    ]
    return {"schemaVersion": 1, "record_shapes": 1, "distributedInfo": {"rank": 0, "world_size": 8},
            "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_000_000_000}],
            "traceEvents": events}


def test_a_trace_in_the_newest_format_gives_every_class_and_table(tmp_path):
    traces = read_traces([write_trace(tmp_path / "rank0.json.gz", modern_trace())])
    summary = summarise(traces)
    us = {k: round(v.time.to("us").magnitude, 6) for k, v in summary.classes.items()}
    assert us == {"attention": 240.0, "communication": 100.0, "matmul": 30.0}
    assert summary.collectives["all_reduce"].count == 1
    # kernels cover [200,280] [320,350] [480,490] [600,800]: 320 us of the 1000 us step; the all-reduce
    # [700,800] runs 50 us beside the backward kernel [600,750] and 50 us alone
    figures = {k: round(getattr(summary, k).to("us").magnitude, 6) for k in ("busy", "idle", "overlap",
                                                                               "exposed_communication")}
    assert figures == {"busy": 320.0, "idle": 680.0, "overlap": 50.0, "exposed_communication": 50.0}
    tables, notes = measured_tables(traces, accelerator="H100", link="intra")
    assert notes == ()
    rows = {m.table.kind: m.document["rows"] for m in tables}
    assert rows["matmul"] == [[2048, 512, 512, 1, "bf16", 30.0, 1, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"]]
    assert rows["attention"] == [
        [2, 8, 1024, 64, 8, 1024, 1, "bf16", "backward", 160.0, 1, "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"],
        [2, 8, 1024, 64, 8, 1024, 1, "bf16", "forward", 80.0, 1, "flash_fwd_kernel"],
    ]
    assert rows["collective"] == [["all_reduce", 2097152.0, 8, "intra", "bf16", 100.0, 1,
                                   "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"]]
    assert match_accelerator(traces[0].device, traces[0].device_memory) == "H100"
