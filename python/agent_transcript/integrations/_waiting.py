"""Opening a transcript another process may be holding for a moment."""

from __future__ import annotations

import time
from collections.abc import Callable

from agent_transcript import Session, SessionLocked

__all__ = ["open_waiting"]

#: How long an adapter waits for another process to let go of a transcript.
LOCKED_RETRY_SECONDS = 5.0


def open_waiting(opener: Callable[[], Session]) -> Session:
    """``opener()``, tried again while it raises ``SessionLocked``, for a few seconds.

    Another process that holds the transcript (between two of its runs) lets
    go soon; one that does not gets ``SessionLocked`` after the wait.
    """
    deadline = time.monotonic() + LOCKED_RETRY_SECONDS
    while True:
        try:
            return opener()
        except SessionLocked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
