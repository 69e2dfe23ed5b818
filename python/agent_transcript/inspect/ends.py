"""The first and last lines of many files at once, read by the core: what a listing shows.

``read_ends`` is the reader of ``agent_transcript.fleet.list_transcripts``:
a batch of paths goes to the Rust core, which reads a block at each file's start
and a block at its end (an archive's: of the transcript it holds) on a few
threads, without the GIL, and answers every path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .. import _core

__all__ = ["Ends", "read_ends", "READ_THREADS"]

#: ``(status, reason, size, mtime, st_dev, st_ino, title, agent, model,
#: started, last_activity, last_type)``: ``status`` and ``reason`` as
#: ``fleet.TranscriptRow`` holds them, but ``reason`` is an errno when an
#: ``OSError`` made the file unreadable; ``size``, ``mtime``, ``st_dev`` and
#: ``st_ino`` are the file's ``os.stat`` (the last two None when it failed);
#: the rest are what the first and last lines say.
Ends = tuple[str, "str | int | None", int, float, "int | None", "int | None", "str | None", "str | None",
             "str | None", "str | None", "str | None", "str | None"]


def _threads() -> int:
    try:
        return max(1, min(2, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(2, os.cpu_count() or 1))


#: How many threads the core reads a batch with: two, or one on a one-core machine.
READ_THREADS = _threads()


def read_ends(paths: Sequence[str | os.PathLike[str]], *, threads: int = READ_THREADS) -> list[Ends]:
    """For each path, in order, what its first and last lines say (``Ends``).

    Never raises for a file: an unreadable or vanishing one says why."""
    return _core.list_rows(list(paths), threads)
