"""Every workload entry: a source, a sane parameter count, and the spec's GPT-2 figures."""

import pytest

from mlsysim import Q_, InputError, Models, TransformerWorkload, Workload, ureg

WORKLOADS = list(Models.walk())


def test_contract_entries_exist():
    for name in (
        "GPT2",
        "GPT3",
        "Llama2_7B",
        "Llama2_13B",
        "Llama2_70B",
        "Llama3_8B",
        "Llama3_70B",
        "BERT_Base",
        "BERT_Large",
    ):
        assert isinstance(getattr(Models.Language, name), TransformerWorkload)
    for name in ("ResNet50", "ResNet101", "VGG16", "InceptionV3"):
        assert isinstance(getattr(Models.Vision, name), Workload)


def test_gpt2_is_exactly_as_in_the_spec():
    gpt2 = Models.Language.GPT2
    assert gpt2.parameters == Q_(1.5e9, "param")
    assert (gpt2.layers, gpt2.hidden_dim, gpt2.heads, gpt2.seq_len, gpt2.vocab_size) == (
        48,
        1600,
        25,
        1024,
        50257,
    )
    assert gpt2.size_in_bytes("fp16") == Q_(3e9, "B")


@pytest.mark.parametrize("path, workload", WORKLOADS)
def test_every_workload_cites_its_source(path, workload):
    assert len(workload.source) > 10 and len(workload.note) > 5
    assert 1e6 <= workload.parameter_count() <= 1e13


@pytest.mark.parametrize("path, workload", WORKLOADS)
def test_every_workload_has_its_shape_or_its_forward_flops(path, workload):
    if isinstance(workload, TransformerWorkload):
        if workload.seq_len is None:  # the training length is not published: the context window is stated
            assert workload.context_window is not None and "not published" in workload.note
            workload = workload.variant(seq_len=4096)
        shape = (workload.layers, workload.hidden_dim, workload.heads, workload.seq_len)
        assert None not in shape and workload.vocab_size is not None
        assert workload.hidden_dim % workload.heads == 0
        if workload.is_moe():  # a mixture of experts: its shape is recounted in test_moe.py
            return
        # the shape accounts for the parameter count: 12 L h^2 (blocks) + V h (embedding),
        # within a factor of 1.5 (gated MLPs, grouped-query attention and untied heads differ)
        estimate = 12 * workload.layers * workload.hidden_dim**2
        estimate += workload.vocab_size * workload.hidden_dim
        assert 1 / 1.5 <= workload.parameter_count() / estimate <= 1.5, estimate
    else:
        flops = workload.forward_flops_per_sample
        assert flops is not None and flops.units == ureg.flop
        # at least two FLOPs per parameter (each weight is used once or more per sample)
        assert 2 * workload.parameter_count() <= flops.magnitude <= 1e11
        assert "multiply-add" in workload.note  # says how the source counted


def test_cnn_forward_flops_are_twice_the_papers_multiply_adds():
    assert Models.Vision.ResNet50.forward_flops_per_sample == Q_(2 * 3.8e9, "flop")
    assert Models.Vision.InceptionV3.forward_flops_per_sample == Q_(2 * 5e9, "flop")
    assert Models.Language.GPT2.forward_flops_per_sample is None


@pytest.mark.parametrize("bad", [Q_(7, "GB"), Q_(-1, "flop"), 5e9, "5e9 flop"])
def test_forward_flops_must_be_a_positive_flop_count(bad):
    with pytest.raises(InputError, match="forward_flops_per_sample"):
        Workload(name="x", parameters=Q_(7e9, "param"), forward_flops_per_sample=bad)


def test_workload_construction_per_spec():
    w = Workload(name="x", parameters=Q_(7e9, "param"))
    assert w.size_in_bytes("bf16") == Q_(14e9, "B")
    assert w.size_in_bytes("int4").to("GB").magnitude == pytest.approx(3.5)
    sized = Workload(name="y", parameters=Q_(7e9, "param"), model_size=Q_(13.5, "GB"))
    assert sized.size_in_bytes("fp16") == Q_(13.5e9, "B")  # explicit 16-bit size wins
    assert sized.size_in_bytes("fp32") == Q_(28e9, "B")
    assert sized.size_in_bytes("fp16").units == ureg.byte


@pytest.mark.parametrize("bad", [Q_(7, "GB"), 0, -5, "7B", float("nan")])
def test_bad_parameter_counts_are_rejected(bad):
    with pytest.raises(InputError, match="parameters"):
        Workload(name="x", parameters=bad)


@pytest.mark.parametrize("path, workload", WORKLOADS)
def test_every_reported_batch_has_its_unit_bounds_and_source(path: str, workload: Workload) -> None:
    batch = workload.largest_reported_batch
    if batch is None:
        assert workload.largest_reported_batch_samples() is None
        return
    assert batch.units in (ureg.sample, ureg.token)
    samples = workload.largest_reported_batch_samples()
    assert samples is not None and 64 <= samples <= 1e6  # a global batch, not a per-device one
    if batch.units == ureg.token:
        assert isinstance(workload, TransformerWorkload) and workload.seq_len is not None
        assert samples == batch.magnitude / workload.seq_len
    assert len(workload.largest_reported_batch_source) > 10
    assert workload.largest_reported_batch_note.startswith(("trained at:", "shown feasible"))


def test_reported_batches_as_the_sources_state_them() -> None:
    lang, vision = Models.Language, Models.Vision
    assert lang.GPT2.largest_reported_batch_samples() == 512
    assert lang.GPT3.largest_reported_batch == Q_(3.2e6, "token")
    assert lang.GPT3.largest_reported_batch_samples() == 3.2e6 / 2048 == 1562.5
    assert lang.Llama2_70B.largest_reported_batch_samples() == 4e6 / 4096 == 976.5625
    assert lang.BERT_Large.largest_reported_batch_samples() == 32768
    assert vision.ResNet50.largest_reported_batch_samples() == 8192


@pytest.mark.parametrize("bad", [Q_(8, "GB"), Q_(-1, "sample"), Q_(float("inf"), "token"), 512])
def test_a_reported_batch_must_be_samples_or_tokens_above_zero(bad: object) -> None:
    with pytest.raises(InputError, match="largest_reported_batch"):
        Workload(name="x", parameters=Q_(7e9, "param"), largest_reported_batch=bad)


def test_a_reported_batch_in_tokens_needs_a_sequence_length() -> None:
    with pytest.raises(InputError, match="needs the workload's seq_len"):
        Workload(name="x", parameters=Q_(7e9, "param"), largest_reported_batch=Q_(4e6, "token"))
    w = TransformerWorkload(
        name="x", parameters=Q_(7e9, "param"), seq_len=1000, largest_reported_batch=Q_(4e6, "token")
    )
    assert w.largest_reported_batch_samples() == 4000
