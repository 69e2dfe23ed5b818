"""The first and last lines of many files at once, read by the core: what a listing shows.

``read_ends`` is the fast path of ``agent_transcript.fleet.list_transcripts``:
a batch of paths goes to the Rust core, which reads a block at each file's start
and a block at its end on a few threads, without the GIL. The reference for
every answer is the fleet's own Python reader (``fleet.read_row``): where a file
is out of the ordinary (unreadable, not a regular file, an archive, not a
version 1 transcript, a line that only Python's ``json`` might read), the
answer is None and the caller reads that file with it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .. import _core

__all__ = ["Ends", "read_ends", "READ_THREADS"]

#: ``(status, size, mtime, st_dev, st_ino, title, agent, model, started,
#: last_activity, last_type)``: ``status`` is ``clean``, ``torn tail`` or
#: ``corrupt``; ``size``, ``mtime``, ``st_dev`` and ``st_ino`` are the file's
#: ``os.stat``; the rest are what the first and last lines say, as
#: ``fleet.TranscriptRow`` holds them.
Ends = tuple[str, int, float, int, int, "str | None", "str | None", "str | None", "str | None",
             "str | None", "str | None"]


def _threads() -> int:
    try:
        return max(1, min(2, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(2, os.cpu_count() or 1))


#: How many threads the core reads a batch with: two, or one on a one-core machine.
READ_THREADS = _threads()


def read_ends(paths: Sequence[str | os.PathLike[str]], *, threads: int = READ_THREADS) -> list[Ends | None]:
    """For each path, in order, what its first and last lines say
    (``Ends``), or None where the caller's own reader is to read it.

    Never raises for a file: an unreadable or vanishing one is None."""
    return _core.list_rows(list(paths), threads)
