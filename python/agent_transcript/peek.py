"""Session.peek: what a transcript file says, read without changing anything."""

from __future__ import annotations

import os
from pathlib import Path

from . import _core
from ._archive import open_for_reading
from ._storage import Descriptor
from .errors import CorruptTranscript
from .envelope import Envelope, LazySequence, Peek
from .message import Message


def _nothing(path: Path, size: int, error: str, warnings: list[str] | None = None) -> Peek:
    return Peek(path=path, size=size, meta={}, envelopes=[], messages=[], warnings=warnings or [],
                error=error)


def skipped_warning(line: int, why: str) -> str:
    """The warning for a line peek skipped."""
    return f"line {line}: skipped, {why}"


def judge(index: _core.Peeked) -> tuple[list[str], str | None]:
    """What peek says of an index: one warning per skipped line, and why there is
    nothing to read (empty, no envelope, the first line not a session-meta), or None."""
    skipped = index.skipped()
    warnings = [skipped_warning(n, why) for n, why in skipped]
    if index.skipped_more():
        warnings.append(f"... and {index.skipped_more():,} more lines skipped")
    if len(index) == 0:
        return warnings, "no line of the file is an envelope" if warnings else "the file is empty"
    first_line = index.line_number(0)
    if any(n < first_line for n, _ in skipped) or index.type_name(0) != "session-meta":
        return warnings, "the first line is not a session-meta"
    return warnings, None


def peek(path: Path) -> Peek:
    """See ``agent_transcript.Session.peek``."""
    fd = Descriptor()
    size = 0
    # Closed on every path by this try's own lines, not a finally's (a Ctrl-C
    # there would skip the close) nor a nested try (whose line, in CPython
    # 3.11, is outside this one's handler).
    try:
        # A FIFO is refused, not waited on; an archive is read decompressed.
        fd.fd = open_for_reading(path)
        size = os.fstat(fd.fd).st_size
        index = _core.Peeked.open(fd.fd)
        fd.close()
    except OSError as e:
        fd.close()
        return _nothing(path, size, f"cannot read {path}: {e.strerror}")
    except CorruptTranscript as e:
        fd.close()
        return _nothing(path, 0, f"cannot read {path}: {e.message}")
    except BaseException:
        fd.close()
        raise
    warnings, error = judge(index)
    if error is not None:
        return _nothing(path, size, error, warnings)
    first = index.event(0)

    def envelope(i: int) -> Envelope:
        return Envelope(*index.event(i))

    message_at = index.indices_of_type("message")

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
