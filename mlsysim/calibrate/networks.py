"""Built-in models to time: an MLP and a small GPT-style transformer, sized by arguments.

Both are plain ``torch.nn`` modules trained with SGD on random data of a fixed
shape, which is all a step-time measurement needs. torch is imported when a
model is built, never at import of this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from mlsysim.core.exceptions import InputError, MissingDependencyError
from mlsysim.core.validation import check_positive_int

if TYPE_CHECKING:
    from torch import Tensor, nn

INSTALL_HINT = "pip install 'mlsysim[calibrate]' (torch==2.13.0)"

MODELS = ("mlp", "gpt")
"""Names of the built-in models."""

DEFAULT_SIZES: dict[str, dict[str, int]] = {
    "mlp": {"layers": 4, "width": 1024},
    "gpt": {"layers": 2, "width": 256, "heads": 4, "seq_len": 128, "vocab": 4096},
}
"""Default sizes: an MLP of 4.2 M parameters, a GPT of 3.7 M (about 16 MB of fp32 gradient each)."""

DEFAULT_BATCH = {"mlp": 64, "gpt": 8}
"""Default per-process batch: tens to hundreds of ms per step on one CPU thread."""


def require_torch() -> ModuleType:
    """Import torch, or raise :class:`MissingDependencyError` saying how to install it."""
    try:
        import torch
    except ImportError:
        raise MissingDependencyError(
            f"this command needs PyTorch, which is not installed: {INSTALL_HINT}"
        ) from None
    return torch


@dataclass(frozen=True)
class ModelSpec:
    """A built-in model and its size.

    * ``mlp``: ``layers`` blocks of Linear(width, width) + GELU, then a
      10-class head; inputs of ``width`` features.
    * ``gpt``: token and position embeddings (``vocab``, ``seq_len``),
      ``layers`` pre-norm transformer blocks of ``width`` with ``heads`` heads,
      a 4x MLP and causal self-attention (as GPT-2, Radford et al. 2019,
      section 2.3), a final LayerNorm and an untied LM head.
    """

    name: str = "mlp"
    layers: int = 4
    width: int = 1024
    heads: int = 4
    seq_len: int = 128
    vocab: int = 4096

    def __post_init__(self) -> None:
        if self.name not in MODELS:
            raise InputError(
                f"model: expected one of {', '.join(MODELS)}, got {self.name!r}", field="model"
            )
        for name in ("layers", "width", "heads", "seq_len", "vocab"):
            try:
                check_positive_int(getattr(self, name))
            except InputError as exc:
                raise InputError(f"{name}: {exc}", field=name) from None
        if self.name == "gpt" and self.width % self.heads:
            raise InputError(
                f"heads: width {self.width} must be a multiple of heads {self.heads}",
                field="heads",
            )

    @classmethod
    def sized(cls, name: str, **sizes: int | None) -> ModelSpec:
        """The model ``name`` at its default size (:data:`DEFAULT_SIZES`), with ``sizes`` (not None) changed."""
        if name not in MODELS:
            raise InputError(
                f"model: expected one of {', '.join(MODELS)}, got {name!r}", field="model"
            )
        chosen = {**DEFAULT_SIZES[name], **{k: v for k, v in sizes.items() if v is not None}}
        return cls(name=name, **chosen)

    def describe(self) -> str:
        if self.name == "mlp":
            return f"mlp(layers={self.layers}, width={self.width})"
        return (
            f"gpt(layers={self.layers}, width={self.width}, heads={self.heads}, "
            f"seq_len={self.seq_len}, vocab={self.vocab})"
        )


def build(
    spec: ModelSpec, batch: int, *, device: str = "cpu", seed: int = 0
) -> tuple[nn.Module, tuple[Tensor, Tensor]]:
    """The model and one fixed random batch ``(inputs, targets)`` on ``device``."""
    torch = require_torch()
    check_positive_int(batch)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    if spec.name == "mlp":
        model = _mlp(torch, spec)
        inputs = torch.randn(batch, spec.width, generator=generator)
        targets = torch.randint(0, 10, (batch,), generator=generator)
    else:
        model = _gpt(torch, spec)
        inputs = torch.randint(0, spec.vocab, (batch, spec.seq_len), generator=generator)
        targets = torch.randint(0, spec.vocab, (batch, spec.seq_len), generator=generator)
    return model.to(device), (inputs.to(device), targets.to(device))


def parameter_count(model: nn.Module) -> int:
    """Parameters that get a gradient (what DDP AllReduces); shared tensors counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def training_step(
    model: nn.Module, batch: tuple[Tensor, Tensor], *, lr: float = 1e-3
) -> Callable[[], None]:
    """One SGD step on the fixed batch: zero the gradients, forward, loss, backward, update."""
    torch = require_torch()
    inputs, targets = batch
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        out = model(inputs)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()

    return step


def _mlp(torch: ModuleType, spec: ModelSpec) -> nn.Module:
    from torch import nn

    blocks: list[nn.Module] = []
    for _ in range(spec.layers):
        blocks += [nn.Linear(spec.width, spec.width), nn.GELU()]
    return nn.Sequential(*blocks, nn.Linear(spec.width, 10))


def _gpt(torch: ModuleType, spec: ModelSpec) -> nn.Module:
    from torch import nn

    class TinyGPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(spec.vocab, spec.width)
            self.positions = nn.Embedding(spec.seq_len, spec.width)
            layer = nn.TransformerEncoderLayer(
                spec.width,
                spec.heads,
                4 * spec.width,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            self.blocks = nn.TransformerEncoder(layer, spec.layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(spec.width)
            self.head = nn.Linear(spec.width, spec.vocab, bias=False)
            mask = nn.Transformer.generate_square_subsequent_mask(spec.seq_len)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, idx: Tensor) -> Tensor:
            positions = torch.arange(idx.shape[1], device=idx.device)
            x = self.tokens(idx) + self.positions(positions)
            x = self.blocks(x, mask=self.mask, is_causal=True)
            return self.head(self.norm(x))

    return TinyGPT()
