"""Session.peek: what a transcript file says, read without changing anything."""

from __future__ import annotations

import os
from pathlib import Path

from . import _core
from .envelope import Envelope, LazySequence, Peek
from .message import Message


def _nothing(path: Path, size: int, error: str, warnings: list[str] | None = None) -> Peek:
    return Peek(path=path, size=size, meta={}, envelopes=[], messages=[], warnings=warnings or [],
                error=error)


def peek(path: Path) -> Peek:
    """See :meth:`agent_transcript.Session.peek`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        return _nothing(path, 0, f"cannot read {path}: {e.strerror}")
    try:
        size = os.fstat(fd).st_size
        try:
            index = _core.Peeked.open(fd)
        except OSError as e:
            return _nothing(path, size, f"cannot read {path}: {e.strerror}")
    finally:
        os.close(fd)
    warnings = [f"line {n}: skipped, {why}" for n, why in index.skipped()]
    if index.skipped_more():
        warnings.append(f"... and {index.skipped_more():,} more lines skipped")
    if len(index) == 0:
        if not warnings:
            return _nothing(path, size, "the file is empty")
        return _nothing(path, size, "no line of the file is an envelope", warnings)
    first = index.event(0)
    skipped_before = [n for n, _ in index.skipped() if n < first[5]]
    if skipped_before or index.kind(0) != 2:
        return _nothing(path, size, "the first line is not a session-meta", warnings)

    def envelope(i: int) -> Envelope:
        return Envelope(*index.event(i))

    message_at = index.message_indices()

    def message(i: int) -> Message:
        payload = index.event(message_at[i])[4]
        return Message.from_dict(payload)

    return Peek(
        path=path,
        size=index.size(),
        meta=first[4],
        envelopes=LazySequence(len(index), envelope),
        messages=LazySequence(len(message_at), message),
        warnings=warnings,
        error=None,
    )
