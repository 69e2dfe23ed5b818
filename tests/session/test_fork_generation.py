"""What a fork does to what is per process: the session lock and the ids.

The core counts forks itself (``pthread_atfork``), whoever forks: Python's
``os.fork`` or C code that never runs Python's at-fork hooks. In the child:

* a session lock held by a thread of the parent (a thread the child does
  not have) is no hold: the child's sessions read, close and append;
* an id generator copied by the fork reseeds before its next id, so parent
  and child never draw the same ids;
* a writer opened by the parent never writes (``SessionBroken``).

Real forks; every child is waited for with a timeout, so a hang fails.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session, SessionBroken

from ._helpers import python
from .test_fork import in_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

CHILD_TIMEOUT = 30.0


def test_a_fork_while_another_thread_holds_the_session_lock(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        s.append_message(Message.user("before the fork"))
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with s._lock:
                holding.set()
                release.wait(60)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        try:
            def child() -> Any:
                seen = [m.content for m in s.messages]
                try:
                    s.append_message(Message.user("from the child"))
                    inherited = "appended"
                except SessionBroken:
                    inherited = "SessionBroken"
                with Session.create(tmp_path / "child.jsonl") as own:
                    own.append_message(Message.user("the child's own"))
                    own_seen = [m.content for m in own.messages]
                s.close()
                return seen, inherited, own_seen

            got = in_child(child)
        finally:
            release.set()
            holder.join()
        assert got == {"value": [["before the fork"], "SessionBroken", ["the child's own"]]}, got
        s.append_message(Message.user("the parent goes on"))
        assert [m.content for m in s.messages] == ["before the fork", "the parent goes on"]


def test_the_thread_that_forks_under_the_lock_still_holds_it_in_the_child(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        s.append_message(Message.user("hi"))
        with s._lock:
            def child() -> Any:
                waited: list[str] = []
                # Another thread of the child waits for the forking thread,
                # which still holds the lock here, and gets it once it lets go.
                t = threading.Thread(target=lambda: waited.append(
                    s._lock.acquire() and "taken"))
                with s._lock:
                    t.start()
                    t.join(0.3)
                    alive = t.is_alive()
                s._lock.release()  # the hold the fork was made under
                t.join(10)
                return alive, waited

            got = in_child(child)
        assert got == {"value": [True, ["taken"]]}, got


C_FORK_HELD_CHILD = r"""
import ctypes, json, os, select, sys, threading
from agent_transcript import Message, Session, SessionBroken
# PyDLL: the GIL stays held across fork(), so the child has it.
fork = ctypes.PyDLL(None).fork
s = Session.create(sys.argv[1])
s.append_message(Message.user("before the fork"))
holding, release = threading.Event(), threading.Event()
def hold():
    with s._lock:
        holding.set()
        release.wait(60)
holder = threading.Thread(target=hold)
holder.start()
holding.wait(10)
r, w = os.pipe()
pid = fork()  # C's fork: Python's at-fork hooks do not run
if pid == 0:
    out = {"seen": [m.content for m in s.messages]}
    try:
        s.append_message(Message.user("from the child"))
        out["inherited"] = "appended"
    except SessionBroken:
        out["inherited"] = "SessionBroken"
    with Session.create(sys.argv[1] + ".child") as own:
        own.append_message(Message.user("the child's own"))
        out["own"] = [m.content for m in own.messages]
    os.write(w, json.dumps(out).encode())
    os._exit(0)
os.close(w)
ready, _, _ = select.select([r], [], [], float(sys.argv[2]))
if not ready:
    os.kill(pid, 9)
out = json.loads(os.read(r, 1 << 20) or b'"the child hung"')
os.waitpid(pid, 0)
release.set()
holder.join()
s.close()
print(json.dumps(out))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ctypes' fork() is tried on Linux")
def test_a_c_fork_while_another_thread_holds_the_session_lock(tmp_path: Path) -> None:
    done = python(C_FORK_HELD_CHILD, str(tmp_path / "run.jsonl"), str(CHILD_TIMEOUT),
                  timeout=CHILD_TIMEOUT * 2)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "seen": ["before the fork"], "inherited": "SessionBroken", "own": ["the child's own"]}


C_FORK_CHILD = r"""
import ctypes, json, os, sys
from agent_transcript import Message, Session, SessionBroken
libc = ctypes.CDLL(None, use_errno=True)
s = Session.create(sys.argv[1])
s.append_message(Message.user("before the fork"))
r, w = os.pipe()
pid = libc.fork()  # C's fork: Python's at-fork hooks do not run
if pid < 0:
    raise OSError(ctypes.get_errno(), "fork")
ids = [s._t.new_id() for _ in range(200)]
if pid == 0:
    try:
        s.append_message(Message.user("from the child"))
        appended = "appended"
    except SessionBroken as e:
        appended = "SessionBroken: " + str(e)
    os.write(w, json.dumps({"ids": ids, "appended": appended}).encode())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 1 << 20):
    data += chunk
os.waitpid(pid, 0)
child = json.loads(data)
s.append_message(Message.user("after the fork"))
print(json.dumps({"parent": ids, "child": child["ids"], "appended": child["appended"],
                  "messages": [m.content for m in s.messages]}))
s.close()
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ctypes' libc.fork() is tried on Linux")
def test_a_fork_made_by_c_code_draws_no_id_twice(tmp_path: Path) -> None:
    done = python(C_FORK_CHILD, str(tmp_path / "run.jsonl"), timeout=CHILD_TIMEOUT)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    parent, child = out["parent"], out["child"]
    assert len(set(parent)) == len(set(child)) == 200
    assert not set(parent) & set(child)
    # Not only the ids: their random halves (the first half is the clock's).
    assert not {i[16:] for i in parent} & {i[16:] for i in child}
    # And the parent's writer never writes in the child.
    assert out["appended"].startswith("SessionBroken: ") and "fork" in out["appended"]
    assert out["messages"] == ["before the fork", "after the fork"]
