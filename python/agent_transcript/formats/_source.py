"""What every importer shares: reading a source line by line (damage kept raw),
deterministic ids and timestamps, and the destination written to a temporary
name and renamed into place."""

from __future__ import annotations

import base64
import contextvars
import errno
import fcntl
import functools
import hashlib
import json
import os
import re
import threading
import uuid
from importlib import metadata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Generator, Iterator, TypeVar

from .. import canonical_json
from ..inspect.sources import json_value
from ..inspect.paths import (Descriptor, beside, move_into_place, open_regular_file, read_regular_file,
                             refuse_to_replace, replace_with)

__all__ = [
    "SOURCE_LINE",
    "UnknownFormat",
    "ImportResult",
    "Line",
    "read_source",
    "parse_line",
    "Ids",
    "to_ts",
    "Destination",
    "source_line_payload",
    "source_line_bytes",
    "strict_json",
]

#: The type of the envelope that carries one source line, byte for byte.
SOURCE_LINE = "source-line"

_T = TypeVar("_T")

_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "agent-transcript/import")
_BLANK = b" \t\r"
# Where a record can start, for a torn record glued onto the next one on one line.
_RECORD_STARTS = (b'{"parentUuid":', b'{"type":', b'{"timestamp":', b'{"id":', b'{"logicalParentUuid":',
                  b'{"isSidechain":', b'{"record_type":', b'{"leafUuid":', b'{"summary":')


class UnknownFormat(ValueError):
    """The source is neither a Claude Code session nor a Codex rollout (or is not the one asked for)."""


@dataclass(frozen=True)
class ImportResult:
    """What one import did.

    Attributes:
        source: the source file.
        dest: the transcript written (or left as it was, when ``skipped``).
        source_format: ``"claude-code"`` or ``"codex"``.
        warnings: what the import had to do (damaged lines kept raw, ...), one sentence each.
        skipped: a folder import found ``dest`` already imported from these exact bytes.
        refused: why a folder import could not read this file (not a regular
            file, no permission), or None; it then wrote nothing for it, and
            ``source_format`` is ``""``.
    """

    source: Path
    dest: Path
    source_format: str
    warnings: list[str] = field(default_factory=list)
    skipped: bool = False
    refused: str | None = None


@dataclass
class Line:
    """One source line: where it is, what it parsed to, and what was wrong.

    ``record`` is the parsed JSON object, or the part of it an importer keeps
    (None for a blank or damaged line, or a value that is not an object; the
    whole record is read again with ``Records``); ``damage`` says why the
    line is not one whole JSON object (None when it is); a damaged line may
    still yield a ``record`` recovered from inside it (NUL padding, a torn
    record glued onto a whole one). ``when`` is its timestamp as an envelope ts.
    ``message`` is the envelope id of the message the line tells of (a Codex
    ``token_count``: the response it counts), when the line's envelope says so.
    """

    number: int
    offset: int
    length: int
    record: dict[str, Any] | None
    damage: str | None
    status: str = "metadata"
    when: str | None = None
    message: str | None = None


class _NotJson(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: Python's ``json`` reads them, JSON has none."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name}, which is not JSON")


def strict_json(raw: bytes | str) -> Any:
    """The JSON value ``raw`` holds, as ``json.loads`` reads it, but for ``NaN`` and
    ``Infinity``: not JSON (RFC 8259), refused by the tools that wrote the source
    (Claude Code's ``JSON.parse``, Codex's serde), and by ``canonical_json``.

    Raises:
        ValueError: ``raw`` is not JSON.
    """
    try:
        # The core's reader: the same values as ``json.loads`` for every JSON
        # text, in half its time, and it refuses NaN and Infinity itself.
        return json_value(raw)
    except ValueError:
        pass
    # Not JSON to the core (or nested past its 512 levels): ``json`` says why, in
    # the words (and the UnicodeDecodeError) the importer's damage notes use.
    return json.loads(raw, parse_constant=_refuse_constant)


def _parse(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    if not raw.strip(_BLANK):
        return None, None
    try:
        value = strict_json(raw)
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except _NotJson as e:
        # A line the source tool itself cannot read: kept raw, as damage is.
        return None, str(e)
    except ValueError:
        pass
    else:
        if isinstance(value, dict):
            if not isinstance(value.get("type", ""), str):
                # No record of either format: every importer reads "type" as a name.
                return None, 'a "type" that is not a string'
            return value, None
        return None, "not a JSON object"
    stripped = raw.strip(b"\x00" + _BLANK)
    if stripped != raw.strip(_BLANK):
        if not stripped:
            return None, "only NUL bytes"
        record, damage = _parse(stripped)
        if record is not None:
            return record, "NUL bytes around a record (record recovered)"
        return None, f"NUL bytes and {damage or 'nothing'}"
    decoder = json.JSONDecoder(parse_constant=_refuse_constant)
    text = raw.decode("utf-8", "surrogateescape")
    starts = sorted({i for start in _RECORD_STARTS for i in _find_all(text, start.decode()) if i > 0})
    for at in starts:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            continue
        if isinstance(value, dict) and not text[end:].strip(" \t\r"):
            return value, f"a torn record glued onto the next (the record at character {at} recovered)"
    if not raw.rstrip(_BLANK).endswith(b"}"):
        return None, "a torn record (not one whole JSON value)"
    return None, "not one whole JSON value"


def _find_all(text: str, needle: str) -> Iterator[int]:
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)


def read_source(path: Path, keep: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
                ) -> tuple[list[Line], str, int, list[str]]:
    """Every line of ``path``, parsed, with the file's sha256 and size and the warnings.

    ``keep`` picks what of each record the line holds (default: all of it), so
    that a big source is not held whole in memory.

    Raises:
        OSError: the file cannot be read.
    """
    lines: list[Line] = []
    warnings: list[str] = []
    sha = hashlib.sha256()

    def read(f: BinaryIO) -> int:
        size = 0
        for number, chunk in enumerate(f, 1):
            sha.update(chunk)
            raw = chunk[:-1] if chunk.endswith(b"\n") else chunk
            lines.append(parse_line(number, size, raw, warnings, keep))
            size += len(chunk)
        return size

    size = read_regular_file(path, read)
    return lines, "sha256:" + sha.hexdigest(), size, warnings


def parse_line(number: int, offset: int, raw: bytes, warnings: list[str],
               keep: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None) -> Line:
    """Source line ``number`` (``raw``, without its ``\\n``, at byte ``offset``), parsed;
    a damaged one is told in ``warnings``. ``keep`` as for ``read_source``."""
    record, damage = _parse(raw)
    when = to_ts(record.get("timestamp"), "") or None if record is not None else None
    line = Line(number, offset, len(raw), record if keep is None or record is None else keep(record),
                damage, when=when)
    if damage is not None:
        line.status = "damaged"
        kept = "the record in it used" if record is not None else "kept raw"
        warnings.append(f"line {number}: damaged ({damage}); {kept}")
    elif record is None and raw.strip(_BLANK):
        line.status = "metadata"
    elif record is None:
        line.status = "blank"
    return line


class Records:
    """The whole records of a source's lines, read again from ``source`` (the
    source, open) when asked. Whoever opened the file closes it."""

    def __init__(self, source: BinaryIO) -> None:
        self._fd = source.fileno()

    def full(self, line: Line) -> dict[str, Any]:
        """The whole record on ``line`` (``{}`` when there is none)."""
        raw = os.pread(self._fd, line.length, line.offset)
        record, _ = _parse(raw)
        return record if record is not None else {}


def raw_lines(path: Path, size: int, sha: Any) -> Generator[bytes, None, None]:
    """The lines of the first ``size`` bytes of ``path`` (the bytes
    ``read_source`` read: a live session's later bytes are not its
    snapshot), each without its ``\\n``; every byte read is added to ``sha``
    (a ``hashlib`` hash), for the caller to compare with the first read's. The
    file is closed at the end, or when the iterator is closed first."""
    f: BinaryIO | None = None
    try:
        f = open_regular_file(path)
        left = size
        while left > 0 and (chunk := f.readline(left)):
            left -= len(chunk)
            sha.update(chunk)
            yield chunk[:-1] if chunk.endswith(b"\n") else chunk
        f.close()
    except BaseException:  # GeneratorExit too: closed before its end
        if f is not None:
            f.close()
        raise


def json_or_none(raw: bytes) -> Any:
    """The JSON value ``raw`` holds, or None when it holds none."""
    # A function, for the loops that hold a file open: a try of their own would
    # be nested in the one that closes the file, and in CPython 3.11 the line
    # of a nested try is outside the outer one's handler.
    try:
        return strict_json(raw)
    except ValueError:
        return None


def source_line_payload(line: Line, raw: bytes) -> dict[str, Any]:
    """The payload of the envelope carrying ``line``: its text (or base64, when
    it is not UTF-8), its number, what the import made of it and (``message``)
    the message it tells of."""
    payload: dict[str, Any] = {"line": line.number, "status": line.status}
    try:
        payload["text"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        payload["base64"] = base64.b64encode(raw).decode("ascii")
    if line.damage is not None:
        payload["damage"] = line.damage
    if line.message is not None:
        payload["message"] = line.message
    return payload


def source_line_bytes(payload: dict[str, Any]) -> bytes:
    """The source line a ``source-line`` envelope's payload carries, byte for byte."""
    text = payload.get("text")
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    return base64.b64decode(str(payload.get("base64") or ""))


class Ids:
    """Deterministic envelope ids: a UUIDv5 of the source's digest, a kind and a counter."""

    def __init__(self, source_digest: str, used: int = 0) -> None:
        self._base = source_digest
        self.used = used  # how many were made

    def next(self, kind: str) -> str:
        self.used += 1
        return uuid.uuid5(_NAMESPACE, f"{kind}:{self._base}:{self.used}").hex


def to_ts(value: Any, fallback: str) -> str:
    """A source timestamp (ISO 8601, or epoch seconds) as an envelope ``ts``; ``fallback`` when it is none."""
    if isinstance(value, str) and _UTC_MS.fullmatch(value):  # the common case, 2026-03-01T10:00:00.123Z
        return f"{value[:19]}.{value[20:-1]:0<6}Z"
    try:
        if isinstance(value, str) and value:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            when = datetime.fromtimestamp(value, timezone.utc)
        else:
            return fallback
    except (ValueError, OverflowError, OSError):
        return fallback
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_UTC_MS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{1,6}Z")
EPOCH_TS = "1970-01-01T00:00:00.000000Z"


def importer_meta() -> dict[str, str]:
    """Who imported: the distribution and its version."""
    return {"name": "agent-transcript", "version": _version()}


@functools.cache
def _version() -> str:
    # Once a process: reading the installed metadata takes milliseconds, and a
    # folder import of a few thousand sessions asked for it once a file.
    try:
        return metadata.version("agent-transcript")
    except metadata.PackageNotFoundError:
        return "unknown"


def envelope_line(type_: str, id_: str, ts: str, payload: Any) -> bytes:
    """One envelope as its line: canonical JSON and its ``\\n``."""
    text = canonical_json({"id": id_, "payload": payload, "ts": ts, "type": type_, "v": 1})
    return text.encode("utf-8") + b"\n"


# How much of a spool is copied before it is cut back (see Destination.copy_from).
_SPOOL_STRETCH = 32 << 20
# What copy_file_range answers where it cannot copy between these files.
_NO_COPY_RANGE = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP}


def _copy_range(src: int, dst: int, start: int, end: int, base: int) -> None:
    """Copies bytes ``[start, end)`` of ``src`` to ``base + start`` in ``dst``: in the
    kernel where it can, else read and written."""
    at = start
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        try:
            while at < end:
                got = copy_range(src, dst, end - at, at, base + at)
                if got == 0:
                    break  # the source ended early: the loop below says so
                at += got
        except OSError as e:
            if e.errno not in _NO_COPY_RANGE:
                raise
    while at < end:
        chunk = os.pread(src, min(end - at, 1 << 20), at)
        if not chunk:
            raise OSError(errno.EIO, "the spool ended before its size", str(at))
        view = memoryview(chunk)
        while view:
            done = os.pwrite(dst, view, base + at)
            view, at = view[done:], at + done


class Destination:
    """The transcript being written: a temporary file beside ``dest``, renamed into
    place by ``commit`` (never over an existing file unless ``force``).

    Whoever makes one calls ``abort`` if anything fails before the commit is
    done (a Ctrl-C at any line included): it undoes whatever part of the work
    was done, and may be called again. A failed constructor has aborted itself.
    """

    # Not there until the temporary file is made (see abort).
    _file: IO[bytes]

    def __init__(self, dest: Path, *, force: bool) -> None:
        self.dest = dest
        self.force = force
        self.temp = import_temp(dest, os.getpid())
        # The folders made for it, each recorded in the line that makes it.
        self._made: list[Path] = []
        # The temporary name is this process's for this destination: two threads
        # importing into it take turns (the second met the first's file: EEXIST).
        # Set when this import's turn is over, which wakes those waiting for it.
        self._turn_over = threading.Event()
        try:
            self._take_turn()
            if not force and (dest.exists() or dest.is_symlink()):
                raise FileExistsError(17, "the destination exists (--force replaces it)", str(dest))
            refuse_to_replace(dest)  # --force replaces a file, never a device or a FIFO
            self._make_folders()
            remove_dead_imports(dest)
            self._file = _locked_temp(self.temp)
        except BaseException:
            self.abort()
            raise

    def _make_folders(self) -> None:
        # A method of its own: in CPython 3.11 the line of a try nested in
        # another is outside the outer one's handler, so a Ctrl-C there would
        # skip __init__'s abort. Here it comes out through the call, inside it.
        for parent in reversed(self.dest.parents):
            if parent.exists():
                continue
            try:
                os.mkdir(parent, 0o700); self._made.append(parent)  # noqa: E702  (one line: made is recorded)
            except FileExistsError:
                pass  # made meanwhile by someone else: theirs to remove

    def _take_turn(self) -> None:
        # The table says whose turn it is, and is changed in the line that takes
        # it: an interrupt finds this import's turn taken and known, or not taken.
        key = str(self.temp)
        while (holder := _TURNS.setdefault(key, self._turn_over)) is not self._turn_over:
            holder.wait()

    def _has_turn(self) -> bool:
        return _TURNS.get(str(self.temp)) is self._turn_over

    def _end_turn(self) -> None:
        if self._has_turn():
            del _TURNS[str(self.temp)]
        # Set whether or not the turn was still ours: a Ctrl-C just after the
        # del leaves it to the abort that follows, which finds the turn given back.
        self._turn_over.set()

    def write(self, type_: str, id_: str, ts: str, payload: Any) -> None:
        """Append one envelope."""
        self._file.write(envelope_line(type_, id_, ts, payload))

    def copy_from(self, spool: IO[bytes]) -> None:
        """Appends the whole of ``spool``, which is left empty: copied from its end
        backwards a stretch at a time, each stretch cut off the spool once it is
        copied, so that the destination's pages are the ones the spool just gave
        back. A new page of a file costs more than a copy into one it has had (on
        this kind of VM, whose freed memory goes back to the host, twelve times
        as much), and the import never holds two copies of its envelopes."""
        spool.flush()
        src, dst = spool.fileno(), self.flushed_fileno()
        base = os.lseek(dst, 0, os.SEEK_CUR)
        end = os.fstat(src).st_size
        while end > 0:
            start = max(0, end - _SPOOL_STRETCH)
            _copy_range(src, dst, start, end, base)
            os.ftruncate(src, start)
            end = start
        os.lseek(dst, 0, os.SEEK_END)

    def flushed_fileno(self) -> int:
        """The descriptor, everything written so far flushed to it (for a writer that
        appends through the descriptor itself)."""
        self._file.flush()
        return self._file.fileno()

    def commit(self) -> None:
        """Make the file durable, rename it to ``dest`` and give back the turn
        (aborted if that fails); then make the new names durable (or leave that
        to the end of a folder import)."""
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            # Still open, so still locked: a cleaner never takes it for a dead import's.
            if self.force:
                replace_with(self.temp, self.dest)
            else:
                move_into_place(self.temp, self.dest)  # fails if something took the name meanwhile
            self._file.close()
            self._end_turn()
        except BaseException:
            self.abort()
            raise
        # The new name, and the folders made for it, each in its own parent.
        folders = [self.dest.parent, *(p.parent for p in self._made)]
        deferred = _NAMES_TO_SYNC.get()
        if deferred is not None:
            deferred.update(folders)
            return
        for folder in folders:
            _sync_names(folder)

    def abort(self) -> None:
        """Undo what was done: the temporary file goes, the folders made for it
        too while they are empty, and the turn is given back. Harmless after a
        commit, and again: each step finds its work done or not yet done."""
        if self._has_turn():  # the temporary name is ours only while the turn is
            try:
                os.unlink(self.temp)
            except FileNotFoundError:
                pass
        file = getattr(self, "_file", None)
        if file is not None:
            try:
                file.close()
            except OSError:
                pass
        for parent in reversed(self._made):  # innermost first, while still empty
            try:
                os.rmdir(parent)
            except FileNotFoundError:
                continue  # removed by an abort a Ctrl-C cut short
            except OSError:
                break
        self._end_turn()


# The destinations this process is importing into, by temporary file: the
# Event of the import whose turn it is (see Destination._take_turn). Changed by
# single dict operations on str keys, each whole under the GIL.
_TURNS: dict[str, threading.Event] = {}

# A child of fork() has none of its parent's threads: their turns are not its.
os.register_at_fork(after_in_child=_TURNS.clear)


_PID_DIGITS = 10  # every pid, fixed width: the names of one destination differ only there


def import_temp(dest: Path, pid: int) -> Path:
    """The temporary file an import by process ``pid`` writes ``dest`` into:
    ``.<name>.import-<pid>.tmp`` beside it (a name too long for that is cut,
    see ``_storage.beside``)."""
    return beside(dest, ".", f".import-{pid:0{_PID_DIGITS}d}.tmp")


def _locked_temp(temp: Path) -> IO[bytes]:
    """``temp``, created and open for writing, holding its ``flock`` (see
    ``remove_dead_imports``) for as long as it is open. Its holder removes it
    when anything fails, this call too."""
    for _ in range(100):
        f: IO[bytes] | None = None
        try:
            # One line (a statement over two has a line event between them)
            # from the descriptor to the file that owns it.
            f = os.fdopen(os.open(temp, _NEW_TEMP, 0o600), "wb", buffering=1 << 20)
            # A cleaner may hold it a moment (it took the new file for a dead
            # import's before it was locked): waited for, then checked.
            if not _flock(f.fileno(), fcntl.LOCK_EX):
                return f  # a file system without locks: the pid alone keeps it from a cleaner
            st, mine = os.stat(temp), os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                return f
            f.close()
        except FileNotFoundError:
            if f is None:
                raise  # no folder to make it in
            f.close()  # that cleaner removed it: made again
        except BaseException:
            if f is not None:
                f.close()
            raise
    raise OSError(errno.EAGAIN, "the import's temporary file kept being removed", str(temp))


_NEW_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def _flock(fd: int, operation: int) -> bool:
    """``flock(fd, operation)``; False where the file system has no locks.

    Its own function, so that its ``try`` is not nested in its callers' own:
    in CPython 3.11 the line of a nested try is outside the outer one's
    handler, and a Ctrl-C there would leave their descriptor open.
    """
    try:
        fcntl.flock(fd, operation)
    except OSError as e:
        if e.errno not in _NO_LOCKS:
            raise
        return False
    return True


# A folder import's listings of its destination folders, each made once and
# kept by stem (see remove_dead_imports): listed again for every file, a folder
# of a few thousand sessions made the import quadratic.
_LISTINGS: contextvars.ContextVar[dict[Path, dict[str, list[str]]] | None] = contextvars.ContextVar(
    "_LISTINGS", default=None)


# Folders whose new names are made durable once, when the folder import ends
# (see one_fsync_per_folder), or None: each import makes its own at once.
_NAMES_TO_SYNC: contextvars.ContextVar[set[Path] | None] = contextvars.ContextVar(
    "agent_transcript_names_to_sync", default=None)


def _sync_names(folder: Path) -> None:
    """fsync ``folder``, so that the names renamed or made in it last; where a
    folder cannot be opened or synced (some file systems), the data is already."""
    dfd = Descriptor()
    try:
        dfd.fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        os.fsync(dfd.fd)
        dfd.close()
    except OSError:
        dfd.close()
    except BaseException:
        dfd.close()
        raise


def as_folder_import(imports: Callable[[], _T]) -> _T:
    """``imports()``, run as the imports of a folder are.

    ``remove_dead_imports`` lists each folder once: what it looks for are
    the leftovers of imports that died before this began, and this one's own
    temporary files are never candidates. ``Destination.commit`` leaves the
    fsync of its folder to the end, when each folder is synced once, whatever
    ends it: every file's own bytes are synced before its rename, so a crash
    before the end can lose only some new names, and the next import of the
    folder imports those sources again.

    Both are settings of a copy of the current context, gone with it: a
    Ctrl-C cannot leave them set for the imports that come after.
    """
    return contextvars.copy_context().run(_as_folder_import, imports)


def _as_folder_import(imports: Callable[[], _T]) -> _T:
    _LISTINGS.set({})
    folders: set[Path] = set()
    _NAMES_TO_SYNC.set(folders)
    try:
        done = imports()
        _sync_each(folders)
        return done
    except BaseException:
        _sync_each(folders)
        raise


def _sync_each(folders: set[Path]) -> None:
    # Deepest first: a folder's own name is in its parent.
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        _sync_names(folder)


def _temps_by_stem(folder: Path) -> dict[str, list[str]]:
    """The names in ``folder`` shaped like an import's temporary file, by what
    comes before the pid (the part that names the destination)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    tail = len(f"{0:0{_PID_DIGITS}d}.tmp")
    by_stem: dict[str, list[str]] = {}
    for name in names:
        if name.endswith(".tmp") and name[-tail:-4].isdigit() and name[-tail:-4].isascii():
            by_stem.setdefault(name[:-tail], []).append(name)
    return by_stem


# What flock(2) answers where the file system has no locks (an NFS mount
# without its lock daemon, some FUSE file systems).
_NO_LOCKS = frozenset({errno.ENOLCK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EINVAL})


def remove_dead_imports(dest: Path) -> None:
    """Delete the temporary files of imports into ``dest`` whose process is gone
    (killed before it could clean up); a live one's, another's, are left.

    A live import holds an ``flock`` on its file from its creation to its
    rename: a file whose lock can be taken is a dead import's. The pid in the
    name is checked too (an import by a version before the lock holds none),
    but alone it would be wrong across pid namespaces: an import running in
    another container has a pid that names no process here, or another one.
    """
    pattern = import_temp(dest, 0).name
    stem = pattern[: -len(f"{0:0{_PID_DIGITS}d}.tmp")]
    listings = _LISTINGS.get()
    if listings is None:
        by_stem = _temps_by_stem(dest.parent)
    elif dest.parent in listings:
        by_stem = listings[dest.parent]
    else:
        by_stem = listings[dest.parent] = _temps_by_stem(dest.parent)
    for name in by_stem.get(stem, ()):
        pid = int(name[len(stem):-len(".tmp")])
        if pid == os.getpid() or _alive(pid):
            continue
        _remove_unless_locked(dest.parent / name)


def _remove_unless_locked(temp: Path) -> None:
    """Unlink ``temp`` if no process holds its ``flock`` (a live import does);
    on a file system without locks, as its pid already said."""
    fd = Descriptor()
    try:
        fd.fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        _flock(fd.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        st, mine = os.stat(temp), os.fstat(fd.fd)
        if (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):  # not a new one made meanwhile
            os.unlink(temp)
        fd.close()
    except OSError:
        fd.close()  # locked (a live import), gone already, or not ours to remove
    except BaseException:
        fd.close()
        raise


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (in this pid namespace)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, and is not ours to signal
    return True


def iter_source_lines(path: Path) -> Iterator[bytes]:
    """The source lines an imported transcript carries, in source order (see
    ``formats.source_lines``): the importer writes them in that order. The
    file is closed at the end, or when the iterator is closed first."""
    f: BinaryIO | None = None
    try:
        f = open_regular_file(path)
        for chunk in f:
            if b'"type":"source-line"' not in chunk:
                continue
            envelope = json_or_none(chunk)
            if not isinstance(envelope, dict) or envelope.get("type") != SOURCE_LINE:
                continue
            payload = envelope.get("payload")
            if isinstance(payload, dict):
                yield source_line_bytes(payload)
        f.close()
    except BaseException:  # GeneratorExit too: closed before its end
        if f is not None:
            f.close()
        raise
