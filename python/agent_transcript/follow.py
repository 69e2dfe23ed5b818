"""Session.follow: envelopes as another process appends them, like ``tail -f``.

What follow does when the file changes under it:

* It grows: the new whole lines are read. A last line without its ``\\n`` is
  held, not reported; whenever the file's size changes while one is held, it
  is read again from the file, so bytes a writer cut back (a failed append
  truncated to its last good length) are never glued onto the next line.
* It shrinks below what was read (truncated in place, ``copytruncate``), or
  the bytes already read change (emptied and written again past that point
  between two polls, so that its size never showed it): it is read again from
  its start. The first and the last bytes read are compared at each poll
  (``ReadEdges``).
* Another file appears at the path (a different inode). A tail repair renames
  the good prefix of the old file over it, byte for byte: when the new file
  starts with the same bytes as the old one up to the end of the last envelope
  reported, it is that repair, and reading goes on from there (the torn bytes
  held are dropped: the repair removed them). Any other new file (a rotation:
  renamed away, then a new transcript created) is read from its start, its
  line numbers from 1. The old file is read to its end before either.
* A path that is, or becomes, something other than a regular file (a FIFO) is
  refused when following starts and ignored afterwards.

The two readings from the start are told to ``on_restart`` (the CLI says them
on stderr, as ``tail -F`` says "file truncated"): the envelopes that follow
begin the file again, and without a word a reader would take them for new
ones of the same run. A repair's swap is not told: reading goes on.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import _core
from ._storage import Descriptor, open_regular
from .envelope import Envelope
from .errors import CorruptTranscript

_BLANK = b" \t\r"
_CHUNK = 1 << 20
# Bytes kept of the start and of the end of what was read: a new transcript's
# first line has an id and a time of its own, and the end of the last line
# read names that line's.
_EDGE = 256


class ReadEdges:
    """The first and the last bytes read of a file that is read as it grows, to
    tell a file rewritten in place (the same inode, at least as long) from one
    that only grew: a writer that appends never changes a byte already read."""

    def __init__(self) -> None:
        self.end = 0          # where what was read ends
        self.head = b""       # its first bytes (up to _EDGE)
        self.tail = b""       # its last bytes, ending at `end` (up to _EDGE)

    def reset(self, fd: int, end: int) -> None:
        """Takes the file's first ``end`` bytes as read (nothing, for 0)."""
        edge = min(_EDGE, end)
        self.end = end
        self.head = os.pread(fd, edge, 0) if edge else b""
        self.tail = os.pread(fd, edge, end - edge) if edge else b""

    def read(self, data: bytes | memoryview, n: int) -> None:
        """Takes the first ``n`` bytes of ``data``, which starts at ``end``, as read."""
        if self.end < _EDGE and len(self.head) == self.end:
            self.head += bytes(data[:min(n, _EDGE - self.end)])
        self.tail = (self.tail + bytes(data[max(0, n - _EDGE):n]))[-_EDGE:]
        self.end += n

    def changed(self, fd: int) -> bool:
        """Whether the file at ``fd`` no longer holds what was read, as it was."""
        if not self.end:
            return False
        return (os.pread(fd, len(self.head), 0) != self.head
                or os.pread(fd, len(self.tail), self.end - len(self.tail)) != self.tail)


class GrowingFile:
    """A file read as it grows, a whole line at a time: what ``Session.follow``
    and ``serve``'s live stream both read with.

    ``offset`` is where reading is (past whole lines only) and ``number`` how
    many lines are before it, blank ones counted. The start of a line whose
    ``\\n`` has not arrived is held, in the pieces read, and joined once when
    it comes: a long line read a block at a time is copied once, not once per
    block. Held bytes the writer cut back (a failed append truncated to its
    last good length) are read again, never glued onto the next line.
    """

    def __init__(self) -> None:
        #: The file, held so that a Ctrl-C at any line leaves it open and
        #: here, or closed: its reader closes it on every path.
        self.file = Descriptor()
        self.offset = 0
        self.number = 0
        self.edges = ReadEdges()  # of the bytes before `offset`
        self._held: list[bytes] = []
        self._held_n = 0
        self._caught_up = False  # the last read reached the file's size then

    @property
    def fd(self) -> int:
        """The file's descriptor."""
        return self.file.fd

    def restart(self, offset: int = 0, number: int = 0) -> None:
        """Read on from ``offset``, the start of line ``number + 1``."""
        self.offset, self.number = offset, number
        self._held, self._held_n, self._caught_up = [], 0, False
        self.edges.reset(self.fd, offset)

    def rewritten(self, size: int) -> bool:
        """Whether the file (``size`` bytes now) no longer holds what was read:
        cut below it, or written again in place past it."""
        return size < self.offset or self.edges.changed(self.fd)

    def behind(self, size: int) -> bool:
        """Whether the file, ``size`` bytes now, has bytes not yet read."""
        return size > self.offset + self._held_n

    def lines(self, size: int, most: int) -> list[bytes]:
        """The lines made whole by reading at most ``most`` more bytes of the
        file, ``size`` bytes now (none when it has not grown). Each is then
        passed to ``advance``, in order."""
        end = self.offset + self._held_n
        if self._held_n and (size < end or (self._caught_up and size != end)):
            # The held start of a line changed under it: read it again, whole.
            self._held, self._held_n, end = [], 0, self.offset
        if size <= end:
            return []
        got = os.pread(self.fd, min(most, size - end), end)
        self._caught_up = end + len(got) >= size
        if b"\n" not in got:
            self._held.append(got)
            self._held_n += len(got)
            return []
        data = b"".join((*self._held, got)) if self._held else got
        *whole, rest = data.split(b"\n")  # one split: not one copy of the rest per line
        self.edges.read(data, len(data) - len(rest))
        self._held, self._held_n = ([rest] if rest else []), len(rest)
        return whole

    def advance(self, line: bytes) -> None:
        """Past ``line``, one of those ``lines`` gave."""
        self.offset += len(line) + 1
        self.number += 1

    def swap(self, path: Path, kept: int, kept_number: int) -> str | None:
        """Move to the file now at ``path`` if it is another one: at ``kept``
        (the start of line ``kept_number + 1``) when the new file starts with
        the same ``kept`` bytes, a repair's swap (answers ``"repaired"``); at
        its start otherwise (``"replaced"``); None when the path still names
        the file, or names nothing to follow.

        Raises:
            OSError: the new file cannot be opened but for its absence.
        """
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        mine = os.fstat(self.fd)
        if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino) or not stat.S_ISREG(st.st_mode):
            return None
        new = Descriptor()
        # The new file is held by `new` until self takes it, in one line that
        # closes the old one: a Ctrl-C leaves each either held or closed.
        try:
            if not _open_again(path, new):
                return None
            repaired = same_prefix(self.fd, new.fd, kept)
            self.file.replace(new)
        except BaseException:
            new.close()
            raise
        if repaired:
            self.restart(kept, kept_number)
            return "repaired"
        self.restart()
        return "replaced"


def follow(path: Path, *, poll: float = 0.1, idle_timeout: float | None = None,
           on_restart: Callable[[str], None] | None = None) -> Iterator[Envelope]:
    """See ``agent_transcript.Session.follow``. ``on_restart`` is called with
    ``"truncated"`` or ``"replaced"`` when reading starts again from the start of
    the file (see the module's docstring)."""
    told = on_restart or (lambda why: None)
    at = GrowingFile()
    kept = kept_number = 0  # the end of the last envelope reported ("\n" included), its line
    # The file is closed by this try's own lines on every path, the generator's
    # close included (GeneratorExit): a finally's line, or that of a try
    # nested in this one (in CPython 3.11), is one a Ctrl-C can skip.
    try:
        at.file.fd = open_regular(path, os.O_RDONLY)
        last_news = time.monotonic()
        while True:
            size = os.fstat(at.fd).st_size
            if at.rewritten(size):
                at.restart()  # truncated or rewritten in place: what was read is gone
                kept = kept_number = 0
                told("truncated")
            if at.behind(size):
                for line in at.lines(size, _CHUNK):
                    at.advance(line)
                    if not line.strip(_BLANK):
                        continue
                    parsed = _envelope(line)
                    if parsed is None:
                        continue  # a line load would refuse is not news
                    kept, kept_number = at.offset, at.number
                    last_news = time.monotonic()
                    yield Envelope(*parsed, at.number)
                continue
            swapped = at.swap(path, kept, kept_number)
            if swapped is not None:
                kept, kept_number = at.offset, at.number
            if swapped == "replaced":
                told("replaced")
            if idle_timeout is not None and time.monotonic() - last_news >= idle_timeout:
                at.file.close()
                return
            time.sleep(poll)
    except BaseException:
        at.file.close()
        raise


def _envelope(line: bytes) -> tuple[str, str, str, int, Any] | None:
    """The core's parse of ``line`` (id, type, ts, v, payload), or None for a
    line load would refuse."""
    try:
        return _core.parse_envelope(line)
    except (CorruptTranscript, ValueError):
        return None


def _open_again(path: Path, new: Descriptor) -> bool:
    """Open the file now at ``path`` into ``new`` (empty); False when it is gone
    again, or not a regular file: not a transcript to follow."""
    try:
        new.fd = open_regular(path, os.O_RDONLY)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.EISDIR, errno.EINVAL):
            return False
        raise
    return True


def same_prefix(a: int, b: int, length: int) -> bool:
    """Whether the files ``a`` and ``b`` both start with the same ``length`` bytes:
    a file that another took the place of, and the repair of it (which renames
    the old file's good prefix over it), do up to the last whole line."""
    done = 0
    while done < length:
        want = min(_CHUNK, length - done)
        x, y = os.pread(a, want, done), os.pread(b, want, done)
        if len(x) != want or x != y:
            return False
        done += want
    return True
