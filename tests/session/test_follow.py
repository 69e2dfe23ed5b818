"""follow: envelopes as another writer appends them, a partial last line waited
for, a repair's inode swap followed, and a stop after ``idle_timeout``.

The follower runs in the test's own thread; what must happen while it waits
runs in a helper thread, after a delay.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_transcript import Envelope, Message, Session

from ._helpers import finish, freeze, line, meta, msg, spawn, state, write

APPENDER = r"""
import sys, time
from agent_transcript import Envelope, Message, Session
s = Session.load(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[2])):
    print(s.append_message(Message.user(f"m{i}")), flush=True)
    time.sleep(0.005)
sys.stdin.readline()
s.close()
"""


def test_follow_yields_what_another_process_appends(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    Session.create(p, {"f": 1}).close()
    child = spawn(APPENDER, str(p), "30")
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline() == "ready\n"     # it holds the lock: follow does not care
        gen = Session.follow(p, poll=0.01, idle_timeout=10)
        first = next(gen)
        assert (first.type, first.payload, first.line) == ("session-meta", {"f": 1}, 1)
        child.stdin.write("go\n")
        child.stdin.flush()
        got = [next(gen) for _ in range(30)]
        printed = [child.stdout.readline().strip() for _ in range(30)]
        assert [e.id for e in got] == printed
        assert [e.line for e in got] == list(range(2, 32))
        assert [e.payload["content"] for e in got] == [f"m{i}" for i in range(30)]
        assert all(e.type == "message" and e.v == 1 for e in got)
        stop(gen)
        child.stdin.write("done\n")
        child.stdin.flush()
        child.wait(timeout=30)
        assert child.returncode == 0
    finally:
        finish(child)


def stop(it: Iterator[Envelope]) -> None:
    """Let go of a follower now (its descriptor with it) rather than at garbage collection."""
    close = getattr(it, "close", None)
    if close is not None:
        close()


class Later:
    """Run ``action`` in a thread after ``delay`` seconds; ``join`` re-raises its error."""

    def __init__(self, delay: float, action: Callable[[], None]) -> None:
        self.error: BaseException | None = None

        def run() -> None:
            time.sleep(delay)
            try:
                action()
            except BaseException as e:  # reported by join
                self.error = e

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self) -> None:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error


@pytest.mark.parametrize("split", ["half", "mid-character"])
def test_follow_waits_for_a_partial_last_line(tmp_path: Path, split: str) -> None:
    p = tmp_path / "run.jsonl"
    write(p, meta())
    whole = line("m1", "message", {"role": "user", "content": "ééé half and half ééé"})
    cut = len(whole) // 2 if split == "half" else whole.index("é".encode()) + 1
    gen = Session.follow(p, poll=0.01, idle_timeout=10)
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    try:
        assert next(gen).id == "meta"
        os.write(fd, whole[:cut])
        start = time.monotonic()

        def complete() -> None:
            assert os.write(fd, whole[cut:]) == len(whole) - cut

        later = Later(0.3, complete)
        e = next(gen)     # not the half line: the whole one, once it is whole
        waited = time.monotonic() - start
        later.join()
    finally:
        stop(gen)
        os.close(fd)
    assert waited >= 0.25, "the half line was not waited for"
    assert (e.id, e.type, e.line) == ("m1", "message", 2)
    assert e.payload == {"role": "user", "content": "ééé half and half ééé"}


@pytest.mark.parametrize("torn_bytes", [25, 600], ids=["short-tail", "long-tail"])
def test_follow_survives_a_repair(tmp_path: Path, torn_bytes: int) -> None:
    p = tmp_path / "run.jsonl"
    torn = line("gone", "message", {"role": "user", "content": "x" * 700})[:torn_bytes]
    write(p, meta(), msg("m1"), torn)
    appended: list[str] = []

    def repair_and_append() -> None:
        with Session.load(p) as s:     # repairs: a new file renamed over the one being followed
            assert len(s.warnings) == 1
            appended.append(s.append_message(Message.user("after the repair")))
            appended.append(s.append_message(Message.user("and another")))

    gen = Session.follow(p, poll=0.01, idle_timeout=10)
    try:
        got = [next(gen), next(gen)]
        later = Later(0.1, repair_and_append)   # while the follower sits on the torn bytes
        got += [next(gen), next(gen)]
        later.join()
    finally:
        stop(gen)
    assert [(e.id, e.line) for e in got] == [("meta", 1), ("m1", 2), (appended[0], 3), (appended[1], 4)]
    assert [e.payload["content"] for e in got[2:]] == ["after the repair", "and another"]


def test_follow_stops_after_idle_timeout(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    write(p, b"\n", meta(), b" \r\n", msg("m1"), msg("m2"), msg("m3")[:20])
    before = freeze(p)
    start = time.monotonic()
    got = list(Session.follow(p, poll=0.02, idle_timeout=0.3))
    took = time.monotonic() - start
    assert 0.3 <= took < 3.0, took
    assert [(e.id, e.line) for e in got] == [("meta", 2), ("m1", 4), ("m2", 5)]
    assert state(p) == before, "follow never writes, not even to repair"


def test_follow_keeps_going_while_lines_keep_coming(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    ids: list[str] = []

    def writer() -> None:
        for i in range(6):
            time.sleep(0.1)
            ids.append(s.append_message(Message.user(str(i))))

    t = threading.Thread(target=writer)
    start = time.monotonic()
    t.start()
    try:
        got = list(Session.follow(p, poll=0.01, idle_timeout=0.35))
    finally:
        t.join()
        s.close()
    assert time.monotonic() - start >= 0.6
    assert [e.id for e in got][1:] == ids


def test_follow_across_a_rotation_reads_the_new_file_from_its_start(tmp_path: Path) -> None:
    # Rotation: the transcript is renamed away and a new one created at the path.
    # The new file is not the old one's prefix (a repair's swap is): it is read
    # from its first byte, its own line numbers from 1.
    p = tmp_path / "run.jsonl"
    with Session.create(p, {"n": 1}) as s:
        old = [s.append_message(Message.user(f"old {i}")) for i in range(2)]
    gen = Session.follow(p, poll=0.01, idle_timeout=5)
    try:
        got = [next(gen) for _ in range(3)]
        assert [e.id for e in got[1:]] == old
        os.rename(p, tmp_path / "run.jsonl.1")
        with Session.create(p, {"n": 2}) as s:
            new = [s.append_message(Message.user(f"new {i}" + "x" * 300)) for i in range(3)]
        after = [next(gen) for _ in range(4)]
    finally:
        stop(gen)
    assert (after[0].type, after[0].payload, after[0].line) == ("session-meta", {"n": 2}, 1)
    assert [(e.id, e.line) for e in after[1:]] == [(i, n) for n, i in enumerate(new, 2)]


def test_follow_across_a_rotation_to_a_smaller_file(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p, {"n": 1}) as s:
        for i in range(5):
            s.append_message(Message.user("old" * 100))
    gen = Session.follow(p, poll=0.01, idle_timeout=5)
    try:
        assert len([next(gen) for _ in range(6)]) == 6
        os.unlink(p)
        Session.create(p, {"n": 2}).close()
        e = next(gen)
    finally:
        stop(gen)
    assert (e.type, e.payload, e.line) == ("session-meta", {"n": 2}, 1)


def test_follow_drops_a_fragment_the_writer_cut_back(tmp_path: Path) -> None:
    # A failed append (a partial write, then ENOSPC) is cut back to the last good
    # length, and the next append lands where the fragment was: the follower must
    # read that line, not the stale fragment glued to its tail.
    p = tmp_path / "run.jsonl"
    write(p, meta())
    good = p.stat().st_size
    fragment = line("failed", "message", {"role": "user", "content": "never acknowledged"})[:40]
    with open(p, "ab") as f:
        f.write(fragment)
    gen = Session.follow(p, poll=0.01, idle_timeout=5)
    try:
        assert next(gen).id == "meta"      # the fragment is read too, and held
        os.truncate(p, good)               # the writer cuts its failed line back
        with open(p, "ab") as f:
            f.write(msg("m1") + msg("m2"))
        got = [next(gen), next(gen)]
    finally:
        stop(gen)
    assert [(e.id, e.line) for e in got] == [("m1", 2), ("m2", 3)]


def test_follow_after_an_in_place_truncation_reads_from_the_start(tmp_path: Path) -> None:
    # copytruncate: the file is emptied in place and written again from byte 0.
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"), msg("m2"))
    gen = Session.follow(p, poll=0.01, idle_timeout=5)
    try:
        assert [next(gen).id for _ in range(3)] == ["meta", "m1", "m2"]
        os.truncate(p, 0)
        write(p, meta("meta2"), msg("n1"))
        got = [next(gen), next(gen)]
    finally:
        stop(gen)
    assert [(e.id, e.line) for e in got] == [("meta2", 1), ("n1", 2)]


@pytest.mark.parametrize("longer", [True, False], ids=["outgrew-what-was-read", "same-size"])
def test_follow_after_an_in_place_rewrite_between_polls_reads_from_the_start(
        tmp_path: Path, longer: bool) -> None:
    # Emptied and written again in place between two polls, to at least the
    # length already read: the size alone never goes below the offset.
    from agent_transcript.follow import follow
    p = tmp_path / "run.jsonl"
    old = write(p, meta("meta1"), msg("m1"), msg("m2"))
    told: list[str] = []
    gen = follow(p, poll=0.01, idle_timeout=5, on_restart=told.append)
    try:
        assert [next(gen).id for _ in range(3)] == ["meta1", "m1", "m2"]
        new = [meta("meta9"), msg("n1"), msg("n2")] + ([msg("n3", content="more " * 40)] if longer else [])
        with open(p, "r+b") as f:            # the same inode, never shorter than what was read
            f.write(b"".join(new))
        assert os.path.getsize(p) >= len(old)
        got = [next(gen) for _ in range(len(new))]
    finally:
        stop(gen)
    assert [(e.id, e.line) for e in got] == [(e, n) for n, e in enumerate(
        ["meta9", "n1", "n2", "n3"][:len(new)], 1)]
    assert told == ["truncated"]


def test_a_line_longer_than_a_read_is_reported(tmp_path: Path) -> None:
    """A line longer than follow's 1 MiB read is held in pieces until its end
    comes, then reported (follow used to drop the piece held and read it again
    for ever)."""
    path = tmp_path / "big.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("x" * (3 << 20)))
        s.append_message(Message.assistant("done"))
    got: list[Envelope] = []
    reader = threading.Thread(target=lambda: got.extend(Session.follow(path, poll=0.01, idle_timeout=0.5)),
                              daemon=True)
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "follow never got past the long line"
    assert [e.type for e in got] == ["session-meta", "message", "message"]
    assert len(got[1].payload["content"]) == 3 << 20
