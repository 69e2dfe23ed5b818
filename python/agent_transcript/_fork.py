"""What ``Session.fork`` reads and copies: how much of the source, and its
replay once copied."""

from __future__ import annotations

import os
from pathlib import Path

from . import _core
from .errors import CorruptTranscript, UnknownId


def fork_prefix(fd: int, path: Path, through_id: str | None) -> int:
    """How many bytes of ``fd``'s file a fork through ``through_id`` copies: up
    to and including that envelope's line (the last envelope's, if None) and
    its ``\n``, read from peek's index; nothing past the last whole line.

    Raises ``CorruptTranscript`` (the file is not a transcript, or a line before
    that one does not parse) or ``UnknownId``.
    """
    from .peek import judge  # the library's own lenient reader

    index = _core.Peeked.open(fd)
    _, error = judge(index)
    if error is not None:
        raise CorruptTranscript(error, None, str(path))
    if through_id is None:
        at = len(index) - 1
    else:
        at = next((i for i in range(len(index)) if index.envelope_id(i) == through_id), -1)
        if at < 0:
            raise UnknownId(f"{path}: no envelope {through_id!r} to fork through")
    number = index.line_number(at)
    for skipped, why in index.skipped():
        if skipped < number:
            raise CorruptTranscript(f"line {skipped} is damaged ({why}); a fork copies it",
                                    skipped, str(path))
    return _end_of_line(fd, number, index.size())


def fork_replay(fd: int, source: Path) -> _core.Transcript:
    """The core's replay of the fork's new file ``fd``, a refusal named after
    ``source``. (Not inline: in CPython 3.11 the line of a try nested in
    another is outside the outer one's handler, and a Ctrl-C there would leave
    the fork's file, locked, to the garbage collector.)"""
    try:
        return _core.Transcript.load(fd, False, False)
    except CorruptTranscript as e:
        raise type(e)(e.message, e.line, str(source)) from None


def _end_of_line(fd: int, number: int, size: int) -> int:
    """The offset just past line ``number``'s ``\n`` (1-based), or ``size``
    when that line is the last and has none."""
    offset = 0
    seen = 0
    while offset < size:
        chunk = os.pread(fd, min(1 << 20, size - offset), offset)
        if not chunk:
            break
        count = chunk.count(b"\n")
        if seen + count >= number:
            at = -1
            for _ in range(number - seen):
                at = chunk.index(b"\n", at + 1)
            return offset + at + 1
        seen += count
        offset += len(chunk)
    return size


def copy_lines(src: int, dst: int, length: int) -> None:
    """Append the first ``length`` bytes of ``src`` to ``dst``, and a ``\n`` when
    they end without one (a whole last line that lacked it)."""
    done = 0
    last = b"\n"
    while done < length:
        chunk = os.pread(src, min(1 << 20, length - done), done)
        if not chunk:
            raise OSError(5, "the source transcript shrank while it was being forked")
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view):]
        done += len(chunk)
        last = chunk[-1:]
    if last != b"\n":
        os.write(dst, b"\n")
