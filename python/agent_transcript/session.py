"""Session: one transcript, open for reading and appending."""

from __future__ import annotations

import os
import sys as _sys
import warnings as _warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from . import _core, _payloads, _platform, _storage, tool_calls
from ._arguments import check_type as _check_type
from ._arguments import message_payload as _message_payload
from ._arguments import pairs as _pairs
from .artifacts import ArtifactStore
from .codec import canonical_json
from .envelope import Entry, Envelope, LazySequence, Peek, PendingToolOperation, live_entry
from .errors import CorruptTranscript, SessionBroken, SessionClosed, ToolOperationError
from .message import Message
from .tool_calls import INTERRUPTED, UnansweredToolCall

__all__ = ["Session"]

Durability = Literal["flush", "fsync"]


def _durability(value: str) -> bool:
    if value not in ("flush", "fsync"):
        raise ValueError(f"durability must be 'flush' or 'fsync', not {value!r}")
    return value == "fsync"


def _envelope(fields: tuple[Any, Any, Any, Any, Any, int]) -> Envelope:
    return Envelope(*fields)


def _named(e: OSError, path: Path) -> OSError:
    """``e`` (raised by the native writer, which has a descriptor, not a name)
    with the transcript's path as its ``filename``, as ``open()`` gives one."""
    if e.filename is None:
        e.filename = str(path)
    return e


class Session(_core.SessionBase):
    """A transcript open for reading and appending: the one writer of its file.

    Make one with ``create``, ``load`` or ``open``; read a file
    without opening it with ``peek`` and ``follow``. Every append writes
    one whole line with one ``write(2)`` before it returns. Every method is safe
    to call from any thread.
    """

    # From the native base (rust/py/src/session.rs): ``_lock``, the reentrant
    # lock every method holds while it uses the writer, and ``_append_fields``,
    # append_message's usual case in one native call.

    def __init__(self, path: Path, fd: _storage.Descriptor, core: _core.Transcript,
                 warnings: list[str]) -> None:
        # Use create(), load() or open(). Takes ``fd`` over from the opener last,
        # in one statement: until then the opener closes it if anything fails.
        self._path = path
        self._fd: int | None = None
        self._t = core
        self._warnings = warnings
        self._artifacts = ArtifactStore(path)
        self._meta: Any = None
        self._forked = False
        self._opener = os.getpid()
        self._core_fd = core.fileno()
        self._bind(core)  # _append_fields appends through it
        _OPEN.add(self)
        self._fd, fd.fd = fd.fd, -1

    # -- opening -----------------------------------------------------------
    #
    # A Ctrl-C can land between any two lines: every descriptor is held by a
    # _storage.Descriptor from the line that opens it to the one that hands it to
    # the Session, and whoever holds it closes it, exactly once.

    @classmethod
    def create(cls, path: str | os.PathLike[str], meta: dict[str, Any] | None = None, *,
               durability: Durability = "flush") -> Session:
        """Create a new transcript at ``path`` and write its session-meta line.

        An existing empty file is taken as new; missing parent directories are
        created ``0700`` and the file ``0600``. A relative ``path`` is taken from
        the working directory now, once: a later ``os.chdir`` moves nothing.

        Raises:
            FileExistsError: ``path`` exists and is not empty.
            SessionLocked: another session holds ``path``.
            TypeError, ValueError: ``meta`` cannot be written as JSON.
            ValueError: ``path``'s name ends in ``.zst``, an archive's: a
                transcript is plain JSONL, refused rather than written under a
                name every reader reads as zstd (``archive`` makes one).
        """
        return cls._create(_storage.absolute(path), meta, _durability(durability), [])

    @classmethod
    def _create(cls, path: Path, meta: dict[str, Any] | None, fsync: bool,
                warnings: list[str]) -> Session:
        if meta is not None and not isinstance(meta, dict):
            raise TypeError(f"meta must be a dict or None, not {type(meta).__name__}")
        payload: dict[str, Any] = {} if meta is None else meta
        canonical_json(payload)  # refuse a bad meta before touching the disk
        # Each folder is recorded in the line that makes it, inside the try
        # that removes them: a Ctrl-C anywhere leaves none of them behind.
        made: list[Path] = []
        fd = _storage.Descriptor()
        try:
            _storage.make_parents(path, made)
            _storage.open_locked(fd, path, create=True)
            if os.fstat(fd.fd).st_size > 0:
                raise FileExistsError(17, "a transcript that is not empty is there already", str(path))
            core = _core.Transcript.new(fd.fd, fsync)
            core.append("session-meta", payload, None)
            if fsync and fd.created:
                _storage.fsync_dir(fd.created.parent)  # the new name is durable too
            return cls(path, fd, core, warnings)
        except BaseException as e:
            if isinstance(e, OSError):
                _named(e, path)  # the native writer's errors carry no name
            created = fd.created if fd.fd >= 0 else None
            fd.close()
            if created:
                _storage.unlink_quietly(created)
            _storage.remove_made(made)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, durability: Durability = "flush") -> Session:
        """Open an existing transcript: repair a torn last line, then replay it.

        Nothing is written unless the first non-blank line is a whole
        session-meta (or the file's only line is a torn one, what a crash inside
        ``create`` leaves: it is removed, and the file then does not load).

        Raises:
            FileNotFoundError: there is no file at ``path``.
            SessionLocked: another session holds ``path``.
            CorruptTranscript: the file is empty, does not start with a
                session-meta, is a zstd archive (``unarchive`` extracts
                it), or is damaged in a way no crash produces (the
                exception's ``line`` says where); the file is left as it was.
            UnsupportedVersion: an envelope's ``v`` is not 1.
            ValueError: ``path``'s name ends in ``.zst``, an archive's (see
                ``create``).
        """
        fsync = _durability(durability)
        path = _storage.absolute(path)
        fd = _storage.Descriptor()
        try:
            _storage.open_locked(fd, path, create=False)
            # Nothing is written unless the file is a transcript.
            _storage.check_head(fd.fd, path)
            _storage.remove_leftover_repair(path)
            repaired = _storage.repair_tail(fd, path)  # a cut puts the new file in fd
            core = _core.Transcript.load(fd.fd, fsync, repaired.missing_newline)
            return cls(path, fd, core, [repaired.warning] if repaired.warning else [])
        except CorruptTranscript as e:
            fd.close()
            if e.path is None:  # the core's replay does not know the path
                raise type(e)(e.message, e.line, str(path)) from None
            raise
        except BaseException as e:
            fd.close()
            if isinstance(e, OSError):
                _named(e, path)  # the native reader's errors carry no name
            raise

    @classmethod
    def open(cls, path: str | os.PathLike[str], meta: dict[str, Any] | None = None, *,
             durability: Durability = "flush") -> Session:
        """``load`` the transcript at ``path`` if it has content, else ``create`` it."""
        fsync = _durability(durability)
        p = _storage.absolute(path)
        try:
            if p.stat().st_size > 0:
                try:
                    return cls.load(p, durability=durability)
                except CorruptTranscript:
                    if p.stat().st_size != 0:
                        raise
                # Load's repair removed a torn first line, the session-meta of a
                # create that a crash interrupted, and left the file empty: new.
                return cls._create(p, meta, fsync, [
                    "removed a torn last line: line 1, the session-meta of an unfinished create"])
        except FileNotFoundError:
            pass
        return cls._create(p, meta, fsync, [])

    @classmethod
    def fork(cls, source: str | os.PathLike[str], path: str | os.PathLike[str], *,
             through_id: str | None = None) -> Session:
        """A new transcript at ``path`` holding ``source``'s lines up to and
        including envelope ``through_id`` (every envelope, if None), byte for
        byte; returned open, the one writer of the new file.

        ``source`` is read as ``peek`` reads it: never locked, never
        written, so a writer may hold it meanwhile; a torn last line is not
        copied; an archive (``*.jsonl.zst``) is read decompressed. Ids stay the same, so the two files line up, and the fork's
        replay is the source's replay at that line. ``path`` is made as
        ``create`` makes a file (missing parents ``0700``, the file
        ``0600``, an existing empty file taken as new) and it is fsynced,
        with its folder, before this returns.

        Raises:
            FileNotFoundError: there is no file at ``source``.
            FileExistsError: ``path`` exists and is not empty.
            SessionLocked: another session holds ``path``.
            ValueError: ``path``'s name ends in ``.zst`` (see ``create``).
            UnknownId: ``through_id`` is not an envelope of ``source``.
            CorruptTranscript: ``source`` is not a transcript, or a line up to
                ``through_id`` is damaged (the exception's ``line`` says
                which); nothing is created.
            UnsupportedVersion: a copied envelope's ``v`` is not 1.
        """
        if through_id is not None:
            _check_type("through_id", through_id, str)
        source_path, new_path = _storage.absolute(source), _storage.absolute(path)
        from ._archive import open_for_reading
        from ._fork import copy_lines, fork_prefix, fork_replay

        # One try, each step recorded in the line that takes it (the folders
        # made, the file created or the empty one taken), so that a Ctrl-C at
        # any line is undone by the one except: a with's or a finally's line,
        # or a nested try's in CPython 3.11, is one an interrupt skips.
        src = _storage.Descriptor()
        fd = _storage.Descriptor()
        made: list[Path] = []
        taken = False  # an existing empty file, written into
        try:
            src.fd = open_for_reading(source_path)  # an archive is read decompressed
            length = fork_prefix(src.fd, source_path, through_id)
            _storage.make_parents(new_path, made)
            _storage.open_locked(fd, new_path, create=True)
            if os.fstat(fd.fd).st_size > 0:
                raise FileExistsError(17, "a transcript that is not empty is there already", str(new_path))
            taken = not fd.created
            copy_lines(src.fd, fd.fd, length)
            src.close()
            _platform.sync(fd.fd)
            if fd.created:
                _storage.fsync_dir(fd.created.parent)
            core = fork_replay(fd.fd, source_path)
            return cls(new_path, fd, core, [])  # which takes fd over last
        except BaseException:
            src.close()
            if fd.fd >= 0:
                # Still locked, so still this fork's: the file it created goes
                # (an existing empty one taken as new is left empty again).
                try:
                    if taken:
                        os.ftruncate(fd.fd, 0)
                    elif fd.created:
                        os.unlink(fd.created)
                except OSError:
                    pass
            fd.close()
            _storage.remove_made(made)
            raise

    @staticmethod
    def peek(path: str | os.PathLike[str]) -> Peek:
        """Read what the file at ``path`` says, writing, locking and repairing nothing.

        A line that does not parse is skipped with a warning. ``error`` is set,
        and the rest left empty, when there is nothing to read.
        """
        from .peek import peek

        return peek(_storage.absolute(path))

    @staticmethod
    def archive(path: str | os.PathLike[str], *, keep: bool = False) -> Path:
        """Compress the closed transcript at ``path`` into ``path + ".zst"`` (zstd,
        by the Rust core); returns the archive's path.

        The writer's lock is held throughout, so no session appends meanwhile.
        The archive is written to ``<path>.zst.partial``, fsynced, read back
        and compared with the transcript byte for byte, and only then renamed
        into place; the transcript is removed after that, unless ``keep``. A
        crash at any step leaves the transcript as it was. ``peek`` and the
        command line read the archive as they read the transcript. A
        symlink at ``path`` is followed: the archive is made beside the file
        it names, which is the one removed.

        Raises:
            SessionLocked: a session holds the transcript.
            FileExistsError: the archive is there already.
            FileNotFoundError: there is no file at ``path``.
            ValueError: ``path`` is an archive already (``*.zst``).
        """
        from ._archive import archive

        return archive(_storage.absolute(path), keep)

    @staticmethod
    def unarchive(path: str | os.PathLike[str], *, keep: bool = False) -> Path:
        """Extract the archive at ``path`` (``run.jsonl.zst``) back into the
        transcript beside it (``run.jsonl``), byte for byte; returns its path.

        Made as ``archive`` makes an archive: written to ``<dest>.partial``
        (created exclusively, mode 0600), fsynced, read back and
        compared with the archive, then linked into place, never over a file
        there; the archive is removed after that, unless ``keep``. A crash or
        Ctrl-C at any step leaves the archive as it was and no transcript.

        Raises:
            FileExistsError: a file is at the transcript's name already.
            FileNotFoundError: there is no file at ``path``.
            SessionLocked: another process is extracting the same archive.
            CorruptTranscript: ``path`` is not a whole zstd archive.
            ValueError: ``path`` is not named as an archive (``*.zst``).
        """
        from ._archive import extract

        return extract(_storage.absolute(path), keep)

    @staticmethod
    def follow(path: str | os.PathLike[str], *, poll: float = 0.1,
               idle_timeout: float | None = None) -> Iterator[Envelope]:
        """Yield envelopes as they are appended to ``path``, like ``tail -f``.

        Starts at the first line. Never locks or writes. A last line without its
        ``\\n`` is waited for; a repair that swaps the file is followed, while
        another file at the path (a rotation) or one truncated in place is read
        from its start. Returns after ``idle_timeout`` seconds with nothing new
        (never, if None).

        Raises:
            OSError: ``path`` is not a regular file (a FIFO is refused, not
                waited on), when the first envelope is asked for.
        """
        from .follow import follow

        return follow(_storage.absolute(path), poll=poll, idle_timeout=idle_timeout)

    # -- life --------------------------------------------------------------

    def close(self) -> None:
        """Close the session: let go of its lock and of its file. Idempotent.

        Reading still works: each read opens the file again by its path, for as
        long as it takes, and raises ``SessionClosed`` once the path no longer
        names the file the session wrote (moved, replaced or deleted).
        """
        with self._lock:
            if self._fd is None:
                return
            self._stop_native_appends()
            # The lock dies with the last descriptor of the locked open file: the
            # core's goes here, ours on the next line.
            self._t.close_writer(self._path)
            # One line: an interrupt finds the descriptor open, or closed and forgotten.
            fd, self._fd = self._fd, None; os.close(fd)  # noqa: E702
            _OPEN.discard(self)

    def _forked_away(self) -> None:
        """In a forked child: the session stays its parent's. Refuse appends, and
        let go of the child's copies of the locked descriptor.

        The lock belongs to the open file that both processes share, so the child
        must never unlock it, only stop referring to it: a fresh, unlocked
        descriptor of the same file is put in place of the core's copy (reads go
        on through it) and the session's own copy is closed.
        """
        self._stop_native_appends()
        self._forked = True
        fd, self._fd = self._fd, None
        _OPEN.discard(self)
        if fd is None:
            return
        ro = _platform.child_reader(fd)
        try:
            if ro is not None:
                os.dup2(ro, self._core_fd, inheritable=False)
        finally:
            if ro is not None:
                os.close(ro)
            os.close(fd)

    def __del__(self) -> None:
        # Dropped without close() (an exception before it, a notebook cell run
        # again), a session kept its lock for the life of the process: every
        # later open of its transcript here raised SessionLocked. It is closed
        # when collected, as an open file is, and says so as a file does.
        if getattr(self, "_fd", None) is None or _sys.is_finalizing():
            return  # at exit the process lets go of everything itself
        _warnings.warn(f"unclosed session {self._path}", ResourceWarning, source=self)
        try:
            self.close()
        except OSError:
            pass  # the descriptor is gone either way; nothing to tell a collector

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        # Under the lock like every entry into the core: an fsync append lets go
        # of the GIL mid-call, and the core must not be entered meanwhile.
        with self._lock:
            state = "closed" if self._fd is None else "open"
            return f"<Session {str(self._path)!r} {state}, {len(self._t)} envelopes>"

    def _writable(self) -> _core.Transcript:
        if self._forked:
            raise SessionBroken(
                f"{self._path}: this session was opened by process {self._opener}, before an "
                f"os.fork(); it cannot append in the child (open the transcript there instead, "
                f"once the parent has closed it)")
        if self._fd is None:
            raise SessionClosed(f"{self._path}: the session is closed")
        return self._t

    def _append(self, kind: str, payload: Any) -> str:
        """Append one envelope of type ``kind`` under the lock; returns its id."""
        with self._lock:
            try:
                return self._writable().append(kind, payload, None)
            except OSError as e:
                raise _named(e, self._path)

    def _append_rows(self, rows: list[tuple[Any, ...]]) -> list[str]:
        """Append the core's rows (see ``append_messages``) with one write; their ids."""
        with self._lock:
            try:
                return self._writable().append_messages(rows)
            except OSError as e:
                raise _named(e, self._path)

    # -- reading -----------------------------------------------------------

    @property
    def path(self) -> Path:
        """The transcript's path."""
        return self._path

    @property
    def meta(self) -> Any:
        """The session-meta payload."""
        with self._lock:
            if self._meta is None:
                self._meta = self._t.payload(0)
            return self._meta

    @property
    def messages(self) -> list[Message]:
        """The live messages, compactions (with or without a replacement),
        elisions and rewinds applied (a fresh list each call)."""
        with self._lock:
            return [Message.from_dict(d) for d in self._t.live_payloads()]

    @property
    def entries(self) -> list[Entry]:
        """The live messages with their ids, extras and lines, parallel to
        ``messages`` (a fresh list each call, decoded when asked for).

        ``extra`` is what ``append_message(extra=...)`` (or a replacement's
        ``(message, extra)`` pair) wrote beside the message; ``{}`` for a
        compaction's summary.
        """
        with self._lock:
            rows = self._t.live_entries()
        return [live_entry(mid, d, line, elided) for mid, d, line, elided in rows]

    @property
    def message_ids(self) -> list[str]:
        """The envelope ids of ``messages``, in the same order."""
        with self._lock:
            return self._t.live_ids()

    @property
    def events(self) -> Sequence[Envelope]:
        """Every envelope in file order, unknown types included; read lazily."""
        with self._lock:
            t = self._t
            lock = self._lock

            def get(i: int) -> Envelope:
                with lock:
                    return _envelope(t.event(i))

            return LazySequence(len(t), get)

    @property
    def grants(self) -> Any:
        """The last grants snapshot, or None."""
        with self._lock:
            index = self._t.grants_index()
            if index is None:
                return None
            payload = self._t.payload(index)
            return payload.get("grants") if isinstance(payload, dict) else None

    @property
    def warnings(self) -> list[str]:
        """What load had to do, one line each (a removed torn tail)."""
        return list(self._warnings)

    # -- writing -----------------------------------------------------------

    def append_message(self, message: Message, extra: dict[str, Any] | None = None) -> str:
        """Append one conversation message; returns its id.

        ``extra`` keys (a ``finish-reason``, say) are kept in the line and in
        ``events``, never in ``messages``. A message key always wins: an
        extra named like a Message field is dropped even when the message leaves
        that field unset, so an extra can never make a message sticky or give
        it a ``tool_call_id``.
        """
        if extra is None and type(message) is Message:
            # The usual case, in one native call that takes the lock and writes
            # the payload from the fields (a subclass may have its own
            # to_dict()); None once the session is closed or forked away.
            try:
                appended = self._append_fields(message.role, message.content, message.name,
                                               message.tool_calls, message.tool_call_id,
                                               message.sticky, message.sysprompt, message.depth)
            except OSError as e:
                raise _named(e, self._path)
            if appended is not None:
                return appended
        if not isinstance(message, Message):
            raise TypeError(f"append_message takes a Message, not {type(message).__name__}")
        payload = _message_payload(message, extra)
        with self._lock:
            try:
                if type(message) is Message:
                    # Its payload's role, tool_call_id and stickiness are its own
                    # (an extra never overrides them): indexed from these.
                    return self._writable().append("message", payload, None, (
                        message.role, message.tool_call_id, bool(message.is_sticky)))
                return self._writable().append("message", payload, None)
            except OSError as e:
                raise _named(e, self._path)

    def append_messages(self, messages: Iterable[Message | tuple[Message, dict[str, Any] | None]]
                        ) -> list[str]:
        """Append conversation messages, each a Message or a ``(message, extra)``
        pair written as ``append_message`` writes it, with one ``write(2)``
        for all their lines; returns their ids, in order.

        All or nothing: every item is checked before a byte is written, and a
        failed write is cut back as ``append_message``'s is (or the session
        is broken). The session then holds what appending each in order would
        give. A crash during that one ``write(2)`` can leave a prefix of the
        lines in the file: ``load`` then removes a torn last line, so it
        finds none of them or the first few, each whole. An empty iterable
        writes nothing.

        Raises:
            TypeError: an item is not a Message or a ``(Message, extra)`` pair,
                or a payload cannot be written as JSON (nothing is written).
        """
        return self._append_rows(_payloads.message_rows(messages))

    def append_events(self, events: Iterable[tuple[str, Any]]) -> list[str]:
        """Append ``(type, payload)`` envelopes with one ``write(2)``; returns their ids.

        For types replay skips (an import's ``source-line``, an adapter's own
        records), and for those it reads: each is checked as its ``append_*``
        checks it, against the transcript before the call, so none may name
        another of the same call. All or nothing, as ``append_messages``.

        Raises:
            ValueError: a type is ``session-meta``, or replay refuses an envelope (nothing is written).
        """
        return self._append_rows(_payloads.event_rows(events))

    def append_grants(self, snapshot: Any) -> str:
        """Append the whole grants snapshot (any JSON value); the last one wins."""
        return self._append("grants", {"grants": snapshot})

    def append_compaction(self, summary: str, replaces_through_id: str, tokens_before: int,
                          tokens_after: int, fallback: bool = False, *,
                          replacement: Iterable[Message | tuple[Message, dict[str, Any] | None]]
                          | None = None) -> str:
        """Append a compaction: the live messages up to ``replaces_through_id`` are
        replaced by their sticky ones and one user message carrying ``summary``.

        With ``replacement`` (an empty one included), the messages it lists go
        where the summary would have (the summary is recorded, not replayed):
        each a Message or a ``(message, extra)`` pair, written as
        ``append_message`` writes one. The k-th has the id
        ``f"{compaction_id}:{k}"``, which later lines may name. One line: a
        crash never leaves half a swap.

        Raises:
            UnknownId: ``replaces_through_id`` is not a live message.
        """
        return self._append("compaction", _payloads.compaction(
            summary, replaces_through_id, tokens_before, tokens_after, fallback, replacement))

    def append_rewind(self, through_id: str | None) -> str:
        """Append a rewind: the live messages after ``through_id`` are dropped
        (every one of them, with None). Earlier lines stay as they are; grants,
        tool operations and run context are untouched.

        Raises:
            UnknownId: ``through_id`` is not a live message.
        """
        if through_id is not None:
            _check_type("through_id", through_id, str)
        return self._append("rewind", {"through-id": through_id})

    def append_elision(self, items: Iterable[tuple[str, str]]) -> str:
        """Append an elision: each ``(id, stub)`` replaces that live message's content.

        Raises:
            UnknownId: an id is not a live message.
            ValueError: no items.
        """
        listed = [{"id": mid, "stub": stub}
                  for mid, stub in _pairs(items, "elision item", ("id", "stub"), str)]
        if not listed:
            raise ValueError("an elision needs at least one (id, stub) item")
        return self._append("elision", {"items": listed})

    def append_tool_dispatched(self, call_id: str, tool: str, arguments: Any, *,
                               idempotency: str = "unknown", run_id: str | None = None,
                               round: int | None = None) -> str:
        """Record that a tool call is about to cross to its provider; returns the operation id.

        Write it before the call runs, so that a crash leaves it pending
        (``pending_tool_operations``); settle it with ``append_tool_settled``.

        Args:
            call_id: the assistant's tool call id (``tool_calls[i]["id"]``).
            tool: the tool's name.
            arguments: a JSON value or a string; a string that parses as JSON is
                stored parsed. ``arguments-digest`` is the digest of its canonical JSON.
            idempotency: whether a resuming process may run the call again, for
                it to read: any string, such as ``"read-only"``, ``"idempotent"``,
                ``"unknown"`` (the default) or ``"not-idempotent"``.
            run_id: which run dispatched it, for readers that group calls.
            round: which round of the agent loop dispatched it.
        """
        return self._append("tool-dispatched", _payloads.tool_dispatched(
            call_id, tool, arguments, idempotency, run_id, round))

    def append_tool_settled(self, op_id: str, outcome: str, *, reason: Any = None,
                            duration: Any = None, result_digest: Any = None,
                            artifact: Any = None, error: Any = None) -> str:
        """Record what became of tool operation ``op_id``.

        Raises:
            ValueError: ``outcome`` is not completed, failed or outcome-unknown.
            ToolOperationError: the operation is unknown or already settled.
        """
        return self._append("tool-settled", _payloads.tool_settled(
            op_id, outcome, reason=reason, duration=duration, result_digest=result_digest,
            artifact=artifact, error=error))

    def append_run_context(self, sections: Sequence[tuple[str, str]],
                           facts: Sequence[tuple[str, Any]]) -> str:
        """Record what the run was told: ``(name, text)`` sections and ``(key, value)`` facts.

        A section's text is stored only by the first run-context line that has
        it; later ones point at that line with ``rendered-in``.
        """
        checked = _payloads.run_context_arguments(sections, facts)
        with self._lock:
            t = self._writable()
            own_id = t.new_id()
            try:
                return t.append("run-context", _payloads.run_context(t, own_id, *checked), own_id)
            except OSError as e:
                raise _named(e, self._path)

    # -- tool operations ---------------------------------------------------

    def pending_tool_operations(self) -> list[PendingToolOperation]:
        """Every dispatched, unsettled tool operation, in dispatch order."""
        with self._lock:
            return tool_calls.pending_operations(self._t)

    # -- resuming into a model API -----------------------------------------

    def unanswered_tool_calls(self) -> list[UnansweredToolCall]:
        """Every live tool call that no tool message answers, in conversation
        order: what a chat API would refuse to be sent. A tool message answers
        the earliest live call before it with its ``tool_call_id`` not answered yet."""
        with self._lock:
            return tool_calls.unanswered_tool_calls(self._t)

    def answer_unanswered_tool_calls(
            self, content: str | Callable[[UnansweredToolCall], str] = INTERRUPTED) -> list[str]:
        """Answer every unanswered call: settle its pending operations as
        ``outcome-unknown`` (reason: interrupted) and append ``Message.tool(call_id,
        text)``, ``text`` being ``content`` or ``content(call)``; all in one
        ``write(2)`` at the end of the file, as ``append_messages`` writes.

        A crash inside it leaves a prefix of those lines; calling it again
        answers the rest. Returns the tool messages' ids (``[]``, and nothing
        written, when nothing is unanswered).

        Raises:
            TypeError: ``content`` is not a string or a callable, or returned
                something that is not a string (nothing is written).
        """
        with self._lock:
            rows, answers = tool_calls.answer_rows(self._t, content)
            ids = self._append_rows(rows) if rows else []
            return [ids[k] for k in answers]

    def chat_messages(self) -> list[dict[str, Any]]:
        """The live conversation as a strict chat API takes it: each message's
        ``Message.to_chat``, each tool message that answers a call laid
        right after that call's assistant message, and tool messages that
        answer no call left out. A view for sending: the file is untouched."""
        with self._lock:
            return tool_calls.chat_messages(self._t)

    def resolve_tool_operation(self, op_id: str, outcome: str | None = None, *,
                               reason: str = "resolved after an interrupted run") -> str:
        """Write the missing settle line of a pending operation; returns that
        line's id (the envelope id of the tool-settled line, not the outcome).

        ``outcome`` defaults to ``completed`` when its result was persisted and
        to ``outcome-unknown`` otherwise. The conversation is not touched: a
        call left without a tool message is still unanswered (see
        ``answer_unanswered_tool_calls``).

        Raises:
            ToolOperationError: ``op_id`` is not a pending operation.
        """
        with self._lock:
            pending = {i: r for i, r in self._t.pending()}
            index = self._t.index_of(op_id)
            if index is None or index not in pending:
                raise ToolOperationError(f"no pending tool operation {op_id!r}")
            if outcome is None:
                outcome = "outcome-unknown" if pending[index] is None else "completed"
            return self.append_tool_settled(op_id, outcome, reason=reason)

    def run_context_section(self, digest: str) -> str | None:
        """The text of the run-context section with ``digest``, or None when the
        line carrying it is not in this transcript."""
        with self._lock:
            index = self._t.section_index(digest)
            if index is None:
                return None
            payload = self._t.payload(index)
            for section in payload.get("sections", []) if isinstance(payload, dict) else []:
                if isinstance(section, dict) and section.get("digest") == digest and "text" in section:
                    text = section["text"]
                    return text if isinstance(text, str) else None
            return None

    # -- artifacts ---------------------------------------------------------

    def write_artifact(self, content: str | bytes, *, excerpt: str) -> dict[str, Any]:
        """Store a full tool result beside the transcript; returns the ``artifact``
        dict for ``append_tool_settled`` (``file, digest, bytes, chars, elided-chars``)."""
        return self._artifacts.write(content, excerpt=excerpt)

    def artifact_path(self, file: str) -> Path:
        """Where artifact ``file`` lives. Raises ``ValueError`` unless it is a plain basename."""
        return self._artifacts.path(file)

    def read_artifact(self, artifact: dict[str, Any]) -> bytes | None:
        """The bytes of an artifact, None when its file is gone.

        Raises:
            ValueError: a bad ``file`` name, or the bytes do not match ``digest``.
        """
        return self._artifacts.read(artifact)


# Every open session of this process, for the fork handler.
_OPEN: weakref.WeakSet[Session] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # The core counts forks itself (ids, the session lock); this hook only lets
    # go of the child's copies of the locked descriptors.
    for session in list(_OPEN):
        try:
            session._forked_away()
        except OSError:
            pass  # best effort: an error must not escape into the child's fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
