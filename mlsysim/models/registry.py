"""Registry of workloads, each with the source of its figures.

Parameter counts are the figures the cited source states; where the source
gives a rounded figure (GPT-2's "1.5B"), that rounded figure is the entry, as
SPEC section 4 requires for GPT-2.
"""

from __future__ import annotations

from mlsysim.core.registry import Registry
from mlsysim.core.units import quantity
from mlsysim.models.types import TransformerWorkload, Workload


def _transformer(
    name: str, params: float, *, source: str, note: str, **shape: int
) -> TransformerWorkload:
    return TransformerWorkload(
        name=name,
        parameters=quantity(params, "param"),
        architecture="transformer",
        source=source,
        note=note,
        **shape,
    )


def _vision(name: str, params: float, architecture: str, *, source: str, note: str) -> Workload:
    return Workload(
        name=name,
        parameters=quantity(params, "param"),
        architecture=architecture,
        source=source,
        note=note,
    )


class Language(Registry):
    """Transformer language models."""

    GPT2 = _transformer(
        "GPT-2 (1.5B)",
        1.5e9,
        layers=48,
        hidden_dim=1600,
        heads=25,
        seq_len=1024,
        vocab_size=50257,
        source="Radford et al. 2019, 'Language Models are Unsupervised Multitask Learners', Table 2",
        note="largest GPT-2; the paper lists 1542M parameters, the project uses the rounded 1.5e9 of SPEC section 4",
    )
    GPT3 = _transformer(
        "GPT-3 (175B)",
        175.0e9,
        layers=96,
        hidden_dim=12288,
        heads=96,
        seq_len=2048,
        vocab_size=50257,
        source="Brown et al. 2020, 'Language Models are Few-Shot Learners', Table 2.1",
        note="GPT-3 175B, as stated (rounded) in the paper",
    )
    Llama2_7B = _transformer(
        "Llama-2 7B",
        6.74e9,
        layers=32,
        hidden_dim=4096,
        heads=32,
        seq_len=4096,
        vocab_size=32000,
        source="Touvron et al. 2023, 'Llama 2: Open Foundation and Fine-Tuned Chat Models', Table 1 and model card",
        note="released checkpoint holds about 6.74e9 parameters (nominal 7B)",
    )
    Llama2_13B = _transformer(
        "Llama-2 13B",
        13.0e9,
        layers=40,
        hidden_dim=5120,
        heads=40,
        seq_len=4096,
        vocab_size=32000,
        source="Touvron et al. 2023, 'Llama 2: Open Foundation and Fine-Tuned Chat Models', Table 1 and model card",
        note="released checkpoint holds about 13.0e9 parameters",
    )
    Llama2_70B = _transformer(
        "Llama-2 70B",
        69.0e9,
        layers=80,
        hidden_dim=8192,
        heads=64,
        seq_len=4096,
        vocab_size=32000,
        source="Touvron et al. 2023, 'Llama 2: Open Foundation and Fine-Tuned Chat Models', Table 1 and model card",
        note="released checkpoint holds about 69.0e9 parameters (grouped-query attention, 8 KV heads)",
    )
    Llama3_8B = _transformer(
        "Llama-3 8B",
        8.03e9,
        layers=32,
        hidden_dim=4096,
        heads=32,
        seq_len=8192,
        vocab_size=128256,
        source="Llama Team 2024, 'The Llama 3 Herd of Models', Table 3; Meta Llama 3 model card",
        note="released checkpoint holds about 8.03e9 parameters",
    )
    Llama3_70B = _transformer(
        "Llama-3 70B",
        70.6e9,
        layers=80,
        hidden_dim=8192,
        heads=64,
        seq_len=8192,
        vocab_size=128256,
        source="Llama Team 2024, 'The Llama 3 Herd of Models', Table 3; Meta Llama 3 model card",
        note="released checkpoint holds about 70.6e9 parameters",
    )
    BERT_Base = _transformer(
        "BERT-Base",
        110e6,
        layers=12,
        hidden_dim=768,
        heads=12,
        seq_len=512,
        vocab_size=30522,
        source="Devlin et al. 2019, 'BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding', section 3",
        note="110M parameters as stated in the paper",
    )
    BERT_Large = _transformer(
        "BERT-Large",
        340e6,
        layers=24,
        hidden_dim=1024,
        heads=16,
        seq_len=512,
        vocab_size=30522,
        source="Devlin et al. 2019, 'BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding', section 3",
        note="340M parameters as stated in the paper",
    )


class Vision(Registry):
    """Convolutional image classifiers."""

    ResNet50 = _vision(
        "ResNet-50",
        25_557_032,
        "cnn",
        source="He et al. 2016, 'Deep Residual Learning for Image Recognition'; count of torchvision's resnet50",
        note="exact trainable-parameter count of the torchvision implementation (paper: about 25.6M)",
    )
    ResNet101 = _vision(
        "ResNet-101",
        44_549_160,
        "cnn",
        source="He et al. 2016, 'Deep Residual Learning for Image Recognition'; count of torchvision's resnet101",
        note="exact trainable-parameter count of the torchvision implementation",
    )
    VGG16 = _vision(
        "VGG-16",
        138_357_544,
        "cnn",
        source="Simonyan and Zisserman 2015, 'Very Deep Convolutional Networks for Large-Scale Image Recognition', Table 2; count of torchvision's vgg16",
        note="exact count of the torchvision implementation (paper: 138M)",
    )
    InceptionV3 = _vision(
        "Inception-V3",
        27_161_264,
        "cnn",
        source="Szegedy et al. 2016, 'Rethinking the Inception Architecture for Computer Vision'; count of torchvision's inception_v3",
        note="torchvision implementation including the auxiliary classifier",
    )


class Models(Registry):
    """All workloads: ``Models.Language.GPT2``, ``Models.Vision.ResNet50``."""

    Language = Language
    Vision = Vision
