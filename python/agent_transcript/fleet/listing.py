"""A folder of transcripts, one row per file, from each file's first and last lines.

Nothing is replayed and no file is read whole: a row costs a ``stat``, one
read at the file's start and one at its end, so a folder of a hundred thousand
files lists in about the time it takes to open them. The walk is a generator
(one directory listing at a time, its files read in batches of
``BATCH``), so memory does not grow with the number of files.

Two readers give the same rows. ``read_row`` is the reference, in Python.
The walk hands each batch to the Rust core first
(``agent_transcript.inspect.read_ends``: the same blocks, the same rules, a
few threads, no GIL) and reads with ``read_row`` only the files the core
leaves to it: unreadable ones, archives, anything but a version 1 transcript,
a line that only Python's ``json`` might read.

Whether a writer holds a file is read from ``/proc/locks``, once per listing:
a lock-free look at the kernel's table of locks. Nothing here ever calls
``flock``: even a non-blocking shared probe (``LOCK_SH | LOCK_NB``) holds the
lock for an instant, and a writer's ``Session.load`` (``LOCK_EX | LOCK_NB``)
falling in that instant would fail with ``SessionLocked``. Where there is no
``/proc/locks`` (not Linux), ``held`` is None: unknown.
"""

from __future__ import annotations

import json
import operator
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .. import Session
from ..formats import describe, detect_format
from ..inspect import content_text, os_error_reason, read_ends
from ..inspect.paths import Descriptor, read_regular_file

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
#: * ``unsupported version``: the session-meta's ``v`` is not 1;
#: * ``not a transcript``: the first line is not a session-meta (an empty file too);
#: * ``claude-code``, ``codex``: another tool's transcript, which ``import`` reads;
#: * ``unreadable``: it cannot be opened (``reason`` says why: permission, a dangling link);
#:   a sub-folder the walk cannot list has a row of its own so.
STATUSES = ("clean", "pending", "torn tail", "corrupt", "unsupported version", "not a transcript",
            "claude-code", "codex", "unreadable")

#: The names a listing takes for transcripts.
TRANSCRIPT_SUFFIXES = (".jsonl", ".jsonl.zst")

TITLE_CHARS = 80
# How much of each end is read. A first line longer than HEAD_MAX is not
# parsed (the file is listed as not a transcript); the title is looked for in
# the first HEAD bytes only.
HEAD = 64 * 1024
HEAD_MAX = 1 << 20
TAIL = 16 * 1024
TAIL_MAX = 4 << 20
#: How many files of a folder go to the core at a time.
BATCH = 256

# Why a row the core read is not clean.
_REASONS: dict[str, str | None] = {"clean": None, "torn tail": "the last line is cut short",
                                   "corrupt": "the last two lines are both damaged"}
#: A damaged last line that does not begin with ``{``: no torn write of this
#: library's (it never writes a leading blank), so load refuses it as damage.
_DAMAGED_END = "the last line is damaged and does not begin with '{'"

_PENDING = {"tool-dispatched": "the last line is a tool call dispatched and never settled",
            "message": "the last line is a tool call no tool message answers"}

# The end of every line this library writes: the canonical key order puts
# ts, type and v last, so a long line's type is read without reading it all.
_CANONICAL_END = re.compile(rb'"ts":"([^"\\]*)","type":"([^"\\]*)","v":([0-9]+)\}[ \t\r]*\Z')


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
    """The rows of ``paths`` (``names`` their strings), in order: the core's, and
    ``read_row``'s where the core leaves a file to it."""
    for path, got in zip(paths, read_ends(names)):
        if got is None:
            yield read_row(path, table)
            continue
        status, size, mtime, dev, ino, title, agent, model, started, last_activity, last_type = got
        if table is None:
            held = pid = None
        else:
            pid = table.get((dev, ino))
            held = pid is not None
        reason: str | None
        if status == "damaged end":
            status, reason = "corrupt", _DAMAGED_END
        else:
            reason = _REASONS[status]
        if status == "clean" and _ends_in_a_call(path, last_type, size):
            status, reason = "pending", _PENDING[last_type or ""]
        yield _filled((path, status, size, mtime, title, agent, model, started, last_activity, last_type,
                       held, pid, reason))


def read_row(path: Path, locks: dict[tuple[int, int], int] | None = None) -> TranscriptRow:
    """The row of one file, from its first and last lines; never raises for a bad file.

    This is the reference reader, in Python; a listing reads most files with
    the core's (the same row, faster) and this one for the rest."""
    try:
        st = os.stat(path)
    except OSError as e:
        reason = "a dangling symlink" if os.path.islink(path) else os_error_reason(e)
        return TranscriptRow(path, "unreadable", 0, 0.0, reason=reason)
    pid = None if locks is None else locks.get((st.st_dev, st.st_ino))
    held = None if locks is None else pid is not None
    base = dict(path=path, size=st.st_size, mtime=st.st_mtime, held=held, writer_pid=pid)
    if not stat.S_ISREG(st.st_mode):
        return TranscriptRow(status="unreadable", reason="not a regular file", **base)  # type: ignore[arg-type]
    if path.name.endswith(".zst"):
        return _archive_row(path, base)
    # Held from the line that opens it, closed by this try's own lines: a
    # Ctrl-C at a finally's line would skip the close.
    fd = Descriptor()
    try:
        fd.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        fields = _read_ends(fd.fd, st.st_size, path)
        fd.close()
    except OSError as e:
        fd.close()
        return TranscriptRow(status="unreadable", reason=os_error_reason(e), **base)  # type: ignore[arg-type]
    except BaseException:
        fd.close()
        raise
    if fields.get("status") == "clean" and _ends_in_a_call(path, fields.get("last_type"), st.st_size):
        fields.update(status="pending", reason=_PENDING[fields["last_type"]])
    return TranscriptRow(**base, **fields)  # type: ignore[arg-type]


def _archive_row(path: Path, base: dict[str, Any]) -> TranscriptRow:
    """The row of an archive, from peek, which decompresses it as a stream to a
    temporary file (its lines are not at the ends of the file on disk)."""
    p = Session.peek(path)
    if p.error is not None:
        why = p.error.removeprefix(f"cannot read {path}: ")
        status = "unreadable" if p.error.startswith("cannot read") else "not a transcript"
        return TranscriptRow(status=status, reason=why, **base)
    meta = p.meta if isinstance(p.meta, dict) else {}
    last = p.envelopes[-1]
    torn = any(w.startswith("line ") for w in p.warnings)
    title = None
    for m in p.messages:
        if m.role == "user":
            title = _clip(content_text(m.content))
            break
    status, reason = ("torn tail", "a line is skipped") if torn else ("clean", None)
    if not torn and (last.type == "tool-dispatched" or last.type == "message" and _makes_calls(last.payload)):
        status, reason = "pending", _PENDING[last.type]
    return TranscriptRow(status=status, title=title,
                         agent=_str(meta.get("agent")), model=_str(meta.get("model")),
                         started=p.envelopes[0].ts, last_activity=last.ts, last_type=last.type,
                         reason=reason, **base)


def _makes_calls(payload: Any) -> bool:
    """``payload`` is an assistant message's that makes a tool call (an entry
    of its ``tool_calls`` with a string ``id``): on a last line, one no tool
    message answers."""
    if not isinstance(payload, dict) or payload.get("role") != "assistant":
        return False
    calls = payload.get("tool_calls")
    return isinstance(calls, list) and any(isinstance(c, dict) and isinstance(c.get("id"), str)
                                           for c in calls)


def _ends_in_a_call(path: Path, last_type: str | None, size: int) -> bool:
    """Whether the whole last line of a clean transcript is a dispatch (never
    settled: nothing follows it) or a message making a tool call (nothing
    answers it). Only a message's last line is read, and parsed only when it
    names ``tool_calls``; a line longer than 4 MiB is not looked into."""
    if last_type == "tool-dispatched":
        return True
    if last_type != "message":
        return False
    fd = Descriptor()
    try:
        fd.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        end = _skip_blank_back(fd.fd, size, 0)
        start = _line_start(fd.fd, end, 0)
        raw = os.pread(fd.fd, end - start, start) if end - start <= TAIL_MAX else b""
        fd.close()
    except OSError:
        fd.close()
        return False
    except BaseException:
        fd.close()
        raise
    if b'"tool_calls"' not in raw:
        return False
    env = _parse(raw)
    return env is not None and _makes_calls(env.get("payload"))


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _read_ends(fd: int, size: int, path: Path) -> dict[str, Any]:
    head = os.pread(fd, HEAD, 0)
    body = head.lstrip(b" \t\r\n")
    if not body:
        why = "the file is empty" if not head else "the first line is blank as far as it was read"
        return {"status": "not a transcript", "reason": why}
    start = len(head) - len(body)
    end = head.find(b"\n", start)
    if end < 0 and len(head) == HEAD:
        more = os.pread(fd, HEAD_MAX, 0)
        end = more.find(b"\n", start)
        if end < 0 and len(more) == HEAD_MAX:
            return {"status": "not a transcript", "reason": "the first line is longer than 1 MiB"}
        head = more
    first_raw = head[start: end if end >= 0 else len(head)]
    first = _parse(first_raw)
    if first is None or first.get("type") != "session-meta" or "id" not in first:
        try:
            other = detect_format(path)  # the importers' own test, from the first lines
        except OSError:
            other = None
        if other:
            return {"status": other, "reason": f"{describe(other)}, which import reads"}
        return {"status": "not a transcript", "reason": "the first line is not a session-meta"}
    payload = first.get("payload")
    meta: dict[str, Any] = payload if isinstance(payload, dict) else {}
    out: dict[str, Any] = {
        "started": _str(first.get("ts")),
        "agent": _str(meta.get("agent")),
        "model": _str(meta.get("model")),
        "title": _title(head, end),
    }
    if first.get("v") != 1:
        return {**out, "status": "unsupported version", "reason": f"version {first.get('v')!r}"}
    last, brace = _last_lines(fd, size, end + 1 if end >= 0 else size)
    status, reason = "clean", None
    env: dict[str, Any] | None = first
    if last:
        env = last[0]
        if env is None and not brace:
            status, reason = "corrupt", _DAMAGED_END
        elif env is None:
            env = last[1] if len(last) > 1 else first
            status, reason = ("torn tail", "the last line is cut short") if env is not None else \
                ("corrupt", "the last two lines are both damaged")
    out.update(status=status, reason=reason)
    if env is not None:
        out.update(last_type=_str(env.get("type")), last_activity=_str(env.get("ts")))
    return out


def _last_lines(fd: int, size: int, floor: int) -> tuple[list[dict[str, Any] | None], bool]:
    """The last two non-blank lines after offset ``floor`` (the end of the first
    line), newest first, each parsed as far as needed (``type`` and ``ts``), or
    None when it does not parse; fewer when there are fewer. And whether the
    last one begins with ``{`` (true when its start was not found)."""
    out: list[dict[str, Any] | None] = []
    brace = True
    end = size
    while len(out) < 2:
        end = _skip_blank_back(fd, end, floor)
        if end <= floor:
            break
        read = min(TAIL, end - floor)
        block = os.pread(fd, read, end - read)
        nl = block.rfind(b"\n")
        if nl >= 0 or end - read == floor:
            raw = block[nl + 1:]
            if not out:
                brace = raw[:1] == b"{"
            out.append(_parse_line(raw))
            end -= len(raw)
            continue
        # A line longer than the block: its end is enough for a canonical one.
        start = _line_start(fd, end, floor)
        if not out and (start == floor or os.pread(fd, 1, start - 1) == b"\n"):
            brace = os.pread(fd, 1, start) == b"{"
        m = _CANONICAL_END.search(block)
        if m:
            out.append(_fields(m))
        else:
            out.append(_parse(os.pread(fd, end - start, start)) if end - start <= TAIL_MAX else None)
        if start > floor and os.pread(fd, 1, start - 1) != b"\n":
            break  # the search stopped short of the line's start: read no further
        end = start
    return out, brace


def _skip_blank_back(fd: int, end: int, floor: int) -> int:
    """``end`` moved back over blanks and newlines, no further than ``floor``."""
    while end > floor:
        read = min(TAIL, end - floor)
        block = os.pread(fd, read, end - read)
        kept = block.rstrip(b" \t\r\n")
        end -= read - len(kept)
        if kept:
            break
    return end


def _line_start(fd: int, end: int, least: int) -> int:
    """The offset of the start of the line that ends at ``end`` (searching back
    at most TAIL_MAX bytes; beyond that, where the search stopped)."""
    pos = end
    floor = max(least, end - TAIL_MAX)
    while pos > floor:
        read = min(TAIL, pos - floor)
        block = os.pread(fd, read, pos - read)
        nl = block.rfind(b"\n")
        if nl >= 0:
            return pos - read + nl + 1
        pos -= read
    return floor


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    m = _CANONICAL_END.search(raw)
    if m and raw.startswith(b'{"id":"'):
        return _fields(m)
    return _parse(raw)


def _fields(m: re.Match[bytes]) -> dict[str, Any]:
    return {"ts": m.group(1).decode(errors="replace"), "type": m.group(2).decode(errors="replace"),
            "v": int(m.group(3))}


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _title(head: bytes, first_end: int) -> str | None:
    """The first user message's text among the whole lines of ``head``, clipped.

    Found by searching for a user role, not by splitting every line: only the
    lines that have one are parsed."""
    if first_end < 0:
        return None
    at = first_end + 1
    while True:
        hit = head.find(b'"user"', at)
        if hit < 0:
            return None
        start = head.rfind(b"\n", 0, hit) + 1
        end = head.find(b"\n", hit)
        if end < 0:
            return None  # the line goes on past the head: not whole here
        at = end + 1
        env = _parse(head[start:end])
        payload = env.get("payload") if env else None
        if env and env.get("type") == "message" and isinstance(payload, dict) and payload.get("role") == "user":
            text = _clip(content_text(payload.get("content")))
            if text is not None:
                return text


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def sort_rows(rows: Iterable[TranscriptRow], key: str) -> list[TranscriptRow]:
    """``rows`` sorted by ``key``, a TranscriptRow field (a missing value first)."""
    def by(r: TranscriptRow) -> tuple[bool, Any]:
        value = getattr(r, key)
        return (value is not None, str(value) if isinstance(value, Path) else value)
    return sorted(rows, key=by)
