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
