"""Property: on generated transcripts, the envelopes table gives back every line's id and type, in
order, and the messages table the live list replay gives (hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.fleet import export_transcripts

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
step = st.one_of(
    st.tuples(st.just("user"), text),
    st.tuples(st.just("assistant"), text),
    st.tuples(st.just("tool-call"), st.sampled_from(["ls", "cat", "grep"])),
    st.tuples(st.just("settle"), st.sampled_from(["completed", "failed", "outcome-unknown"])),
    st.tuples(st.just("compact"), text),
    st.tuples(st.just("elide"), text),
    st.tuples(st.just("rewind"), st.integers(0, 3)),
    st.tuples(st.just("event"), text),
)


def write(path: Path, steps: list[tuple[str, Any]]) -> None:
    with Session.create(path, {"agent": "prop"}) as s:
        pending: list[str] = []
        for n, (kind, arg) in enumerate(steps):
            live = s.message_ids
            if kind == "user":
                s.append_message(Message.user(arg))
            elif kind == "assistant":
                s.append_message(Message.assistant(arg), extra={"k": n})
            elif kind == "tool-call":
                call = f"c{n}"
                s.append_message(Message.assistant(tool_calls=[{"id": call, "type": "function",
                                                                 "function": {"name": arg, "arguments": "{}"}}]))
                pending.append(s.append_tool_dispatched(call, arg, {"n": n}))
                if n % 2:
                    s.append_message(Message.tool(call, "out"))
            elif kind == "settle" and pending:
                s.append_tool_settled(pending.pop(0), arg, duration=n / 10)
            elif kind == "compact" and live:
                s.append_compaction(arg, live[len(live) // 2], 100, 10,
                                    replacement=[Message.user("r")] if n % 3 == 0 else None)
            elif kind == "elide" and live:
                s.append_elision([(live[-1], arg)])
            elif kind == "rewind" and live:
                s.append_rewind(live[min(arg, len(live) - 1)] if arg else None)
            elif kind == "event":
                s.append_grants({"g": arg})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=25))
def test_envelopes_give_back_every_line_in_order(steps: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        write(path, steps)
        out = Path(tmp) / "out"
        export_transcripts(path, out=out)
        con = duckdb.connect()
        rows = con.execute(f"select line, id, type from read_parquet('{out}/envelopes/**/*.parquet') order by line").fetchall()
        peeked = Session.peek(path)
        assert rows == [(e.line, e.id, e.type) for e in peeked.envelopes]
        with Session.load(path) as s:
            ids, roles, texts = s.message_ids, [m.role for m in s.messages], s.messages
            pending = [(p.op_id, p.state) for p in s.pending_tool_operations()]
        live = con.execute(f"""select id, role, live_position from read_parquet('{out}/messages/**/*.parquet')
                               where live order by live_position""").fetchall()
        assert [(i, r) for i, r, _ in live] == list(zip(ids, roles))
        assert [p for *_, p in live] == list(range(len(texts)))
        got = con.execute(f"""select op_id, state from read_parquet('{out}/tool_operations/**/*.parquet')
                              where state in ('dispatched', 'result-persisted') order by dispatch_line""").fetchall()
        assert got == pending
