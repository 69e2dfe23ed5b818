"""peek: what the file says, in file order, without writing, locking or
repairing anything, and without replay."""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from pathlib import Path

import pytest

from agent_transcript import Message, Peek, Session

from ._helpers import freeze, line, meta, msg, state, write


def names_line(warning: str, n: int) -> bool:
    return re.search(rf"(?<!\d){n}(?!\d)", warning) is not None


def test_peek_of_a_clean_transcript(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p, {"agent": "x"}) as s:
        a = s.append_message(Message.system("sys"))
        b = s.append_message(Message.user("long question"), extra={"finish-reason": "stop"})
        c = s.append_message(Message.assistant("answer"))
        s.append_grants({"g": 1})
        s.append_elision([(b, "[q]")])
        s.append_compaction("sum", c, 1, 1)
        s.append_run_context([("identity", "me")], [])
        events = list(s.events)
        replayed = s.messages
    before = freeze(p)
    pk = Session.peek(p)
    assert state(p) == before
    assert isinstance(pk, Peek)
    assert pk.error is None and pk.warnings == []
    assert pk.path == p and isinstance(pk.path, Path)
    assert pk.size == os.path.getsize(p)
    assert pk.meta == {"agent": "x"}
    assert list(pk.envelopes) == events
    # No replay: every message line as written, no summary, no stub.
    assert list(pk.messages) == [Message.system("sys"), Message.user("long question"), Message.assistant("answer")]
    assert replayed != list(pk.messages)
    assert [e.id for e in pk.envelopes if e.type == "message"] == [a, b, c]
    with pytest.raises(dataclasses.FrozenInstanceError):
        pk.error = "x"  # type: ignore[misc]


def test_peek_accepts_a_path_string_and_unknown_types(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, b"\n", meta(payload={"a": 1}), line("u", "from-the-future", [1]), b"\r\n", msg("m1"))
    pk = Session.peek(str(p))
    assert pk.error is None
    assert pk.path == p
    assert [(e.id, e.type, e.line) for e in pk.envelopes] == [("meta", "session-meta", 2),
                                                              ("u", "from-the-future", 3), ("m1", "message", 5)]
    assert list(pk.messages) == [Message.user("hi")]


def test_peek_never_writes_not_even_on_a_torn_file(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"), msg("m2")[:25])
    repair = tmp_path / "run.jsonl.repair"
    repair.write_bytes(b"leftover")
    before, before_repair = freeze(p), freeze(repair)
    listing = sorted(os.listdir(tmp_path))
    pk = Session.peek(p)
    assert state(p) == before
    assert state(repair) == before_repair
    assert sorted(os.listdir(tmp_path)) == listing
    assert pk.error is None
    assert [e.id for e in pk.envelopes] == ["meta", "m1"]
    assert len(pk.warnings) == 1 and names_line(pk.warnings[0], 3)
    assert pk.size == len(before[0])
    # And load still finds the torn tail to repair: peek left it alone.
    with Session.load(p) as s:
        assert len(s.warnings) == 1
        assert not repair.exists()


def test_peek_skips_bad_lines_anywhere_with_a_warning_each(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1", content="one"), b"{broken\n", msg("m2", content="two"), b"\xff\xfe\n",
          b'{"no":"envelope"}\n', msg("m3", content="three"), msg("m4")[:30])
    before = freeze(p)
    pk = Session.peek(p)
    assert state(p) == before
    assert pk.error is None
    assert [(e.id, e.line) for e in pk.envelopes] == [("meta", 1), ("m1", 2), ("m2", 4), ("m3", 7)]
    assert [m.content for m in pk.messages] == ["one", "two", "three"]
    assert len(pk.warnings) == 4
    for warning, n in zip(pk.warnings, (3, 5, 6, 8)):
        assert names_line(warning, n), (warning, n)


def test_peek_of_a_file_load_refuses(tmp_path: Path) -> None:
    # Damage load dies on is still readable by peek.
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"),
          line("k", "compaction", {"summary": "s", "replaces-through-id": "nope", "tokens-before": 1,
                                   "tokens-after": 1, "fallback": False}),
          line("e", "elision", {"items": [{"id": "nope", "stub": "x"}]}), msg("m1"))
    pk = Session.peek(p)
    assert pk.error is None
    assert [e.type for e in pk.envelopes][:4] == ["session-meta", "message", "compaction", "elision"]
    assert list(pk.messages)[0] == Message.user("hi")


def nothing_to_read(pk: Peek) -> None:
    assert isinstance(pk.error, str) and pk.error
    assert pk.meta == {}
    assert list(pk.envelopes) == []
    assert list(pk.messages) == []
    assert isinstance(pk.warnings, list)
    assert isinstance(pk.size, int)


def test_peek_error_when_there_is_no_file(tmp_path: Path) -> None:
    pk = Session.peek(tmp_path / "missing.jsonl")
    nothing_to_read(pk)
    assert pk.size == 0
    assert pk.path == tmp_path / "missing.jsonl"
    assert not (tmp_path / "missing.jsonl").exists()


@pytest.mark.parametrize("content", [b"", b"\n \r\n\t\n"], ids=["empty", "blank"])
def test_peek_error_when_the_file_is_empty(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "run.jsonl"
    write(p, content)
    before = freeze(p)
    pk = Session.peek(p)
    nothing_to_read(pk)
    assert state(p) == before


@pytest.mark.parametrize("first", [msg("m0"), line("g", "grants", {"grants": 1})], ids=["message", "grants"])
def test_peek_error_when_the_first_line_is_not_a_session_meta(tmp_path: Path, first: bytes) -> None:
    p = tmp_path / "run.jsonl"
    write(p, first, meta(), msg("m1"))
    before = freeze(p)
    pk = Session.peek(p)
    nothing_to_read(pk)
    assert state(p) == before


def test_peek_does_not_lock_and_sees_a_live_writer(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    written: list[str] = []
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(400):
                written.append(s.append_message(Message.user(f"{i} " + "x" * (i % 50) * 40)))
        finally:
            done.set()

    t = threading.Thread(target=writer)
    t.start()
    peeks = 0
    try:
        while not done.is_set() or peeks < 3:
            pk = Session.peek(p)
            peeks += 1
            assert pk.error is None, pk.error
            seen = [e.id for e in pk.envelopes if e.type == "message"]
            returned = list(written)    # taken after the peek: at most one line not in it yet
            # What peek saw is what the writer had written by then, in order; at
            # most a line still being written is skipped.
            assert len(seen) <= len(returned) + 1
            assert seen[: len(returned)] == returned[: len(seen)]
            assert len(pk.warnings) <= 1
    finally:
        t.join()
    s.append_message(Message.user("after"))
    s.close()
    pk = Session.peek(p)
    assert [e.id for e in pk.envelopes if e.type == "message"][:-1] == written
    assert pk.warnings == []
    with Session.load(p) as again:
        assert again.warnings == []


def test_peek_names_the_first_100_skipped_lines_and_counts_the_rest(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), b"1\n" * 150)
    pk = Session.peek(p)
    assert len(pk.warnings) == 101
    assert names_line(pk.warnings[0], 2) and names_line(pk.warnings[99], 101)
    assert pk.warnings[100] == "... and 50 more lines skipped"
