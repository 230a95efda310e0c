"""The ``mlsysim`` command line. Nothing in the library imports this package."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click

class Terminated(BaseException):
    """Raised in the main thread on SIGTERM or SIGHUP, so every ``finally`` and writer cleans up."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _remove_temporary_files() -> None:
    """Remove the temporary files of writes in progress (only a loaded writer can have any)."""
    fileio = sys.modules.get("mlsysim.core.fileio")
    if fileio is not None:
        fileio.remove_temporary_files()


def _on_signal(signum: int, frame: object) -> None:
    _remove_temporary_files()
    raise Terminated(signum)


def _install_signal_handlers() -> dict[int, object]:
    """SIGTERM and SIGHUP raise :class:`Terminated` (SIGINT raises KeyboardInterrupt already)."""
    import signal
    import threading

    previous: dict[int, object] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            previous[number] = signal.signal(number, _on_signal)
    return previous


def main(argv: list[str] | None = None) -> int:
    """Run the command line; a user's mistake prints one line on stderr and exits with status 2.

    Ctrl-C prints "interrupted" and exits with 130; SIGTERM and SIGHUP print
    "terminated" and exit with 128 + the signal number; in every case the
    temporary file of a write in progress is removed and the target is untouched.
    """
    import signal

    previous = _install_signal_handlers()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("mlsysim: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        print(f"mlsysim: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return 128 + exc.signum
    finally:
        _remove_temporary_files()
        for number, handler in previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]


def _main(argv: list[str] | None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if list(args) == ["--version"]:  # answered before the command line's framework is imported
        from mlsysim import __version__

        print(f"mlsysim {__version__}")
        return 0
    import click

    from mlsysim.cli.app import app
    from mlsysim.core.exceptions import MlsysimError
    from mlsysim.core.suggest import caller_syntax

    try:
        with _notes(), caller_syntax("text"):  # examples in messages as typed: "100 Gbps"
            code = app.main(args=args, prog_name="mlsysim", standalone_mode=False)
        if code == 130:  # a command's Exit(130) (an interrupted plan), returned by click
            print("mlsysim: interrupted", file=sys.stderr)
            return 130
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        print("mlsysim: interrupted", file=sys.stderr)
        return 130
    except click.exceptions.NoArgsIsHelpError as exc:
        print(_bare_usage(exc.ctx), file=sys.stderr)
        return 2
    except click.UsageError as exc:
        hint = (
            f" (see 'mlsysim {exc.ctx.command_path.split(' ', 1)[1]} --help')"
            if exc.ctx and " " in exc.ctx.command_path
            else " (see 'mlsysim --help')"
        )
        print(f"mlsysim: error: {_one_line(exc.format_message())}{hint}", file=sys.stderr)
        return 2
    except click.ClickException as exc:
        print(f"mlsysim: error: {_one_line(exc.format_message())}", file=sys.stderr)
        return 2
    except MlsysimError as exc:
        print(f"mlsysim: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0  # click.exceptions.Exit(n) in a command returns n


def _bare_usage(ctx: click.Context) -> str:
    """A command or group run without arguments: its usage on several lines (the top level
    adds the three commands a newcomer wants first, :data:`mlsysim.cli.app.FIRST_COMMANDS`)."""
    import click

    if ctx.parent is not None or not isinstance(ctx.command, click.Group):
        return ctx.get_help()
    from mlsysim.cli.app import first_steps

    return first_steps(ctx.get_usage(), list(ctx.command.list_commands(ctx)))


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


def _one_line(message: str) -> str:
    """The message on one line, control characters from user text escaped."""
    from mlsysim.core.text import printable

    return printable(" ".join(message.split()))


def entry() -> None:
    sys.exit(main())
