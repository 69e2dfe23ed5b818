"""The private binding's ``Transcript.append_messages`` with ``(type, payload)``
rows: the settle lines that go out in one write with the tool messages
answering a call (``Session.answer_unanswered_tool_calls``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_transcript import ToolOperationError, _core


def transcript(path: Path) -> tuple[int, _core.Transcript]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    t = _core.Transcript.new(fd, False)
    t.append("session-meta", {}, None)
    return fd, t


def tool_row(call_id: str, text: str) -> tuple[object, ...]:
    return ("tool", text, None, None, call_id, False, False, None)


def test_settles_and_messages_go_out_in_one_batch_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    fd, t = transcript(path)
    try:
        op = t.append("tool-dispatched", {"call-id": "c1", "tool": "run"}, None)
        ids = t.append_messages([("tool-settled", {"op-id": op, "outcome": "outcome-unknown"}),
                                 tool_row("c1", "lost")])
        assert t.pending() == [] and len(t) == 4
        lines = [json.loads(x) for x in path.read_bytes().splitlines()]
        assert [(e["id"], e["type"]) for e in lines[2:]] == [(ids[0], "tool-settled"), (ids[1], "message")]
        assert t.live_payloads()[-1] == {"role": "tool", "content": "lost", "tool_call_id": "c1"}
    finally:
        t.close_writer(path)
        os.close(fd)


def test_a_settle_replay_refuses_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    fd, t = transcript(path)
    try:
        before = path.read_bytes()
        with pytest.raises(ToolOperationError):
            t.append_messages([tool_row("c1", "x"), ("tool-settled", {"op-id": "nope", "outcome": "completed"})])
        with pytest.raises(TypeError):
            t.append_messages([(7, {"op-id": "nope"})])   # a type is a str
        assert path.read_bytes() == before and len(t) == 1
    finally:
        t.close_writer(path)
        os.close(fd)
