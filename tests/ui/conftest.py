"""The UI's tests need the ``ui`` extra (and, for the browser tests, Debian's chromium and
chromium-driver). Without them the tests are skipped with the reason, except when
``MLSYSIM_REQUIRE_UI=1`` (as ``.ci/run`` sets): then a missing piece is a failure.
"""

import os
import shutil
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
