"""Every method is safe from any thread: eight threads appending at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session, digest

from ._helpers import parsed

THREADS = 8
EACH = 250


def test_eight_threads_appending_at_once(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    barrier = threading.Barrier(THREADS)
    ids: list[list[str]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            barrier.wait()
            for i in range(EACH):
                # Sizes vary so lines straddle buffer boundaries if anything buffers.
                ids[k].append(s.append_message(Message.user(f"{k}:{i}:" + "ß" * ((i * 37 + k) % 300)),
                                               extra={"thread": k, "i": i}))
                if i % 50 == 0:
                    s.message_ids    # readers interleave with the writers
                    s.append_grants({"thread": k, "i": i})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    live_ids = s.message_ids
    s.close()

    everything = [i for per in ids for i in per]
    assert len(set(everything)) == THREADS * EACH
    with Session.load(p) as loaded:
        assert loaded.warnings == []
        assert loaded.message_ids == live_ids
        assert sorted(loaded.message_ids) == sorted(everything), "every id exactly once"
        position = {i: n for n, i in enumerate(loaded.message_ids)}
        for k in range(THREADS):
            assert [position[i] for i in ids[k]] == sorted(position[i] for i in ids[k]), f"thread {k} order"
        for m, i in zip(loaded.messages, loaded.message_ids):
            k, n, _ = m.content.split(":", 2)
            assert ids[int(k)][int(n)] == i
    lines = parsed(p)
    assert len(lines) == 1 + THREADS * EACH + THREADS * (EACH // 50)
    assert all(e["payload"]["i"] == int(e["payload"]["content"].split(":")[1])
               for e in lines if e["type"] == "message")


def test_mixed_appends_from_many_threads_replay_to_the_live_state(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    first = s.append_message(Message.system("sys"))
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []
    stop = threading.Event()

    def appender(k: int) -> None:
        for i in range(150):
            s.append_message(Message.user(f"{k}:{i}"))

    def elider() -> None:
        n = 0
        while n < 20 or not stop.is_set():
            live = s.message_ids      # no compaction runs here, so these stay live
            s.append_elision([(live[(n * 7) % len(live)], f"stub {n}")])
            n += 1

    def tools() -> None:
        n = 0
        while n < 20 or not stop.is_set():
            op = s.append_tool_dispatched(f"c{n}", "t", {"n": n})
            s.append_run_context([("identity", "same every time"), ("n", str(n % 5))], [("n", n)])
            if n % 2:
                s.append_tool_settled(op, "completed")
            s.pending_tool_operations()
            n += 1

    def run(target: Any, *args: Any) -> None:
        try:
            barrier.wait()
            target(*args)
        except BaseException as e:
            errors.append(e)

    workers = [threading.Thread(target=run, args=(appender, k)) for k in range(6)]
    others = [threading.Thread(target=run, args=(elider,)), threading.Thread(target=run, args=(tools,))]
    for t in workers + others:
        t.start()
    for t in workers:
        t.join(timeout=120)
    stop.set()
    for t in others:
        t.join(timeout=120)
    assert errors == []
    k = s.append_compaction("sum", s.message_ids[len(s.message_ids) // 2], 1, 1)
    live = (s.messages, s.message_ids, [x.op_id for x in s.pending_tool_operations()], list(s.events))
    s.close()
    with Session.load(p) as loaded:
        assert loaded.warnings == []
        assert (loaded.messages, loaded.message_ids, [x.op_id for x in loaded.pending_tool_operations()],
                list(loaded.events)) == live
        assert loaded.message_ids[0] == first and k in loaded.message_ids
        assert loaded.run_context_section(digest("same every time")) == "same every time"
    carriers = [sec for e in parsed(p) if e["type"] == "run-context" for sec in e["payload"]["sections"]
                if "text" in sec and sec["text"] == "same every time"]
    assert len(carriers) == 1, "stored once even when threads race"


def test_reading_from_other_threads_during_fsync_appends_never_meets_a_borrowed_core(
        tmp_path: Path) -> None:
    # An fsync append lets go of the GIL while it syncs; a reader in another
    # thread (repr included) must wait for the session's lock, not find the
    # native transcript mid-append ("Already mutably borrowed").
    p = tmp_path / "run.jsonl"
    s = Session.create(p, durability="fsync")
    done = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def writer() -> None:
        try:
            for i in range(150):
                s.append_message(Message.user(f"m{i}"))
                if i % 10 == 0:
                    s.append_tool_dispatched(f"c{i}", "t", {"i": i})
        except BaseException as e:
            errors.append(e)
        finally:
            done.set()

    def reader() -> None:
        try:
            while not done.is_set():
                repr(s)
                events = s.events
                len(events)
                s.message_ids
                s.pending_tool_operations()
                s.grants
                s.meta
                reads[0] += 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert reads[0] > 0
    s.close()
    assert repr(s).endswith("closed, 166 envelopes>")


def test_python_code_run_by_an_append_may_read_the_session(tmp_path: Path) -> None:
    # The canonical writer iterates a list subclass and calls a dict subclass's
    # items(): that code runs inside the append, on the same thread, and may read
    # the session (a log line with repr(session), say). It sees the session as it
    # was before the append, never PyO3's "Already mutably borrowed".
    s = Session.create(tmp_path / "run.jsonl")
    first = s.append_message(Message.user("first"))
    seen: list[Any] = []

    class Logged(list):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            seen.append((repr(s), s.message_ids, len(s.events), s.grants))
            return super().__iter__()

    class LoggedDict(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            seen.append((repr(s), s.message_ids, len(s.events), s.pending_tool_operations()))
            return super().items()

    second = s.append_message(Message.user("second"), extra={"x": Logged([1, 2])})
    s.append_grants(LoggedDict(a=1))
    assert seen[0][1:] == ([first], 2, None)
    assert seen[1][1:] == ([first, second], 3, [])
    s.close()
    with Session.load(tmp_path / "run.jsonl") as again:
        assert again.message_ids == [first, second] and again.grants == {"a": 1}


def test_the_session_lock_is_one_threads_at_a_time_and_reentrant(tmp_path: Path) -> None:
    """The native lock every method holds (rust/py/src/session.rs): a thread
    holding it keeps every other thread's append out, its own appends and
    close included go through (it is reentrant), and only its holder may let
    go of it."""
    import time

    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    held, done = threading.Event(), threading.Event()
    order: list[str] = []

    def other() -> None:
        held.wait(10)
        s.append_message(Message.user("other"))  # the native path: waits for the holder
        order.append("other")
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with s._lock:
        with s._lock:
            held.set()
            assert not done.wait(0.3), "another thread appended while this one held the lock"
            s.append_message(Message.user("holder"))
            order.append("holder")
        errors: list[BaseException] = []
        not_the_holder = threading.Thread(target=_record, args=(errors, s._lock.release))
        not_the_holder.start()
        not_the_holder.join()
        assert [type(e) for e in errors] == [RuntimeError]
        time.sleep(0.05)
        assert not done.is_set()
    t.join(10)
    assert order == ["holder", "other"]
    with s._lock:
        s.close()  # reentrant: close takes it again
    assert [m.content for m in Session.peek(p).messages] == ["holder", "other"]


def _record(errors: list[BaseException], call: Any) -> None:
    try:
        call()
    except BaseException as e:
        errors.append(e)


def test_a_signal_ends_a_wait_for_the_session_lock(tmp_path: Path) -> None:
    """A thread waiting for the lock waits without the GIL, and hears the
    signal handlers as threading.RLock's acquire does: a Ctrl-C ends the
    wait (the handler's exception comes out, nothing is written), and the
    lock works on afterwards."""
    import signal

    class Stopped(Exception):
        pass

    def stop(signum: int, frame: Any) -> None:
        raise Stopped

    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with s._lock:
            held.set()
            release.wait(20)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Stopped):
            s.append_message(Message.user("waited"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        release.set()
        t.join(10)
    s.append_message(Message.user("after"))
    s.close()
    assert [m.content for m in Session.peek(p).messages] == ["after"]
