"""The file watch: an append knows its file still has its name without a
system call, and is exactly as strict as the ``statx`` it replaces.

After each write, an append checks that the transcript was not deleted or
replaced by a rename over its name, and that its length is the one it wrote.
Where the kernel allows (Linux 6.1+, io_uring and inotify not refused, a local
file system), the name is vouched for by a bell in memory that an unlink or a
rename over the file rings before that call returns, in whatever process; the
length by an ``lseek``. Elsewhere, a ``statx`` does both (``rust/core/src/
file_watch.rs``). Under test:

* differential: any sequence of appends and of what other programs do to the
  file (delete it, rename over it, rename it away, truncate it, append to it,
  chmod, touch, hard-link it and delete the first name) gets the same answer
  from every append with the watch as with ``statx`` alone, the oracle;
* one process's many sessions share one watch: a ring for one file breaks
  that session alone;
* a forked child never reads the parent's watch (it would take the parent's
  events): the parent still hears a deletion the child made, and the child's
  own sessions hear theirs;
* a session made on a thread that has ended still hears; threads appending to
  their own sessions while a file is deleted break that one session alone.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, SessionBroken, _core

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the file watch is Linux's")

WATCHABLE = sys.platform == "linux" and _core.file_watch()
needs_watch = pytest.mark.skipif(not WATCHABLE, reason="no io_uring or inotify here: statx alone")


@pytest.fixture(params=["watched", "unwatched"])
def watch(request: pytest.FixtureRequest) -> Iterator[str]:
    """Sessions made in the test hear the bell, or ask statx after each append."""
    if request.param == "watched" and not WATCHABLE:
        pytest.skip("no io_uring or inotify here: statx alone")
    before = _core.file_watch()
    _core.file_watch(request.param == "watched")
    try:
        yield request.param
    finally:
        _core.file_watch(before)


def _outsider(path: Path, what: str, n: int) -> Path | None:
    """What another program does, as its ``n``-th act, to the transcript at
    ``path``; returns where the session's file is afterwards (None: nowhere)."""
    if what == "rm":
        path.unlink()
        return None
    if what == "mv-over":
        new = path.with_name(f"new-{n}.jsonl")
        new.write_bytes(b'{"id":"x","type":"session-meta","ts":"2026-01-01T00:00:00Z","v":1,"payload":{}}\n')
        new.replace(path)
        return None
    if what == "mv-away":
        away = path.with_name(f"away-{n}.jsonl")
        path.replace(away)
        return away
    if what == "truncate":
        os.truncate(path, max(path.stat().st_size - 7, 0))
    elif what == "foreign-append":
        with path.open("ab") as f:
            f.write(b'{"not":"ours"}\n')
    elif what == "chmod":
        path.chmod(0o640 if n % 2 else 0o600)
    elif what == "touch":
        os.utime(path)
    elif what == "link-and-rm":
        other = path.with_name(f"link-{n}.jsonl")
        os.link(path, other)
        path.unlink()
        other.replace(path)
    else:
        raise AssertionError(what)
    return path


def _replay(directory: Path, steps: list[str], in_process: bool) -> list[str]:
    """Runs ``steps`` on a new session in ``directory``: each an append (or a
    batch), or what another program does, that one in this process or in a
    child; returns each append's outcome."""
    where: Path | None = directory / "t.jsonl"
    outcomes = []
    with Session.create(where) as s:
        for n, step in enumerate(steps):
            if step in ("append", "append_messages"):
                try:
                    if step == "append":
                        s.append_message(Message.user("x"))
                    else:
                        s.append_messages([Message.user("y"), Message.user("z")])
                    outcomes.append("ok")
                except SessionBroken as e:
                    outcomes.append(str(e).split("(")[0])
            elif where is None:
                continue  # nothing left to act on
            elif in_process:
                where = _outsider(where, step, n)
            else:
                code = (f"import os\nfrom pathlib import Path\n{inspect.getsource(_outsider)}\n"
                        f"_outsider(Path({str(where)!r}), {step!r}, {n})")
                done = subprocess.run([sys.executable, "-c", code],
                                      capture_output=True, text=True, timeout=60, check=False)
                assert done.returncode == 0, done.stderr
                where = None if step in ("rm", "mv-over") else (
                    where.with_name(f"away-{n}.jsonl") if step == "mv-away" else where)
    return outcomes


OUTSIDERS = ["rm", "mv-over", "mv-away", "truncate", "foreign-append", "chmod", "touch", "link-and-rm"]


@needs_watch
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.sampled_from(["append", "append", "append_messages", *OUTSIDERS]), max_size=12))
def test_the_watch_answers_every_append_as_statx_does(tmp_path_factory: pytest.TempPathFactory,
                                                      steps: list[str]) -> None:
    before = _core.file_watch()
    try:
        answers = {}
        for mode in ("watched", "unwatched"):
            _core.file_watch(mode == "watched")
            answers[mode] = _replay(tmp_path_factory.mktemp(mode), steps, in_process=True)
    finally:
        _core.file_watch(before)
    assert answers["watched"] == answers["unwatched"], steps


@pytest.mark.parametrize("what", OUTSIDERS)
def test_another_process_is_heard_before_the_next_append(tmp_path: Path, watch: str, what: str) -> None:
    outcomes = _replay(tmp_path, ["append", what, "append", "append_messages", "append"], in_process=False)
    broken = what in ("rm", "mv-over", "truncate", "foreign-append")
    assert outcomes[0] == "ok"
    if broken:
        assert all(o != "ok" for o in outcomes[1:]), outcomes
    else:
        assert outcomes == ["ok"] * 4


def test_a_ring_for_one_session_breaks_that_session_alone(tmp_path: Path, watch: str) -> None:
    sessions = [Session.create(tmp_path / f"s{k}.jsonl") for k in range(5)]
    try:
        for s in sessions:
            s.append_message(Message.user("first"))
        (tmp_path / "s2.jsonl").unlink()
        for k, s in enumerate(sessions):
            if k == 2:
                with pytest.raises(SessionBroken, match="deleted or replaced"):
                    s.append_message(Message.user("lost"))
            else:
                s.append_message(Message.user("kept"))
                s.append_message(Message.user("kept again"))
        # The one closed meanwhile takes its watch with it; the others hear on.
        sessions[0].close()
        (tmp_path / "s4.jsonl").unlink()
        sessions[3].append_message(Message.user("still"))
        with pytest.raises(SessionBroken):
            sessions[4].append_message(Message.user("lost"))
    finally:
        for s in sessions:
            s.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_neither_uses_nor_drains_the_parents_watch(tmp_path: Path, watch: str) -> None:
    parent_path, child_path = tmp_path / "parent.jsonl", tmp_path / "child.jsonl"
    with Session.create(parent_path) as s:
        s.append_message(Message.user("before the fork"))
        s.append_message(Message.user("heard by the bell"))
        pid = os.fork()
        if pid == 0:  # the child: its own session hears its own deletions
            code = 1
            try:
                with Session.create(child_path) as c:
                    c.append_message(Message.user("child"))
                    c.append_message(Message.user("child again"))
                    child_path.unlink()
                    try:
                        c.append_message(Message.user("lost"))
                    except SessionBroken:
                        # ... and deletes the parent's file: the parent's
                        # watch must still hear it, unread by this process.
                        parent_path.unlink()
                        code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with pytest.raises(SessionBroken, match="deleted or replaced"):
            s.append_message(Message.user("into the void"))


def test_a_session_made_on_a_thread_that_ended_still_hears(tmp_path: Path, watch: str) -> None:
    made: list[Session] = []
    t = threading.Thread(target=lambda: made.append(Session.create(tmp_path / "t.jsonl")))
    t.start()
    t.join()
    with made[0] as s:
        s.append_message(Message.user("one"))
        s.append_message(Message.user("two"))
        (tmp_path / "t.jsonl").unlink()
        with pytest.raises(SessionBroken):
            s.append_message(Message.user("lost"))


def test_threads_appending_while_one_file_is_deleted(tmp_path: Path, watch: str) -> None:
    sessions = [Session.create(tmp_path / f"s{k}.jsonl") for k in range(4)]
    deleted = threading.Event()
    results: dict[int, str] = {}

    def run(k: int) -> None:
        s = sessions[k]
        try:
            for n in range(400):
                if k == 0 and n == 200:
                    (tmp_path / "s0.jsonl").unlink()
                    deleted.set()
                s.append_message(Message.user(f"{k}:{n}"))
            results[k] = "ok"
        except SessionBroken:
            results[k] = "broken" if deleted.is_set() else "broken too early"

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        s.close()
    assert results == {0: "broken", 1: "ok", 2: "ok", 3: "ok"}
    for k in (1, 2, 3):
        with Session.load(tmp_path / f"s{k}.jsonl") as r:
            assert len(r.messages) == 400
