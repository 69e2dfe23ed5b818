"""The check after each append: the transcript still has its name and the
length the session wrote.

After each write, an append asks ``statx`` for the file's link count and
length. A transcript deleted or replaced by a rename over its name, truncated
in place, or written to by another program breaks the session at the next
append (``SessionBroken``), and every append after it; a file renamed away,
chmodded, touched or given a new name keeps its session. Under test:

* a model: any sequence of appends and of what other programs do to the file
  (delete it, rename over it, rename it away, truncate it, append to it,
  chmod, touch, hard-link it and delete the first name) gets, at every append,
  the answer the model of name and length gives;
* each act done by another process is seen by the next append;
* one process's many sessions: a deletion breaks that session alone, from
  any thread, and a forked child's deletion is seen by the parent.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, SessionBroken


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


def _model(steps: list[str]) -> list[str]:
    """What each append of ``steps`` answers, from the file's name and length
    alone: the oracle the check after each append must agree with."""
    named, extra, why = True, 0, None  # extra: the file's bytes beyond the session's
    outcomes = []
    for step in steps:
        if step in ("append", "append_messages"):
            if why is None and not named:
                why = "the transcript was deleted or replaced under the session"
            elif why is None and extra < 0:
                why = "the transcript was truncated under the session "
            elif why is None and extra > 0:
                why = "another program wrote to the transcript under the session "
            outcomes.append(why or "ok")
        elif not named:
            continue  # nothing left to act on
        elif step in ("rm", "mv-over"):
            named = False
        elif step == "truncate":
            extra -= 7
        elif step == "foreign-append":
            extra += len(b'{"not":"ours"}\n')
    return outcomes


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.sampled_from(["append", "append", "append_messages", *OUTSIDERS]), max_size=12))
def test_every_append_answers_as_the_name_and_length_say(tmp_path_factory: pytest.TempPathFactory,
                                                         steps: list[str]) -> None:
    got = _replay(tmp_path_factory.mktemp("run"), steps, in_process=True)
    assert got == _model(steps), steps


@pytest.mark.parametrize("what", OUTSIDERS)
def test_another_process_is_seen_by_the_next_append(tmp_path: Path, what: str) -> None:
    outcomes = _replay(tmp_path, ["append", what, "append", "append_messages", "append"], in_process=False)
    broken = what in ("rm", "mv-over", "truncate", "foreign-append")
    assert outcomes[0] == "ok"
    if broken:
        assert all(o != "ok" for o in outcomes[1:]), outcomes
    else:
        assert outcomes == ["ok"] * 4


def test_a_deletion_breaks_that_session_alone(tmp_path: Path) -> None:
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
        sessions[0].close()
        (tmp_path / "s4.jsonl").unlink()
        sessions[3].append_message(Message.user("still"))
        with pytest.raises(SessionBroken):
            sessions[4].append_message(Message.user("lost"))
    finally:
        for s in sessions:
            s.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_parent_sees_a_deletion_its_forked_child_made(tmp_path: Path) -> None:
    parent_path, child_path = tmp_path / "parent.jsonl", tmp_path / "child.jsonl"
    with Session.create(parent_path) as s:
        s.append_message(Message.user("before the fork"))
        pid = os.fork()
        if pid == 0:  # the child: its own session sees its own deletions
            code = 1
            try:
                with Session.create(child_path) as c:
                    c.append_message(Message.user("child"))
                    c.append_message(Message.user("child again"))
                    child_path.unlink()
                    try:
                        c.append_message(Message.user("lost"))
                    except SessionBroken:
                        # ... and deletes the parent's file.
                        parent_path.unlink()
                        code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with pytest.raises(SessionBroken, match="deleted or replaced"):
            s.append_message(Message.user("into the void"))


def test_a_session_made_on_a_thread_that_ended_still_checks(tmp_path: Path) -> None:
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


def test_threads_appending_while_one_file_is_deleted(tmp_path: Path) -> None:
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


NO_WATCH_CHILD = r"""
import json, os, sys
from agent_transcript import Message, Session
with Session.create(sys.argv[1]) as s:
    for k in range(1000):
        s.append_message(Message.user(f"message {k}"))
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # the listing's own descriptor, closed meanwhile
print(json.dumps(links))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_process_that_appends_holds_no_ring_or_watch_descriptor(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", NO_WATCH_CHILD, str(tmp_path / "t.jsonl")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    links = json.loads(done.stdout)
    assert any(link.endswith("t.jsonl") for link in links), links  # the listing saw the session's
    assert not [link for link in links if link in ("anon_inode:[io_uring]", "anon_inode:inotify")], links
