"""``mlsysim ui``: the interactive explorer in the browser (the optional ``ui`` extra)."""

from __future__ import annotations

import click

from mlsysim.cli.options import FILE_HELP, SET_HELP
from mlsysim.cli.params import Argument, Option

INSTALL_HINT = 'mlsysim ui needs the optional extra: pip install "mlsysim[ui]"'


def ui_command(
    name: str | None = Argument(
        None, help="Scenario to open (see 'mlsysim list'; default: the first one)."
    ),
    file: str | None = Option(None, "--file", "-f", metavar="FILE", help=FILE_HELP),
    set_: list[str] | None = Option(None, "--set", "-s", metavar="FIELD=VALUE", help=SET_HELP),
    port: int = Option(8765, "--port", help="Port to listen on (0: any free port)."),
    host: str = Option(
        "127.0.0.1", "--host", help="Address to listen on; anything but loopback prints a warning."
    ),
    no_browser: bool = Option(False, "--no-browser", help="Do not open a browser."),
) -> None:
    """Open the interactive explorer in the browser: inputs, live results, charts, derivation.

    Examples:

      mlsysim ui

      mlsysim ui Gpt2DataParallelFourNodes10GbE --set nodes=8

      mlsysim ui --file job.toml --no-browser --port 9000
    """
    from importlib.util import find_spec

    from mlsysim.core.exceptions import MissingDependencyError

    if any(find_spec(package) is None for package in ("starlette", "uvicorn", "plotly")):
        raise MissingDependencyError(INSTALL_HINT)
    if not 0 <= port <= 65535:
        raise click.BadParameter(f"expected a port in 0..65535, got {port}", param_hint="--port")
    from mlsysim.ui.server import query_of, serve

    query = ""
    if name is not None or file is not None or set_:
        from mlsysim.cli.loading import load
        from mlsysim.engine.scenarios import Scenarios

        if name is None and file is None:
            name = next(iter(Scenarios)).name
        query = query_of(load(name, file, set_))
    serve(host=host, port=port, open_browser=not no_browser, query=query)
