"""export --format markdown: the live conversation (or every line) as a page, fences that hold."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.cli.app import main
from agent_transcript.share import fence

FENCE = re.compile(r"^(`{3,})(.*)$")


def blocks(markdown: str) -> list[tuple[str, str]]:
    """The fenced blocks of ``markdown`` as CommonMark reads them: (info, body); an unclosed one runs to the end."""
    out, lines, i = [], markdown.split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        ticks, info, body = m.group(1), m.group(2), []
        i += 1
        while i < len(lines) and not re.fullmatch(f"`{{{len(ticks)},}}\\s*", lines[i]):
            body.append(lines[i])
            i += 1
        out.append((info, "\n".join(body)))
        i += 1
    return out


@given(st.text(st.sampled_from("`a \n~#"), max_size=60))
def test_a_fence_holds_whatever_is_inside(text: str) -> None:
    got = blocks(fence(text, "json"))
    assert got == [("json", text[:-1] if text.endswith("\n") else text)]


def _run(path: Path) -> None:
    with Session.create(path, {"title": "fix the build\nsecond line"}) as s:
        s.append_message(Message.system("be brief"))
        u = s.append_message(Message.user("why does ```make``` fail?\n```\nunclosed"))
        s.append_message(Message.assistant("Let me look.", tool_calls=[{"id": "c1", "type": "function", "function": {
            "name": "bash", "arguments": json.dumps({"cmd": "cat Makefile | grep '```'"})}}]))
        s.append_message(Message.tool("c1", "line 1\n````\nline 3"))
        s.append_message(Message.assistant("dropped"))
        s.append_rewind(s.message_ids[-2])
        s.append_message(Message.assistant("**Fixed**: the tab."))
        assert u


def test_markdown_of_the_live_conversation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    _run(path)
    assert main(["export", str(path), "--format", "markdown"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# fix the build second line\n")
    assert "dropped" not in page  # rewound away: not in the live conversation
    assert "**Fixed**: the tab." in page
    got = blocks(page)
    # the user's unbalanced fence is fenced itself; the call's arguments and the result stay whole
    assert ("", "why does ```make``` fail?\n```\nunclosed") in got
    assert ("json", json.dumps({"cmd": "cat Makefile | grep '```'"}, indent=2)) in got
    assert ("", "line 1\n````\nline 3") in got
    # the headings after every block are still headings: nothing swallowed them
    assert len(re.findall(r"^### \d+\. ", page, re.M)) == 5


def test_markdown_every_line_to_a_private_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out = tmp_path / "run.jsonl", tmp_path / "run.md"
    _run(path)
    assert main(["export", str(path), "--format", "markdown", "--all-lines", "-o", str(out)]) == 0
    page = out.read_text()
    assert os.stat(out).st_mode & 0o777 == 0o600
    assert "dropped" in page and "· rewind ·" in page
    assert len(re.findall(r"^### line \d+ ", page, re.M)) == 8


def test_markdown_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    key = "ghp_" + "Ab1" * 12
    with Session.create(path) as s:
        s.append_message(Message.user(f"push with {key}"))
    before = path.read_bytes()
    assert main(["export", str(path), "--format", "markdown"]) == 0
    assert key in capsys.readouterr().out
    assert main(["export", str(path), "--format", "markdown", "--redact"]) == 0
    page = capsys.readouterr().out
    assert key not in page and "[redacted:github-token]" in page
    assert path.read_bytes() == before


@pytest.mark.parametrize("argv", [
    ["export", "{d}", "--format", "markdown"],
    ["export", "{f}", "{f}", "--format", "markdown"],
    ["export", "{d}/missing.jsonl", "--format", "markdown"],
    ["export", "{f}", "--format", "parquet", "--redact", "-o", "{d}/out"],
])
def test_markdown_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    f = tmp_path / "run.jsonl"
    _run(f)
    assert main([a.format(d=tmp_path, f=f) for a in argv]) == 2
    assert capsys.readouterr().err.count("\n") == 1
