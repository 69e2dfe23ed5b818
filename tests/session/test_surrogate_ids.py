"""Ids holding lone surrogates (``"\\ud800"``, escaped in the file) stay distinct.

SPEC: a reader accepts any non-empty string as an id. Python strings may hold
lone surrogates; two ids that differ only in them are two ids, in load, in every
append's checks and in peek, never collapsed into one U+FFFD.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_transcript import Message, Session, UnknownId

TS = "2026-08-09T13:10:08.542283Z"


def line(id: str, type: str, payload: Any) -> bytes:
    # ensure_ascii: every lone surrogate becomes its \\uXXXX escape.
    return (json.dumps({"id": id, "payload": payload, "ts": TS, "type": type, "v": 1}) + "\n").encode()


def write(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def test_ids_that_differ_only_in_lone_surrogates_are_not_duplicates(tmp_path: Path) -> None:
    p = write(tmp_path / "run.jsonl",
              line("meta", "session-meta", {}),
              line("\ud800", "message", {"role": "user", "content": "a"}),
              line("\udc00", "message", {"role": "user", "content": "b"}),
              line("\ufffd", "message", {"role": "user", "content": "c"}))
    with Session.load(p) as s:
        assert s.message_ids == ["\ud800", "\udc00", "\ufffd"]
        s.append_compaction("sum", "\udc00", 3, 1)
        assert [m.content for m in s.messages] == ["sum", "c"]
        try:
            s.append_elision([("\ud800", "stub")])  # compacted away: not live any more
        except UnknownId:
            pass
        else:
            raise AssertionError("an elision of a compacted id was accepted")
        s.append_elision([("\ufffd", "stub")])
        live = s.messages
    with Session.load(p) as again:
        assert again.messages == live
    assert [e.id for e in Session.peek(p).envelopes][1:4] == ["\ud800", "\udc00", "\ufffd"]


def test_a_tool_message_answers_only_the_call_with_its_very_id(tmp_path: Path) -> None:
    p = write(tmp_path / "run.jsonl",
              line("meta", "session-meta", {}),
              line("op1", "tool-dispatched", {"call-id": "\ud800", "tool": "t", "arguments": {}}),
              line("op2", "tool-dispatched", {"call-id": "\udbff", "tool": "t", "arguments": {}}),
              line("m1", "message", {"role": "tool", "tool_call_id": "\udfff", "content": "x"}),
              line("m2", "message", {"role": "tool", "tool_call_id": "\udbff", "content": "y"}))
    with Session.load(p) as s:
        states = {op.op_id: (op.state, op.result_message_id) for op in s.pending_tool_operations()}
        assert states == {"op1": ("dispatched", None), "op2": ("result-persisted", "m2")}
        # The same through appends.
        op3 = s.append_tool_dispatched("\udc01", "t", {})
        s.append_message(Message.tool("\udc02", "not an answer"))
        assert [op.state for op in s.pending_tool_operations() if op.op_id == op3] == ["dispatched"]
        s.append_message(Message.tool("\udc01", "the answer"))
        assert [op.state for op in s.pending_tool_operations() if op.op_id == op3] == ["result-persisted"]


def test_an_operation_with_a_lone_surrogate_id_is_resolved_by_that_id(tmp_path: Path) -> None:
    p = write(tmp_path / "run.jsonl",
              line("meta", "session-meta", {}),
              line("\ud800", "tool-dispatched", {"call-id": "c", "tool": "t", "arguments": {}}),
              line("\udc00", "tool-dispatched", {"call-id": "d", "tool": "t", "arguments": {}}))
    with Session.load(p) as s:
        s.resolve_tool_operation("\udc00")
        assert [op.op_id for op in s.pending_tool_operations()] == ["\ud800"]
        s.append_tool_settled("\ud800", "failed")
        assert s.pending_tool_operations() == []
