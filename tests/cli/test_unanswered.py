"""``check``, ``stats`` and ``show`` name the tool calls no tool message
answers, and the tool messages that answer no call, as
``Session.unanswered_tool_calls`` pairs them; ``check``'s exit status does not
change. ``show`` hides a message's extras unless ``--extras``, and prints
envelope ids with ``--ids``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_transcript import Message, Session
from cli.helpers import run


def call(call_id: str, tool: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": tool, "arguments": "{}"}}


def killed_run(path: Path) -> dict[str, Any]:
    """A run as a kill mid-tool leaves it, with a stray tool message: what the
    session says of it."""
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.tool("ghost", "answers nothing"))       # line 3: an orphan
        a = s.append_message(Message.assistant(None, [call("c1", "read"), call("c2", "grep")]),
                             extra={"item": {"blob": "x" * 300}})
        s.append_message(Message.tool("c1", "ok"))
        s.append_tool_dispatched("c2", "grep", {})
        return {"assistant": a, "unanswered": [(u.call_id, u.tool, u.message_id) for u in s.unanswered_tool_calls()]}


def test_check_names_them_and_keeps_its_status(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    said = killed_run(path)
    assert said["unanswered"] == [("c2", "grep", said["assistant"])]
    r = run("check", "--json", path)
    assert r.returncode == 0, r.stderr
    [report] = json.loads(r.stdout)
    assert report["status"] == "clean"
    assert report["unanswered_tool_calls"] == [
        {"call_id": "c2", "tool": "grep", "message_id": said["assistant"], "line": 4}]
    [orphan] = report["orphan_tool_messages"]
    assert (orphan["tool_call_id"], orphan["line"]) == ("ghost", 3)
    text = run("check", path)
    assert text.returncode == 0
    assert "1 tool call unanswered: grep c2 (line 4)" in text.stdout
    assert "1 tool message answering no call: line 3" in text.stdout


def test_a_resumed_run_has_none(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    killed_run(path)
    with Session.load(path) as s:
        s.answer_unanswered_tool_calls()
    [report] = json.loads(run("check", "--json", path).stdout)
    assert report["unanswered_tool_calls"] == []
    assert len(report["orphan_tool_messages"]) == 1   # in the file still; chat_messages leaves it out
    stats = json.loads(run("stats", "--json", path).stdout)
    assert stats["unanswered_tool_calls"] == [] and stats["pending"] == []
    assert "  unanswered   none" in run("stats", path).stdout


def test_stats_and_show_name_the_same_calls(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    said = killed_run(path)
    [report] = json.loads(run("check", "--json", path).stdout)
    stats = json.loads(run("stats", "--json", path).stdout)
    assert stats["unanswered_tool_calls"] == report["unanswered_tool_calls"]
    assert stats["orphan_tool_messages"] == report["orphan_tool_messages"]
    text = run("stats", path).stdout
    assert f"  unanswered   grep c2 (line 4, message {said['assistant']})" in text
    assert "  orphans      tool message for ghost (line 3" in text
    out = run("show", path).stdout
    assert "  unanswered 1 tool call no tool message answers (a chat API refuses it):" in out
    assert "            grep c2 (line 4)" in out
    assert "  orphans   1 tool message answering no call:" in out
    # on the blocks: the call, and the stray tool message
    assert [ln for ln in out.splitlines() if "-> grep" in ln][0].endswith("c2  unanswered")
    assert [ln for ln in out.splitlines() if "-> read" in ln][0].endswith("c1")
    assert "answers ghost  (answers no call)" in out


def test_show_hides_extras_unless_asked_and_prints_ids_on_request(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    said = killed_run(path)
    out = run("show", path).stdout
    assert "x" * 300 not in out and "message  assistant  +item" in out
    assert said["assistant"] not in out.split("unanswered")[-1]
    full = run("show", "--extras", path).stdout
    assert '{"blob": "' + "x" * 300 in full
    ids = run("show", "--ids", path).stdout
    assert f"message  {said['assistant']}  assistant" in ids
    assert said["assistant"] not in run("show", path).stdout.split("\n\n", 1)[-1]
