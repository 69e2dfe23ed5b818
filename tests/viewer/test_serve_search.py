"""``serve``'s search box: the hits across the folder, each opening its transcript at its line."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from agent_transcript import Message, Session

from .conftest import screenshot_dir
from .serving import get, served
from .test_browser import errors_in_console, wait_for


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    with Session.create(folder / "long.jsonl", {"title": "a long run"}) as s:
        for i in range(400):  # more than one page of records: the hit must open the right one
            s.append_message(Message.user(f"message {i}"))
        s.append_message(Message.assistant('the "Needle" is here', tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "needle"}'}}]))
        s.append_message(Message.tool("c1", "needle found <b>twice</b>: needle"))
    with Session.create(folder / "sub" / "other.jsonl", {"title": "another"}) as s:
        s.append_message(Message.user("no such word here"))
        s.append_message(Message.user("a NEEDLE in capitals"))
    (folder / ".hidden.jsonl").write_bytes((folder / "sub" / "other.jsonl").read_bytes())
    return folder


def test_search_lists_hits_and_escapes_them(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    with served(folder) as url:
        status, headers, body = get(url, "/search?q=needle")
        page = body.decode()
        assert status == 200
        assert "form-action 'self'" in headers["Content-Security-Policy"]
        assert "<b>4 hits</b>" in page  # the assistant's content and call, the tool's result, the capitals
        assert page.count("<li class=search-hit>") == 4
        assert "&lt;b&gt;twice&lt;/b&gt;" in page and "<b>twice</b>" not in page
        assert ".hidden.jsonl" not in page
        assert '/t/sub/other.jsonl?line=3#L3' in page
        _, _, case = get(url, "/search?q=needle&case=1")
        assert "<b>2 hits</b>" in case.decode()  # the call's arguments, the result
        _, _, bad = get(url, "/search?q=(&re=1")
        assert "not a regular expression" in bad.decode()
        _, _, picker = get(url, "/")
        assert 'action="/search"' in picker.decode()


def test_a_hit_opens_its_transcript_at_its_line(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    folder = _folder(tmp_path)
    with served(folder) as url:
        browser.get_log("browser")
        browser.get(url)
        box = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "form.search input[name=q]"))
        assert box, "the picker has a search box"
        box[0].send_keys('"needle"', Keys.ENTER)
        hits = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "li.search-hit"))
        assert len(hits) == 2, browser.page_source[:2000]  # the quoted text as the model wrote it, and the arguments
        browser.find_element(By.CSS_SELECTOR, "form.search input[name=q]").clear()
        browser.find_element(By.CSS_SELECTOR, "form.search input[name=q]").send_keys("needle", Keys.ENTER)
        wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, "li.search-hit")) == 4)
        marks = [m.text.lower() for m in browser.find_elements(By.CSS_SELECTOR, "li.search-hit mark")]
        assert marks == ["needle"] * 4
        shots = Path(os.environ.get("GREP_SEARCH_SHOT", str(screenshot_dir() / "grep-search.png")))
        shots.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(shots))
        links = browser.find_elements(By.CSS_SELECTOR, "li.search-hit a")
        # The picker's order (newest activity first), then line order.
        assert [a.text for a in links] == ["sub/other.jsonl line 3", "long.jsonl line 402", "long.jsonl line 402",
                                           "long.jsonl line 403"]
        links[3].click()  # the tool's result, past the first page of records
        target = wait_for(lambda: browser.find_elements(By.ID, "L403"))
        assert target, browser.current_url
        assert re.search(r"/t/long\.jsonl\?line=403#L403$", browser.current_url)
        assert "needle found" in target[0].find_element(By.XPATH, "./ancestor::article[1]").text
        in_view = wait_for(lambda: browser.execute_script(
            "var r = document.getElementById('L403').getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight;"))
        assert in_view, "the page opens scrolled to the hit's line"
        assert not errors_in_console(browser)
    assert shutil.which("chromium") or shutil.which("chromium-browser")
