"""The Claude Agent SDK's ``SessionStore`` over a folder of transcripts.

Switch a client's session store with one line::

    options = ClaudeAgentOptions(session_store=TranscriptSessionStore("sessions/"))

The SDK mirrors every line Claude Code writes to its session file into the
store, a batch at a time, and loads them back to resume. Each session key
(a subagent's subpath included) is one transcript in the folder, laid out as
Claude Code lays out its projects (``<project>/<session>.jsonl``, a subagent
at ``<project>/<session>/subagents/agent-<id>.jsonl``, each name as
``transcript_name`` makes it). A transcript holds every line, byte for byte,
and the conversation the Claude Code importer makes of them (see
``agent_transcript.formats.mirror``), so ``show``, ``html``, ``ls`` and
``export`` read a mirrored session as they read an imported one. A batch is
one ``write(2)``; a torn last line is repaired on the next open instead of
losing the session; the file is locked against a second writer.

Needs the ``claude-agent-sdk`` extra: ``pip install "agent-transcript[claude-agent-sdk]"``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

try:
    from claude_agent_sdk import (SessionKey, SessionListSubkeysKey, SessionStore, SessionStoreEntry,
                                  SessionStoreListEntry, SessionSummaryEntry, fold_session_summary)
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agent_transcript.integrations.claude_agent_sdk needs the Claude Agent SDK: "
        'pip install "agent-transcript[claude-agent-sdk]"'
    ) from e

from agent_transcript.formats import source_lines
from agent_transcript.formats.mirror import Mirror, entry_line, entry_of

from ._aio import write_off_loop
from ._names import OpenTranscripts, opened_when_free, transcript_name

__all__ = ["TranscriptSessionStore", "META_KEY", "SUMMARY"]

#: The session-meta key that names the session key a transcript holds:
#: ``{"project_key", "session_id"}`` and, for a subagent's, ``"subpath"``.
META_KEY = "claude-agent-sdk"
#: The type of the envelope holding a main session's summary after a batch,
#: ``{"summary": SessionSummaryEntry}``, written with the batch's lines.
SUMMARY = "claude-agent-sdk-summary"
_SUMMARY_MARK = b'"type":"' + SUMMARY.encode() + b'"'

T = TypeVar("T")


class _Open:
    """One open mirror, its lock, and the main session's summary so far."""

    def __init__(self, mirror: Mirror, summary: SessionSummaryEntry | None) -> None:
        self.mirror = mirror
        self.summary = summary
        self.lock = threading.Lock()

    def close(self) -> None:
        self.mirror.close()


class TranscriptSessionStore(SessionStore, OpenTranscripts[Path, _Open]):
    """A ``SessionStore`` keeping each session key in one transcript in ``folder``
    (created ``0700`` if missing).

    A key's transcript is opened (and locked) the first time the store appends
    to it, and stays open until ``close``; another process that appends to it
    meanwhile waits a few seconds, then gets ``SessionLocked``. Reading
    (``load``, the listings) never locks, and creates nothing.

    Args:
        folder: where the transcripts go.
        durability: ``"flush"`` (a batch is in the kernel when ``append`` returns)
            or ``"fsync"`` (on the disk), as for ``Session``.
    """

    def __init__(self, folder: str | os.PathLike[str], *,
                 durability: Literal["flush", "fsync"] = "flush") -> None:
        if durability not in ("flush", "fsync"):
            raise ValueError(f"durability must be 'flush' or 'fsync', not {durability!r}")
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.durability: Literal["flush", "fsync"] = durability
        self._lock = threading.Lock()
        self._open: dict[Path, _Open] = {}

    def transcript_path(self, key: SessionKey) -> Path:
        """The transcript that holds ``key``'s entries.

        Raises:
            TypeError, ValueError: ``key`` is not a session key (an empty ``subpath`` included).
        """
        project, session = key.get("project_key"), key.get("session_id")
        if not isinstance(project, str) or not isinstance(session, str):
            raise TypeError("a session key has a str project_key and session_id")
        subpath = key.get("subpath")
        if subpath is None:
            return self.folder / transcript_name(project) / f"{transcript_name(session)}.jsonl"
        if not isinstance(subpath, str) or not subpath:
            raise ValueError("a subpath is a non-empty str (omit it for the main transcript)")
        *folders, name = subpath.split("/")
        path = self.folder / transcript_name(project) / transcript_name(session)
        for part in folders:
            path /= transcript_name(part)
        return path / f"{transcript_name(name)}.jsonl"

    # -- life ----------------------------------------------------------------------

    def _opened(self, key: SessionKey, path: Path) -> _Open:
        with self._lock:
            one = self._open.get(path)
            if one is None:
                meta = {META_KEY: dict(key)}
                mirror = opened_when_free(lambda: Mirror.open(path, meta, durability=self.durability))
                try:
                    summary = _last_summary(path) if key.get("subpath") is None else None
                except BaseException:
                    mirror.close()
                    raise
                one = self._open[path] = _Open(mirror, summary)
            return one

    def _forget(self, path: Path, one: _Open) -> None:
        """Close a mirror an append failed in: the next one opens it again from its file."""
        with self._lock:
            if self._open.get(path) is one:
                del self._open[path]
        one.mirror.close()

    # -- the SessionStore methods --------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Mirror a batch of entries: their lines and the summary in one ``write(2)``,
        then the conversation they change. The write finishes even if the awaiting
        task is cancelled meanwhile.

        Raises:
            TypeError, ValueError: an entry is not a JSON object (nothing is written).
        """
        path = self.transcript_path(key)
        raws = [entry_line(entry) for entry in entries]  # a bad entry fails here, in the caller's task
        if raws:
            await write_off_loop(functools.partial(self._append, key, path, raws))

    def _append(self, key: SessionKey, path: Path, raws: list[bytes]) -> None:
        one = self._opened(key, path)
        with one.lock:
            events: list[tuple[str, Any]] = []
            summary = one.summary
            if key.get("subpath") is None:
                # Folded from the lines as written, which load gives back.
                summary = fold_session_summary(one.summary, key, [entry_of(raw) for raw in raws])
                events.append((SUMMARY, {"summary": summary}))
            try:
                one.mirror.append(raws, events)
            except BaseException:
                self._forget(path, one)
                raise
            one.summary = summary

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry appended to ``key``, in order, or None when none ever was."""
        return await asyncio.to_thread(self._load, self.transcript_path(key))

    def _load(self, path: Path) -> list[SessionStoreEntry] | None:
        with self._lock:
            one = self._open.get(path)
        if one is not None:
            with one.lock:
                raws = list(one.mirror.raws)
        else:
            try:
                raws = list(source_lines(path))
            except FileNotFoundError:
                return None
        return [cast(SessionStoreEntry, entry_of(raw)) for raw in raws] or None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The main sessions of ``project_key``, with the time each was last written
        (epoch milliseconds)."""
        def listed(path: Path, key: SessionKey, mtime: int) -> SessionStoreListEntry:
            return {"session_id": key["session_id"], "mtime": mtime}

        return await asyncio.to_thread(self._main_sessions, project_key, listed)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summary of each main session of ``project_key`` as of its last batch,
        stamped with the time its transcript was last written."""
        def summary(path: Path, key: SessionKey, mtime: int) -> SessionSummaryEntry | None:
            with self._lock:
                one = self._open.get(path)
            found = one.summary if one is not None else _last_summary(path)
            return None if found is None else {**found, "mtime": mtime}

        return await asyncio.to_thread(self._main_sessions, project_key, summary)

    def _main_sessions(self, project_key: str, row: Callable[[Path, SessionKey, int], T | None]) -> list[T]:
        folder = self.folder / transcript_name(project_key)
        out = []
        for path in sorted(folder.glob("*.jsonl")):
            key = _key_of(path)
            if key is None or key.get("subpath") is not None or key["project_key"] != project_key:
                continue
            try:
                mtime = os.stat(path).st_mtime_ns // 1_000_000
            except FileNotFoundError:
                continue  # deleted meanwhile
            found = row(path, key, mtime)
            if found is not None:
                out.append(found)
        return out

    async def delete(self, key: SessionKey) -> None:
        """Delete ``key``'s transcript; a main session's takes its subagents' with it."""
        await asyncio.to_thread(self._delete, key)

    def _delete(self, key: SessionKey) -> None:
        path = self.transcript_path(key)
        under = path.with_suffix("") if key.get("subpath") is None else None
        with self._lock:
            closing = [p for p in self._open if p == path or (under is not None and under in p.parents)]
            opened = [self._open.pop(p) for p in closing]
        for one in opened:
            with one.lock:
                one.mirror.close()
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        if under is not None:
            shutil.rmtree(under, ignore_errors=True)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths under a session (its subagents' transcripts)."""
        main: SessionKey = {"project_key": key["project_key"], "session_id": key["session_id"]}
        under = self.transcript_path(main).with_suffix("")

        def subkeys() -> list[str]:
            found = []
            for path in sorted(under.rglob("*.jsonl")):
                sub = _key_of(path)
                if (sub is not None and isinstance(sub.get("subpath"), str)
                        and (sub["project_key"], sub["session_id"]) == (main["project_key"], main["session_id"])):
                    found.append(str(sub["subpath"]))
            return found

        return await asyncio.to_thread(subkeys)


def _key_of(path: Path) -> SessionKey | None:
    """The session key a transcript of this store holds (from its session-meta), or None."""
    try:
        with open(path, "rb") as f:
            first = f.readline()
        meta = json.loads(first).get("payload", {}).get(META_KEY)
    except (OSError, ValueError, AttributeError):
        return None
    if (isinstance(meta, dict) and isinstance(meta.get("project_key"), str)
            and isinstance(meta.get("session_id"), str)):
        return cast(SessionKey, meta)
    return None


def _last_summary(path: Path) -> SessionSummaryEntry | None:
    """The summary in the last summary envelope of ``path``, read from its end."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    with f:
        end = f.seek(0, os.SEEK_END)
        span = 1 << 16
        while True:
            start = max(0, end - span)
            f.seek(start)
            tail = f.read(end - start)
            at = tail.rfind(_SUMMARY_MARK)
            begin = tail.rfind(b"\n", 0, at) + 1 if at >= 0 else -1
            if at >= 0 and (begin > 0 or start == 0):
                line = tail[begin:tail.find(b"\n", at) if tail.find(b"\n", at) >= 0 else len(tail)]
                try:
                    found = json.loads(line)["payload"]["summary"]
                except (ValueError, KeyError, TypeError):
                    return None
                return cast(SessionSummaryEntry, found) if isinstance(found, dict) else None
            if start == 0:
                return None
            span *= 4
