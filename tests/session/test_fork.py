"""A session open across ``os.fork()`` (a multiprocessing "fork" worker): the child
inherits the descriptors that hold the lock, but the session stays the parent's.

In the child the session refuses appends (``SessionBroken``) and lets go of its
copies of the locked descriptors, so a forked worker can neither write behind
the parent's back nor keep the lock once the parent has closed. The parent goes
on as if nothing happened. Real forks, real processes.
"""

from __future__ import annotations

import json
import os
import select
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session, SessionBroken, SessionLocked


def in_child(body: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Fork; run ``body`` in the child and return what it returned (as JSON), or
    the name of the exception it raised. A child that has not answered within
    ``timeout`` seconds is killed and the test fails (a hang fails, not hangs)."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns of a fork with other threads alive: a test here
        # forks while one holds the session lock on purpose.
        warnings.filterwarnings("ignore", r".*fork\(\) may lead to deadlocks", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(r)
        try:
            try:
                out: Any = {"value": body()}
            except BaseException as e:  # noqa: BLE001 — reported to the parent
                out = {"raised": type(e).__name__, "message": str(e)}
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    deadline = time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([r], [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            pytest.fail(f"the forked child hung for {timeout} s")
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(b"".join(chunks))


def test_a_forked_child_cannot_append(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        first = s.append_message(Message.user("before the fork"))

        def child() -> Any:
            return s.append_message(Message.user("from the child"))

        got = in_child(child)
        assert got["raised"] == "SessionBroken", got
        assert "fork" in got["message"]
        # The parent goes on: its appends and reads work, its view is the file's.
        second = s.append_message(Message.user("after the fork"))
        assert s.message_ids == [first, second]
        assert [m.content for m in s.messages] == ["before the fork", "after the fork"]
    with Session.load(p) as again:
        assert again.message_ids == [first, second]


def test_every_kind_of_append_is_refused_in_the_child(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        mid = s.append_message(Message.user("hi"))
        op = s.append_tool_dispatched("c1", "ls", {})

        def child() -> Any:
            out = {}
            for name, call in [
                ("message", lambda: s.append_message(Message.user("x"))),
                ("grants", lambda: s.append_grants({"a": 1})),
                ("compaction", lambda: s.append_compaction("sum", mid, 10, 1)),
                ("elision", lambda: s.append_elision([(mid, "stub")])),
                ("dispatched", lambda: s.append_tool_dispatched("c2", "ls", {})),
                ("settled", lambda: s.append_tool_settled(op, "completed")),
                ("run-context", lambda: s.append_run_context([("a", "text")], [])),
            ]:
                try:
                    call()
                    out[name] = "appended"
                except SessionBroken:
                    out[name] = "SessionBroken"
            return out

        got = in_child(child)["value"]
        assert set(got.values()) == {"SessionBroken"}, got
        assert len(s.events) == 3
    with Session.load(p) as again:
        assert len(again.events) == 3


def test_the_child_can_still_read_and_close(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p, {"k": 1}) as s:
        s.append_message(Message.user("hi"))

        def child() -> Any:
            seen = [m.content for m in s.messages], s.meta, len(s.events)
            s.close()
            s.close()
            return seen

        assert in_child(child)["value"] == [["hi"], {"k": 1}, 2]
        assert [m.content for m in s.messages] == ["hi"]
        s.append_message(Message.user("still mine"))


def test_the_lock_is_still_the_parents_in_the_child(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        def child() -> Any:
            try:
                Session.load(p).close()
                return "loaded"
            except SessionLocked:
                return "SessionLocked"

        assert in_child(child)["value"] == "SessionLocked"
        s.append_message(Message.user("the parent still holds it"))


def test_a_forked_worker_does_not_keep_the_lock_after_the_parent_closes(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    s.append_message(Message.user("hi"))
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # a long-lived worker that never touches the session
        try:
            os.close(go_w)
            os.close(ready_r)
            os.write(ready_w, b"x")
            select.select([go_r], [], [], 60)
        finally:
            os._exit(0)
    os.close(go_r)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"x"
        s.close()
        # The worker is alive and still has every descriptor it inherited.
        with Session.load(p) as again:
            assert [m.content for m in again.messages] == ["hi"]
    finally:
        os.write(go_w, b"x")
        os.close(go_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def test_ids_drawn_after_a_fork_differ(tmp_path: Path) -> None:
    # The core's id generator is reseeded in the child: the same generator state
    # on both sides of a fork draws the same random bits (the last 16 hex
    # digits), so two ids drawn in the same millisecond would be equal.
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        core = s._t  # the private native transcript: its generator is what forks
        got = in_child(lambda: [core.new_id() for _ in range(50)])["value"]
        mine = [core.new_id() for _ in range(50)]
        assert not {i[16:] for i in got} & {i[16:] for i in mine}


def test_the_session_lock_a_parent_thread_held_at_the_fork_is_free_in_the_child(tmp_path: Path) -> None:
    """A thread of the parent held the session's lock when another forked: that
    thread is not in the child, so nothing there would ever let go of it. The
    child's fork handler frees it, and the child's close (which takes it)
    returns instead of waiting for good."""
    import signal
    import threading

    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with s._lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert held.wait(10)

        def child() -> Any:
            signal.alarm(20)  # a lock never freed would hang the child: end it
            s.close()
            with pytest.raises(SessionBroken):
                s.append_message(Message.user("not in the child"))
            return "closed"

        assert in_child(child)["value"] == "closed"
    finally:
        release.set()
        t.join(10)
    s.append_message(Message.user("the parent's"))
    s.close()
    assert [m.content for m in Session.peek(p).messages] == ["the parent's"]
