"""Interrupts for the tests: a ``KeyboardInterrupt`` raised at each line of the
package's code in turn (:func:`every_interrupt`, the harness of
tests/session/test_interrupts.py and tests/fleet/test_interrupts.py), and a
signal handler's exception raised in the middle of a call, for the tests of the
native passes that must hear it (the core asks Python's handlers between
stretches of its work)."""

from __future__ import annotations

import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import agent_transcript
from agent_transcript import Session

PACKAGE = str(Path(agent_transcript.__file__).resolve().parent)


class Interrupt:
    """Raises ``KeyboardInterrupt`` at the ``at``-th line event of the package's
    code, passing over the functions named in ``passing`` and all they call."""

    def __init__(self, at: int, passing: frozenset[str] = frozenset()) -> None:
        self.at = at
        self.passing = passing
        self.seen = 0
        self.fired = False
        self.where = ""
        self.last: tuple[int, int] | None = None

    def trace(self, frame: FrameType, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        if event == "call" and self.passing and self._passed(frame):
            return None
        if event == "line" and sys.exc_info()[1] is None:
            # A line event again for the line just seen, in the same frame, is
            # a one-line comprehension's next item: CPython 3.12+ inlines
            # comprehensions, and an exception a trace function raises between
            # two items skips the enclosing function's handlers (a real
            # signal's does not). The line's first event stays. (A comprehension
            # over several lines in a try with a cleanup is a function of its own.)
            here = (id(frame), frame.f_lineno)
            if here == self.last:
                return self.trace
            self.last = here
            self.seen += 1
            if self.seen == self.at:
                self.fired = True
                self.where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
                sys.settrace(None)
                raise KeyboardInterrupt(f"injected at line event {self.at}")
        return self.trace

    def _passed(self, frame: FrameType | None) -> bool:
        while frame is not None:
            if frame.f_code.co_name in self.passing and frame.f_code.co_filename.startswith(PACKAGE):
                return True
            frame = frame.f_back
        return False

    def run(self, call: Callable[[], Any]) -> Any:
        sys.settrace(self.trace)
        try:
            return call()
        finally:
            sys.settrace(None)


def open_fds() -> set[int]:
    """This process's open descriptors (found without opening one to look).

    A new descriptor takes the lowest free number, so all of them lie below
    the last open one plus the few a call holds at once: the search stops
    after 256 free numbers in a row (a full sweep of 4096 fstats per look
    was most of these tests' time)."""
    found = set()
    n = free = 0
    while free < 256:
        try:
            os.fstat(n)
        except OSError:
            free += 1
        else:
            found.add(n)
            free = 0
        n += 1
    return found


def every_interrupt(prepare: Callable[[], Any], call: Callable[[Any], Any],
                    after: Callable[[Any], None], *, check_leaks: bool = True,
                    passing: frozenset[str] = frozenset(), at_least: int = 10) -> int:
    """Interrupt ``call(prepare())`` at each line in turn; ``after(prepared)``
    checks the aftermath. Returns how many interrupts were delivered.

    A file or a session the interrupt left to the garbage collector (closed
    as the interrupt's traceback goes, with a ``ResourceWarning``) fails the
    interrupt point too, named. The functions named in ``passing`` (pure
    computation, which holds nothing) and all they call are not interrupted,
    to keep a long call's test short."""
    delivered = 0
    for at in range(1, 10_000):
        prepared = prepare()
        before = open_fds()
        interrupt = Interrupt(at, passing)
        with warnings.catch_warnings(record=True) as dropped:
            warnings.simplefilter("always", ResourceWarning)
            try:
                result = interrupt.run(lambda: call(prepared))
            except KeyboardInterrupt:
                assert interrupt.fired
                delivered += 1
            else:
                assert not interrupt.fired
                if isinstance(result, Session):
                    result.close()
                assert delivered >= at_least  # the injector did reach the code
                return delivered
        collected = [str(w.message) for w in dropped if issubclass(w.category, ResourceWarning)]
        assert not collected, f"interrupt at {interrupt.where}: left to the garbage collector: {collected}"
        leaked = open_fds() - before if check_leaks else set()
        assert not leaked, (f"interrupt at {interrupt.where}: descriptors left open: "
                            f"{[os.readlink(f'/proc/self/fd/{n}') for n in leaked]}")
        try:
            after(prepared)
        except AssertionError as e:
            raise AssertionError(f"interrupt at {interrupt.where}: {e}") from e
    raise AssertionError("the call never finished")


class Stopped(Exception):
    """What the handler raises."""


@contextmanager
def stopped_by_a_signal() -> Iterator[type[Stopped]]:
    """Within it, SIGALRM comes every millisecond and its handler raises
    :class:`Stopped` (once: the timer stops with it); the old handler is put
    back on the way out. Enter ``pytest.raises(Stopped)`` first: on a busy
    machine the first signal may come before the next context is entered."""

    def stop(signum: int, frame: object) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        raise Stopped

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
        yield Stopped
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
