"""Session.append_events: envelopes of any type but session-meta, in one write(2), all or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_transcript import Message, Session, UnknownId


def test_events_of_other_types_and_messages_go_in_one_write(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        first = s.append_message(Message.user("hi"))
        before = path.stat().st_size
        ids = s.append_events([("source-line", {"line": 1, "status": "metadata", "text": "{}"}),
                               ("message", {"role": "assistant", "content": "hello", "x": 1}),
                               ("rewind", {"through-id": first})])
        assert len(ids) == 3 and len(set(ids)) == 3
        assert [e.type for e in s.events][-3:] == ["source-line", "message", "rewind"]
        assert [m.content for m in s.messages] == ["hi"]  # the rewind named what was live before the call
        assert path.stat().st_size > before
    with Session.load(path) as s:
        assert [e.id for e in s.events][-3:] == ids
        assert s.events[-2].payload == {"role": "assistant", "content": "hello", "x": 1}


def test_a_refused_event_writes_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        size = path.stat().st_size
        with pytest.raises(UnknownId):
            s.append_events([("source-line", {"line": 1}), ("rewind", {"through-id": "nope"})])
        with pytest.raises(ValueError):
            s.append_events([("session-meta", {})])
        with pytest.raises(TypeError):
            s.append_events([(1, {})])  # type: ignore[list-item]
        assert s.append_events([]) == []
        assert path.stat().st_size == size and len(s.events) == 1
