"""A folder of transcripts, one row per file, from each file's first and last lines.

Nothing is replayed and no file is read whole (an archive is decompressed
once, as a stream): a row costs a ``stat``, one read at the file's start and
one at its end, so a folder of a hundred thousand
files lists in about the time it takes to open them. The walk is a generator
(one directory listing at a time, its files read in batches of
``BATCH``), so memory does not grow with the number of files.

The core reads every row (a batch at a time, on a few threads, without the
GIL), an archive's from the ends of the transcript it holds. A
line the core's strict reader refuses is one ``Session.load`` refuses too, so
a row says what load would. Here the rows get their paths, their writers, the
wording of an ``OSError``, and for a file that is no transcript of this
library's, whether it is another tool's (``formats.detect_format``, the
importers' own test).

Whether a writer holds a file is read from ``/proc/locks``, once per listing:
a lock-free look at the kernel's table of locks. Nothing here ever calls
``flock``: even a non-blocking shared probe (``LOCK_SH | LOCK_NB``) holds the
lock for an instant, and a writer's ``Session.load`` (``LOCK_EX | LOCK_NB``)
falling in that instant would fail with ``SessionLocked``. Where there is no
``/proc/locks`` (not Linux), ``held`` is None: unknown.
"""

from __future__ import annotations

import operator
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..formats import describe, detect_format
from ..inspect import os_error_reason, read_ends
from ..inspect.paths import read_regular_file

__all__ = ["TranscriptRow", "list_transcripts", "read_row", "sort_rows", "writer_locks", "STATUSES",
           "TRANSCRIPT_SUFFIXES"]

#: What a row's ``status`` may be, from the file's first and last lines only
#: (``agent-transcript check`` reads every line):
#:
#: * ``clean``: a session-meta first, the last line a whole envelope;
#: * ``pending``: clean, but the last line is a tool call no tool message can
#:   answer yet (an assistant message's ``tool_calls``) or a dispatch never
#:   settled: the run stopped mid-call (or a tool is running now);
#: * ``torn tail``: the last line is cut short, what a crash leaves (load removes it);
#: * ``corrupt``: the last two lines are both damaged, which load refuses;
#: * ``unsupported version``: the session-meta's ``v`` is an int other than 1;
#: * ``not a transcript``: the first line is not a session-meta load reads (an empty file too);
#: * ``claude-code``, ``codex``: another tool's transcript, which ``import`` reads;
#: * ``unreadable``: it cannot be opened (``reason`` says why: permission, a dangling link);
#:   a sub-folder the walk cannot list has a row of its own so.
STATUSES = ("clean", "pending", "torn tail", "corrupt", "unsupported version", "not a transcript",
            "claude-code", "codex", "unreadable")

#: The names a listing takes for transcripts.
TRANSCRIPT_SUFFIXES = (".jsonl", ".jsonl.zst")

#: How many files of a folder go to the core at a time.
BATCH = 256


@dataclass(frozen=True)
class TranscriptRow:
    """One file of a listing.

    Attributes:
        path: the file's path, as the walk found it (a symlink's own path).
        status: one of ``STATUSES``.
        size: bytes on disk (0 if unreadable).
        mtime: the last modification, in seconds since the epoch.
        title: the first user message's text, clipped to 80 characters (looked
            for in the first 64 KiB), or None.
        agent, model: the session-meta's ``agent`` and ``model``, when strings.
        started: the session-meta's ``ts``.
        last_activity: the ``ts`` of the last whole envelope.
        last_type: that envelope's type.
        held: a writer holds the file's lock now (None: cannot tell here).
        writer_pid: the process holding it, when known.
        reason: why the status is not ``clean``, for a person, or None.
    """

    path: Path
    status: str
    size: int
    mtime: float
    title: str | None = None
    agent: str | None = None
    model: str | None = None
    started: str | None = None
    last_activity: str | None = None
    last_type: str | None = None
    held: bool | None = None
    writer_pid: int | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as JSON-ready values (``path`` a string)."""
        # What asdict gives (every other field is a str, int, float, bool or
        # None), without its deep copy of each value: a tenth of the cost.
        d = dict(vars(self))
        d["path"] = str(self.path)
        return {name: d[name] for name in _FIELDS}


_FIELDS = tuple(f.name for f in fields(TranscriptRow))
_new = object.__new__


def _filled(values: tuple[Any, ...]) -> TranscriptRow:
    """A row from its field values in order, as ``TranscriptRow(*values)`` makes
    it, at a third of the cost: the frozen dataclass's ``__init__`` sets each of
    the 13 fields with ``object.__setattr__``, this fills the instance dict."""
    row: TranscriptRow = _new(TranscriptRow)
    vars(row).update(zip(_FIELDS, values))
    return row


# Before 3.12, ``Path(str)`` parses the string at once (~2 us a row); a folder's
# child made from the folder's parsed parts costs a tenth of that. From 3.12 on
# a Path parses lazily and the private helper is gone (3.13): Path(str) it is.
_child: Callable[[Path, str], Path] | None = (
    getattr(Path, "_make_child_relpath", None) if sys.version_info < (3, 12) else None)


def writer_locks() -> dict[tuple[int, int], int] | None:
    """``(st_dev, st_ino) -> pid`` of every file an ``flock`` write lock holds
    now, read from ``/proc/locks`` (which takes no lock a writer waits on), or
    None where there is no such table."""
    try:
        # Closed whatever happens: a with's file is left to the garbage
        # collector by a Ctrl-C as its block ends.
        text = read_regular_file(Path("/proc/locks"), lambda f: f.read())
    except OSError:
        return None
    out: dict[tuple[int, int], int] = {}
    for raw in text.splitlines():
        fields = raw.split()
        # "1: FLOCK  ADVISORY  WRITE 22652 fe:00:5507182 0 EOF"; a waiter has "->".
        if len(fields) < 6 or fields[1] != b"FLOCK" or fields[3] != b"WRITE":
            continue
        try:
            major, minor, ino = fields[5].split(b":")
            out[(os.makedev(int(major, 16), int(minor, 16)), int(ino))] = int(fields[4])
        except ValueError:
            continue
    return out


def list_transcripts(*roots: str | os.PathLike[str], recursive: bool = True,
                     locks: dict[tuple[int, int], int] | None | bool = True,
                     ) -> Iterator[TranscriptRow]:
    """One ``TranscriptRow`` per transcript-named file under ``roots``
    (``*.jsonl``, ``*.jsonl.zst``), yielded as the walk finds them, in name
    order within each folder. A root that is a file is listed itself, whatever
    its name.

    A symlink to a file is listed under its own path; a symlink to a folder is
    not walked into (no cycles). ``locks`` is ``writer_locks``' answer to
    use, or True to read it now (once), or False not to say ``held``.

    Raises:
        OSError: a root cannot be read (a missing one is FileNotFoundError),
            at the call, before any row.
    """
    tops = [(Path(root), stat.S_ISDIR(os.stat(root).st_mode)) for root in roots]  # raise now
    table = writer_locks() if locks is True else (None if locks is False else locks)
    return _rows(tops, recursive, table)


def _rows(tops: list[tuple[Path, bool]], recursive: bool,
          table: dict[tuple[int, int], int] | None) -> Iterator[TranscriptRow]:
    for top, is_dir in tops:
        if is_dir:
            yield from _walk(top, recursive, table)
        else:
            yield from _rows_of([str(top)], [top], table)


def _walk(top: Path, recursive: bool, table: dict[tuple[int, int], int] | None) -> Iterator[TranscriptRow]:
    stack: list[Path] = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=_name)
        except OSError as exc:
            if folder == top:
                raise
            # Said, not skipped: a listing without it would look whole. (One
            # removed since its folder was listed is gone: nothing to say.)
            if not isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                yield _unreadable_folder(folder, exc)
            continue
        subfolders = []
        batch: list[os.DirEntry[str]] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if recursive:
                    subfolders.append(Path(entry.path))
            elif entry.name.endswith(TRANSCRIPT_SUFFIXES):
                batch.append(entry)
                if len(batch) == BATCH:
                    yield from _read_batch(folder, batch, table)
                    batch = []
        del entries
        yield from _read_batch(folder, batch, table)
        stack.extend(reversed(subfolders))


_name = operator.attrgetter("name")


def _unreadable_folder(folder: Path, exc: OSError) -> TranscriptRow:
    """The row of a sub-folder the walk cannot list: ``unreadable``, and why."""
    try:
        mtime = os.lstat(folder).st_mtime
    except OSError:
        mtime = 0.0
    return TranscriptRow(folder, "unreadable", 0, mtime,
                         reason=f"a folder that cannot be listed ({os_error_reason(exc)}): its transcripts are not shown")


def _read_batch(folder: Path, batch: list[os.DirEntry[str]],
                table: dict[tuple[int, int], int] | None) -> Iterator[TranscriptRow]:
    """The rows of a folder's files ``batch``, in order."""
    names = [e.path for e in batch]
    paths = [_child(folder, e.name) for e in batch] if _child is not None else [Path(p) for p in names]
    return _rows_of(names, paths, table)


def _rows_of(names: list[str], paths: list[Path],
             table: dict[tuple[int, int], int] | None) -> Iterator[TranscriptRow]:
    """The rows of ``paths`` (``names`` their strings), in order, read by the core."""
    for path, got in zip(paths, read_ends(names)):
        status, reason, size, mtime, dev, ino = got[:6]
        if table is None or dev is None or ino is None:
            held = pid = None
        else:
            pid = table.get((dev, ino))
            held = pid is not None
        if isinstance(reason, int):  # an errno
            reason = os_error_reason(OSError(reason, os.strerror(reason)))
        elif status == "not a transcript":
            try:
                other = detect_format(path)  # the importers' own test, from the first lines
            except OSError:
                other = None
            if other:
                status, reason = other, f"{describe(other)}, which import reads"
        yield _filled((path, status, size, mtime, *got[6:], held, pid, reason))


def read_row(path: Path, locks: dict[tuple[int, int], int] | None = None) -> TranscriptRow:
    """The row of one file, from its first and last lines, as a listing gives
    it; never raises for a bad file. ``locks`` is ``writer_locks``' answer,
    or None not to say ``held``."""
    return next(_rows_of([str(path)], [Path(path)], locks))


def sort_rows(rows: Iterable[TranscriptRow], key: str) -> list[TranscriptRow]:
    """``rows`` sorted by ``key``, a TranscriptRow field (a missing value first)."""
    def by(r: TranscriptRow) -> tuple[bool, Any]:
        value = getattr(r, key)
        return (value is not None, str(value) if isinstance(value, Path) else value)
    return sorted(rows, key=by)
