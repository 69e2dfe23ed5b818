"""A headless Chromium for the browser tests (one per session), skipped only when it is not installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)


def screenshot_dir() -> Path:
    """Where the browser tests write their screenshots ($AGENT_TRANSCRIPT_SCREENSHOTS, else build/screenshots)."""
    where = Path(os.environ.get("AGENT_TRANSCRIPT_SCREENSHOTS", "build/screenshots")).resolve()
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.fixture
def browser(_chromium: Any) -> Iterator[Any]:
    """The one headless chromium, on a blank page with its log drained before and after
    each test: a page left open (a live page's event stream retrying a server its test
    stopped) cannot put its errors in the next test's log."""
    _blank(_chromium)
    yield _chromium
    _blank(_chromium)


def _blank(driver: Any) -> None:
    driver.get("about:blank")
    driver.get_log("browser")


@pytest.fixture(scope="session")
def _chromium() -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (it is in the test extra)")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager never goes to the network
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,1000",
                "--allow-file-access-from-files=false", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
