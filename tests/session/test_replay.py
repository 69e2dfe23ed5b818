"""Replay: what load rebuilds from the lines, and which lines it refuses.

Compaction and elision are checked three ways: against the SPEC's formula
spelled out in each test, against a small pure-Python replay of the file
(``model_replay``), and against the writer's own view before it closed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import (
    CorruptTranscript,
    Envelope,
    Message,
    Session,
    UnknownId,
    UnsupportedVersion,
    canonical_json,
    digest,
)

from ._helpers import freeze, line, meta, msg, parsed, state, write

# -- a pure-Python replay of SPEC's rules, over the file's bytes --------------

FIELDS = ("content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth")


def as_message(payload: dict[str, Any]) -> Message:
    return Message(
        role=payload["role"],
        content=payload.get("content"),
        name=payload.get("name"),
        tool_calls=payload.get("tool_calls"),
        tool_call_id=payload.get("tool_call_id"),
        sticky=bool(payload.get("sticky", False)),
        sysprompt=bool(payload.get("sysprompt", False)),
        depth=payload.get("depth"),
    )


def sticky(m: Message) -> bool:
    return m.sticky or m.sysprompt or m.depth is not None


@dataclasses.dataclass
class Replayed:
    messages: list[Message]
    ids: list[str]
    grants: Any
    events: list[tuple[str, str, str, int, Any, int]]


def model_replay(path: Path) -> Replayed:
    live: list[tuple[str, Message]] = []
    grants = None
    events = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip(b" \t\r"):
            continue
        e = json.loads(raw)
        events.append((e["id"], e["type"], e["ts"], e["v"], e["payload"], n))
        t, p = e["type"], e["payload"]
        ids = [i for i, _ in live]
        if t == "message":
            live.append((e["id"], as_message(p)))
        elif t == "grants":
            grants = p["grants"]
        elif t == "compaction":
            i = ids.index(p["replaces-through-id"])
            live = ([x for x in live[: i + 1] if sticky(x[1])] + [(e["id"], Message(role="user", content=p["summary"]))]
                    + live[i + 1:])
        elif t == "elision":
            for item in p["items"]:
                j = [i for i, _ in live].index(item["id"])
                live[j] = (live[j][0], dataclasses.replace(live[j][1], content=item["stub"]))
    return Replayed([m for _, m in live], [i for i, _ in live], grants, events)


def as_tuples(events: Any) -> list[tuple[str, str, str, int, Any, int]]:
    return [(e.id, e.type, e.ts, e.v, e.payload, e.line) for e in events]


def check_against_model(s: Session) -> None:
    r = model_replay(s.path)
    assert s.messages == r.messages
    assert s.message_ids == r.ids
    assert s.grants == r.grants
    assert as_tuples(s.events) == r.events


def reload(s: Session) -> Session:
    """Close ``s`` and load its file; the loaded session must equal what ``s`` had."""
    before = (s.messages, s.message_ids, s.grants, list(s.events), s.meta)
    s.close()
    t = Session.load(s.path)
    assert (t.messages, t.message_ids, t.grants, list(t.events), t.meta) == before
    assert t.warnings == []
    check_against_model(t)
    return t


# -- round trips --------------------------------------------------------------

FULL = Message(
    role="assistant",
    content=[{"type": "text", "text": "calling"}, {"type": "image_url", "image_url": {"url": "data:,"}}],
    name="planner",
    tool_calls=[{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":\".\"}"}}],
    tool_call_id="call_0",
    sticky=True,
    sysprompt=True,
    depth=4,
)


def test_round_trip_of_every_payload_type(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl", {"agent": "t"})
    m1 = s.append_message(FULL)
    m2 = s.append_message(Message(role="user", content=None))
    m3 = s.append_message(Message.tool("call_1", "a.txt\nb.txt"), extra={"finish-reason": "stop", "n": [1, 2.5]})
    g1 = s.append_grants({"fs.read": "always"})
    g2 = s.append_grants(["a", {"b": None}])
    el = s.append_elision([(m3, "[2 files]")])
    op = s.append_tool_dispatched("call_1", "ls", {"p": "."}, idempotency="idempotent", run_id="run-1", round=3)
    st1 = s.append_tool_settled(op, "failed", reason="boom", duration=1.5, result_digest=digest("x"),
                                artifact={"file": "f", "digest": "d", "bytes": 1, "chars": 1, "elided-chars": 0},
                                error={"code": 2})
    op2 = s.append_tool_dispatched("call_2", "cat", "not json", run_id=None, round=None)
    st2 = s.append_tool_settled(op2, "outcome-unknown")
    rc = s.append_run_context([("identity", "I am t")], [("date", "2026-08-09"), ("n", 3), ("x", None)])
    k = s.append_compaction("summary one", m2, 500, 20, fallback=True)

    payloads = {e["id"]: e["payload"] for e in parsed(s.path)}
    assert payloads[m1] == FULL.to_dict()
    assert payloads[m2] == {"role": "user", "content": None}
    assert payloads[m3] == {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_1",
                            "finish-reason": "stop", "n": [1, 2.5]}
    assert payloads[g1] == {"grants": {"fs.read": "always"}}
    assert payloads[g2] == {"grants": ["a", {"b": None}]}
    assert payloads[el] == {"items": [{"id": m3, "stub": "[2 files]"}]}
    assert payloads[op] == {"call-id": "call_1", "tool": "ls", "arguments": {"p": "."},
                            "arguments-digest": digest(canonical_json({"p": "."})),
                            "idempotency": "idempotent", "run-id": "run-1", "round": 3}
    assert payloads[st1] == {"op-id": op, "outcome": "failed", "reason": "boom", "duration": 1.5,
                             "result-digest": digest("x"),
                             "artifact": {"file": "f", "digest": "d", "bytes": 1, "chars": 1, "elided-chars": 0},
                             "error": {"code": 2}}
    assert payloads[op2]["arguments"] == "not json"
    assert payloads[op2]["idempotency"] == "unknown"
    assert payloads[st2] == {"op-id": op2, "outcome": "outcome-unknown"}
    assert payloads[rc] == {"facts": [["date", "2026-08-09"], ["n", 3], ["x", None]],
                            "sections": [{"name": "identity", "digest": digest("I am t"), "text": "I am t"}]}
    assert payloads[k] == {"summary": "summary one", "replaces-through-id": m2, "tokens-before": 500,
                           "tokens-after": 20, "fallback": True}

    assert s.grants == ["a", {"b": None}]
    assert s.messages == [FULL, Message.user("summary one"),
                          Message(role="tool", content="[2 files]", tool_call_id="call_1")]
    assert s.message_ids == [m1, k, m3]
    assert [e.type for e in s.events] == [
        "session-meta", "message", "message", "message", "grants", "grants", "elision", "tool-dispatched",
        "tool-settled", "tool-dispatched", "tool-settled", "run-context", "compaction"]
    assert [e.line for e in s.events] == list(range(1, 14))
    assert all(isinstance(e, Envelope) for e in s.events)
    t = reload(s)
    assert t.messages[0] == FULL
    t.close()


@pytest.mark.parametrize(("given", "stored"), [
    ('{"b": 2, "a": [1, 2.0]}', {"a": [1, 2.0], "b": 2}),
    (" [1, \"x\"] ", [1, "x"]),
    ("42", 42),
    ('"quoted"', "quoted"),
    ("null", None),
    ("ls -la", "ls -la"),
    ("{not json", "{not json"),
    ("", ""),
    ("NaN", "NaN"),
    ({"path": "/tmp", "deep": {"z": 1, "a": [True, None]}}, {"path": "/tmp", "deep": {"z": 1, "a": [True, None]}}),
    ([1, 2, 3], [1, 2, 3]),
    (7, 7),
    (None, None),
])
def test_tool_arguments_and_their_digest(tmp_path: Path, given: Any, stored: Any) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        op = s.append_tool_dispatched("c", "t", given)
        env = parsed(s.path)[-1]
        assert env["id"] == op
        assert env["payload"]["arguments"] == stored
        assert type(env["payload"]["arguments"]) is type(stored)
        assert env["payload"]["arguments-digest"] == digest(canonical_json(stored))
        (pending,) = s.pending_tool_operations()
        assert pending.arguments == stored
        assert pending.arguments_digest == digest(canonical_json(stored))
    with Session.load(tmp_path / "run.jsonl") as t:
        assert t.pending_tool_operations()[0].arguments == stored


def test_extras_are_dropped_from_messages_and_kept_in_events(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        m = Message.assistant("the answer")
        i = s.append_message(m, extra={"finish-reason": "length", "usage": {"in": 3, "out": 5}})
        assert s.messages == [m]
        assert s.events[-1].payload == {"role": "assistant", "content": "the answer",
                                        "finish-reason": "length", "usage": {"in": 3, "out": 5}}
    with Session.load(tmp_path / "run.jsonl") as t:
        assert t.messages == [m]
        assert t.message_ids == [i]
        assert t.events[-1].payload["finish-reason"] == "length"


def test_a_message_key_wins_over_an_extra(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        m = Message(role="tool", content=None, tool_call_id="c9")
        s.append_message(m, extra={"role": "system", "content": "injected", "tool_call_id": "evil", "x": 1})
        assert s.messages == [m]
    payload = parsed(tmp_path / "run.jsonl")[-1]["payload"]
    assert payload == {"role": "tool", "content": None, "tool_call_id": "c9", "x": 1}
    with Session.load(tmp_path / "run.jsonl") as t:
        assert t.messages == [m]


def test_an_extra_never_sets_a_field_the_message_left_unset(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        m = Message.user("plain")
        s.append_message(m, extra={"sticky": True, "depth": 3, "name": "x", "tool_call_id": "c", "kept": 1})
        assert s.messages == [m]
        assert not s.messages[0].is_sticky
    payload = parsed(tmp_path / "run.jsonl")[-1]["payload"]
    assert payload == {"role": "user", "content": "plain", "kept": 1}


# -- compaction and elision -----------------------------------------------------

def conversation(s: Session) -> tuple[list[str], list[Message]]:
    ms = [
        Message.system("sys"),                          # sysprompt
        Message.user("u1"),
        Message(role="user", content="pinned", sticky=True),
        Message.assistant("a1"),
        Message(role="user", content="at depth", depth=0),   # depth 0 is still a depth
        Message.assistant(None, [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]),
        Message.tool("c1", "result"),
        Message.user("u2"),
        Message.assistant("a2"),
    ]
    return [s.append_message(m) for m in ms], ms


def test_compaction_keeps_sticky_messages_and_splices_the_summary(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    k = s.append_compaction("what happened", ids[6], 900, 50)
    want = [ms[0], ms[2], ms[4], Message.user("what happened"), ms[7], ms[8]]
    assert s.messages == want
    assert s.message_ids == [ids[0], ids[2], ids[4], k, ids[7], ids[8]]
    check_against_model(s)
    t = reload(s)
    assert t.messages == want
    # The compacted-away messages are still in the file and in events.
    assert [e.payload["content"] for e in t.events if e.type == "message"] == [m.content for m in ms]
    t.close()


def test_compaction_through_the_last_message(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    k = s.append_compaction("all of it", ids[-1], 1, 1)
    assert s.messages == [ms[0], ms[2], ms[4], Message.user("all of it")]
    assert s.message_ids == [ids[0], ids[2], ids[4], k]
    reload(s).close()


def test_two_compactions_compose(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    k1 = s.append_compaction("first", ids[3], 100, 10)
    more = [s.append_message(Message.user(f"later {i}")) for i in range(3)]
    k2 = s.append_compaction("second, folding the first", k1, 200, 20)
    # The first summary is not sticky: the second one replaces it.
    assert s.message_ids == [ids[0], ids[2], k2, ids[4], ids[5], ids[6], ids[7], ids[8]] + more
    k3 = s.append_compaction("third", more[1], 300, 30)
    assert s.message_ids == [ids[0], ids[2], ids[4], k3, more[2]]
    assert s.messages == [ms[0], ms[2], ms[4], Message.user("third"), Message.user("later 2")]
    check_against_model(s)
    reload(s).close()


def test_elision_keeps_everything_but_content(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    full = s.append_message(FULL)
    before_ids = s.message_ids
    s.append_elision([(ids[6], "[result elided]"), (full, "[stub]"), (ids[0], "")])
    assert s.message_ids == before_ids
    got = s.messages
    assert got[6] == dataclasses.replace(ms[6], content="[result elided]")
    assert got[6].role == "tool" and got[6].tool_call_id == "c1"
    assert got[-1] == dataclasses.replace(FULL, content="[stub]")
    assert got[0] == Message(role="system", content="", sysprompt=True)
    assert [m for i, m in enumerate(got) if i not in (0, 6, len(got) - 1)] == \
        [m for i, m in enumerate(ms + [FULL]) if i not in (0, 6, len(got) - 1)]
    # The original content is still in the file, on its own line.
    assert parsed(s.path)[7]["payload"]["content"] == "result"
    check_against_model(s)
    reload(s).close()


def test_elision_then_compaction(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    s.append_elision([(ids[2], "[pinned, elided]"), (ids[6], "[r]"), (ids[8], "[a2]")])
    k = s.append_compaction("sum", ids[6], 10, 1)
    assert s.messages == [ms[0], dataclasses.replace(ms[2], content="[pinned, elided]"), ms[4],
                          Message.user("sum"), ms[7], dataclasses.replace(ms[8], content="[a2]")]
    assert s.message_ids == [ids[0], ids[2], ids[4], k, ids[7], ids[8]]
    check_against_model(s)
    reload(s).close()


def test_compaction_then_elision_including_the_summary(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    k = s.append_compaction("sum", ids[5], 10, 1)
    s.append_elision([(k, "[summary elided]"), (ids[2], "[kept, elided]"), (ids[7], "[u2]")])
    assert s.messages == [ms[0], dataclasses.replace(ms[2], content="[kept, elided]"), ms[4],
                          Message.user("[summary elided]"), ms[6], dataclasses.replace(ms[7], content="[u2]"), ms[8]]
    assert s.message_ids == [ids[0], ids[2], ids[4], k, ids[6], ids[7], ids[8]]
    check_against_model(s)
    # An id the compaction replaced is gone: eliding it is refused.
    with pytest.raises(UnknownId):
        s.append_elision([(ids[1], "x")])
    reload(s).close()


def test_elision_items_may_be_any_iterable(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, _ = conversation(s)
    s.append_elision((i, f"stub {n}") for n, i in enumerate(ids[:2]))
    s.append_elision(iter([(ids[2], "from an iterator")]))
    assert [m.content for m in s.messages[:3]] == ["stub 0", "stub 1", "from an iterator"]
    reload(s).close()


def test_the_same_message_elided_twice_takes_the_last_stub(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, ms = conversation(s)
    s.append_elision([(ids[1], "first")])
    s.append_elision([(ids[1], "second")])
    assert s.messages[1] == Message.user("second")
    reload(s).close()


def refused(s: Session, call: Any) -> None:
    """``call(s)`` raises UnknownId and changes neither the file nor the session."""
    before_file = freeze(s.path)
    before = (s.messages, s.message_ids, len(s.events), s.grants)
    with pytest.raises(UnknownId):
        call(s)
    assert state(s.path) == before_file
    assert (s.messages, s.message_ids, len(s.events), s.grants) == before


def test_naming_an_id_that_is_not_live_is_refused_on_append(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids, _ = conversation(s)
    g = s.append_grants({})
    op = s.append_tool_dispatched("c", "t", {})
    k = s.append_compaction("sum", ids[3], 1, 1)
    meta_id = s.events[0].id
    gone = ids[1]     # replaced by the compaction
    for bad in ("0" * 32, "", "nope", gone, g, op, meta_id, ids[4].upper()):
        refused(s, lambda s, bad=bad: s.append_compaction("x", bad, 1, 1))
        refused(s, lambda s, bad=bad: s.append_elision([(bad, "stub")]))
        # One good item does not let a bad one through.
        refused(s, lambda s, bad=bad: s.append_elision([(ids[0], "ok"), (bad, "stub")]))
    # The session still works, and the live ids (the summary included) can be named.
    s.append_elision([(k, "s")])
    s.append_compaction("again", k, 1, 1)
    reload(s).close()


def test_unknown_id_leaves_no_trace_after_reload(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    a = s.append_message(Message.user("a"))
    with pytest.raises(UnknownId):
        s.append_compaction("x", "missing", 1, 1)
    b = s.append_message(Message.user("b"))
    t = reload(s)
    assert t.message_ids == [a, b]
    assert len(t.events) == 3
    t.close()


# -- what load refuses ------------------------------------------------------------

def corrupt(path: Path, line_no: int, kind: type[CorruptTranscript] = CorruptTranscript) -> None:
    before = freeze(path)
    with pytest.raises(kind) as info:
        Session.load(path)
    assert info.value.line == line_no
    assert state(path) == before
    assert not path.with_name(path.name + ".repair").exists()


@pytest.mark.parametrize("tail", [[], [msg("after")]], ids=["last", "mid"])
@pytest.mark.parametrize(("bad", "why"), [
    (line("k", "compaction", {"summary": "s", "replaces-through-id": "nope", "tokens-before": 1,
                              "tokens-after": 1, "fallback": False}), "compaction names nothing"),
    (line("k", "compaction", {"summary": "s", "replaces-through-id": "g1", "tokens-before": 1,
                              "tokens-after": 1, "fallback": False}), "compaction names a grants line"),
    (line("e", "elision", {"items": [{"id": "m1", "stub": "x"}, {"id": "nope", "stub": "y"}]}),
     "elision names nothing"),
    (line("e", "elision", {"items": [{"id": "m0", "stub": "x"}]}), "elision names a compacted-away id"),
    (line("e", "elision", {"items": [{"id": "meta", "stub": "x"}]}), "elision names the meta line"),
])
def test_a_dangling_id_is_fatal_on_load(tmp_path: Path, bad: bytes, why: str, tail: list[bytes]) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m0"), b"\n", msg("m1"), line("g1", "grants", {"grants": 1}),
          line("k0", "compaction", {"summary": "s0", "replaces-through-id": "m0", "tokens-before": 1,
                                    "tokens-after": 1, "fallback": False}),
          b" \t\r\n", bad, *tail)
    corrupt(p, 8)


def test_unknown_type_is_kept_in_events_and_skipped_by_messages_and_grants(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1", content="one"), line("g", "grants", {"grants": {"a": 1}}),
          line("u1", "from-the-future", {"role": "user", "content": "not a message", "grants": "no"}),
          line("u2", "grants-v2", {"grants": {"b": 2}}),
          line("u3", "hologram", [1, 2, 3]),
          msg("m2", content="two"))
    with Session.load(p) as s:
        assert s.message_ids == ["m1", "m2"]
        assert [m.content for m in s.messages] == ["one", "two"]
        assert s.grants == {"a": 1}
        assert [(e.id, e.type) for e in s.events][3:6] == [
            ("u1", "from-the-future"), ("u2", "grants-v2"), ("u3", "hologram")]
        assert s.events[5].payload == [1, 2, 3]
        assert s.events[3].line == 4
        s.append_message(Message.user("three"))
    with Session.load(p) as s:
        assert len(s.events) == 8
        check_against_model(s)


@pytest.mark.parametrize("where", ["meta", "mid", "unknown-type", "last"])
@pytest.mark.parametrize("v", [2, 0, -1, 10**20])
def test_unknown_v_is_fatal(tmp_path: Path, where: str, v: int) -> None:
    p = tmp_path / "run.jsonl"
    lines = [meta(), msg("m1"), msg("m2"), line("u", "from-the-future", {}), msg("m3")]
    at = {"meta": 0, "mid": 2, "unknown-type": 3, "last": 4}[where]
    lines[at] = line(json.loads(lines[at])["id"], json.loads(lines[at])["type"], json.loads(lines[at])["payload"],
                     v=v)
    write(p, *lines)
    corrupt(p, at + 1, UnsupportedVersion)


@pytest.mark.parametrize("envelope", [
    b'{"payload":{},"ts":"t","type":"message","v":1}',                 # no id
    b'{"id":"","payload":{},"ts":"t","type":"message","v":1}',         # empty id
    b'{"id":7,"payload":{},"ts":"t","type":"message","v":1}',          # id not a string
    b'{"id":"x","payload":{},"ts":"t","v":1}',                         # no type
    b'{"id":"x","payload":{},"ts":"t","type":3,"v":1}',                # type not a string
    b'{"id":"x","payload":{},"type":"grants","v":1}',                  # no ts
    b'{"id":"x","payload":{},"ts":5,"type":"grants","v":1}',           # ts not a string
    b'{"id":"x","payload":{},"ts":"t","type":"grants"}',               # no v
    b'{"id":"x","payload":{},"ts":"t","type":"grants","v":"1"}',       # v not an int
    b'{"id":"x","payload":{},"ts":"t","type":"grants","v":1.0}',       # v a float
    b'{"id":"x","payload":{},"ts":"t","type":"grants","v":true}',      # v a bool
    b'{"id":"x","ts":"t","type":"grants","v":1}',                      # no payload
    b'[1,2,3]',
    b'"a string"',
    b'null',
])
@pytest.mark.parametrize("tail", [[], [msg("after")]], ids=["last", "mid"])
def test_a_malformed_envelope_is_fatal_with_its_line(tmp_path: Path, envelope: bytes, tail: list[bytes]) -> None:
    # Each is one whole JSON value, so even as the last line it is not a torn
    # tail to cut off: it is damage.
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"), b"\n", envelope + b"\n", *tail)
    corrupt(p, 4)


@pytest.mark.parametrize("bad", [
    b'{"id":"x","payload":{},"ts":"t","type":"grants","v":1} {}',      # two values
    b'{"id":"x","payload":NaN,"ts":"t","type":"grants","v":1}',        # NaN is not JSON
    b'{"id":"x","payload":{},"ts":"t","type":"grants","v":1,}',        # trailing comma
    b'{"id":"x","payload":{"a":"\xff"},"ts":"t","type":"grants","v":1}',  # not UTF-8
    b'{"id":"x"',                                                      # cut short
    b'}',
])
def test_a_line_that_is_not_json_mid_file_is_fatal_with_its_line(tmp_path: Path, bad: bytes) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"), b"\n", bad + b"\n", msg("after"))
    corrupt(p, 4)


def test_a_duplicate_id_is_fatal(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"), msg("m2"), line("m1", "grants", {"grants": 1}), msg("m3"))
    corrupt(p, 4)
    write(p, meta("same"), msg("same"))
    corrupt(p, 2)


@pytest.mark.parametrize("dup", ["0123abcd-89ab-cdef-0123-456789abcdef", "0123abcd89abcdef0123456789abcdef", "m1"])
def test_a_duplicate_id_is_named_as_written(tmp_path: Path, dup: str) -> None:
    # The id table keeps a UUID or 32 hex digits packed: the message spells it again.
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg(dup), msg(dup))
    with pytest.raises(CorruptTranscript, match=f'duplicate envelope id "{dup}"'):
        Session.load(p)


def test_blank_lines_anywhere_are_ignored(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, b"\n", b" \t \r\n", meta(payload={"m": 1}), b"\r\n", msg("m1", content="a"), b"\t\n", b"\n",
          msg("m2", content="b"), b"   \n", b"\r\r\n", b"\n")
    with Session.load(p) as s:
        assert s.message_ids == ["m1", "m2"]
        assert [e.line for e in s.events] == [3, 5, 8]
        assert s.warnings == []
        m3 = s.append_message(Message.user("c"))
    with Session.load(p) as s:
        assert s.message_ids == ["m1", "m2", m3]
        assert s.events[-1].line == 12
        check_against_model(s)


def test_reading_accepts_any_json_layout(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(
        p,
        b'{ "v" : 1 , "type":"session-meta", "payload" : { "a" : [ 1 , 2 ] } ,"ts":"t", "id":"m\\u0065ta" }\r\n',
        b'{"payload":{"role":"user","content":"\\u00e9\\ud83d\\ude00\\n\\/","content":"last wins \\u20ac"},'
        b'"id":"first","id":"m1","ts":"t","type":"message","v":1}\n',
        b'\t{"id":"m2","payload":{"role":"assistant","content":1E2,"depth":1},"ts":"t","type":"message","v":1}  \n',
        b'{"id":"k","payload":{"summary":"s","replaces-through-id":"m1","tokens-before":1,"tokens-after":1,'
        b'"fallback":false},"ts":"t","type":"compaction","v":1}\n',
    )
    with Session.load(p) as s:
        assert s.meta == {"a": [1, 2]}
        assert s.events[0].id == "meta"
        assert s.events[1].id == "m1"
        assert s.events[1].payload["content"] == "last wins \u20ac"
        assert s.events[2].payload["content"] == 100.0
        assert s.message_ids == ["k", "m2"]
        assert s.messages == [Message.user("s"), Message(role="assistant", content=100.0, depth=1)]
        # Appending after a foreign-looking file: the ids it used can be named.
        s.append_elision([("m2", "stub")])
        s.append_compaction("again", "k", 1, 1)
    with Session.load(p) as s:
        assert s.message_ids == [s.events[-1].id, "m2"]
        assert s.messages == [Message.user("again"), Message(role="assistant", content="stub", depth=1)]


def test_a_reader_accepts_any_non_empty_string_id(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    ids = ["é", "a\nb", " ", "0" * 1000, "\ud800", '"quoted"', "{}", "m"]
    write(p, meta(), *[(json.dumps({"id": i, "type": "message", "ts": "t", "v": 1,      # ASCII-escaped
                                    "payload": {"role": "user", "content": str(n)}}) + "\n").encode()
                       for n, i in enumerate(ids)])
    with Session.load(p) as s:
        assert s.message_ids == ids
        s.append_elision([(i, f"stub {n}") for n, i in enumerate(ids)])
        k = s.append_compaction("sum", ids[3], 1, 1)
        assert s.message_ids == [k] + ids[4:]
    with Session.load(p) as s:
        assert s.message_ids == [k] + ids[4:]
        assert [m.content for m in s.messages] == ["sum", "stub 4", "stub 5", "stub 6", "stub 7"]
        check_against_model(s)


def test_after_load_everything_equals_the_writer(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl", {"x": 1})
    ids, _ = conversation(s)
    s.append_grants({"g": 1})
    s.append_elision([(ids[3], "e")])
    k = s.append_compaction("c", ids[4], 1, 2)
    s.append_elision([(k, "e2")])
    s.append_grants(None)
    t = reload(s)
    assert t.grants is None
    t.close()


# -- a state machine: random appends, the session against a model ------------------

import shutil  # noqa: E402
import tempfile  # noqa: E402

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule  # noqa: E402

json_leaf = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
             | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_value = st.recursive(
    json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=6)
contents = (st.none() | st.text(max_size=20)
            | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}), max_size=2))
tool_calls = st.none() | st.lists(st.fixed_dictionaries({
    "id": st.text("abc_0123", min_size=1, max_size=6), "type": st.just("function"),
    "function": st.fixed_dictionaries({"name": st.sampled_from(["ls", "cat"]), "arguments": st.just("{}")})}),
    min_size=1, max_size=2)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool", "developer"]),
    content=contents,
    name=st.none() | st.text(max_size=5),
    tool_calls=tool_calls,
    tool_call_id=st.none() | st.text(max_size=5),
    sticky=st.booleans(),
    sysprompt=st.booleans(),
    depth=st.none() | st.integers(0, 5),
)
# Extras never use an optional Message field's name (see the report); role and
# content are always in to_dict, so an extra of those names must lose.
extras = st.none() | st.dictionaries(st.sampled_from(["finish-reason", "usage", "role", "content", "x"]),
                                     json_value, max_size=3)
section_texts = st.sampled_from(["identity", "AGENTS.md body", "today is Monday", "", "é😀"])


class TranscriptMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="at-machine-"))
        self.path = self.dir / "run.jsonl"
        self.s = Session.create(self.path, {"machine": True})
        self.live: list[tuple[str, Message]] = []
        self.not_live: list[str] = [self.s.events[0].id, "", "nope"]
        self.grants: Any = None
        self.pending: list[str] = []
        self.settled: list[str] = []
        self.carriers: dict[str, str] = {}

    # appends

    @rule(m=messages, extra=extras)
    def append_message(self, m: Message, extra: dict[str, Any] | None) -> None:
        i = self.s.append_message(m, extra)
        self.live.append((i, m))
        payload = self.s.events[-1].payload
        assert payload == {**(extra or {}), **m.to_dict()}

    @precondition(lambda self: self.live)
    @rule(data=st.data(), summary=st.text(max_size=10))
    def compact(self, data: st.DataObject, summary: str) -> None:
        at = data.draw(st.integers(0, len(self.live) - 1), label="through")
        k = self.s.append_compaction(summary, self.live[at][0], 10, 1)
        kept = [x for x in self.live[: at + 1] if x[1].is_sticky]
        self.not_live += [i for i, m in self.live[: at + 1] if not m.is_sticky]
        self.live = kept + [(k, Message.user(summary))] + self.live[at + 1:]

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def elide(self, data: st.DataObject) -> None:
        picks = data.draw(st.lists(st.tuples(st.integers(0, len(self.live) - 1), st.text(max_size=6)),
                                   min_size=1, max_size=3), label="items")
        self.s.append_elision([(self.live[j][0], stub) for j, stub in picks])
        for j, stub in picks:
            self.live[j] = (self.live[j][0], dataclasses.replace(self.live[j][1], content=stub))

    @rule(snapshot=json_value)
    def grant(self, snapshot: Any) -> None:
        self.not_live.append(self.s.append_grants(snapshot))
        self.grants = snapshot

    @rule(data=st.data())
    def refused(self, data: st.DataObject) -> None:
        bad = data.draw(st.sampled_from(self.not_live), label="bad id")
        before = self.path.read_bytes()
        with pytest.raises(UnknownId):
            if data.draw(st.booleans(), label="compaction?"):
                self.s.append_compaction("x", bad, 1, 1)
            else:
                good = [(i, "ok") for i, _ in self.live[:1]]
                self.s.append_elision(good + [(bad, "stub")])
        assert self.path.read_bytes() == before

    @rule(arguments=json_value | st.text(max_size=10), call_id=st.text(max_size=4))
    def dispatch(self, arguments: Any, call_id: str) -> None:
        op = self.s.append_tool_dispatched(call_id, "tool", arguments)
        self.pending.append(op)
        self.not_live.append(op)

    @precondition(lambda self: self.pending)
    @rule(data=st.data(), outcome=st.sampled_from(["completed", "failed", "outcome-unknown"]))
    def settle(self, data: st.DataObject, outcome: str) -> None:
        op = data.draw(st.sampled_from(self.pending), label="op")
        self.not_live.append(self.s.append_tool_settled(op, outcome))
        self.pending.remove(op)
        self.settled.append(op)

    @rule(sections=st.lists(st.tuples(st.sampled_from(["a", "b"]), section_texts), max_size=3),
          facts=st.lists(st.tuples(st.text(max_size=3), json_value), max_size=2))
    def run_context(self, sections: list[tuple[str, str]], facts: list[tuple[str, Any]]) -> None:
        rc = self.s.append_run_context(sections, facts)
        self.not_live.append(rc)
        payload = self.s.events[-1].payload
        assert payload["facts"] == [[k, v] for k, v in facts]
        want = []
        for name, text in sections:
            d = digest(text)
            if d in self.carriers:
                want.append({"name": name, "digest": d, "rendered-in": self.carriers[d]})
            else:
                self.carriers[d] = rc
                want.append({"name": name, "digest": d, "text": text})
        assert payload["sections"] == want

    @rule()
    def reload(self) -> None:
        self.s = reload(self.s)

    # what must hold after every step

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert self.s.message_ids == [i for i, _ in self.live]
        assert self.s.messages == [m for _, m in self.live]
        assert self.s.grants == self.grants
        assert [p.op_id for p in self.s.pending_tool_operations()] == self.pending
        for text in ["identity", "AGENTS.md body", "today is Monday", "", "é😀"]:
            d = digest(text)
            assert self.s.run_context_section(d) == (text if d in self.carriers else None)

    def teardown(self) -> None:
        try:
            t = reload(self.s)
            check_against_model(t)
            t.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


TranscriptMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_random_appends_replay_to_the_same_state = TranscriptMachine.TestCase
