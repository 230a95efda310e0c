"""Commands declared by their signature, on click.

A command is a function whose parameters default to :class:`Option` or :class:`Argument`
(flags, help text); :func:`command` reads the signature (the annotation gives the type:
``str``, ``int``, ``float``, ``bool``, ``Path``, ``list[str]``, each optionally ``| None``; an
argument typed ``list[Path]`` takes one or more values)
and registers a click command on a :class:`Group`. The commands were declared this way
with typer, which builds a pydantic ``TypeAdapter`` per option at every start (about
0.05 s of each command, issue 30); this is the part of it the commands use, on plain
click: the same help, errors and completion (click's ``_MLSYSIM_COMPLETE``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from types import EllipsisType
from typing import Generic, TypeVar, cast

import click

F = TypeVar("F", bound=Callable[..., object])
T = TypeVar("T")

Callback = Callable[[click.Context, click.Parameter, T], object]
"""click's option callback: called with the option's parsed value (of its default's type)."""


class OptionSpec(Generic[T]):
    """What :func:`Option` declares (``T``: the option's value)."""

    __slots__ = ("callback", "decls", "default", "help", "is_eager", "metavar")

    def __init__(
        self,
        default: T,
        *decls: str,
        help: str | None = None,  # noqa: A002 - click's name
        metavar: str | None = None,
        callback: Callback[T] | None = None,
        is_eager: bool = False,
    ) -> None:
        self.default = default
        self.decls = decls
        self.help = help
        self.metavar = metavar
        self.callback = callback
        self.is_eager = is_eager


class ArgumentSpec:
    """What :func:`Argument` declares."""

    __slots__ = ("default", "help", "metavar")

    def __init__(
        self,
        default: object,
        *,
        help: str | None = None,  # noqa: A002 - click's name
        metavar: str | None = None,
    ) -> None:
        self.default = default
        self.help = help
        self.metavar = metavar


def Option(  # noqa: N802 - used as typer's, in a parameter's default
    default: T,
    *decls: str,
    help: str | None = None,  # noqa: A002 - click's name
    metavar: str | None = None,
    callback: Callback[T] | None = None,
    is_eager: bool = False,
) -> T:
    """An option of a command: the default, then the flags (``"--file", "-f"``,
    ``"--overlap/--no-overlap"``); ``callback`` and ``is_eager`` as click's.

    Typed as the default, which it stands for in the signature (so mypy checks the
    default against the parameter's annotation); :func:`command` reads the spec."""
    spec = OptionSpec(default, *decls, help=help, metavar=metavar, callback=callback, is_eager=is_eager)
    return cast("T", spec)


def Argument(  # noqa: N802
    default: T | EllipsisType, *, help: str | None = None, metavar: str | None = None  # noqa: A002
) -> T:
    """A positional argument: its default (``...``: required) and help, shown under
    "Arguments:" in the command's ``--help``.

    Typed as the parameter's value, which it stands for (the annotation gives it when the
    argument is required); :func:`command` reads the spec."""
    return cast("T", ArgumentSpec(default, help=help, metavar=metavar))


class HelpArgument(click.Argument):
    """A click argument with a help text (click has one only from 8.5)."""

    def __init__(
        self,
        decls: Sequence[str],
        *,
        type: click.ParamType,  # noqa: A002 - click's name
        required: bool,
        nargs: int,
        metavar: str | None,
        help: str | None,  # noqa: A002 - click's name
        default: object = ...,
    ) -> None:
        if default is ...:  # no default at all: click >= 8.3 takes None for a given one
            super().__init__(decls, type=type, required=required, nargs=nargs, metavar=metavar)
        else:
            super().__init__(
                decls, type=type, required=required, nargs=nargs, metavar=metavar, default=default
            )
        self.help = help


class Command(click.Command):
    """A click command whose ``--help`` lists its arguments with their help before the options
    (under "Arguments:", with the same layout whatever click's version)."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.format_usage(ctx, formatter)
        self.format_help_text(ctx, formatter)
        rows = [
            (p.make_metavar(ctx), f"{p.help}  [required]" if p.required else p.help)
            for p in self.get_params(ctx)
            if isinstance(p, HelpArgument) and p.help
        ]
        if rows:
            with formatter.section("Arguments"):
                formatter.write_dl(rows)
        self.format_options(ctx, formatter)
        self.format_epilog(ctx, formatter)


class Group(click.Group):
    """A click group that lists its commands in the order they were added (click sorts them)."""

    command_class = Command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


_TYPES: dict[str, click.ParamType] = {
    "str": click.STRING,
    "int": click.INT,
    "float": click.FLOAT,
    "Path": click.Path(path_type=Path),
}


def _none_if_empty(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> list[str] | None:
    """A repeatable option given no time is None (as the commands test it), else a list."""
    return list(value) or None


def _parameter(name: str, annotation: object, spec: OptionSpec[object] | ArgumentSpec) -> click.Parameter:
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    base = text.replace(" ", "").removesuffix("|None")
    if isinstance(spec, ArgumentSpec):
        many = base.startswith("list[") and base.endswith("]")  # any number of them (``FILE...``), at least one
        return HelpArgument(
            [name],
            type=_TYPES[base[5:-1] if many else base],
            required=spec.default is ...,
            nargs=-1 if many else 1,
            metavar=spec.metavar,
            help=spec.help,
            default=... if many else spec.default,
        )
    decls = [*spec.decls, name]
    if base == "list[str]":
        return click.Option(
            decls, multiple=True, callback=_none_if_empty, help=spec.help, metavar=spec.metavar,
            is_eager=spec.is_eager,
        )
    if base == "bool":
        return click.Option(
            decls,
            default=spec.default,
            callback=spec.callback,
            help=spec.help,
            metavar=spec.metavar,
            is_eager=spec.is_eager,
            is_flag=True if not any("/" in d for d in spec.decls) else None,
        )
    return click.Option(
        decls,
        type=_TYPES[base],
        default=spec.default,
        show_default=spec.default is not None,
        callback=spec.callback,
        help=spec.help,
        metavar=spec.metavar,
        is_eager=spec.is_eager,
    )


def params_of(function: Callable[..., object]) -> list[click.Parameter]:
    """The click parameters of a function declared with :func:`Option` and :func:`Argument`."""
    out = []
    for name, parameter in inspect.signature(function).parameters.items():
        if not isinstance(parameter.default, OptionSpec | ArgumentSpec):
            raise TypeError(f"{function.__name__}({name}): expected an Option or an Argument")
        out.append(_parameter(name, parameter.annotation, parameter.default))
    return out


def command(group: click.Group, name: str) -> Callable[[F], F]:
    """Register ``function`` as the command ``name`` of ``group`` (its docstring is the help)."""

    def register(function: F) -> F:
        group.add_command(
            Command(
                name,
                callback=function,
                params=params_of(function),
                help=inspect.getdoc(function),
            )
        )
        return function

    return register


def group(name: str | None, help: str, *, callback: Callable[..., object] | None = None) -> Group:  # noqa: A002
    """A command group whose bare call prints its usage (``no_args_is_help``)."""
    return Group(
        name,
        help=help,
        no_args_is_help=True,
        callback=callback,
        params=params_of(callback) if callback is not None else [],
    )
