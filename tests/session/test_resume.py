"""Resuming into a model API: the pairing of tool calls and tool messages,
``unanswered_tool_calls``, ``answer_unanswered_tool_calls`` and ``chat_messages``.

The property tests compare the session with a naive model computed from
``messages`` (a quadratic search, written as SPEC states the rule) over
generated conversations with rewinds, compactions (with and without a
replacement) and elisions; the crash tests cut the one write at every byte and
kill a real child mid-tool.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import INTERRUPTED, Message, Session, UnansweredToolCall

from ._helpers import finish, parsed, spawn


def call(call_id: Any, tool: str = "search", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}


# -- the model ---------------------------------------------------------------


def model_pairing(messages: list[Message]) -> tuple[list[tuple[int, int, int | None]], list[int]]:
    """SPEC's rule, naively: ``(message, position in tool_calls, answering
    message or None)`` for every call, and the orphans' positions."""
    calls: list[list[Any]] = []
    orphans = []
    for p, m in enumerate(messages):
        if m.role == "assistant" and isinstance(m.tool_calls, list):
            for i, c in enumerate(m.tool_calls):
                if isinstance(c, dict) and isinstance(c.get("id"), str):
                    calls.append([p, i, None])
        elif m.role == "tool":
            for c in calls:  # the earliest live call before it, with its id, unanswered
                tc = messages[c[0]].tool_calls
                assert tc is not None
                if c[2] is None and c[0] < p and tc[c[1]]["id"] == m.tool_call_id:
                    c[2] = p
                    break
            else:
                orphans.append(p)
    return [(a, b, c) for a, b, c in calls], orphans


def model_unanswered(s: Session) -> list[UnansweredToolCall]:
    messages, ids = s.messages, s.message_ids
    latest = {op.call_id: op for op in s.pending_tool_operations()}
    out = []
    for p, i, answer in model_pairing(messages)[0]:
        if answer is None:
            tc = messages[p].tool_calls
            assert tc is not None
            c = tc[i]
            out.append(UnansweredToolCall(c["id"], c["function"]["name"], c["function"]["arguments"],
                                          ids[p], latest.get(c["id"])))
    return out


def model_chat(messages: list[Message]) -> list[dict[str, Any]]:
    calls, orphans = model_pairing(messages)
    answers = {a for _, _, a in calls if a is not None}
    out = []
    for p, m in enumerate(messages):
        if p in answers or p in orphans:
            continue
        out.append(m.to_chat())
        out.extend(messages[a].to_chat() for q, _, a in calls if q == p and a is not None)
    return out


def strict_api_accepts(chat: list[dict[str, Any]]) -> bool:
    """What a strict chat API checks: each assistant's calls answered, in
    order, by the tool messages right after it, and no other tool message."""
    k = 0
    while k < len(chat):
        m = chat[k]
        k += 1
        if m["role"] == "tool":
            return False
        if m["role"] == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                if not (isinstance(c, dict) and isinstance(c.get("id"), str)):
                    continue
                if k >= len(chat) or chat[k]["role"] != "tool" or chat[k]["tool_call_id"] != c["id"]:
                    return False
                k += 1
    return True


# -- the rule, by hand -------------------------------------------------------


def test_an_answered_call_is_not_unanswered_and_a_pending_one_names_its_operation(tmp_path: Path) -> None:
    with Session.create(tmp_path / "t.jsonl") as s:
        s.append_message(Message.user("go"))
        a = s.append_message(Message.assistant(None, [call("c1", "read", '{"p": 1}'), call("c2")]))
        s.append_tool_dispatched("c1", "read", {"p": 1})
        s.append_message(Message.tool("c1", "done"))
        op = s.append_tool_dispatched("c2", "search", {})
        [u] = s.unanswered_tool_calls()
        assert u == UnansweredToolCall("c2", "search", "{}", a, s.pending_tool_operations()[-1])
        assert u.operation is not None and u.operation.op_id == op
        with pytest.raises(AttributeError):
            u.call_id = "x"  # type: ignore[misc]


def test_duplicate_ids_answers_before_their_call_and_unknown_ids(tmp_path: Path) -> None:
    with Session.create(tmp_path / "t.jsonl") as s:
        early = s.append_message(Message.tool("c1", "too early"))
        a1 = s.append_message(Message.assistant(None, [call("c1"), call("c1"), {"type": "x"}]))
        s.append_message(Message.tool("c1", "first"))
        unknown = s.append_message(Message.tool("nope", "?"))
        a2 = s.append_message(Message.assistant(None, [call("c1")]))
        s.append_message(Message.tool("c1", "second"))   # answers a1's second c1, not a2's
        # the second c1 of a1 is answered, a2's c1 is not; the malformed entry is no call
        assert [(u.call_id, u.message_id) for u in s.unanswered_tool_calls()] == [("c1", a2)]
        chat = s.chat_messages()
        assert [m.get("content") for m in chat] == [None, "first", "second", None]
        assert early not in json.dumps(chat) and unknown not in json.dumps(chat)
        assert chat == model_chat(s.messages)
        assert [m.role for m in s.messages] == ["tool", "assistant", "tool", "tool", "assistant", "tool"]


def test_answer_writes_one_settle_per_pending_operation_and_then_the_tool_message(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.assistant(None, [call("c1"), call("c2"), call("c3")]))
        s.append_message(Message.tool("c2", "ok"))
        op1 = s.append_tool_dispatched("c1", "search", {})
        op1b = s.append_tool_dispatched("c1", "search", {})   # a retry
        size = path.stat().st_size
        ids = s.answer_unanswered_tool_calls()
        assert s.unanswered_tool_calls() == [] and s.pending_tool_operations() == []
        assert s.answer_unanswered_tool_calls() == []
        assert path.stat().st_size > size
    types = [(e["type"], e["payload"].get("op-id", e["payload"].get("tool_call_id"))) for e in parsed(path)]
    assert types[-4:] == [("tool-settled", op1), ("tool-settled", op1b), ("message", "c1"), ("message", "c3")]
    settles = [e["payload"] for e in parsed(path) if e["type"] == "tool-settled"]
    assert all(p["outcome"] == "outcome-unknown" and "interrupted" in p["reason"] for p in settles)
    with Session.load(path) as s:
        assert [e.id for e in s.events][-2:] == ids
        assert [m.content for m in s.messages][-2:] == [INTERRUPTED, INTERRUPTED]
        assert s.unanswered_tool_calls() == []
        assert strict_api_accepts(s.chat_messages())


def test_nothing_unanswered_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.assistant(None, [call("c1")]))
        s.append_message(Message.tool("c1", "ok"))
        s.append_tool_dispatched("c9", "orphaned op", {})   # a pending op with no live call
        before = path.read_bytes()
        assert s.answer_unanswered_tool_calls(lambda c: 1 / 0) == []   # type: ignore[arg-type,return-value]
        assert path.read_bytes() == before
        assert len(s.pending_tool_operations()) == 1


def test_content_may_be_a_callable_and_a_bad_one_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.assistant(None, [call("c1", "read"), call("c2", "write")]))
        before = path.read_bytes()
        with pytest.raises(TypeError):
            s.answer_unanswered_tool_calls(lambda c: 7 if c.tool == "write" else "x")  # type: ignore[arg-type,return-value]
        with pytest.raises(TypeError):
            s.answer_unanswered_tool_calls(7)  # type: ignore[arg-type]
        assert path.read_bytes() == before
        s.answer_unanswered_tool_calls(lambda c: f"{c.tool} was cut short")
        assert [m.content for m in s.messages[1:]] == ["read was cut short", "write was cut short"]


def test_a_closed_session_refuses_to_answer(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    s = Session.create(path)
    s.append_message(Message.assistant(None, [call("c1")]))
    s.close()
    from agent_transcript import SessionClosed
    with pytest.raises(SessionClosed):
        s.answer_unanswered_tool_calls()
    assert len(s.unanswered_tool_calls()) == 1   # reading still works


def test_chat_lays_an_answer_after_its_call_when_the_run_went_on(tmp_path: Path) -> None:
    """A Codex rollout can go on past a call it never answered: the answer,
    written at the end, is sent right after its call."""
    with Session.create(tmp_path / "t.jsonl") as s:
        s.append_message(Message.system("sys"))
        s.append_message(Message.assistant("let me look", [call("c1")]))
        s.append_message(Message.user("and?"))
        s.append_message(Message.assistant("done"))
        s.answer_unanswered_tool_calls("lost")
        assert [m.role for m in s.messages] == ["system", "assistant", "user", "assistant", "tool"]
        chat = s.chat_messages()
        assert [(m["role"], m["content"]) for m in chat] == [
            ("system", "sys"), ("assistant", "let me look"), ("tool", "lost"), ("user", "and?"),
            ("assistant", "done")]
        assert "sysprompt" not in chat[0]


def test_to_chat_drops_the_library_flags() -> None:
    m = Message(role="user", content="x", name="n", sticky=True, sysprompt=True, depth=3)
    assert m.to_chat() == {"role": "user", "content": "x", "name": "n"}
    assert Message.system("s").to_chat() == {"role": "system", "content": "s"}
    t = Message.tool("c", "r")
    assert t.to_chat() == {"role": "tool", "content": "r", "tool_call_id": "c"}
    a = Message.assistant(None, [call("c")])
    assert a.to_chat() == {"role": "assistant", "content": None, "tool_calls": [call("c")]}


# -- properties ----------------------------------------------------------------

CALL_IDS = ["a", "b", "c"]

step = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=3)),
    st.tuples(st.just("assistant"), st.lists(st.one_of(st.sampled_from(CALL_IDS), st.just(None)), max_size=3)),
    st.tuples(st.just("tool"), st.sampled_from([*CALL_IDS, "zz"])),
    st.tuples(st.just("dispatch"), st.sampled_from(CALL_IDS)),
    st.tuples(st.just("settle"), st.integers(0, 5)),
    st.tuples(st.just("rewind"), st.integers(-1, 30)),
    st.tuples(st.just("compact"), st.integers(0, 30)),
    st.tuples(st.just("replace"), st.tuples(st.integers(0, 30), st.lists(
        st.one_of(st.sampled_from(CALL_IDS).map(lambda c: Message.tool(c, "r")),
                  st.sampled_from(CALL_IDS).map(lambda c: Message.assistant(None, [call(c)])),
                  st.just(Message.user("kept"))), max_size=3))),
    st.tuples(st.just("elide"), st.integers(0, 30)),
)


def play(s: Session, steps: list[tuple[str, Any]]) -> None:
    for kind, arg in steps:
        ids = s.message_ids
        if kind == "user":
            s.append_message(Message.user(arg))
        elif kind == "assistant":
            s.append_message(Message.assistant(
                "a", [call(c) if c is not None else {"type": "function"} for c in arg] or None))
        elif kind == "tool":
            s.append_message(Message.tool(arg, "r"))
        elif kind == "dispatch":
            s.append_tool_dispatched(arg, "search", {})
        elif kind == "settle":
            pending = s.pending_tool_operations()
            if pending:
                s.append_tool_settled(pending[arg % len(pending)].op_id, "completed")
        elif kind == "rewind":
            s.append_rewind(None if arg < 0 or not ids else ids[arg % len(ids)])
        elif ids and kind == "compact":
            s.append_compaction("summary", ids[arg % len(ids)], 10, 1)
        elif ids and kind == "replace":
            s.append_compaction("summary", ids[arg[0] % len(ids)], 10, 1, replacement=arg[1])
        elif ids and kind == "elide":
            s.append_elision([(ids[arg % len(ids)], "[elided]")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(step, max_size=25))
def test_the_session_agrees_with_the_model(fast_tmp: Path, steps: list[tuple[str, Any]]) -> None:
    path = fast_tmp / "t.jsonl"
    path.unlink(missing_ok=True)
    with Session.create(path) as s:
        play(s, steps)
        assert s.unanswered_tool_calls() == model_unanswered(s)
        assert s.chat_messages() == model_chat(s.messages)
        calls = [u.call_id for u in s.unanswered_tool_calls()]
        pending_calls = {op.call_id for op in s.pending_tool_operations()}
        ids = s.answer_unanswered_tool_calls()
        assert len(ids) == len(calls)
        assert s.unanswered_tool_calls() == []
        assert not pending_calls & set(calls) & {op.call_id for op in s.pending_tool_operations()}
        chat = s.chat_messages()
        assert chat == model_chat(s.messages)
        assert strict_api_accepts(chat)
    with Session.load(path) as s:   # what the file says, read back
        assert s.unanswered_tool_calls() == []
        assert s.chat_messages() == chat


# -- crashes -------------------------------------------------------------------


def test_a_crash_at_every_byte_of_the_answer_leaves_a_prefix_and_again_answers_the_rest(
        fast_tmp: Path) -> None:
    path = fast_tmp / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.assistant(None, [call("c1"), call("c2"), call("c3")]))
        s.append_tool_dispatched("c1", "search", {})
        s.append_tool_dispatched("c3", "search", {})
        s.append_tool_dispatched("c3", "search", {})
        cut = path.stat().st_size
        assert len(s.answer_unanswered_tool_calls()) == 3
    data = path.read_bytes()
    head, written = data[:cut], data[cut:]
    assert written.count(b"\n") == 6   # three settles, three tool messages, one write
    whole_lines = [json.loads(x) for x in written.splitlines()]
    for at in range(len(written) + 1):
        path.write_bytes(head + written[:at])
        with Session.load(path) as s:
            kept = len(s.events) - head.count(b"\n")
            assert [e.id for e in s.events][-kept or len(s.events):] == [
                e["id"] for e in whole_lines[:kept]], at
            s.answer_unanswered_tool_calls()
            assert s.unanswered_tool_calls() == [] and s.pending_tool_operations() == []
            answers = [m.tool_call_id for m in s.messages if m.role == "tool"]
            assert answers == ["c1", "c2", "c3"], at   # each call answered once, in order
            assert strict_api_accepts(s.chat_messages())


MID_TOOL = r"""
import sys, time
from agent_transcript import Message, Session
path, written = sys.argv[1], sys.argv[2] == "1"
s = Session.create(path)
s.append_message(Message.user("what is in the file?"))
s.append_message(Message.assistant(None, [{"id": "call-1", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\": \"x\"}"}}]))
s.append_tool_dispatched("call-1", "read", {"path": "x"})
if written:
    s.append_message(Message.tool("call-1", "the file's text"))
print("in the tool", flush=True)
time.sleep(60)   # the tool runs (or its settle line is about to be written)
"""


@pytest.mark.parametrize("written", [False, True], ids=["no-tool-message", "tool-message-written"])
def test_a_run_killed_mid_tool_resumes_into_a_valid_conversation(tmp_path: Path, written: bool) -> None:
    path = tmp_path / "run.jsonl"
    child = spawn(MID_TOOL, str(path), "1" if written else "0")
    try:
        assert child.stdout is not None and child.stdout.readline() == "in the tool\n"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        finish(child)
    assert child.returncode == -signal.SIGKILL
    with Session.load(path) as s:
        [op] = s.pending_tool_operations()
        assert op.state == ("result-persisted" if written else "dispatched")
        if written:
            # answered by its tool message: only the settle line is missing
            assert s.unanswered_tool_calls() == []
            assert s.answer_unanswered_tool_calls() == []
            s.resolve_tool_operation(op.op_id)
        else:
            [u] = s.unanswered_tool_calls()
            assert (u.call_id, u.tool, u.arguments, u.operation) == ("call-1", "read", '{"path": "x"}', op)
            assert not strict_api_accepts(s.chat_messages())
            [answer] = s.answer_unanswered_tool_calls()
            assert s.message_ids[-1] == answer
        assert s.pending_tool_operations() == []
        chat = s.chat_messages()
    assert strict_api_accepts(chat)
    assert [m["role"] for m in chat] == ["user", "assistant", "tool"]
    with Session.load(path) as s:
        assert s.chat_messages() == chat and s.unanswered_tool_calls() == []
