"""``load`` and ``open`` of a file that is not a transcript change nothing.

Load's repair cuts a torn last line, but only of a transcript: nothing is
written, renamed or deleted unless the first non-blank line is a whole
session-meta. The one exception is a file whose only line is a torn
session-meta, what a crash inside ``create`` leaves: load removes it and
``open`` starts a new transcript there (see test_crash_every_byte). ``check``
says "load would refuse it" for every file here, and load agrees.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Session, UnsupportedVersion

from ._helpers import freeze, line, meta, msg, state, write

# Another program's JSONL log, its last line being written right now.
EVENTS = (b'{"event":"start","pid":4242}\n{"event":"tick","n":1}\n{"event":"tick","n":2}\n'
          b'{"event":"ti')

CASES = {
    "another program's JSONL, torn last line": EVENTS,
    "another program's JSONL, whole": b'{"event":"start"}\n{"event":"stop"}\n',
    "a one-line text file": b"shopping: milk, eggs\n",
    "a one-line text file without newline": b"shopping: milk, eggs",
    "two lines of text": b"dear diary\ntoday I\n",
    "a JSON value, not an object": b"[1, 2, 3]\n[4, 5\n",
    "an envelope that is not a session-meta first, torn tail": msg("m1") + meta() + b'{"id":"x',
    "a torn first line, then more": meta()[:20] + b"\n" + msg("m1"),
    "blank lines, then another program's log": b"\n \t\r\n" + EVENTS,
    "a torn line that looks like an envelope but has a newline": b'{"id":"ab\n',
    "a lone line that does not start like an envelope": b'{"event":"ti',
}


def check_exit(path: Path) -> int:
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "check", str(path)],
                       capture_output=True, text=True, check=False)
    return r.returncode


@pytest.mark.parametrize("data", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("how", ["load", "open"])
def test_a_file_that_is_not_a_transcript_is_left_as_it_was(tmp_path: Path, data: bytes,
                                                           how: str) -> None:
    p = tmp_path / "events.jsonl"
    write(p, data)
    leftover = p.with_name(p.name + ".repair")
    leftover.write_bytes(b"someone else's file")
    inode = os.stat(p).st_ino
    before = freeze(p)
    assert check_exit(p) == 2  # "load would refuse it"
    with pytest.raises(CorruptTranscript):
        getattr(Session, how)(p)
    assert state(p) == before
    assert os.stat(p).st_ino == inode  # not swapped: the other program's writes still land
    assert leftover.read_bytes() == b"someone else's file"
    # Refused, and the lock let go: a second try says the same.
    with pytest.raises(CorruptTranscript):
        getattr(Session, how)(p)


def test_the_other_programs_writes_still_reach_the_file(tmp_path: Path) -> None:
    p = tmp_path / "events.jsonl"
    write(p, EVENTS)
    with open(p, "ab") as writer:  # the other program, mid-line
        with pytest.raises(CorruptTranscript):
            Session.load(p)
        writer.write(b'ck","n":3}\n')
    assert p.read_bytes() == EVENTS + b'ck","n":3}\n'


@pytest.mark.parametrize("how", ["load", "open"])
def test_a_first_line_from_the_future_is_left_as_it_was(tmp_path: Path, how: str) -> None:
    p = tmp_path / "run.jsonl"
    write(p, line("meta", "session-meta", {}, v=2), msg("m1"), b'{"id":"m2","pay')
    before = freeze(p)
    with pytest.raises(UnsupportedVersion):
        getattr(Session, how)(p)
    assert state(p) == before


def test_a_transcript_with_a_torn_tail_is_still_repaired(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    good = write(p, b"\n  \n", meta(), msg("m1"))
    with open(p, "ab") as f:
        f.write(b'{"id":"m2","pay')
    with Session.load(p) as s:
        assert s.message_ids == ["m1"] and len(s.warnings) == 1
    assert p.read_bytes() == good


def test_a_lone_torn_session_meta_is_an_unfinished_create(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p, {"a": 1}):
        pass
    torn = p.read_bytes()[:40]
    write(p, torn)
    with Session.open(p, {"again": True}) as s:
        assert s.meta == {"again": True}
        assert len(s.warnings) == 1
