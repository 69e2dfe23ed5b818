"""Scenario 1: a crash after every byte of every line.

A crash mid-append leaves the file cut somewhere inside its last line. For every
line of a realistic transcript (every envelope type, ASCII and multi-byte text,
a line over 64 KiB) the file is cut after each byte of that line, and:

* ``Session.load`` gives exactly the lines before it, the file equals that
  prefix byte for byte, there is one warning naming the line and the bytes
  removed, and no ``.repair`` is left;
* a cut that leaves the line whole but without its ``\\n`` loads every line, with
  no warning, and the next append writes the ``\\n`` first;
* a cut inside the first line (the session-meta) leaves an empty file, which
  load refuses with ``CorruptTranscript`` and ``create`` takes as new;
* the next append and a reload work, and the file is the prefix plus that line.

The CI subset samples offsets in every line and cuts every byte of one
multi-byte line; ``AT_LONG=1`` cuts every byte of every line.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Message, Session
from rkit import LONG, event_view, figure, no_stray_files, realistic_transcript, tmpfs

STEP = 64 * 1024  # the tail scan reads backwards in steps of this size


def offsets(line: bytes, rng: random.Random, every_byte: bool) -> list[int]:
    """Where to cut ``line`` (``k`` bytes of it survive), 1 <= k < len(line)."""
    n = len(line)
    if every_byte or n < 40:
        return list(range(1, n))
    picks = {1, 2, 3, n - 3, n - 2, n - 1}
    for near in (STEP - 1, STEP, STEP + 1, n - STEP - 1, n - STEP, n - STEP + 1):
        if 1 <= near < n:
            picks.add(near)
    # Inside multi-byte characters: just after each lead byte of a few of them.
    leads = [i + 1 for i, b in enumerate(line[:-1]) if b >= 0xC0]
    picks.update(rng.sample(leads, min(4, len(leads))))
    picks.update(rng.randrange(1, n) for _ in range(8))
    return sorted(picks)


def test_crash_at_every_byte_of_every_line() -> None:
    rng = random.Random(1)
    started = time.monotonic()
    with tmpfs("64m") as fs:
        ref = fs / "reference.jsonl"
        lines = realistic_transcript(ref)
        with Session.load(ref) as full:
            expected = event_view(full)
            types = {t for _, t, _ in expected}
        assert types == {"session-meta", "message", "grants", "compaction", "elision",
                         "tool-dispatched", "tool-settled", "run-context", "rewind"}
        assert any(b'"replacement":[' in x for x in lines)
        assert any(len(x) > STEP for x in lines)
        assert any(any(b >= 0xF0 for b in x) for x in lines)  # 4-byte characters
        # The multi-byte line the CI subset cuts at every byte: the user's first turn.
        every = next(i for i, x in enumerate(lines) if "日本語".encode() in x)

        path = fs / "run.jsonl"
        cases = torn = whole = first_line = 0
        for i, line in enumerate(lines):
            prefix = b"".join(lines[:i])
            for k in offsets(line, rng, LONG or i == every):
                cases += 1
                data = prefix + line[:k]
                path.write_bytes(data)
                if k == len(line) - 1:
                    whole += 1
                    check_whole_without_newline(path, data, expected[: i + 1])
                elif i == 0:
                    first_line += 1
                    check_torn_first_line(path)
                else:
                    torn += 1
                    check_torn(path, prefix, expected[:i], line_number=i + 1, removed=k,
                               full=cases % 50 == 1)
                assert no_stray_files(fs) == [], (i, k)
        figure("1. crash at every byte", cases=cases, torn=torn, whole_no_newline=whole,
               torn_first_line=first_line, lines=len(lines), file_bytes=len(b"".join(lines)),
               longest_line=max(len(x) for x in lines), losses=0,
               seconds=round(time.monotonic() - started, 1))


def check_torn(path: Path, prefix: bytes, expected: list, *, line_number: int, removed: int,
               full: bool) -> None:
    with Session.load(path) as s:
        assert path.read_bytes() == prefix
        if full:
            assert event_view(s) == expected
            assert [e.id for e in s.entries] == s.message_ids
        else:
            assert [e.id for e in s.events] == [e[0] for e in expected]
        assert len(s.warnings) == 1, s.warnings
        assert f"line {line_number}" in s.warnings[0] and f"{removed} bytes" in s.warnings[0]
        new = s.append_message(Message.user("after the crash ✓"))
    with Session.load(path) as again:
        assert again.warnings == []
        assert [e.id for e in again.events] == [e[0] for e in expected] + [new]
        assert again.messages[-1] == Message.user("after the crash ✓")
    data = path.read_bytes()
    assert data.startswith(prefix) and data.count(b"\n") == prefix.count(b"\n") + 1


def check_whole_without_newline(path: Path, data: bytes, expected: list) -> None:
    with Session.load(path) as s:
        assert s.warnings == []
        assert path.read_bytes() == data
        assert [e.id for e in s.events] == [e[0] for e in expected]
        new = s.append_message(Message.user("after"))
    assert path.read_bytes().startswith(data + b"\n{")
    with Session.load(path) as again:
        assert [e.id for e in again.events] == [e[0] for e in expected] + [new]


def check_torn_first_line(path: Path) -> None:
    with pytest.raises(CorruptTranscript):
        Session.load(path)
    assert path.read_bytes() == b""
    with Session.create(path, {"again": True}) as s:
        s.append_message(Message.user("x"))
    with Session.load(path) as s:
        assert s.meta == {"again": True} and len(s.messages) == 1


def test_open_after_a_crash_inside_create(tmp_path: Path) -> None:
    """A crash while ``create`` wrote the session-meta leaves a torn first line.
    ``Session.open`` ("load if it exists, else create") must then give a new
    session, saying what it removed, not raise ``CorruptTranscript`` once and
    work on the next try."""
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"agent": "ü 🚀"}) as s:
        del s
    meta_line = path.read_bytes()
    for k in range(1, len(meta_line) - 1):
        path.write_bytes(meta_line[:k])
        with Session.open(path, {"again": k}) as s:
            assert s.meta == {"again": k}
            assert len(s.warnings) == 1 and "line 1" in s.warnings[0], s.warnings
            s.append_message(Message.user("x"))
        with Session.load(path) as s:
            assert s.meta == {"again": k} and len(s.messages) == 1 and s.warnings == []
