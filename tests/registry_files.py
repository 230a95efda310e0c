"""Users' registry files for the tests: a small transformer, and a writer of such files."""

import textwrap
from pathlib import Path

TINY_TRANSFORMER = """
[models.Language.Tiny]
kind = "transformer"
parameters = "125e6 param"
layers = 12
hidden_dim = 768
heads = 12
seq_len = 2048
vocab_size = 50257
source = "our config"
note = "a small model"
"""
"""A transformer a user adds (GPT-2 small's shape at a 2048-token context)."""


def write_registry(folder: Path, text: str, name: str = "my_cluster.toml") -> Path:
    """``text`` (dedented) as the registry file ``name`` in ``folder``."""
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path
