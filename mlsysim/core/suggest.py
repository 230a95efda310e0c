"""Messages in the caller's language: examples in the syntax the value came in, the
closest known names for an unknown one, and short lists of the nearest candidates.

The syntax is a context variable: Python by default (``Q_(100, 'Gbps')``); the
command line sets ``"text"`` while a command runs (a value is typed as text, on
``--set``, an option or in a scenario file: ``"100 Gbps"``) and the browser
explorer sets ``"form"`` (typed in a form field: ``100 Gbps``). A message is
written once, in the syntax current when it is raised; nothing rewrites a
finished message.

Closest matches come from :func:`difflib.get_close_matches` (Ratcliff/Obershelp
similarity), compared without regard to case.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Literal, TypeAlias

Syntax: TypeAlias = Literal["python", "text", "form"]

SYNTAX: ContextVar[Syntax] = ContextVar("mlsysim_syntax", default="python")
"""How the caller writes a value: ``python`` (the library), ``text`` (CLI, scenario files), ``form`` (UI)."""

NEAREST = 6
"""How many names a list of candidates shows before "... and N more"."""


@contextlib.contextmanager
def caller_syntax(syntax: Syntax) -> Iterator[None]:
    """Write the examples of the messages raised inside the block in ``syntax``."""
    token = SYNTAX.set(syntax)
    try:
        yield
    finally:
        SYNTAX.reset(token)


def written(*, python: str, text: str, form: str) -> str:
    """The one of three spellings of the same thing that the caller writes (:data:`SYNTAX`).

    >>> written(python="nodes=4", text="--set nodes=4", form="nodes 4")
    'nodes=4'
    """
    syntax = SYNTAX.get()
    return text if syntax == "text" else form if syntax == "form" else python


def example(number: str, unit: str) -> str:
    """A value written as the caller would write it.

    >>> example("100", "Gbps")
    "Q_(100, 'Gbps')"
    >>> with caller_syntax("text"):
    ...     example("100", "Gbps")
    '"100 Gbps"'
    """
    return written(python=f"Q_({number}, {unit!r})", text=f'"{number} {unit}"', form=f"{number} {unit}")


def setting(name: str, value: str | None, unit: str | None = None) -> str:
    """An input set to a value (a number and ``unit``, a number, a name, or None: cleared), as
    the caller writes it: a keyword argument in Python, a ``--set`` on the command line, a form field.

    >>> setting("inter_bandwidth", "100", "Gbps"), setting("fabric", "InfiniBand_NDR"), setting("nodes", "4")
    ("inter_bandwidth=Q_(100, 'Gbps')", "fabric='InfiniBand_NDR'", 'nodes=4')
    >>> with caller_syntax("text"):
    ...     setting("inter_bandwidth", "100", "Gbps"), setting("fabric", "InfiniBand_NDR"), setting("mfu", None)
    ('--set "inter_bandwidth=100 Gbps"', '--set fabric=InfiniBand_NDR', '--set mfu=none')
    """
    if value is None:
        return written(python=f"{name}=None", text=setting(name, "none"), form=f"{name} left empty")
    typed = f"{value} {unit}" if unit else value
    assignment = f"{name}={typed}"
    return written(
        python=f"{name}={example(value, unit) if unit else value if _is_number(value) else repr(value)}",
        text=f'--set "{assignment}"' if " " in assignment else f"--set {assignment}",
        form=f"{name} {typed}",
    )


def nested_setting(parent: str, name: str, value: str) -> str:
    """One field of an input made of fields (``assumptions``, ``workload``) set to a value, as the
    caller writes it: the object's own ``variant`` in Python, a dotted ``--set`` on the command line.

    >>> nested_setting("assumptions", "matmul_ceiling", "0.5")
    'assumptions=scenario.assumptions.variant(matmul_ceiling=0.5)'
    >>> with caller_syntax("text"):
    ...     nested_setting("assumptions", "matmul_ceiling", "0.5"), nested_setting("workload", "seq_len", "4096")
    ('--set assumptions.matmul_ceiling=0.5', '--set workload.seq_len=4096')
    """
    return written(
        python=f"{parent}=scenario.{parent}.variant({name}={value if _is_number(value) else repr(value)})",
        text=setting(f"{parent}.{name}", value),
        form=f"{parent} {name} {value}",
    )


def option(name: str, value: str) -> str:
    """An option of a command (a keyword argument of its function), as the caller writes it.

    >>> option("objective", "time")
    "objective='time'"
    >>> with caller_syntax("text"):
    ...     option("objective", "time"), option("max_global_batch", "512")
    ('--objective time', '--max-global-batch 512')
    """
    return written(
        python=f"{name}={value if _is_number(value) else repr(value)}",
        text=f"--{name.replace('_', '-')} {value}",
        form=f"{name.replace('_', ' ')} {value}",
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def examples(pairs: Iterable[tuple[str, str]]) -> str:
    """``e.g. A or B`` for (number, unit) pairs, each as :func:`example` writes it."""
    return "e.g. " + " or ".join(example(number, unit) for number, unit in pairs)


LONGEST_WORD = 256
"""Characters of a word compared with the names (longer words are cut): the match is quadratic in the
word's length, and no name comes near this long, so a hostile 100,000-character key costs no more than
this."""


def closest(word: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The candidates most like ``word`` (ignoring case; case breaks ties), best first.

    Similarity is :class:`difflib.SequenceMatcher`'s ratio, as in
    :func:`difflib.get_close_matches`, of the word's first :data:`LONGEST_WORD` characters.

    >>> closest("Gbs", ["GB/s", "Gbps", "Gb/s", "Tbps"])
    ['Gbps', 'Gb/s', 'GB/s']
    >>> closest("H1000", ["H100", "A100", "B200"])
    ['H100', 'A100']
    """
    word = word[:LONGEST_WORD]
    folded = word.lower()
    scored = []
    for i, name in enumerate(dict.fromkeys(candidates)):
        matcher = difflib.SequenceMatcher(None, folded, name.lower())
        # the two quick ratios are upper bounds of ratio() (as get_close_matches filters): a long
        # word against short names is dismissed without the quadratic match
        if matcher.real_quick_ratio() < cutoff or matcher.quick_ratio() < cutoff:
            continue
        ratio = matcher.ratio()
        if ratio >= cutoff:
            exact = difflib.SequenceMatcher(None, word, name).ratio()  # case breaks ties
            scored.append((-ratio, -exact, i, name))
    return [name for *_, name in sorted(scored)[:n]]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"did you mean 'Gbps'?"`` (or two or three names), or ``""`` when nothing is close.

    >>> did_you_mean("nodez", ["nodes", "nics_per_node", "name"])
    "did you mean 'nodes'?"
    """
    names = list(candidates)
    found = closest(word, names)
    if not found:
        return ""
    word = word[:LONGEST_WORD]
    best = difflib.SequenceMatcher(None, word.lower(), found[0].lower()).ratio()
    found = [  # only those about as close as the best
        f
        for f in found
        if difflib.SequenceMatcher(None, word.lower(), f.lower()).ratio() >= best - 0.1
    ]
    return "did you mean " + " or ".join(repr(f) for f in found) + "?"


def nearest_list(word: str, candidates: Iterable[str], *, limit: int = NEAREST) -> str:
    """The candidates, those closest to ``word`` first, cut to ``limit`` with "... and N more"
    (all of them when at most two more than ``limit``).

    >>> nearest_list("Lama", ["GPT2", "Llama2_7B", "BERT_Base", "Vgg", "ResNet50"], limit=2)
    'Llama2_7B, BERT_Base, ... and 3 more'
    >>> nearest_list("Lama", ["GPT2", "Llama2_7B", "BERT_Base"], limit=2)
    'Llama2_7B, BERT_Base, GPT2'
    """
    names = list(dict.fromkeys(candidates))
    near = closest(word, names, n=limit, cutoff=0.0)
    ordered = near + [n for n in names if n not in near]
    shown = ordered if len(ordered) <= limit + 2 else ordered[:limit]  # never "... and 1 more"
    more = len(ordered) - len(shown)
    return ", ".join(shown) + (f", ... and {more} more" if more else "")


def known(word: str, candidates: Iterable[str], *, limit: int = NEAREST) -> str:
    """``"did you mean 'nodes'? known: nodes, name, ..."``: the suggestion and the nearest names.

    >>> known("nodez", ["nodes", "name", "zero_stage", "a", "b"], limit=2)
    "did you mean 'nodes'? known: nodes, name, ... and 3 more"
    """
    names = list(candidates)
    hint = did_you_mean(word, names)
    return f"{hint + ' ' if hint else ''}known: {nearest_list(word, names, limit=limit)}"


def unknown(word: str, what: str, candidates: Iterable[str], *, limit: int = NEAREST) -> str:
    """One message for an unknown name: what it is, the suggestion, the nearest known names.

    >>> unknown("H1000", "accelerator", ["H100", "A100", "B200"])
    "unknown accelerator 'H1000'; did you mean 'H100'? known: H100, A100, B200"
    """
    return f"unknown {what} {word!r}; {known(word, candidates, limit=limit)}"


def typed_names(paths: Iterable[str]) -> list[str]:
    """Registry names as a user types them: the leaf (``H100``) where it is unique, else the path.

    >>> typed_names(["Cloud.H100", "Cloud.A100", "Edge.Orin", "Lab.Orin"])
    ['H100', 'A100', 'Edge.Orin', 'Lab.Orin']
    """
    paths = list(paths)
    leaves = [p.rsplit(".", 1)[-1] for p in paths]
    counts = {leaf.lower(): 0 for leaf in leaves}
    for leaf in leaves:
        counts[leaf.lower()] += 1
    return [
        leaf if counts[leaf.lower()] == 1 else path
        for leaf, path in zip(leaves, paths, strict=True)
    ]


__all__ = [
    "SYNTAX",
    "caller_syntax",
    "closest",
    "did_you_mean",
    "example",
    "examples",
    "known",
    "nearest_list",
    "nested_setting",
    "option",
    "setting",
    "typed_names",
    "unknown",
]
