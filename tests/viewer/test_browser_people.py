"""The picker and a page as a person reads them (headless Chromium): times in words with the
exact UTC on hover, titles on one line cut with an ellipsis, the tokens each run used."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session
from agent_transcript.formats import import_transcript

from .conftest import screenshot_dir
from .serving import served
from .test_browser import errors_in_console, wait_for

LONG_TITLE = ("Refactor the billing module so that invoices are generated per tenant, "
              "then\nmigrate the old records and write the tests for every currency we support")


def _claude_session(path: Path, when: datetime) -> None:
    def ts(k: int) -> str:
        return (when + timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    base = {"isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "s1", "version": "2.1.40"}
    records = [{**base, "parentUuid": None, "type": "user", "uuid": "u0", "timestamp": ts(0),
                "message": {"role": "user", "content": LONG_TITLE}}]
    parent = "u0"
    for k in range(3):
        for j, block in enumerate(({"type": "text", "text": f"Step {k}."},
                                   {"type": "tool_use", "id": f"toolu_{k}", "name": "Bash", "input": {"command": "make"}})):
            uid = f"a{k}{j}"
            records.append({**base, "parentUuid": parent, "type": "assistant", "uuid": uid, "timestamp": ts(10 * k + j + 1),
                            "message": {"id": f"msg_{k}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                        "content": [block], "stop_reason": None,
                                        "usage": {"input_tokens": 1200, "output_tokens": 300 + j, "cache_read_input_tokens": 40_000}}})
            parent = uid
        records.append({**base, "parentUuid": parent, "type": "user", "uuid": f"r{k}", "timestamp": ts(10 * k + 5),
                        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}",
                                                                 "content": "ok", "is_error": False}]}})
        parent = f"r{k}"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def people_folder(root: Path) -> Path:
    """A folder of runs: an imported Claude Code session of three days ago, today's run, its fork."""
    runs = root / "runs"
    runs.mkdir()
    _claude_session(root / "session.src", datetime.now(timezone.utc) - timedelta(days=3))
    import_transcript(root / "session.src", runs / "billing.jsonl")
    with Session.create(runs / "today.jsonl", {"task": "docs"}) as s:
        s.append_message(Message.user("Write the how-to page for sharing a run:\nredaction, tokens, Markdown and diff"))
        s.append_message(Message.assistant("Done.", ), {"pydantic-ai": {"model_name": "gpt-5", "usage": {
            "input_tokens": 5400, "output_tokens": 820}}})
    Session.fork(runs / "today.jsonl", runs / "today-fork.jsonl").close()
    return runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return people_folder(tmp_path_factory.mktemp("people"))


def test_the_picker_for_people(browser: Any, runs: Path) -> None:
    from selenium.webdriver.common.by import By

    with served(runs) as url:
        browser.set_window_size(1300, 700)
        browser.get(url)
        rows = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "table.picker tr.row"))
        assert len(rows) == 3
        assert errors_in_console(browser) == []
        by_file = {r.find_elements(By.TAG_NAME, "td")[-1].text: r for r in rows}
        billing = by_file["billing.jsonl"]
        cells = billing.find_elements(By.TAG_NAME, "td")
        started = cells[2].find_element(By.TAG_NAME, "time")
        # drawn by the page's script: words, the exact UTC on hover
        wait_for(lambda: "ago" in started.text)
        assert started.text == "3 days ago"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", started.get_attribute("title"))
        assert by_file["today.jsonl"].find_elements(By.TAG_NAME, "time")[0].text.startswith("today ")
        # the title: one line, cut by the stylesheet, whole on hover
        title = cells[0]
        hover = title.get_attribute("title")  # the listing's title (its first 80 characters), on one line
        assert "\n" not in hover and " ".join(LONG_TITLE.split()).startswith(hover.rstrip("…"))
        assert browser.execute_script("var c = arguments[0]; return [c.scrollWidth > c.clientWidth, "
                                      "getComputedStyle(c).textOverflow, c.getBoundingClientRect().height]", title)[:2] == [True, "ellipsis"]
        assert title.size["height"] < 40  # one line
        # tokens: input with the cache read, and output
        tokens = cells[5]
        assert tokens.text == "123.6k in · 903 out"  # 3 × (1,200 + 40,000 cached)
        assert "output 903" in tokens.get_attribute("title")
        browser.save_screenshot(str(screenshot_dir() / "picker-after.png"))

        billing.find_element(By.TAG_NAME, "a").click()
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "article.k-message"))
        card_time = browser.find_element(By.CSS_SELECTOR, "article.k-message header time")
        wait_for(lambda: "ago" in card_time.text)
        assert card_time.text == "3 days ago" and card_time.get_attribute("title").endswith(" UTC")
        summary = wait_for(lambda: [p for p in browser.find_elements(By.CSS_SELECTOR, "section.summary p.tokens")])
        assert summary and "3,600 in, 903 out, 120,000 cached (3 responses" in summary[0].text
        # each response's tokens on the message it became: its last line's output (301), the cache read
        chips = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "article.k-message span.chip.tokens"))
        assert [c.text for c in chips] == ["1,200 in · 301 out · 40,000 cached"] * 3
        assert "cache read 40,000" in chips[0].get_attribute("title")
        assert errors_in_console(browser) == []
        browser.set_window_size(1300, 1000)
        browser.execute_script("window.scrollTo(0, 0)")
        browser.save_screenshot(str(screenshot_dir() / "page-after.png"))
