"""One writer per file: a second create/load/open, here or in another process, is
refused at once; the lock goes with close and with the process, and survives
the inode swap of a tail repair."""

from __future__ import annotations

import os
import signal
import time
import warnings
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Message, Session, SessionLocked

from ._helpers import finish, freeze, msg, meta, python, spawn, state, write

TRY_ALL = r"""
import sys, time
from agent_transcript import Session
path = sys.argv[1]
for name in ("create", "load", "open"):
    start = time.monotonic()
    try:
        getattr(Session, name)(path).close()
        result = "opened"
    except Exception as e:
        result = type(e).__name__
    print(name, result, round(time.monotonic() - start, 3))
"""

HOLD = r"""
import sys, time
from agent_transcript import Message, Session
s = Session.open(sys.argv[1])
s.append_message(Message.user("held"))
print("ready", flush=True)
sys.stdin.readline()
"""


def others(path: Path) -> dict[str, tuple[str, float]]:
    """What create, load and open do on ``path`` in another process."""
    r = python(TRY_ALL, str(path))
    assert r.returncode == 0, r.stderr
    out = {}
    for row in r.stdout.split("\n")[:-1]:
        name, result, took = row.split()
        out[name] = (result, float(took))
    return out


def refused_elsewhere(path: Path) -> None:
    got = others(path)
    assert {k: v[0] for k, v in got.items()} == {"create": "SessionLocked", "load": "SessionLocked",
                                                  "open": "SessionLocked"}
    assert all(v[1] < 2.0 for v in got.values()), got   # at once, not after waiting


def refused_here(path: Path) -> None:
    before = freeze(path)
    for call in (Session.create, Session.load, Session.open):
        start = time.monotonic()
        with pytest.raises(SessionLocked):
            call(path)
        assert time.monotonic() - start < 1.0
    assert state(path) == before


def test_a_second_session_in_this_process_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        refused_here(p)
        # The same file under other names.
        os.symlink(p, tmp_path / "link.jsonl")
        (tmp_path / "sub").mkdir()
        for alias in (tmp_path / "link.jsonl", tmp_path / "sub" / ".." / "run.jsonl"):
            with pytest.raises(SessionLocked):
                Session.load(alias)
        # The holder is unharmed by the refusals.
        s.append_message(Message.user("still mine"))
    with Session.load(p) as t:
        assert [m.content for m in t.messages] == ["still mine"]


def test_a_second_session_in_another_process_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        s.append_message(Message.user("a"))
        before = freeze(p)
        refused_elsewhere(p)
        assert state(p) == before
        s.append_message(Message.user("b"))
    with Session.load(p) as t:
        assert [m.content for m in t.messages] == ["a", "b"]


def test_close_frees_the_lock(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    s.close()
    got = others(p)
    assert got["load"][0] == "opened" and got["open"][0] == "opened"
    assert got["create"][0] == "FileExistsError"
    with Session.load(p) as t:
        t.append_message(Message.user("x"))
    with Session.open(p):     # the context manager closed it
        pass


def test_a_session_dropped_without_close_lets_go_of_the_lock(tmp_path: Path) -> None:
    """Dropped without close() (an exception before it, a notebook cell run
    again), a session kept its lock for the life of the process: every later
    load of its transcript here raised SessionLocked. It is closed when
    collected, with a ResourceWarning, as an open file is."""
    import gc

    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    s.append_message(Message.user("kept"))
    with pytest.warns(ResourceWarning, match="unclosed session"):
        del s
        gc.collect()
    with Session.load(p) as again:
        assert [m.content for m in again.messages] == ["kept"]
    closed = Session.load(p)
    closed.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a closed session is dropped quietly
        del closed
        gc.collect()


def test_reading_the_file_here_does_not_drop_the_lock(tmp_path: Path) -> None:
    # With POSIX record locks, closing any descriptor of the file would drop the
    # lock: a peek, a follow or a refused load in the holder's process must not.
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        s.append_message(Message.user("a"))
        assert Session.peek(p).error is None
        assert len(list(Session.follow(p, poll=0.01, idle_timeout=0.05))) == 2
        with pytest.raises(SessionLocked):
            Session.load(p)
        with open(p, "rb") as f:
            f.read()
        refused_elsewhere(p)


def test_kill_9_of_the_holder_frees_the_lock(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    Session.create(p).close()
    holder = spawn(HOLD, str(p))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"
        with pytest.raises(SessionLocked):
            Session.load(p)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        assert holder.returncode == -signal.SIGKILL
    finally:
        finish(holder)
    with Session.load(p) as s:
        assert [m.content for m in s.messages] == ["held"]


def test_the_lock_holds_across_a_repair(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    good = write(p, meta(), msg("m1"))
    write(p, good, msg("m2")[:30])
    a = Session.load(p)
    try:
        assert len(a.warnings) == 1
        assert p.read_bytes() == good       # the file was swapped for its good prefix
        refused_here(p)
        refused_elsewhere(p)
        a.append_message(Message.user("written by A"))
    finally:
        a.close()
    with Session.load(p) as b:
        assert b.warnings == []
        assert [m.content for m in b.messages] == ["hi", "written by A"]


def test_a_repair_by_another_process_keeps_us_out_until_it_closes(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    good = write(p, meta(), msg("m1"))
    write(p, good, msg("m2")[:30])
    holder = spawn(HOLD, str(p))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"
        assert p.read_bytes().startswith(good) and b'"held"' in p.read_bytes()
        refused_here(p)
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
        assert holder.returncode == 0
    finally:
        finish(holder)
    with Session.load(p) as s:
        assert [m.content for m in s.messages] == ["hi", "held"]


def test_a_failed_load_frees_the_lock(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta(), b"{broken\n", msg("m1"))
    for _ in range(2):
        with pytest.raises(CorruptTranscript):
            Session.load(p)
    got = others(p)
    assert got["load"][0] == "CorruptTranscript"
    write(p, meta(), msg("m1"))
    with Session.load(p) as s:
        assert s.message_ids == ["m1"]
