"""What the read commands say a file holds is what ``Session.load`` makes of a copy.

``check``, ``show --replayed`` and the pending operations and live count of
``stats`` come from the core's own replay; this holds them to ``Session.load``
on every fixture, and to its refusal on the ones load refuses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Message, Session
from cli.helpers import DATA, fixture, run

FIXTURES = sorted(p.name for p in DATA.iterdir() if p.is_file())


@pytest.mark.parametrize("name", FIXTURES)
def test_check_replayed_and_pending_agree_with_load(tmp_path: Path, name: str) -> None:
    path = fixture(name, tmp_path)
    (check,) = json.loads(run("check", "--json", path).stdout)
    replayed = run("show", "--replayed", "--json", path)
    stats = run("stats", "--json", path)
    try:
        session = Session.load(path)  # after the reads: load repairs a torn tail
    except CorruptTranscript as exc:  # UnsupportedVersion too
        assert check["exit"] == 2
        if not check["reason"].startswith("not a transcript"):
            assert check["line"] == exc.line
        assert replayed.returncode == 2 and "Traceback" not in replayed.stderr
        if stats.returncode == 0:  # shown from peek's index, with no replayed state
            doc = json.loads(stats.stdout)
            assert doc["messages"]["live"] is None and doc["pending"] is None
            assert doc["replay_error"] is not None
        return
    with session:
        assert check["exit"] == (1 if session.warnings else 0)
        assert check["envelopes"] == len(session.events)
        assert check["live_messages"] == len(session.messages)
        doc = json.loads(replayed.stdout)
        assert [m["id"] for m in doc["messages"]] == session.message_ids
        assert [Message.from_dict(m) for m in doc["messages"]] == session.messages
        assert doc["grants"] == session.grants
        st = json.loads(stats.stdout)
        assert st["messages"]["live"] == len(session.messages)
        assert st["replay_error"] is None
        assert [(p["op_id"], p["call_id"], p["tool"], p["state"], p["result_message_id"], p["dispatched_ts"]) for p in st["pending"]] == [
            (op.op_id, op.call_id, op.tool, op.state, op.result_message_id, op.dispatched_ts)
            for op in session.pending_tool_operations()
        ]
