"""The UI's tests need the ``ui`` extra (and, for the browser tests, Debian's chromium and
chromium-driver). Without them the tests are skipped with the reason, except when
``MLSYSIM_REQUIRE_UI=1`` (as ``.ci/run`` sets): then a missing piece is a failure.
"""

import contextlib
import os
import shutil
import threading
import time
from importlib.util import find_spec

import pytest

REQUIRED = os.environ.get("MLSYSIM_REQUIRE_UI") == "1"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def need(*what: str) -> None:
    """Skip (or fail, when required) unless every package or program named is present."""
    missing = [
        w
        for w in what
        if (
            w in ("chromium", "chromedriver")
            and not {"chromium": CHROMIUM, "chromedriver": CHROMEDRIVER}[w]
        )
        or (w not in ("chromium", "chromedriver") and find_spec(w) is None)
    ]
    if missing:
        message = f"the UI tests need {', '.join(missing)} (pip install -e '.[ui,test]'; apt-get install chromium chromium-driver)"
        if REQUIRED:
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


@contextlib.contextmanager
def serving(app, **config):
    """``app`` served by uvicorn in a thread on a free port of 127.0.0.1 (its number yielded);
    ``config`` as uvicorn.Config's."""
    import uvicorn

    from mlsysim.ui.server import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    assert server.started
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
