"""A transcript's rows as columns, in bulk from the core: what an export writes.

``ColumnBatch`` gathers the rows of the four tables an export writes
(``sessions``, ``envelopes``, ``messages``, ``tool_operations``) from one file
or many; ``FileColumns`` adds one file's rows to it, from a
``agent_transcript.inspect.Reading``: every envelope the reading shows,
with replay's answers (live or not, live position, what later compacted,
elided or rewound a message, each operation's state) when load accepts the
file, and nulls for them when it refuses it. The core reads and parses the
lines without the GIL and hands back Arrow-layout buffers
(``ColumnData``); nothing here imports pyarrow, which the front end that
writes the tables wraps them with.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _core
from .reader import Reading

__all__ = ["ColumnBatch", "FileColumns", "ColumnData", "status_of"]

#: One column: ``(name, kind, length, null_count, buffers, child)``. ``kind`` is
#: ``"utf8"`` (Arrow ``large_string``: validity, int64 offsets, data),
#: ``"int64"``, ``"timestamp"`` (µs since the epoch, UTC), ``"float64"``
#: (validity, values), ``"bool"`` (validity, value bits) or ``"list_utf8"``
#: (``list<large_string>``: validity, int32 offsets; ``child`` is the items'
#: ``"utf8"`` column). A validity buffer is None when no row is null. A buffer
#: is a ``agent_transcript._core.ColumnBuffer``: the core's own bytes,
#: which pyarrow wraps where they are (``pyarrow.foreign_buffer(b.address(),
#: len(b), base=b)``); ``bytes(b)`` copies them.
ColumnData = tuple[str, str, int, int, list["_core.ColumnBuffer | None"], Any]


def status_of(reading: Reading) -> tuple[str, str | None]:
    """A file's status as ``ls`` names them, and why it is not ``clean``:
    ``clean``, ``torn tail`` (load removes the last line), ``corrupt``,
    ``unsupported version`` or ``not a transcript``, from the core's verdict."""
    refusal = reading.refusal
    if refusal is None:
        if reading.tail.kind == "torn":
            return "torn tail", "; ".join(reading.warnings) or None
        return "clean", None
    if refusal.status == "unsupported":
        return "unsupported version", str(refusal)
    if refusal.reason.startswith("not a transcript"):
        return "not a transcript", str(refusal)
    return "corrupt", str(refusal)


class ColumnBatch:
    """The rows of the four tables gathered so far (see the module docstring)."""

    def __init__(self) -> None:
        self._batch = _core.ExportBatch()

    def bytes(self) -> int:
        """About how many bytes the batch holds."""
        return self._batch.bytes()

    def rows(self) -> tuple[int, int, int, int]:
        """Rows per table: ``(sessions, envelopes, messages, tool_operations)``."""
        return self._batch.rows()

    def take(self) -> dict[str, list[ColumnData]]:
        """Every table's columns, by table name, in schema order; the batch is empty afterwards."""
        return self._batch.take()


class FileColumns:
    """One file's rows on their way into a ``ColumnBatch``.

    Args:
        reading: the file, read with ``inspect.read(path, lenient=True)``; None
            for a file that cannot be read (its sessions row says
            ``unreadable`` and ``reason``, and it has no other row).
        session: the key every row of the file carries (its path).
        reason: why the file cannot be read (with ``reading`` None).
        status: its status then (``unreadable`` unless said).
    """

    def __init__(self, reading: Reading | None, session: str, reason: str | None = None,
                 status: str = "unreadable") -> None:
        self.reading = reading
        if reading is None:
            self.status, self.reason = status, reason
        else:
            self.status, self.reason = status_of(reading)
        self._file = _core.ExportFile(session, None if reading is None else reading.index)

    def started(self) -> int | None:
        """The session-meta's timestamp, µs since the epoch, when it parses."""
        return self._file.started()

    def fill(self, batch: ColumnBatch, budget: int) -> bool:
        """Adds the next envelopes' rows until the file is read (True) or the
        batch holds ``budget`` bytes (False: take its rows, then call again).

        Raises:
            OSError: the file cannot be read.
            CorruptTranscript: a line changed since it was read.
        """
        return self._file.fill(batch._batch, budget)

    def finish(self, batch: ColumnBatch, st: os.stat_result | None) -> None:
        """Adds the file's tool operations and its sessions row (``st``: the file's stat, if any)."""
        r = self.reading
        size, lines = (0, 0) if r is None else (r.size, r.lines)
        self._file.finish(batch._batch, self.status, self.reason, size, None if st is None else st.st_mtime_ns // 1000, lines)
