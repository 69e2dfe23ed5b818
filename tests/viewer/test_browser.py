"""The pages in a real browser (headless Chromium from the system, driven by Selenium, offline)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_transcript.inspect import read
from agent_transcript.viewer import write_html

from .conftest import screenshot_dir
from .helpers import every_kind


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's crashed transcript (a kill -9 mid-tool-call: a torn line, two calls never settled)."""
    where = tmp_path_factory.mktemp("demo")
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "demo", str(where / "d")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return where / "d" / "crashed.jsonl"


#: The Navigation Timing and Paint Timing of the page shown, in ms from the navigation's
#: start (None until the first contentful paint).
PAINT_TIMING = """
var n = performance.getEntriesByType('navigation')[0];
var p = performance.getEntriesByType('paint').filter(function (e) { return e.name === 'first-contentful-paint'; })[0];
if (!n || !p) return null;
return {responseStart: n.responseStart, responseEnd: n.responseEnd, domContentLoaded: n.domContentLoadedEventEnd,
        firstContentfulPaint: p.startTime};
"""


def errors_in_console(driver: Any) -> list[dict[str, Any]]:
    return [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]


def wait_for(cond: Any, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_the_demo_page_from_file_url(browser: Any, demo: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    out = tmp_path / "demo.html"
    write_html(read(str(demo), lenient=True), str(out))
    browser.get_log("browser")
    browser.get(out.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert errors_in_console(browser) == []
    # Nothing was loaded: no resource entry at all (CSS and JS are inline).
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    roles = [e.get_attribute("data-role") for e in browser.find_elements(By.CSS_SELECTOR, "article.k-message")]
    assert {"system", "user", "assistant", "tool"} <= set(roles)
    cut = browser.find_element(By.CSS_SELECTOR, "article.cut")
    assert cut.is_displayed() and "tokens 18,250 → 2,140" in cut.text and "replaced:" in cut.text
    ended = browser.find_element(By.ID, "ended")
    assert ended.is_displayed() and "The run ended here." in ended.text
    assert "write_file" in ended.text and "run_tests" in ended.text
    pending = browser.find_elements(By.CSS_SELECTOR, "article.k-dispatch.pending")
    assert [p.get_attribute("data-tool") for p in pending] == ["write_file", "run_tests"]
    # The JS paired each call with its lifecycle: a chip on the assistant's calls.
    chips = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "li.call .state .chip")]
    assert any(c.startswith("completed · 4 ms") for c in chips), chips
    assert any("never settled" in c for c in chips), chips
    assert "repairable" in (browser.find_element(By.ID, "verdict").get_attribute("class") or "")
    browser.set_window_size(1300, 1000)
    browser.save_screenshot(str(screenshot_dir() / "page-top.png"))
    cut_y = browser.execute_script("arguments[0].scrollIntoView({block: 'start'}); return window.scrollY", cut)
    assert cut_y > 0
    browser.save_screenshot(str(screenshot_dir() / "page-cut.png"))
    assert errors_in_console(browser) == []


def test_find_filters_keys_theme_and_hostile_text(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    src = every_kind(tmp_path / "run.jsonl")
    out = tmp_path / "run.html"
    write_html(read(str(src), lenient=True), str(out))
    browser.get_log("browser")
    browser.get(out.as_uri())
    assert browser.execute_script("return window.__pwned") is None
    assert errors_in_console(browser) == []
    body = browser.find_element(By.TAG_NAME, "body")
    # Keyboard: j moves to a record, and on.
    body.send_keys("j")
    first = browser.execute_script("return document.activeElement.dataset.line")
    body.send_keys("j")
    second = browser.execute_script("return document.activeElement.dataset.line")
    assert first is not None and second is not None and int(second) > int(first)
    # Filters: role, tool, errors.
    browser.find_element(By.CSS_SELECTOR, "#f-role option[value=tool]").click()
    shown = [e.get_attribute("data-role") for e in browser.find_elements(By.CSS_SELECTOR, "article.rec") if e.is_displayed()]
    assert shown and set(shown) == {"tool"}
    browser.find_element(By.CSS_SELECTOR, "#f-role option[value='']").click()
    browser.find_element(By.CSS_SELECTOR, "#f-tool option[value=run_tests]").click()
    shown = [e.get_attribute("data-tool") for e in browser.find_elements(By.CSS_SELECTOR, "article.rec") if e.is_displayed()]
    assert shown and all("run_tests" in (t or "") for t in shown)
    browser.find_element(By.CSS_SELECTOR, "#f-tool option[value='']").click()
    browser.find_element(By.ID, "f-errors").click()
    shown = [e.get_attribute("data-type") for e in browser.find_elements(By.CSS_SELECTOR, "article.rec") if e.is_displayed()]
    assert "tool-settled" in shown and "tool-dispatched" in shown and "session-meta" not in shown
    browser.find_element(By.ID, "f-errors").click()
    # Find.
    find = browser.find_element(By.ID, "find")
    find.send_keys("third turn", Keys.ENTER)
    assert wait_for(lambda: browser.find_element(By.ID, "find-count").text.endswith("of 1"))
    assert "Third turn." in browser.execute_script("return document.activeElement.textContent")
    # Theme.
    browser.find_element(By.ID, "theme").click()
    theme = browser.execute_script("return document.documentElement.className")
    assert theme in ("dark", "light")
    if theme == "light":
        browser.find_element(By.ID, "theme").click()
    assert browser.execute_script("return getComputedStyle(document.body).backgroundColor") == "rgb(22, 24, 27)"
    browser.save_screenshot(str(screenshot_dir() / "page-dark.png"))
    # Raw JSON of a record.
    browser.find_element(By.ID, "f-raw").click()
    raw = browser.find_element(By.CSS_SELECTOR, "article.k-meta details.raw")
    assert raw.is_displayed()
    assert browser.execute_script("return window.__pwned") is None
    assert errors_in_console(browser) == []


def test_a_folder_of_pages_from_file_url(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from agent_transcript import Message, Session

    src = tmp_path / "long.jsonl"
    with Session.create(src) as s:
        for k in range(600):
            s.append_message(Message.user(f"turn {k} needle{k}"))
            s.append_message(Message.assistant("z" * 3000))
    site = tmp_path / "site"
    result = write_html(read(str(src), lenient=True), str(site), single=False)
    assert result.pages > 2
    browser.get_log("browser")
    browser.get((site / "index.html").as_uri())
    browser.find_element(By.ID, "find").send_keys("needle599")
    browser.find_element(By.ID, "search-all").click()
    assert wait_for(lambda: "found in" in browser.find_element(By.ID, "search-status").text)
    hits = browser.find_elements(By.CSS_SELECTOR, "#search-hits a")
    assert len(hits) == 1 and f"page {result.pages}" in hits[0].text
    hits[0].click()
    assert wait_for(lambda: browser.execute_script("return location.hash") == "#L1200")
    assert errors_in_console(browser) == []


def test_serve_lists_opens_and_follows(browser: Any, demo: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from agent_transcript import Message, Session, canonical_json

    from .serving import append_line, served

    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "crashed.jsonl").write_bytes(demo.read_bytes())
    (folder / "run.jsonl").write_bytes((demo.parent / "run.jsonl").read_bytes())
    live = folder / "live.jsonl"
    every_kind(live)
    with Session.create(folder / "stopped.jsonl") as s:  # the run stopped mid-call
        s.append_message(Message.user("go"))
        s.append_tool_dispatched("c1", "run", "{}")
    with served(folder) as base:
        browser.get_log("browser")
        browser.get(base)
        rows = browser.find_elements(By.CSS_SELECTOR, "table.picker tr.row")
        assert len(rows) == 4
        statuses = {r.find_element(By.CSS_SELECTOR, "code").text: r.get_attribute("data-status") for r in rows}
        assert statuses == {"crashed.jsonl": "torn", "run.jsonl": "clean", "live.jsonl": "clean", "stopped.jsonl": "pending"}
        browser.save_screenshot(str(screenshot_dir() / "picker.png"))
        assert errors_in_console(browser) == []
        browser.find_element(By.CSS_SELECTOR, "a[href='/t/live.jsonl']").click()
        assert wait_for(lambda: browser.execute_script("return document.body.dataset.events || ''"))
        # The first paint of the tail, as the browser times it (the bench reports it for a
        # 1 GiB transcript; here it is only recorded, and must be a sane figure).
        timing = wait_for(lambda: browser.execute_script(PAINT_TIMING))
        assert timing and 0 <= timing["responseStart"] <= timing["responseEnd"] and 0 < timing["firstContentfulPaint"] < 120_000
        (screenshot_dir().parent / "viewer-timing.json").write_text(json.dumps({"serve tail first paint": timing}, indent=1) + "\n")
        # What replay says arrives after the page: the verdict and the line numbers.
        assert wait_for(lambda: "check" in browser.find_element(By.ID, "verdict").text)
        assert wait_for(lambda: [a.get_attribute("data-tool") for a in browser.find_elements(By.CSS_SELECTOR, "article.k-dispatch.pending")] == ["write_file"])
        assert "The run ended here." in browser.find_element(By.ID, "ended").text
        # Opened at the tail: the last record is on screen.
        assert wait_for(lambda: browser.execute_script(
            "var r = document.querySelectorAll('article.rec'); var b = r[r.length - 1].getBoundingClientRect(); return b.top < innerHeight && b.bottom > 0"))
        assert wait_for(lambda: browser.find_element(By.ID, "live").text == "live")
        before = len(browser.find_elements(By.CSS_SELECTOR, "article.rec"))

        def line(n: int, text: str) -> bytes:
            env = {"id": f"live{n}", "payload": {"role": "assistant", "content": text}, "ts": "2026-08-09T13:10:09.000000Z", "type": "message", "v": 1}
            return canonical_json(env).encode() + b"\n"

        whole, torn = line(1, "appended by another process"), line(2, "<b>the torn one</b>")
        append_line(live, whole + torn[:25])
        assert wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "article.rec")) == before + 1)
        assert "appended by another process" in browser.find_elements(By.CSS_SELECTOR, "article.rec")[-1].text
        time.sleep(1.0)  # the half line is held, however long
        assert len(browser.find_elements(By.CSS_SELECTOR, "article.rec")) == before + 1
        assert "the torn one" not in browser.find_element(By.TAG_NAME, "main").text
        append_line(live, torn[25:])
        assert wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "article.rec")) == before + 2)
        last = browser.find_elements(By.CSS_SELECTOR, "article.rec")[-1]
        assert "<b>the torn one</b>" in last.text and last.get_attribute("data-line") == str(before + 2)
        browser.save_screenshot(str(screenshot_dir() / "serve-live.png"))
        assert browser.execute_script("return window.__pwned") is None
        assert errors_in_console(browser) == []


def test_an_imported_transcript_shows_its_source_lines_folded(browser: Any, tmp_path: Path) -> None:
    """An importer keeps every source line in a source-line envelope: each is a folded
    "source line" card (its line, its status, the text on demand), not an unknown type."""
    from selenium.webdriver.common.by import By

    from agent_transcript.formats import import_transcript

    def cc(kind: str, uid: str, parent: str | None, ts: str, message: dict[str, Any]) -> bytes:
        return json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "s1",
                           "version": "2.1.40", "type": kind, "uuid": uid, "timestamp": f"2026-03-01T10:{ts}.000Z",
                           "message": message}).encode()

    src = tmp_path / "session.jsonl"
    src.write_bytes(b"\n".join([
        cc("user", "u1", None, "00:00", {"role": "user", "content": "List the files"}),
        cc("assistant", "a1", "u1", "00:01", {"id": "m1", "role": "assistant", "model": "x", "type": "message",
                                              "content": [{"type": "text", "text": "Checking."}]}),
        b'{"type":"user","message":<script>window.__pwned=1</script>',
        cc("user", "u2", "a1", "00:02", {"role": "user", "content": "thanks"}),
    ]) + b"\n")
    dest = tmp_path / "imported.jsonl"
    import_transcript(src, dest)
    out = tmp_path / "imported.html"
    write_html(read(str(dest), lenient=True), str(out))
    browser.get_log("browser")
    browser.get(out.as_uri())
    assert errors_in_console(browser) == []
    cards = browser.find_elements(By.CSS_SELECTOR, "article[data-type=source-line]")
    assert len(cards) == src.read_bytes().count(b"\n")
    assert all("k-source" in (c.get_attribute("class") or "") and "source line" in c.text for c in cards)
    assert not browser.find_elements(By.CSS_SELECTOR, "article.k-unknown")
    folds = browser.find_elements(By.CSS_SELECTOR, "article[data-type=source-line] details.source")
    assert len(folds) == len(cards) and not any(f.get_attribute("open") for f in folds)
    damaged = [c for c in cards if c.get_attribute("data-status") == "damaged"]
    assert damaged, [c.get_attribute("data-status") for c in cards]
    damaged[0].find_element(By.CSS_SELECTOR, "details.source summary").click()
    assert "<script>window.__pwned=1</script>" in damaged[0].text
    assert browser.execute_script("return window.__pwned") is None
