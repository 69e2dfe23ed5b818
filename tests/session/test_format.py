"""The file format: the meta line, the envelope, ts, ids, canonical bytes, modes,
and what create/load do with files that are missing, empty, taken or foreign."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Message, Session, canonical_json

from ._helpers import ENVELOPE_KEYS, dumps, freeze, line, meta, msg, parsed, state, umask, write

TS_RE = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")
ID_RE = re.compile(r"\A[0-9a-f]{32}\Z")


def fill(s: Session) -> list[str]:
    """One of every kind of line the API writes; returns their ids."""
    ids = [s.message_ids[0]] if s.message_ids else []
    a = s.append_message(Message.system("you are terse"))
    b = s.append_message(Message.user("héllo € 😀 \u2028 \"q\" \\ \t"), extra={"finish-reason": "stop"})
    c = s.append_message(Message.assistant(None, [{"id": "c1", "type": "function",
                                                   "function": {"name": "ls", "arguments": "{}"}}]))
    op = s.append_tool_dispatched("c1", "ls", '{"path": ".", "n": 1.5e300}', run_id="r", round=2)
    d = s.append_message(Message.tool("c1", [{"type": "text", "text": "x" * 10}]))
    settled = s.append_tool_settled(op, "completed", duration=0.25, result_digest="sha256:00")
    g = s.append_grants({"fs": ["read", "write"], "big": 10**40, "f": -0.0, "u": "\U0001f600"})
    e = s.append_elision([(d, "[elided]")])
    k = s.append_compaction("so far: a, b", c, 1000, 10)
    rc = s.append_run_context([("identity", "I am\nsadna"), ("agents", "AGENTS.md")], [("date", "2026-08-09")])
    return ids + [a, b, c, op, d, settled, g, e, k, rc]


def test_meta_line_is_first_and_exactly_the_meta(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    given = {"agent": "sadna", "model": "kimi-k2", "nested": {"z": [1, None, True]}, "é": "ü"}
    with Session.create(p, meta=given) as s:
        assert s.meta == given
        first = parsed(p)
        assert len(first) == 1, "create writes the meta line before returning"
        assert first[0]["type"] == "session-meta"
        assert first[0]["payload"] == given
        assert s.events[0].type == "session-meta"
        assert s.events[0].payload == given
        assert s.events[0].line == 1
        assert s.messages == [] and s.message_ids == []
    with Session.load(p) as s:
        assert s.meta == given


def test_meta_defaults_to_an_empty_object(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    Session.create(p).close()
    assert parsed(p)[0]["payload"] == {}
    with Session.load(p) as s:
        assert s.meta == {}


def test_envelope_keys_in_sorted_order_and_v_1(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        fill(s)
    raw = p.read_bytes()
    assert raw.endswith(b"\n")
    for b in raw.split(b"\n")[:-1]:
        pairs = json.loads(b, object_pairs_hook=list)
        assert [k for k, _ in pairs] == ENVELOPE_KEYS
        env = dict(pairs)
        assert env["v"] == 1 and type(env["v"]) is int
        assert isinstance(env["type"], str)
    types = [e["type"] for e in parsed(p)]
    assert types == ["session-meta", "message", "message", "message", "tool-dispatched", "message",
                     "tool-settled", "grants", "elision", "compaction", "run-context"]


def test_ts_is_utc_microseconds_z_and_close_to_now(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    before = datetime.now(timezone.utc)
    with Session.create(p) as s:
        fill(s)
        events = list(s.events)
    after = datetime.now(timezone.utc)
    on_disk = [e["ts"] for e in parsed(p)]
    assert on_disk == [e.ts for e in events]
    stamps = []
    for ts in on_disk:
        assert TS_RE.match(ts), ts
        when = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        # UTC, not local time: within a couple of seconds of the test's own clock.
        assert (before - when).total_seconds() < 2, (ts, before)
        assert (when - after).total_seconds() < 2, (ts, after)
        stamps.append(when)
    assert stamps == sorted(stamps)


def test_ids_are_32_lowercase_hex_unique_and_time_ordered(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        ids = fill(s)
        ids += [s.append_message(Message.user(str(i))) for i in range(500)]
        for _ in range(3):
            time.sleep(0.003)  # past the millisecond a UUIDv7 is ordered by
            ids.append(s.append_grants(None))
        ids = [s.events[0].id] + ids
    on_disk = [e["id"] for e in parsed(p)]
    assert on_disk == ids
    assert len(set(ids)) == len(ids)
    now_ms = int(time.time() * 1000)
    for i in ids:
        assert ID_RE.match(i), i
        # UUIDv7 bits: a 48-bit Unix-milliseconds prefix, version 7, RFC variant.
        assert abs(int(i[:12], 16) - now_ms) < 60_000, i
        assert i[12] == "7", i
        assert i[16] in "89ab", i
    prefixes = [i[:12] for i in ids]
    assert prefixes == sorted(prefixes), "ids are ordered by the time they were made"
    assert ids[-3] < ids[-2] < ids[-1], "ids made milliseconds apart sort by time"


def test_every_line_is_canonical_json(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p, meta={"b": 1, "a": [1.0, 2.5e-10, 10**30], "s": "\x00\x1f\x7f"}) as s:
        fill(s)
        s.append_message(Message.user("lone \ud800 surrogate"), extra={"z": {"y": [], "x": {}}})
    raw = p.read_bytes()
    raw.decode("utf-8")  # strict: a lone surrogate is escaped, so the file is valid UTF-8
    assert b"\\ud800" in raw
    for b in raw.split(b"\n")[:-1]:
        value = json.loads(b)
        assert b.decode() == canonical_json(value)
        if b"\\ud800" not in b:
            assert b.decode() == dumps(value)


def test_lone_surrogate_reads_back_as_the_same_code_point(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        s.append_message(Message.user("a\udfffb"))
    with Session.load(p) as s:
        assert s.messages[0].content == "a\udfffb"


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o077, 0o777])
def test_modes_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    p = tmp_path / "a" / "b" / "c" / "run.jsonl"
    with umask(mask):
        Session.create(p).close()
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    for d in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_ISDIR(os.stat(d).st_mode)
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d


def test_existing_parent_directories_keep_their_mode(tmp_path: Path) -> None:
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o755)
    with umask(0o077):
        Session.create(parent / "new" / "run.jsonl").close()
    assert stat.S_IMODE(os.stat(parent).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(parent / "new").st_mode) == 0o700


def deep(n: int) -> object:
    v: object = "x"
    for _ in range(n):
        v = [v]
    return v


def test_the_writer_never_writes_what_the_reader_refuses(tmp_path: Path) -> None:
    # Both stop at 512 levels of nesting; the envelope adds levels of its own.
    # Whatever an append accepts, load must read back; what it refuses it must
    # refuse before writing.
    for n in range(500, 516):
        p = tmp_path / f"run-{n}.jsonl"
        with Session.create(p) as s:
            before = p.read_bytes()
            calls: list[Callable[[], str]] = [
                lambda: s.append_message(Message.user(deep(n))),
                lambda: s.append_grants(deep(n)),
                lambda: s.append_message(Message.user("x"), extra={"deep": deep(n)}),
            ]
            for call in calls:
                try:
                    call()
                except ValueError:
                    assert p.read_bytes() == before
                before = p.read_bytes()
        with Session.load(p) as t:
            assert len(t.events) == len(parsed(p))
        assert Session.peek(p).warnings == []
    for n in (500, 505):
        with Session.load(tmp_path / f"run-{n}.jsonl") as t:
            assert len(t.events) == 4, "shallow enough values are written"
    with Session.load(tmp_path / "run-515.jsonl") as t:
        assert len(t.events) == 1, "too deep is refused"


def test_create_refuses_a_non_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    for content in (b"x", b"\n", meta()):
        write(p, content)
        before = freeze(p)
        with pytest.raises(FileExistsError):
            Session.create(p)
        assert state(p) == before
    # A real transcript too, and it stays loadable (no lock left behind).
    p.unlink()
    Session.create(p, {"a": 1}).close()
    before = freeze(p)
    with pytest.raises(FileExistsError):
        Session.create(p, {"a": 2})
    assert state(p) == before
    with Session.load(p) as s:
        assert s.meta == {"a": 1}


def test_create_takes_an_existing_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    p.write_bytes(b"")
    with Session.create(p, {"k": "v"}) as s:
        s.append_message(Message.user("x"))
    envs = parsed(p)
    assert [e["type"] for e in envs] == ["session-meta", "message"]
    assert envs[0]["payload"] == {"k": "v"}


def test_load_of_a_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope" / "run.jsonl"
    with pytest.raises(FileNotFoundError):
        Session.load(p)
    assert not p.exists() and not p.parent.exists()


def test_load_of_an_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    p.write_bytes(b"")
    with pytest.raises(CorruptTranscript):
        Session.load(p)
    assert p.read_bytes() == b""


def test_load_of_a_file_of_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    before = write(p, b"\n \t\r\n\n")
    with pytest.raises(CorruptTranscript):
        Session.load(p)
    assert p.read_bytes() == before


@pytest.mark.parametrize("first", [
    msg("m1"),
    line("g", "grants", {"grants": {}}),
    line("x", "some-future-type", {}),
])
def test_load_refuses_a_file_whose_first_line_is_not_a_session_meta(tmp_path: Path, first: bytes) -> None:
    p = tmp_path / "run.jsonl"
    write(p, first, meta("later"), msg("m2"))
    before = freeze(p)
    with pytest.raises(CorruptTranscript):
        Session.load(p)
    assert state(p) == before


def test_first_non_blank_line_is_what_counts(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, b"\n  \r\n", meta(payload={"a": 1}), msg("m1"))
    with Session.load(p) as s:
        assert s.meta == {"a": 1}
        assert s.message_ids == ["m1"]
        assert [e.line for e in s.events] == [3, 4]
