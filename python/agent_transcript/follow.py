"""Session.follow: envelopes as another process appends them, like ``tail -f``."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from . import _core
from .envelope import Envelope
from .errors import CorruptTranscript

_BLANK = b" \t\r"


def follow(path: Path, *, poll: float = 0.1, idle_timeout: float | None = None) -> Iterator[Envelope]:
    """See :meth:`agent_transcript.Session.follow`."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    offset = 0          # bytes of the file consumed: whole lines only
    number = 0          # lines consumed, blank ones counted
    pending = b""       # the start of a line whose "\n" has not arrived
    last_news = time.monotonic()
    try:
        while True:
            chunk = os.pread(fd, 1 << 20, offset + len(pending))
            if chunk:
                pending += chunk
                *whole, pending = pending.split(b"\n")
                for line in whole:
                    offset += len(line) + 1
                    number += 1
                    if not line.strip(_BLANK):
                        continue
                    try:
                        id_, type_, ts, v, payload = _core.parse_envelope(line)
                    except (CorruptTranscript, ValueError):
                        continue  # a line load would refuse is not news
                    last_news = time.monotonic()
                    yield Envelope(id_, type_, ts, v, payload, number)
                continue
            fd, offset, pending = _follow_swap(path, fd, offset, pending)
            if idle_timeout is not None and time.monotonic() - last_news >= idle_timeout:
                return
            time.sleep(poll)
    finally:
        os.close(fd)


def _follow_swap(path: Path, fd: int, offset: int, pending: bytes) -> tuple[int, int, bytes]:
    # A repair renames a new file over the old one: the good prefix, byte for
    # byte. Carry on in the new file from the same offset, dropping the torn
    # bytes we were holding (the repair removed them).
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return fd, offset, pending
    mine = os.fstat(fd)
    if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
        return fd, offset, pending
    try:
        new = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return fd, offset, pending
    os.close(fd)
    return new, min(offset, os.fstat(new).st_size), b""
