"""A signal handler's exception raised in the middle of a call, for the tests of
the native passes that must hear it (the core asks Python's handlers between
stretches of its work)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Stopped(Exception):
    """What the handler raises."""


@contextmanager
def stopped_by_a_signal() -> Iterator[type[Stopped]]:
    """Within it, SIGALRM comes every millisecond and its handler raises
    :class:`Stopped` (once: the timer stops with it); the old handler is put
    back on the way out."""

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
