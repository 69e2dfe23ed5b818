"""Rewind: ``append_rewind(through_id)`` keeps the live list through an id (or
empties it, with None) without touching an earlier line; load replays it the
same way, and refuses one that names an id that is not live."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Message, Session, UnknownId

from ._helpers import freeze, line, meta, msg, parsed, state, write


def reload(s: Session) -> Session:
    """Close ``s``, load its file, and check that load rebuilt what ``s`` had."""
    before = (s.messages, s.message_ids, s.entries, s.grants, s.pending_tool_operations())
    s.close()
    t = Session.load(s.path)
    assert (t.messages, t.message_ids, t.entries, t.grants, t.pending_tool_operations()) == before
    assert t.warnings == []
    return t


def four(s: Session) -> list[str]:
    s.append_message(Message.system("sys"))
    return [s.message_ids[0]] + [s.append_message(Message.user(f"u{i}")) for i in range(1, 4)]


def test_a_rewind_keeps_the_live_messages_through_its_id(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids = four(s)
    before = s.path.read_bytes()
    r = s.append_rewind(ids[1])
    assert s.message_ids == ids[:2]
    assert s.messages == [Message.system("sys"), Message.user("u1")]
    data = s.path.read_bytes()
    assert data.startswith(before) and data.count(b"\n") == before.count(b"\n") + 1, "one line added"
    last = parsed(s.path)[-1]
    assert (last["id"], last["type"], last["payload"]) == (r, "rewind", {"through-id": ids[1]})
    assert [e.type for e in s.events][-1] == "rewind"
    assert s.append_rewind(ids[1]) and s.message_ids == ids[:2], "through the last one: nothing dropped"
    reload(s).close()


def test_a_rewind_to_none_empties_the_live_list(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    four(s)
    s.append_rewind(None)
    assert s.messages == [] and s.message_ids == [] and s.entries == []
    assert parsed(s.path)[-1]["payload"] == {"through-id": None}
    s.append_rewind(None)
    assert s.messages == [], "an empty list rewinds to empty"
    reload(s).close()


def test_rewound_then_appended(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids = four(s)
    s.append_rewind(ids[2])
    new = s.append_message(Message.user("instead"))
    assert s.message_ids == ids[:3] + [new]
    # What the rewind dropped is gone for later lines too.
    for refused in (lambda: s.append_rewind(ids[3]),
                    lambda: s.append_compaction("S", ids[3], 1, 1),
                    lambda: s.append_elision([(ids[3], "x")])):
        with pytest.raises(UnknownId):
            refused()
    k = s.append_compaction("S", new, 10, 1)
    assert s.message_ids == [ids[0], k]
    s.append_rewind(None)
    again = s.append_message(Message.user("from scratch"))
    assert s.message_ids == [again]
    reload(s).close()


def test_a_rewind_naming_a_replacement_message(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids = four(s)
    k = s.append_compaction("S", ids[2], 9, 3, replacement=[Message.user("r0"), Message.assistant("r1")])
    assert s.message_ids == [ids[0], f"{k}:0", f"{k}:1", ids[3]]
    s.append_rewind(f"{k}:0")
    assert s.message_ids == [ids[0], f"{k}:0"]
    assert s.messages == [Message.system("sys"), Message.user("r0")]
    with pytest.raises(UnknownId):
        s.append_rewind(f"{k}:1")
    with pytest.raises(UnknownId):
        s.append_rewind(k)  # a compaction with a replacement has no summary message
    reload(s).close()


@pytest.mark.parametrize("name", ["missing", "dropped", "compacted", "grants", "compaction", "part", "empty"])
def test_a_rewind_to_an_id_that_is_not_live_writes_nothing(tmp_path: Path, name: str) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    ids = four(s)
    g = s.append_grants({"x": 1})
    k = s.append_compaction("S", ids[1], 9, 3, replacement=[Message.user("r0")])
    s.append_rewind(f"{k}:0")
    target = {"missing": "nope", "dropped": ids[3], "compacted": ids[1], "grants": g,
              "compaction": k, "part": f"{k}:1", "empty": ""}[name]
    frozen = freeze(s.path)
    before = (s.messages, s.message_ids, s.entries, len(s.events))
    with pytest.raises(UnknownId):
        s.append_rewind(target)
    assert state(s.path) == frozen
    assert (s.messages, s.message_ids, s.entries, len(s.events)) == before
    s.append_message(Message.user("still fine"))
    reload(s).close()


def test_a_rewind_leaves_grants_tool_operations_and_run_context(tmp_path: Path) -> None:
    s = Session.create(tmp_path / "run.jsonl")
    u = s.append_message(Message.user("go"))
    s.append_grants({"read": "always"})
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    s.append_message(Message.assistant(None, [call]))
    op = s.append_tool_dispatched("c1", "ls", {})
    s.append_message(Message.tool("c1", "a b"))
    s.append_run_context([("identity", "I am t")], [("k", 1)])
    before = (s.grants, s.pending_tool_operations(), s.run_context_section(s.events[-1].payload["sections"][0]["digest"]))
    s.append_rewind(u)
    assert s.message_ids == [u]
    digest = s.events[-2].payload["sections"][0]["digest"]
    assert (s.grants, s.pending_tool_operations(), s.run_context_section(digest)) == before
    assert s.pending_tool_operations()[0].state == "result-persisted"
    s.append_tool_settled(op, "completed")
    reload(s).close()


def test_append_rewind_checks_its_argument(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        s.append_message(Message.user("x"))
        size = s.path.stat().st_size
        for bad in (1, b"x", ["x"]):
            with pytest.raises(TypeError):
                s.append_rewind(bad)  # type: ignore[arg-type]
        assert s.path.stat().st_size == size
    with pytest.raises(Exception) as e:
        s.append_rewind(None)
    assert type(e.value).__name__ == "SessionClosed"


def test_load_replays_rewinds_in_file_order(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("a"), msg("b"), line("r1", "rewind", {"through-id": "a"}), b"\n  \n",
          msg("c"), line("r2", "rewind", {"through-id": None}), msg("d"), msg("e"),
          line("r3", "rewind", {"through-id": "d"}))
    with Session.load(p) as s:
        assert s.message_ids == ["d"]
        assert [e.line for e in s.entries] == [9], "blank lines counted"


@pytest.mark.parametrize(("payload", "why"), [
    ({"through-id": "b"}, "rewound"),
    ({"through-id": "zz"}, "unknown"),
    ({"through-id": "r1"}, "not a message"),
    ({"through-id": 3}, "not a string"),
    ({"through-id": ["a"]}, "not a string"),
    ({}, "missing"),
    ({"through": "a"}, "missing"),
    (["a"], "not an object"),
])
def test_load_refuses_a_rewind_it_cannot_replay(tmp_path: Path, payload: object, why: str) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("a"), msg("b"), line("r1", "rewind", {"through-id": "a"}), msg("c"),
          line("bad", "rewind", payload))
    frozen = freeze(p)
    with pytest.raises(CorruptTranscript) as e:
        Session.load(p)
    assert e.value.line == 6, why
    assert state(p) == frozen
