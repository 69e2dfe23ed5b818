"""Ctrl-C at any moment of ``create``, ``load``, ``open``, ``close``, an import,
``peek``, ``check``, ``follow`` or the ``follow`` command.

A ``KeyboardInterrupt`` is raised, for real, at every line the package runs
during each call in turn (a ``sys.settrace`` hook on the package's own frames:
CPython delivers a signal's exception between bytecodes of the running code).
One interrupt per call, as one Ctrl-C gives, and not while the package is
already handling another exception: no Python code can make its cleanup safe
from an interrupt that lands on the cleanup's own first line. (Nor can it close
a descriptor in the instant between the system call that returned it and the
name it is bound to: that is within a line, and not tested.) After each one:

* the interrupt is what comes out, not an ``OSError`` from a descriptor closed
  twice;
* no descriptor is left open (each number is ``fstat``-ed), nor a file to the
  garbage collector, so no lock is left behind:
  the same call, retried in this process, succeeds;
* the file is a transcript, or empty, or gone, never a half-written one that
  load refuses.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from interrupt import every_interrupt, open_fds

from agent_transcript import Message, Session

from ._helpers import meta, msg, write


def loads_or_is_empty(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    Session.load(path).close()


_CLAUDE_CODE_SESSION = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in (
    {"parentUuid": None, "isSidechain": False, "type": "user", "uuid": "u1", "sessionId": "s1",
     "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": "hi"}},
    {"parentUuid": "u1", "isSidechain": False, "type": "assistant", "uuid": "a1", "sessionId": "s1",
     "timestamp": "2026-03-01T10:00:01.000Z",
     "message": {"id": "m1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                 "content": [{"type": "text", "text": "hello"}], "stop_reason": None}},
))
_CODEX_ROLLOUT = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in (
    {"timestamp": "2026-02-01T09:00:00.000Z", "type": "session_meta",
     "payload": {"id": "0199aa00-0000-7000-8000-000000000001", "timestamp": "2026-02-01T09:00:00Z",
                 "cwd": "/w/demo", "originator": "codex_cli_rs", "cli_version": "0.98.0"}},
    {"timestamp": "2026-02-01T09:00:01.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}},
    {"timestamp": "2026-02-01T09:00:02.000Z", "type": "response_item",
     "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}},
))


@pytest.mark.parametrize("existing", [None, b""], ids=["new file", "empty file"])
def test_create(fast_tmp: Path, existing: bytes | None) -> None:
    path = fast_tmp / "run.jsonl"

    def prepare() -> Path:
        path.unlink(missing_ok=True)
        if existing is not None:
            path.write_bytes(existing)
        return path

    def after(p: Path) -> None:
        loads_or_is_empty(p)  # the lock is free and the file is whole
        if not p.exists() or p.stat().st_size == 0:
            Session.create(p, {"retry": True}).close()

    every_interrupt(prepare, lambda p: Session.create(p, {"k": 1}), after)


def test_create_in_new_folders(fast_tmp: Path) -> None:
    """The folders create makes for a new transcript are made in its try, each
    recorded as it is made: a Ctrl-C at any line leaves the transcript whole,
    or no transcript and none of those folders."""
    path = fast_tmp / "runs" / "today" / "run.jsonl"

    def prepare() -> Path:
        shutil.rmtree(fast_tmp / "runs", ignore_errors=True)
        return path

    def after(p: Path) -> None:
        if p.exists():
            Session.load(p).close()
        else:
            assert not (fast_tmp / "runs").exists()
            Session.create(p, {"retry": True}).close()

    every_interrupt(prepare, lambda p: Session.create(p, {"k": 1}), after)


@pytest.mark.parametrize("tail", [b"", b'{"id":"torn","pay'], ids=["clean", "torn tail"])
def test_load(fast_tmp: Path, tail: bytes) -> None:
    path = fast_tmp / "run.jsonl"
    good = meta() + msg("m1") + msg("m2")

    def prepare() -> Path:
        write(path, good, tail)
        return path

    def after(p: Path) -> None:
        assert p.read_bytes() in (good, good + tail)  # cut to its good prefix, or not yet
        assert not p.with_name(p.name + ".repair").exists() or True  # a retry deletes it
        with Session.load(p) as s:
            assert s.message_ids == ["m1", "m2"]
        assert not p.with_name(p.name + ".repair").exists()

    every_interrupt(prepare, Session.load, after)


@pytest.mark.parametrize("start", ["missing", "transcript", "torn meta"])
def test_open(fast_tmp: Path, start: str) -> None:
    path = fast_tmp / "run.jsonl"

    def prepare() -> Path:
        path.unlink(missing_ok=True)
        if start == "transcript":
            write(path, meta(), msg("m1"))
        elif start == "torn meta":
            with Session.create(path, {"first": True}):
                pass
            path.write_bytes(path.read_bytes()[:30])
        return path

    def after(p: Path) -> None:
        Session.open(p, {"retry": True}).close()

    every_interrupt(prepare, lambda p: Session.open(p, {"k": 1}), after)


@pytest.mark.parametrize("durability", ["flush", "fsync"])
def test_close(fast_tmp: Path, durability: str) -> None:
    path = fast_tmp / "run.jsonl"

    def prepare() -> Session:
        path.unlink(missing_ok=True)
        s = Session.create(path, durability=durability)  # type: ignore[arg-type]
        s.append_message(Message.user("hi"))
        return s

    def after(s: Session) -> None:
        s.close()  # a retry finishes the job
        # Nothing is left open on the file; a read opens it again for its length.
        on_file = [n for n in open_fds() if os.path.exists(f"/proc/self/fd/{n}")
                   and os.path.samefile(f"/proc/self/fd/{n}", path)]
        assert on_file == []
        assert [m.content for m in s.messages] == ["hi"]
        with Session.load(path) as again:  # the lock is free
            assert [m.content for m in again.messages] == ["hi"]

    # close() is a few lines: it lets go of the lock and the file, nothing more.
    assert every_interrupt(prepare, lambda s: s.close(), after, check_leaks=False, at_least=3) >= 3


@pytest.mark.parametrize("source_kind", ["claude-code", "codex", "folder"])
def test_import(fast_tmp: Path, source_kind: str) -> None:
    """Ctrl-C at each line of an import (of a Claude Code session, a Codex
    rollout, a folder holding the session): the destination is missing or a
    whole import, no temporary file is left, and the same import then goes
    through (no turn at the destination is left taken: it would wait for ever)."""
    import shutil

    from agent_transcript.formats import import_transcript

    if source_kind == "codex":
        data, said = _CODEX_ROLLOUT, [[{"type": "text", "text": "hi"}], [{"type": "text", "text": "hello"}]]
    else:
        data, said = _CLAUDE_CODE_SESSION, ["hi", "hello"]
    out = fast_tmp / "out"
    if source_kind == "folder":
        source = fast_tmp / "sessions"
        source.mkdir()
        (source / "claude.jsonl").write_bytes(data)
        dest = out / "imported"
        transcript = dest / "claude.jsonl"
        whole = ["imported", "imported/claude.jsonl"]
    else:
        source = fast_tmp / f"{source_kind}.jsonl"
        source.write_bytes(data)
        dest = transcript = out / "imported.jsonl"
        whole = ["imported.jsonl"]

    def prepare() -> Path:
        shutil.rmtree(out, ignore_errors=True)
        return dest

    def after(d: Path) -> None:
        left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) if out.exists() else []
        assert left in ([], whole), left
        if left:
            Session.peek(transcript)  # whole
        import_transcript(source, d, force=True)
        assert [m.content for m in Session.peek(transcript).messages] == said

    every_interrupt(prepare, lambda d: import_transcript(source, d), after)


@pytest.mark.parametrize("reader", ["peek", "check"])
@pytest.mark.parametrize("kind", ["transcript", "torn tail", "archive", "not a transcript"])
def test_read(fast_tmp: Path, reader: str, kind: str) -> None:
    """Ctrl-C at each line of a peek or a check (of a transcript, one with a
    torn tail, an archive, a file that is none): no descriptor is left open,
    the file is as it was, and the same read then gives the same answer."""
    from agent_transcript.inspect import check_path

    path = fast_tmp / "run.jsonl"
    if kind == "not a transcript":
        write(path, b"hello\n")
    else:
        write(path, meta(), msg("m1"), msg("m2"), b'{"id":"torn","pay' if kind == "torn tail" else b"")
    if kind == "archive":
        path = Session.archive(path)
    before = path.read_bytes()

    def read(p: Path) -> Any:
        if reader == "peek":
            seen = Session.peek(p)
            return seen.error, [m.content for m in seen.messages], seen.warnings
        return check_path(str(p)).to_json()

    untouched = read(path)

    def after(p: Path) -> None:
        assert p.read_bytes() == before
        assert sorted(x.name for x in fast_tmp.iterdir()) == [p.name]
        assert read(p) == untouched

    every_interrupt(lambda: path, read, after)


@pytest.mark.parametrize("case", ["repaired", "rotated", "closed early"])
def test_follow(fast_tmp: Path, case: str) -> None:
    """Ctrl-C at each line of a follow: to its idle end, through a repair's swap
    of the file or a rotation to another (made after its last envelope), or
    closed after its first envelope. No descriptor is left open (the file, or
    the one swapped out), and the same follow then gives the same envelopes."""
    from agent_transcript.inspect import follow_file

    path = fast_tmp / "run.jsonl"
    first = meta() + msg("m1") + msg("m2")
    swapped = fast_tmp / "swapped.jsonl"
    swap = first + msg("m3") if case == "repaired" else meta("other") + msg("n1")

    def prepare() -> Path:
        write(path, first)
        write(swapped, swap)
        return path

    def follow(p: Path) -> list[str]:
        seen: list[str] = []
        envelopes = follow_file(p, poll=0.001, idle_timeout=0, on_restart=seen.append)
        for envelope in envelopes:
            seen.append(envelope.id)
            if case == "closed early":
                envelopes.close()  # type: ignore[attr-defined]
                break
            if envelope.id == "m2":
                os.replace(swapped, p)
        return seen

    untouched = follow(prepare())
    # With no idle time, it ends just after it moves to the new file.
    assert untouched == {"repaired": ["meta", "m1", "m2"], "rotated": ["meta", "m1", "m2", "replaced"],
                         "closed early": ["meta"]}[case]

    def after(p: Path) -> None:
        assert follow(prepare()) == untouched

    every_interrupt(prepare, follow, after)


@pytest.mark.parametrize("start", ["transcript", "empty"])
def test_follow_command(fast_tmp: Path, capsys: pytest.CaptureFixture[str], start: str) -> None:
    """Ctrl-C at each line of ``agent-transcript follow PATH`` (its command, run
    in this process to its idle end): the interrupt comes out, or in its loop
    ends it as a Ctrl-C does (exit 0), and no descriptor is left open, the
    first read of the file (is it a transcript?) included."""
    import sys

    from agent_transcript.cli.app import _parser

    path = fast_tmp / "run.jsonl"
    write(path, meta(), msg("m1"), msg("m2")) if start == "transcript" else write(path, b"")
    args = _parser().parse_args(["follow", str(path), "--idle-timeout", "0", "--poll", "0.001", "--json"])

    def follow(p: Path) -> int:
        traced = sys.gettrace() is not None
        status: int = args.func(args)
        assert status == 0
        if traced and sys.gettrace() is None:
            # The interrupt fired (it takes its trace away as it does) and the
            # loop took it, as it takes a Ctrl-C: delivered.
            raise KeyboardInterrupt
        return status

    def after(p: Path) -> None:
        capsys.readouterr()
        follow(p)
        shown = [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]
        assert shown == (["meta", "m1", "m2"] if start == "transcript" else [])

    every_interrupt(lambda: path, follow, after)


def _bytes_read() -> int:
    """What this process has read so far (``rchar``: every read and pread)."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


@pytest.fixture(scope="module")
def big_transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """128 MiB of messages: a pass over it takes long beside the few
    milliseconds between two looks at the signal handlers, on a fast machine too."""
    p = tmp_path_factory.mktemp("big") / "big.jsonl"
    filler = "x" * 4000
    write(p, meta(), *(msg(f"m{i}", content=filler) for i in range(32_000)))
    return p


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's per-process I/O counts")
@pytest.mark.parametrize("reader", ["load", "peek", "check"])
def test_a_signal_ends_the_native_pass_of_a_big_transcript_where_it_is(big_transcript: Path, reader: str) -> None:
    """The GIL is released while the core reads, so a Ctrl-C waited for the end
    of the pass (1-2 s for 1.7 GiB). The core now runs Python's handlers
    between stretches of a MiB (every 10 ms at most): the handler's exception
    comes out of the native call before the file is all read, and nothing is
    left held (the same call then succeeds)."""
    import linecache
    import signal

    from agent_transcript.inspect import check_path

    p = big_transcript
    size = p.stat().st_size
    call: Callable[[], Any] = {
        "load": lambda: Session.load(p).close(),
        "peek": lambda: Session.peek(p),
        "check": lambda: check_path(p),
    }[reader]

    class Stopped(Exception):
        pass

    read_when_stopped: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        # Only while a call into the core is the line being run: a signal
        # heard in the Python around it proves nothing, and is let pass.
        if frame is not None and "_core." in linecache.getline(frame.f_code.co_filename, frame.f_lineno):
            signal.setitimer(signal.ITIMER_REAL, 0)
            read_when_stopped.append(_bytes_read() - before)
            raise Stopped

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        before = _bytes_read()
        signal.setitimer(signal.ITIMER_REAL, 0.002, 0.002)
        with pytest.raises(Stopped):
            call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # Heard after the pass, the handler would find the whole file read (and more).
    assert read_when_stopped and read_when_stopped[0] < size, (read_when_stopped, size)
    call()



@pytest.mark.parametrize("call", ["check", "peek", "archive"])
def test_a_signal_at_any_moment_of_a_native_call_is_heard(tmp_path: Path, call: str) -> None:
    """A native pass runs Python's signal handlers between stretches of its
    work, and the Python around it runs them between bytecodes: wherever a
    signal lands, its handler's exception comes out, during the call or just
    after it. A pass used to ask ``threading`` for the main thread as it
    started, in Python code where a pending handler ran too, and took the
    handler's exception for an answer: the Ctrl-C was lost (the archive's
    signal test failed on it once in CI). 300 signals, each at a random moment
    of a call. (The import's native passes share the same Signals; its Python
    around them is held to an interrupt at every line by test_import.)"""
    import random
    import signal
    import time

    from agent_transcript.inspect import check_path

    class Stopped(Exception):
        pass

    def stop(signum: int, frame: Any) -> None:
        raise Stopped

    path = tmp_path / "run.jsonl"
    write(path, meta(), *(msg(f"m{i}", content="x" * 200) for i in range(200)))

    def prepare() -> None:  # outside the signal's reach: only the call is
        for old in tmp_path.glob("*.zst*"):
            old.unlink()

    def run() -> None:
        if call == "check":  # load's native pass, read-only (a load stopped
            check_path(path)  # between its return and a close would keep the lock)
        elif call == "peek":
            Session.peek(path)
        else:
            Session.archive(path, keep=True)

    prepare()
    started = time.perf_counter()
    run()
    took = time.perf_counter() - started
    rng = random.Random(1)
    previous = signal.signal(signal.SIGALRM, stop)
    lost = 0
    try:
        for _ in range(300):
            prepare()
            try:
                signal.setitimer(signal.ITIMER_REAL, max(1e-6, rng.uniform(0, 1.2 * took)))
                try:
                    run()
                finally:
                    time.sleep(1.5 * took + 0.002)  # the signal, if still due, lands here
                lost += 1
            except Stopped:
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert lost == 0, f"{lost} of 300 signals' exceptions never came out"
    prepare()
    run()  # nothing was left held
