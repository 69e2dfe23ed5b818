"""Transcripts as Parquet tables, hive-partitioned by day, for DuckDB, Spark and Trino.

``export_transcripts(DIR..., out=OUT)`` (``agent-transcript export DIR... -o
OUT --format parquet``) writes four tables::

    OUT/sessions/day=2026-08-09/part-<run>-<n>.parquet
    OUT/envelopes/day=2026-08-09/part-<run>-<n>.parquet
    OUT/messages/day=…/…
    OUT/tool_operations/day=…/…
    OUT/_export.json          the manifest (what was exported from which file)

``day`` is the UTC day the session started (its session-meta's ``ts``; the
file's mtime when it has none), so all the rows of one run sit in one
partition, even one that ran past midnight. ``day`` is a partition column
only (it is not stored inside the files): readers take it from the path
(``read_parquet('OUT/messages/**/*.parquet', hive_partitioning=true)``,
``spark.read.parquet('OUT/messages')``). ``session`` (the transcript's
absolute path) joins the tables. A path that is not UTF-8 (a name made of
other bytes, which Parquet's text cannot hold) is written ``hex:`` and its
bytes in hex (``bytes.fromhex(session[4:])``): no absolute path begins so, and
the bytes are the file's name exactly.

The schema (timestamps are ``timestamp[us, UTC]``, text ``large_string``):

``sessions``, one row per file
    session, session_id (the session-meta's id), status (``clean``, ``torn
    tail``, ``corrupt``, ``unsupported version``, ``not a transcript``,
    ``unreadable``), reason, size (bytes), mtime, lines, envelopes, messages
    (message lines), live_messages (null: load refuses the file), compactions,
    elisions, rewinds, tool_operations (dispatches), pending (null: refused),
    first_ts, last_ts, last_type, agent, model, meta (the session-meta payload
    as JSON text), input_tokens, output_tokens, cache_read_tokens,
    cache_creation_tokens (the run's, as ``stats`` counts them; null: the file
    records no usage).
``envelopes``, one row per envelope (every line load or peek reads)
    session, line (1-based, blank lines counted), id, type, ts, bytes (the line
    with its ``\\n``), payload (JSON text, as written).
``messages``, one row per message line, compaction summary and replacement message
    session, line, id (``<compaction id>:<k>`` for a replacement message),
    source (``message``, ``summary``, ``replacement``), part (k), ts, role,
    name, text (a string content; a list's text parts joined by newlines, other
    parts as ``[type]``; other values as JSON), tool_call_id,
    tool_call_ids and tool_call_names (``list<string>`` from ``tool_calls``),
    sticky, live (after replay; null: refused), live_position, elided_line,
    compacted_line, rewound_line (the line of the elision, compaction or rewind
    that later stubbed, replaced or dropped it), input_tokens, output_tokens,
    cache_read_tokens, cache_creation_tokens (the usage of the model response
    the message is, ``inspect.tokens``; null: none recorded). A run's messages
    add up to its totals, but for a response the import made no message of (a
    Claude Code response of thinking only). A fork's messages are its
    source's, ids included: a folder's total counts each ``id`` once.
``tool_operations``, one row per dispatched operation, pending ones included
    session, op_id, call_id, tool, arguments_digest, idempotency, run_id, round,
    dispatch_line, dispatched_ts, settle_line, settled_ts, outcome, reason,
    duration (seconds), state (``settled``, ``dispatched`` or
    ``result-persisted``: pending after replay; ``unmatched-settle``: a settle
    line that settles no operation, which then has one row of its own; null:
    refused), result_message_id (a result-persisted operation's tool message).

The columns come from the Rust core in bulk (``agent_transcript.inspect.ColumnBatch``),
wrapped by pyarrow where they are (no copy), the token columns from
``inspect.tokens`` (``fleet.tokens.token_columns``); pyarrow is the optional extra
``agent-transcript[arrow]`` and is imported only when an export runs.

**Incremental.** The manifest keys each file by its absolute path and records
its size, mtime (ns), inode and device: a file whose four are unchanged is
skipped without being read. A changed file is exported again and its old rows
are removed from the parts that held them (each written again without them
under a new name, the old one removed once the new manifest is in place: an
export interrupted before that leaves the listed parts as they were); a file
the manifest lists under one of the exported folders that is gone has its
rows removed too. The manifest is written last (atomically): a part it does
not list is a leftover of an interrupted export and is deleted by the next
(a first export killed before its manifest included: a folder holding only
the lock and such parts is taken for an export's).

**Atomic.** Every part and the manifest are written under a temporary name
(``.tmp-…``, which readers' ``*.parquet`` globs skip), fsynced, and renamed
into place; an export that fails removes its temporary files. A reader that
runs during an export may see a changed file's new rows beside its old ones
until the export ends. One export at a time writes a folder (a lock on
``OUT/_export.lock``).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
from concurrent.futures import Future, ThreadPoolExecutor
import json
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import CorruptTranscript, TranscriptError
from ..inspect import ColumnBatch, ColumnData, FileColumns, os_error_reason, read, walk_transcripts
from ..inspect.paths import Descriptor, make_folders, read_regular_file
from ..inspect.tokens import TokenTotals, read_usage, token_totals
from .tokens import token_columns

__all__ = ["export_transcripts", "ExportResult", "ExportError", "TABLES", "FORMATS", "MANIFEST"]

#: The tables an export writes, in this order.
TABLES = ("sessions", "envelopes", "messages", "tool_operations")

#: The formats an export writes.
FORMATS = ("parquet",)

#: The manifest's name in the output folder.
MANIFEST = "_export.json"

_LOCK = "_export.lock"
_TMP = ".tmp-"
_MANIFEST_VERSION = 2  # 2: the token columns
#: How many bytes a batch of rows holds before it is written out as parts.
BATCH_BYTES = 16 << 20


class ExportError(TranscriptError):
    """An export cannot run: bad arguments, an output folder that is not an
    export's, pyarrow missing, another export writing the same folder. Nothing
    was written."""


@dataclass
class ExportResult:
    """What one export did.

    Attributes:
        out: the output folder.
        exported: the files read and written out, in walk order.
        skipped: the files unchanged since the last export (not read).
        removed: the files of an earlier export that are gone (their rows removed).
        unreadable: the folders that could not be listed, and why; the rows of
            the transcripts an earlier export found in them are kept (a folder
            one cannot read is not a folder whose files are gone).
        rows: rows written per table (this run's only).
        parts: part files written or rewritten, relative to ``out``.
    """

    out: Path
    exported: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unreadable: dict[Path, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    parts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready values."""
        return {"out": str(self.out), "exported": [str(p) for p in self.exported],
                "skipped": [str(p) for p in self.skipped], "removed": list(self.removed),
                "unreadable": [{"path": str(p), "reason": why} for p, why in self.unreadable.items()],
                "rows": dict(self.rows), "parts": list(self.parts)}


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ExportError("export needs pyarrow: pip install 'agent-transcript[arrow]'") from None
    return pa, pq


def _buffer(pa: Any, b: Any) -> Any:
    """A buffer of the core's (``agent_transcript._core.ColumnBuffer``) as a
    pyarrow buffer over the same bytes: wrapped where it is, kept alive by it."""
    if b is None:
        return None
    n = len(b)
    return pa.foreign_buffer(b.address(), n, base=b) if n else pa.py_buffer(b"")


def _array(pa: Any, col: ColumnData) -> Any:
    """One column of the core's as a pyarrow array, over its buffers (no copy)."""
    _, kind, length, nulls, buffers, child = col
    bufs = [_buffer(pa, b) for b in buffers]
    if kind == "utf8":
        return pa.Array.from_buffers(pa.large_string(), length, bufs, null_count=nulls)
    if kind == "list_utf8":
        items = _array(pa, child)
        return pa.Array.from_buffers(pa.list_(pa.large_string()), length, bufs, null_count=nulls, children=[items])
    types = {"int64": pa.int64(), "timestamp": pa.timestamp("us", tz="UTC"), "float64": pa.float64(), "bool": pa.bool_()}
    return pa.Array.from_buffers(types[kind], length, bufs, null_count=nulls)


def _tables(pa: Any, columns: dict[str, list[ColumnData]]) -> dict[str, Any]:
    return {name: pa.Table.from_arrays([_array(pa, c) for c in columns[name]], names=[c[0] for c in columns[name]])
            for name in TABLES}


# Columns whose min/max statistics are not worth their cost (long text no
# query prunes on); every other column has them.
_NO_STATISTICS = {"payload", "text", "meta", "reason"}

# Columns worth a dictionary (few distinct values); the others are written plain.
_DICTIONARY = ["session", "type", "role", "source", "status", "tool", "outcome", "state", "idempotency",
               "agent", "model", "last_type", "name", "run_id"]


def _signature(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "dev": st.st_dev}


def _day(micros: int | None, st: os.stat_result | None) -> str:
    if micros is None:
        micros = 0 if st is None else st.st_mtime_ns // 1000
    when = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=micros)
    return when.strftime("%Y-%m-%d")


def _under(key: str, roots: list[str]) -> bool:
    return any(key == r or key.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


class _Writer:
    """The parts of one run: batches per day, written out as they fill."""

    def __init__(self, out: Path, result: ExportResult, batch_bytes: int) -> None:
        self.pa, self.pq = _pyarrow()
        self.out = out
        self.result = result
        self.batch_bytes = batch_bytes
        self.run = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{os.urandom(3).hex()}"
        self.count = 0
        self.batches: dict[str, ColumnBatch] = {}
        self.members: dict[str, set[str]] = {}
        self.parts: dict[str, list[str]] = {}  # session -> its parts (this run)
        self.tokens: dict[str, TokenTotals] = {}  # a file's session text -> its tokens
        self.temps: set[Path] = set()
        self.dirs: set[Path] = set()
        # The manifest that lists this run's parts is in place: they are the
        # export's now, and an abort leaves them.
        self.listed = False
        # Parts are encoded on threads (pyarrow lets go of the GIL), while the
        # core reads the next batch; at most a few batches are in flight. Each
        # part is then fsynced and renamed on threads of its own, which wait on
        # the disk: an encoding thread never does.
        self.pool = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 1)))
        self.sync_pool = ThreadPoolExecutor(max_workers=4)
        self.pending: list[Future[None]] = []
        self.syncing: list[Future[None]] = []

    def batch(self, day: str, session: str) -> ColumnBatch:
        self.members.setdefault(day, set()).add(session)
        return self.batches.setdefault(day, ColumnBatch())

    def flush(self, day: str, *, last: bool = False) -> None:
        """Writes out the batch of ``day``. A table without rows gets a part
        only when ``last`` (the flush after a file's last rows): the flushes
        in the middle of a big file write no empty ``sessions`` and
        ``tool_operations`` parts, and every table still has a part per file."""
        batch = self.batches.get(day)
        if batch is None or batch.rows() == (0, 0, 0, 0):
            return
        rows = dict(zip(TABLES, batch.rows()))
        tables = {name: table for name, table in _tables(self.pa, batch.take()).items() if last or rows[name]}
        runs = {s: self.tokens[s] for s in map(session_text, self.members.get(day, ())) if s in self.tokens}
        for name in ("sessions", "messages"):
            if name in tables:
                tables[name] = token_columns(self.pa, tables[name], name, runs)
        self.count += 1
        names = []
        while len(self.pending) >= 8:
            self.pending.pop(0).result()
        for table_name, table in tables.items():
            rel = f"{table_name}/day={day}/part-{self.run}-{self.count:05}.parquet"
            self.pending.append(self.pool.submit(self.encode, rel, table, True))
            names.append(rel)
            self.result.rows[table_name] += table.num_rows
        for session in self.members.pop(day, set()):
            self.parts.setdefault(session, []).extend(names)

    def flush_all(self) -> None:
        for day in sorted(self.batches):
            self.flush(day, last=True)

    def write(self, rel: str, table: Any) -> None:
        """``table`` as the part ``rel``: a temporary name, fsynced, renamed into place."""
        self.encode(rel, table, False)

    def rewrite(self, rel: str, table: Any) -> str:
        """``table``, the rows the part ``rel`` keeps, as a new part of this run's
        beside it (same table and day); returns its name."""
        self.count += 1
        new = f"{rel.rsplit('/', 1)[0]}/part-{self.run}-{self.count:05}.parquet"
        self.write(new, table)
        return new

    def encode(self, rel: str, table: Any, later: bool) -> None:
        """Writes ``table`` under the temporary name of the part ``rel``; then
        commits it (``commit``) here, or on a sync thread when ``later``."""
        path = self.out / rel
        folder = path.parent
        make_folders(folder)
        tmp = folder / f"{_TMP}{path.name}"
        self.temps.add(tmp)
        # Made here, 0600, for pyarrow to write into (it keeps the mode of a
        # file it truncates): a part never reads wider than its transcript.
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        dictionary = [c for c in _DICTIONARY if c in table.column_names]
        # pyarrow's own file (not a Python file object): its pages are written
        # without the GIL and without a bytes object each.
        self.pq.write_table(table, str(tmp), use_dictionary=dictionary, compression="snappy",
                            write_statistics=[c for c in table.column_names if c not in _NO_STATISTICS])
        if later:
            self.syncing.append(self.sync_pool.submit(self.commit, tmp, path, rel))
        else:
            self.commit(tmp, path, rel)

    def commit(self, tmp: Path, path: Path, rel: str) -> None:
        """The part written under ``tmp``: fsynced, then renamed to ``path``."""
        # Held from the line that opens it and closed by this try's own lines:
        # a part written again (see _drop_rows) commits on the main thread,
        # where a Ctrl-C at a finally's line would skip the close.
        fd = Descriptor()
        try:
            fd.fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
            os.fsync(fd.fd)
            fd.close()
        except BaseException:
            fd.close()
            raise
        # Known as this run's before it is in place: an abort removes it (or
        # finds it not there yet) whichever line an interrupt lands on.
        self.result.parts.append(rel)
        os.replace(tmp, path)
        self.temps.discard(tmp)
        self.dirs.add(path.parent)

    def wait(self) -> None:
        """Waits for every part in flight, encoded and committed; the first failure is raised."""
        first: BaseException | None = None
        pending, self.pending = self.pending, []
        for f in pending:  # the encodings first: they add to syncing
            try:
                f.result()
            except BaseException as exc:
                first = first or exc
        syncing, self.syncing = self.syncing, []
        for f in syncing:
            try:
                f.result()
            except BaseException as exc:
                first = first or exc
        if first is not None:
            raise first

    def sync_dirs(self) -> None:
        self.wait()
        for folder in sorted(self.dirs):
            _fsync_dir(folder)
        self.dirs.clear()

    def abort(self) -> None:
        """Stops the threads and removes what this run wrote that no manifest
        lists: its temporary files, and the new parts it renamed into place
        (a reader's ``*.parquet`` glob would take them for the export's; and
        in a new folder an export would refuse them, there being no manifest)."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.sync_pool.shutdown(wait=True, cancel_futures=True)
        doomed = list(self.temps)
        if not self.listed:
            # Its own names only (a part _drop_rows wrote again is a new one of
            # this run's, the old one still in place).
            doomed += [self.out / rel for rel in self.result.parts if f"/part-{self.run}-" in rel]
        for path in doomed:
            try:
                os.unlink(path)
            except OSError:
                pass
        for folder in sorted({path.parent for path in doomed}, reverse=True):
            for empty in (folder, folder.parent):  # a day's folder, then its table's
                try:
                    os.rmdir(empty)
                except OSError:
                    break


def _fsync_dir(folder: Path) -> None:
    # Closed by this try's own lines: a Ctrl-C at a finally's line skips it.
    fd = Descriptor()
    try:
        fd.fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        os.fsync(fd.fd)
        fd.close()
    except BaseException:
        fd.close()
        raise


def _read_manifest(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"version": _MANIFEST_VERSION, "sources": {}}
    try:
        manifest = json.loads(text)
    except ValueError:
        raise ExportError(f"{path}: the manifest is not JSON") from None
    if isinstance(manifest, dict) and isinstance(manifest.get("version"), int) and manifest["version"] < _MANIFEST_VERSION:
        # Its parts have fewer columns (1: no token columns): a folder of parts of two schemas
        # is not one table to a reader.
        raise ExportError(f"{path}: an export of an earlier version, without the token columns; "
                          "export into a new folder")
    if not isinstance(manifest, dict) or manifest.get("version") != _MANIFEST_VERSION \
            or not isinstance(manifest.get("sources"), dict):
        raise ExportError(f"{path}: not a manifest this version writes (version {_MANIFEST_VERSION})")
    return manifest


def _write_manifest(writer: _Writer, manifest: dict[str, Any]) -> None:
    """The manifest, written whole beside its name and renamed over it: the
    export's commit, which ``writer`` learns in the line that makes it."""
    out = writer.out
    path = out / MANIFEST
    tmp = out / f"{_TMP}{MANIFEST}"
    # ASCII: a path that is not UTF-8 (its str holds lone surrogates) is kept as
    # \udcxx escapes, which read back as the same str.
    data = json.dumps(manifest, ensure_ascii=True, sort_keys=True, indent=0).encode("ascii")
    # The file is held from the line that opens it and closed by this try's own
    # lines (a with's file is left to the garbage collector by a Ctrl-C as its
    # block ends, and in CPython 3.11 the line of a try nested in another is
    # outside the outer one's handler).
    fd = Descriptor()
    try:
        fd.fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.fchmod(fd.fd, 0o600)  # a temporary manifest a killed export left keeps its mode
        _write_all(fd.fd, data)
        os.fsync(fd.fd)
        fd.close()
        os.replace(tmp, path); writer.listed = True  # noqa: E702  (one line: the commit is known)
    except BaseException:
        fd.close()
        if not writer.listed:
            _unlink_quietly(tmp)
        raise
    _fsync_dir(out)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _prepare(out: Path) -> None:
    """``out`` as an export's folder: made if missing; refused if it is a file
    or a folder with something in it and no manifest, unless what it holds is
    what a first export killed before its manifest leaves (which the sweep
    then removes, under the lock)."""
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: exists and is not a folder")
    if out.is_dir() and not (out / MANIFEST).exists():
        if any(e.name != _LOCK for e in list(os.scandir(out))) and not _killed_first_export(out):
            raise ExportError(f"{out}: a folder that is not an export (no {MANIFEST}); export writes into a new or empty folder")
    make_folders(out)


def _killed_first_export(out: Path) -> bool:
    """Whether ``out``, which has no manifest, holds only what a first export
    killed before its commit leaves: its lock file, a temporary manifest, and
    table folders of ``day=`` folders holding only parts and temporary files of
    the names an export gives them. Anything else (a file of the user's own)
    makes it a folder that is not an export's, left alone."""
    if not (out / _LOCK).is_file():
        return False
    # Each listing read whole, so that none is left open by an early answer.
    for entry in list(os.scandir(out)):
        if entry.name in (_LOCK, f"{_TMP}{MANIFEST}") and entry.is_file(follow_symlinks=False):
            continue
        if entry.name not in TABLES or not entry.is_dir(follow_symlinks=False):
            return False
        for day in list(os.scandir(entry.path)):
            if not (day.name.startswith("day=") and day.is_dir(follow_symlinks=False)):
                return False
            for part in list(os.scandir(day.path)):
                if not part.is_file(follow_symlinks=False):
                    return False
                name = part.name.removeprefix(_TMP)
                if not (name.startswith("part-") and name.endswith(".parquet")):
                    return False
    return True


def _sweep(out: Path, manifest: dict[str, Any]) -> None:
    """Deletes what an interrupted export left: temporary files, and parts the manifest does not list."""
    listed = {rel for entry in manifest["sources"].values() for rel in entry.get("parts", [])}
    for table in TABLES:
        base = out / table
        if not base.is_dir():
            continue
        for folder, _, files in os.walk(base):
            for name in files:
                path = Path(folder) / name
                rel = path.relative_to(out).as_posix()
                if name.startswith(_TMP) or (name.endswith(".parquet") and rel not in listed):
                    path.unlink()
    stale = out / f"{_TMP}{MANIFEST}"
    if stale.exists():
        stale.unlink()


def _drop_rows(writer: _Writer, parts: set[str], sessions: set[str]) -> dict[str, str | None]:
    """Writes each part in ``parts`` that holds rows of ``sessions`` again
    without them, under a new name of this run's (none when no row is left).
    The old parts stay, listed by the manifest in place, until the new one is
    (``_retire``): an export interrupted before its commit leaves every
    listed part as it was. Returns what became of each part that changed: its
    new name, or None."""
    pa, pq = writer.pa, writer.pq
    import pyarrow.compute as pc

    renamed: dict[str, str | None] = {}
    drop = pa.array(sorted(session_text(key) for key in sessions), type=pa.large_string())
    for rel in sorted(parts):
        path = writer.out / rel
        if not path.exists():
            renamed[rel] = None
            continue
        # Read here, whole (a part is one batch), and parsed from memory:
        # pyarrow's own reader closes its file on a thread of its own, after
        # read_table has returned, and an interrupt just after left it open.
        table = pq.read_table(pa.BufferReader(read_regular_file(path, lambda f: f.read())))
        keep = table.filter(pc.invert(pc.is_in(table.column("session"), value_set=drop)))
        if keep.num_rows == table.num_rows:
            continue
        renamed[rel] = writer.rewrite(rel, keep) if keep.num_rows else None
    return renamed


def _renamed(parts: list[str], renamed: dict[str, str | None]) -> list[str]:
    """``parts`` as ``_drop_rows`` left them: each under its new name, or
    gone. (A function of its own: CPython 3.12+ inlines a comprehension into
    its function, and an exception the interrupt tests inject between two of
    its items skips that function's handlers, which for _export's try is the
    abort.)"""
    return [new for rel in parts if (new := renamed.get(rel, rel)) is not None]


def _retire(out: Path, parts: Iterable[str]) -> None:
    """Removes the old ``parts``, which the manifest just put in place no longer
    lists. One that cannot be removed now is a leftover the next export's sweep
    removes (a part no manifest lists)."""
    folders = set()
    for rel in parts:
        try:
            os.unlink(out / rel)
        except OSError:
            continue
        folders.add((out / rel).parent)
    for folder in sorted(folders):
        try:
            _fsync_dir(folder)
        except OSError:
            pass


def export_transcripts(*paths: str | os.PathLike[str], out: str | os.PathLike[str], format: str = "parquet",
                       batch_bytes: int = BATCH_BYTES) -> ExportResult:
    """Export every transcript under ``paths`` (folders, walked recursively,
    or files) into the folder ``out`` as Parquet tables (see the module docstring).

    Every ``*.jsonl`` and ``*.jsonl.zst`` found gets a ``sessions`` row, whatever its
    status; a file load refuses is exported from peek's lenient reading, its
    replayed columns null. A file unchanged since the last export into ``out``
    is skipped.

    Args:
        format: ``"parquet"``, the only one.
        batch_bytes: about how much a batch of rows holds before it is written
            out (memory follows this, not the size of a file).

    Returns:
        What was exported, skipped and removed, and the rows written.

    Raises:
        ExportError: ``out`` is a file, or a folder that is not an export's;
            pyarrow is not installed; another export is writing ``out``; its
            manifest is damaged.
        FileNotFoundError: a path does not exist (nothing is written).
        ValueError: ``format`` is not one of ``FORMATS``, or no path is given.
        OSError: the output cannot be written.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if not paths:
        raise ValueError("export needs at least one folder or file")
    roots = [Path(os.path.abspath(p)) for p in paths]
    for root in roots:
        try:
            st = os.stat(root)
        except OSError as exc:
            raise type(exc)(exc.errno, os_error_reason(exc), str(root)) from None
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            raise ExportError(f"{root}: neither a folder nor a file")
    target = Path(os.path.abspath(out))
    _pyarrow()
    _prepare(target)
    # Held from the line that opens it, let go by this try's own lines: an
    # interrupt at a finally's line, or at a try's nested in this one (CPython
    # 3.11), left it locked, and every later export there in this process
    # found "another export" writing.
    lock = Descriptor()
    try:
        lock.fd = os.open(target / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        _take_lock(lock.fd, target)
        result = _export(roots, target, batch_bytes)
        lock.close()
        return result
    except BaseException:
        lock.close()
        raise


#: How long an export waits for the lock before it says another export holds it.
LOCK_PATIENCE = 2.0


def _take_lock(fd: int, target: Path) -> None:
    # A lock that is free may still be refused for an instant: a process that
    # another thread here is starting shares the last export's open file (and
    # so its lock) from its fork to its exec. So the lock is asked for again,
    # with a growing pause (backoff), before another export is blamed.
    pause, waited = 0.001, 0.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if waited >= LOCK_PATIENCE:
                raise ExportError(f"{target}: another export is writing this folder") from None
        time.sleep(pause)
        waited += pause
        pause = min(pause * 2, 0.1)


def _export(roots: list[Path], out: Path, batch_bytes: int = BATCH_BYTES) -> ExportResult:
    manifest = _read_manifest(out)
    _sweep(out, manifest)
    sources: dict[str, Any] = manifest["sources"]
    result = ExportResult(out)
    writer: _Writer | None = None
    seen: set[str] = set()
    changed: set[str] = set()
    fresh: dict[str, dict[str, Any]] = {}
    renamed: dict[str, str | None] = {}
    try:
        writer = _Writer(out, result, batch_bytes)
        for path in walk_transcripts(roots, result.unreadable):
            key = str(path)
            if key in seen:
                continue
            seen.add(key)
            try:
                st: os.stat_result | None = os.stat(path)
            except OSError:
                st = None
            sig = None if st is None else _signature(st)
            old = sources.get(key)
            if old is not None and sig is not None and old.get("signature") == sig:
                result.skipped.append(path)
                continue
            if old is not None:
                changed.add(key)
            _export_file(writer, path, key, st)
            fresh[key] = {"signature": sig}
            result.exported.append(path)
        writer.flush_all()
        writer.sync_dirs()
        # The old rows of changed files, and of files gone from the folders exported.
        under = [str(r) for r in roots]
        unlisted = [str(folder) for folder in result.unreadable]
        gone = {key for key in sources if key not in seen and _under(key, under) and not _under(key, unlisted)}
        dropped = changed | gone
        old_parts = {rel for key in dropped for rel in sources[key].get("parts", [])}
        renamed = _drop_rows(writer, old_parts, dropped) if dropped else {}
        writer.sync_dirs()
        for key in dropped:
            sources.pop(key, None)
        for entry in sources.values():
            entry["parts"] = _renamed(entry.get("parts", []), renamed)
        for key, entry in fresh.items():
            entry["parts"] = writer.parts.get(key, [])
            sources[key] = entry
        result.removed = sorted(gone)
        # Every part is in place (sync_dirs waited for them): the threads
        # stop before the commit, which is the try's last step.
        writer.pool.shutdown()
        writer.sync_pool.shutdown()
        _write_manifest(writer, manifest)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    _retire(out, renamed)
    return result


def session_text(key: str) -> str:
    """The ``session`` column's text for the path ``key``: itself, or ``hex:`` and its
    bytes in hex when it is not UTF-8 (see the module docstring)."""
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return "hex:" + os.fsencode(key).hex()
    return key


def _export_file(writer: _Writer, path: Path, key: str, st: os.stat_result | None) -> None:
    session = session_text(key)
    try:
        columns = FileColumns(read(str(path), lenient=True), session)
    except OSError as exc:
        columns = FileColumns(None, session, reason=os_error_reason(exc))
    except CorruptTranscript as exc:  # an archive that is not a whole zstd stream
        columns = FileColumns(None, session, reason=exc.message, status="corrupt")
    if columns.reading is not None:
        try:
            # The tokens stats gives (one reading of usage), for the token columns.
            writer.tokens[session] = token_totals(read_usage(str(path)))
        except (OSError, TranscriptError):
            pass
    day = _day(columns.started(), st)
    batch = writer.batch(day, key)
    while not columns.fill(batch, writer.batch_bytes):
        writer.flush(day)
        batch = writer.batch(day, key)
    columns.finish(batch, st)
    if batch.bytes() >= writer.batch_bytes:
        writer.flush(day, last=True)


def describe(result: ExportResult) -> Iterable[str]:
    """The lines ``agent-transcript export`` prints about ``result``."""
    rows = ", ".join(f"{name} {n:,}" for name, n in result.rows.items())
    yield (f"exported {len(result.exported):,} file(s), skipped {len(result.skipped):,} unchanged"
           + (f", removed {len(result.removed):,} gone" if result.removed else "") + f" -> {result.out}")
    yield f"rows: {rows}; {len(result.parts):,} part file(s) written"
