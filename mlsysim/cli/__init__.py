"""The ``mlsysim`` command line. Nothing in the library imports this package."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from types import SimpleNamespace


def main(argv: list[str] | None = None) -> int:
    """Run the command line; a user's mistake prints one line on stderr and exits with status 2."""
    from mlsysim.cli.app import app
    from mlsysim.core.exceptions import MlsysimError

    click = _click_exceptions()
    command = _command(app)
    try:
        with _notes():
            code = command.main(
                args=argv if argv is not None else sys.argv[1:],
                prog_name="mlsysim",
                standalone_mode=False,
            )
    except click.Exit as exc:
        return exc.exit_code
    except click.Abort:
        print("mlsysim: aborted", file=sys.stderr)
        return 130
    except click.UsageError as exc:
        hint = (
            f" (see 'mlsysim {exc.ctx.command_path.split(' ', 1)[1]} --help')"
            if exc.ctx and " " in exc.ctx.command_path
            else " (see 'mlsysim --help')"
        )
        print(f"mlsysim: error: {exc.format_message()}{hint}", file=sys.stderr)
        return 2
    except click.ClickException as exc:
        print(f"mlsysim: error: {exc.format_message()}", file=sys.stderr)
        return 2
    except MlsysimError as exc:
        print(f"mlsysim: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0  # typer.Exit(n) inside a command returns n


@contextlib.contextmanager
def _notes() -> Iterator[None]:
    """Print each :class:`~mlsysim.MlsysimWarning` as one ``mlsysim: note:`` line on stderr."""
    from mlsysim.core.exceptions import MlsysimWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MlsysimWarning)
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, MlsysimWarning):
                    print(f"mlsysim: note: {_one_line(str(w.message))}", file=sys.stderr)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _click_exceptions():  # noqa: ANN202
    """click's exception classes, found through typer's public names.

    Recent typer vendors click, earlier typer depends on it; both export
    ``BadParameter`` (a ``UsageError``, a ``ClickException``), ``Exit`` and ``Abort``.
    """
    import typer

    found = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
    return SimpleNamespace(
        Exit=typer.Exit,
        Abort=typer.Abort,
        UsageError=found["UsageError"],
        ClickException=found["ClickException"],
    )


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _command(app):  # noqa: ANN001, ANN202 - typer.Typer -> click.Command
    import typer.main

    return typer.main.get_command(app)


def entry() -> None:
    sys.exit(main())
