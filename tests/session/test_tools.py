"""Tool operations: the dispatched and settled lines, what a settle refuses, and
the pending states a crash leaves, before and after a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import (
    Message,
    PendingToolOperation,
    Session,
    ToolOperationError,
    canonical_json,
    digest,
)

from ._helpers import freeze, line, meta, msg, parsed, state, write

DISPATCH_KEYS = {"call-id", "tool", "arguments", "arguments-digest", "idempotency", "run-id", "round"}


def test_dispatched_payload(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        op = s.append_tool_dispatched("call_1", "read_file", {"path": "a.txt"}, idempotency="idempotent",
                                      run_id="run-7", round=2)
        op2 = s.append_tool_dispatched("call_2", "rm", ["-rf", "x"])
    envs = parsed(tmp_path / "run.jsonl")
    assert envs[1]["id"] == op and envs[1]["type"] == "tool-dispatched"
    assert envs[1]["payload"] == {"call-id": "call_1", "tool": "read_file", "arguments": {"path": "a.txt"},
                                  "arguments-digest": digest(canonical_json({"path": "a.txt"})),
                                  "idempotency": "idempotent", "run-id": "run-7", "round": 2}
    assert set(envs[2]["payload"]) == DISPATCH_KEYS
    assert envs[2]["id"] == op2
    assert envs[2]["payload"]["idempotency"] == "unknown"
    assert envs[2]["payload"]["run-id"] is None and envs[2]["payload"]["round"] is None


def test_settled_payload_with_and_without_optional_fields(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        ops = [s.append_tool_dispatched(f"c{i}", "t", {}) for i in range(4)]
        bare = s.append_tool_settled(ops[0], "completed")
        art = {"file": "sha256-00", "digest": "sha256:00", "bytes": 10, "chars": 10, "elided-chars": 4}
        full = s.append_tool_settled(ops[1], "failed", reason="timeout", duration=12.5,
                                     result_digest="sha256:ab", artifact=art, error="boom")
        some = s.append_tool_settled(ops[2], "outcome-unknown", duration=0)
        assert [p.op_id for p in s.pending_tool_operations()] == [ops[3]]
    envs = {e["id"]: e for e in parsed(tmp_path / "run.jsonl")}
    assert envs[bare]["type"] == "tool-settled"
    assert envs[bare]["payload"] == {"op-id": ops[0], "outcome": "completed"}
    assert envs[full]["payload"] == {"op-id": ops[1], "outcome": "failed", "reason": "timeout", "duration": 12.5,
                                     "result-digest": "sha256:ab", "artifact": art, "error": "boom"}
    assert envs[some]["payload"] == {"op-id": ops[2], "outcome": "outcome-unknown", "duration": 0}


def refused(s: Session, exc: type[Exception], call: Any) -> None:
    before_file = freeze(s.path)
    before = ([p.op_id for p in s.pending_tool_operations()], len(s.events))
    with pytest.raises(exc):
        call()
    assert state(s.path) == before_file
    assert ([p.op_id for p in s.pending_tool_operations()], len(s.events)) == before


def test_settle_refuses_unknown_and_settled_operations(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    m = s.append_message(Message.user("x"))
    op = s.append_tool_dispatched("c1", "t", {})
    other = s.append_tool_dispatched("c2", "t", {})
    settled = s.append_tool_settled(op, "completed")
    for bad in ("nope", "", m, settled, s.events[0].id, "c2"):
        refused(s, ToolOperationError, lambda bad=bad: s.append_tool_settled(bad, "completed"))
    refused(s, ToolOperationError, lambda: s.append_tool_settled(op, "completed"))
    refused(s, ToolOperationError, lambda: s.append_tool_settled(op, "failed"))
    refused(s, ToolOperationError, lambda: s.resolve_tool_operation(op))
    refused(s, ToolOperationError, lambda: s.resolve_tool_operation("nope"))
    s.close()
    with Session.load(tmp_path / "run.jsonl") as t:
        # Still refused after a reload; the other one can still be settled, once.
        refused(t, ToolOperationError, lambda: t.append_tool_settled(op, "completed"))
        t.append_tool_settled(other, "failed")
        refused(t, ToolOperationError, lambda: t.append_tool_settled(other, "failed"))
        assert t.pending_tool_operations() == []


@pytest.mark.parametrize("outcome", ["succeeded", "", "Completed", "unknown", None, 1])
def test_outcome_must_be_one_of_three(tmp_path: Path, outcome: Any) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        op = s.append_tool_dispatched("c1", "t", {})
        refused(s, ValueError, lambda: s.append_tool_settled(op, outcome))
        if outcome is not None:   # None is resolve's "pick the default"
            refused(s, ValueError, lambda: s.resolve_tool_operation(op, outcome))
        s.append_tool_settled(op, "completed")


def pending_states(s: Session) -> list[tuple[str, str, str | None]]:
    return [(p.op_id, p.state, p.result_message_id) for p in s.pending_tool_operations()]


def crashed_run(s: Session) -> dict[str, str]:
    """Four calls, left the ways a SIGKILL leaves them."""
    ids: dict[str, str] = {}
    ids["early"] = s.append_message(Message.tool("call_c", "a result from before the dispatch"))
    ids["assistant"] = s.append_message(Message.assistant(None, [
        {"id": c, "type": "function", "function": {"name": "t", "arguments": "{}"}}
        for c in ("call_a", "call_b", "call_c", "call_d")]))
    ids["a"] = s.append_tool_dispatched("call_a", "read", '{"p": "a"}', idempotency="idempotent",
                                        run_id="r1", round=1)
    ids["b"] = s.append_tool_dispatched("call_b", "write", {"p": "b"}, run_id="r1", round=1)
    ids["c"] = s.append_tool_dispatched("call_c", "exec", "ls -la", run_id="r1", round=1)
    ids["d"] = s.append_tool_dispatched("call_d", "read", {}, run_id="r1", round=1)
    ids["a-result"] = s.append_message(Message.tool("call_a", "contents of a"))
    ids["d-result"] = s.append_message(Message.tool("call_d", "d"))
    s.append_tool_settled(ids["d"], "completed")    # d: fully done
    # b: dispatched, nothing else.  c: only a tool message from before its dispatch.
    return ids


def test_pending_states(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids = crashed_run(s)
    want = [(ids["a"], "result-persisted", ids["a-result"]), (ids["b"], "dispatched", None),
            (ids["c"], "dispatched", None)]
    assert pending_states(s) == want
    pending = s.pending_tool_operations()
    assert all(isinstance(p, PendingToolOperation) for p in pending)
    a = pending[0]
    events = {e.id: e for e in s.events}
    assert (a.op_id, a.call_id, a.tool, a.arguments, a.arguments_digest, a.idempotency, a.run_id, a.round) == (
        ids["a"], "call_a", "read", {"p": "a"}, digest(canonical_json({"p": "a"})), "idempotent", "r1", 1)
    assert a.dispatched_ts == events[ids["a"]].ts
    assert pending[2].arguments == "ls -la"
    assert pending[1].idempotency == "unknown"
    s.close()
    with Session.load(tmp_path / "run.jsonl") as t:
        assert pending_states(t) == want
        assert t.pending_tool_operations() == pending


def test_a_result_written_later_moves_an_operation_to_result_persisted(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        op = s.append_tool_dispatched("call_x", "t", {})
        s.append_message(Message.tool("call_other", "not this one"))
        assert pending_states(s) == [(op, "dispatched", None)]
        r = s.append_message(Message.tool("call_x", "this one"))
        assert pending_states(s) == [(op, "result-persisted", r)]


def test_resolve_defaults_and_explicit_outcome(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids = crashed_run(s)
    s.close()
    s = Session.load(tmp_path / "run.jsonl")
    ra = s.resolve_tool_operation(ids["a"])
    rb = s.resolve_tool_operation(ids["b"])
    rc = s.resolve_tool_operation(ids["c"], "failed", reason="the user said so")
    assert s.pending_tool_operations() == []
    s.close()
    envs = {e["id"]: e for e in parsed(tmp_path / "run.jsonl")}
    assert envs[ra]["type"] == envs[rb]["type"] == envs[rc]["type"] == "tool-settled"
    assert envs[ra]["payload"] == {"op-id": ids["a"], "outcome": "completed",
                                   "reason": "resolved after an interrupted run"}
    assert envs[rb]["payload"] == {"op-id": ids["b"], "outcome": "outcome-unknown",
                                   "reason": "resolved after an interrupted run"}
    assert envs[rc]["payload"] == {"op-id": ids["c"], "outcome": "failed", "reason": "the user said so"}
    with Session.load(tmp_path / "run.jsonl") as t:
        assert t.pending_tool_operations() == []
        with pytest.raises(ToolOperationError):
            t.resolve_tool_operation(ids["a"])


def test_pending_from_a_hand_written_file(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    dispatched: dict[str, Any] = {"call-id": "k1", "tool": "t", "arguments": {}, "arguments-digest": digest("{}"),
                  "idempotency": "unknown", "run-id": None, "round": None}
    write(p, meta(), line("op1", "tool-dispatched", dispatched, ts="2026-01-02T03:04:05.000006Z"),
          line("op2", "tool-dispatched", {**dispatched, "call-id": "k2"}),
          line("s2", "tool-settled", {"op-id": "op2", "outcome": "failed"}),
          msg("r1", role="tool", content="x", tool_call_id="k1"))
    with Session.load(p) as s:
        (op,) = s.pending_tool_operations()
        assert (op.op_id, op.state, op.result_message_id) == ("op1", "result-persisted", "r1")
        assert op.dispatched_ts == "2026-01-02T03:04:05.000006Z"
        with pytest.raises(ToolOperationError):
            s.append_tool_settled("op2", "completed")
        s.resolve_tool_operation("op1")
        assert s.pending_tool_operations() == []


def test_tool_lines_are_not_messages(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        m = s.append_message(Message.user("x"))
        op = s.append_tool_dispatched("c", "t", {})
        s.append_tool_settled(op, "completed")
        assert s.message_ids == [m]
        assert len(s.messages) == 1


def test_result_persisted_is_about_the_file_not_the_live_view(tmp_path: Path) -> None:
    # The tool message is in the file after the dispatch: eliding it or compacting
    # it away changes what the model is shown, not whether the result was persisted.
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        a = s.append_tool_dispatched("call_a", "t", {})
        ra = s.append_message(Message.tool("call_a", "big result"))
        b = s.append_tool_dispatched("call_b", "t", {})
        rb = s.append_message(Message.tool("call_b", "another"))
        s.append_elision([(rb, "[elided]")])
        s.append_compaction("sum", ra, 1, 1)
        assert ra not in s.message_ids
        want = [(a, "result-persisted", ra), (b, "result-persisted", rb)]
        assert pending_states(s) == want
    with Session.load(p) as s:
        assert pending_states(s) == want
        assert s.resolve_tool_operation(a) and s.resolve_tool_operation(b)
    envs = parsed(p)
    assert [e["payload"]["outcome"] for e in envs[-2:]] == ["completed", "completed"]


@pytest.mark.parametrize("role", ["user", "assistant", "system"])
def test_only_a_tool_message_persists_a_result(tmp_path: Path, role: str) -> None:
    # SPEC: "result-persisted" means the *tool message* with this call-id is
    # there. Another role that happens to carry a tool_call_id is not a result.
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        op = s.append_tool_dispatched("call_a", "t", {})
        s.append_message(Message(role=role, content="not a result", tool_call_id="call_a"))
        assert pending_states(s) == [(op, "dispatched", None)]
        r = s.append_message(Message.tool("call_a", "the result"))
        assert pending_states(s) == [(op, "result-persisted", r)]


@pytest.mark.parametrize("depth", [509, 510, 511, 512, 513, 5000])
def test_an_arguments_string_too_deep_to_store_parsed_is_stored_as_the_string(tmp_path: Path,
                                                                              depth: int) -> None:
    # The line's object and the payload hold the arguments: parsed, they may nest
    # 510 deep (the reader's limit is 512). A deeper string is not storable JSON,
    # so it is stored as the string it is: a string is always storable.
    text = "[" * depth + "]" * depth
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        op = s.append_tool_dispatched("c", "t", text)
        stored = s.pending_tool_operations()[0].arguments
    parsed_ok = depth <= 510
    assert isinstance(stored, list) if parsed_ok else stored == text
    with Session.load(p) as again:
        (pending,) = again.pending_tool_operations()
        assert pending.op_id == op and pending.arguments == stored
        assert pending.arguments_digest == digest(canonical_json(stored))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(0, 5), st.integers(0, 99)), max_size=40))
def test_a_tool_message_answers_every_pending_operation_for_its_call(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int, int, int, int]]
) -> None:
    # Random runs of dispatches (some without a call id), messages naming a call (only a tool
    # message answers one) and settles, over a few call ids: the pending operations and their
    # results are a naive model's.
    chunks = [meta()]
    model: dict[str, list[Any]] = {}  # op id -> [call id, result id, settled]
    for i, (kind, call, variant, pick) in enumerate(steps):
        if kind <= 1:
            call_id = None if variant == 0 else f"c{call}"
            chunks.append(line(f"op{i}", "tool-dispatched", {"tool": "t"} if call_id is None else
                               {"call-id": call_id, "tool": "t"}))
            model[f"op{i}"] = [call_id, None, False]
        elif kind <= 3:
            role = "assistant" if variant == 0 else "tool"
            chunks.append(msg(f"m{i}", role=role, tool_call_id=f"c{call}"))
            for op in model.values():
                if role == "tool" and not op[2] and op[1] is None and op[0] == f"c{call}":
                    op[1] = f"m{i}"
        elif open_ops := [op_id for op_id, op in model.items() if not op[2]]:
            op_id = open_ops[pick % len(open_ops)]
            chunks.append(line(f"s{i}", "tool-settled", {"op-id": op_id, "outcome": "completed"}))
            model[op_id][2] = True
    path = tmp_path_factory.mktemp("ops") / "run.jsonl"
    write(path, *chunks)
    want = [(op_id, "dispatched" if op[1] is None else "result-persisted", op[1])
            for op_id, op in model.items() if not op[2]]
    with Session.load(path) as s:
        assert pending_states(s) == want
