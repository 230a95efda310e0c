"""A headless Chromium driven by Selenium, for the browser tests and the page's benchmark."""

import tempfile

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)
"""A headless Chromium on a shared machine: no network of its own, no GPU, no sandbox (a container)."""


def headless_chromium(chromium, chromedriver, *, profile_prefix, logs=False):
    """A Selenium driver of a headless Chromium with a fresh profile (``logs``: the browser's and
    the performance log kept, for ``driver.get_log``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tempfile.mkdtemp(prefix=profile_prefix)}"):
        options.add_argument(flag)
    if logs:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(chromedriver), options=options)
