"""pydantic-ai's ``ConversationStore`` (pydantic-ai >= 2.66) over a folder of transcripts.

The public name is ``agent_transcript.integrations.pydantic_ai.TranscriptConversationStore``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from agent_transcript import Session, SessionLocked

from ._aio import write_off_loop
from ._pydantic_ai_history import EXTRA_KEY, dump, early_block, line_time, live_groups, load, write_entry

#: The run-context fact holding the conversation's record (``None``: deleted).
RECORD_KEY = "pydantic-ai.record"

_RECORDS: pydantic.TypeAdapter[ConversationRecord] = pydantic.TypeAdapter(ConversationRecord)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_LOCKED_RETRY_SECONDS = 5.0


@dataclasses.dataclass
class _Scan:
    """What a store reads from one transcript, in file order."""

    record: dict[str, Any] | None = None
    entries: dict[str, tuple[str | None, Any]] = dataclasses.field(default_factory=dict)  # id -> (parent, JSON)
    #: The entries after the last record line that go on from its head: the
    #: messages a run wrote before its tools ran (``TranscriptCapability``), and
    #: the answers another program gave their calls after it was killed.
    extension: list[str] = dataclasses.field(default_factory=list)
    runs: dict[str, str] = dataclasses.field(default_factory=dict)  # entry id -> the run that wrote it early
    answers: dict[str, str] = dataclasses.field(default_factory=dict)  # foreign tool line id -> its entry id

    @property
    def head(self) -> str | None:
        """The newest entry of the conversation, its extension included."""
        if self.extension:
            return self.extension[-1]
        return self.record.get("head_id") if self.record is not None else None


@dataclasses.dataclass
class _FileState:
    stamp: tuple[int, int, int]
    scan: _Scan


def _conversation_of(path: Path) -> str | None:
    """The conversation id a transcript was created for (its session-meta)."""
    meta = Session.peek(path).meta
    own = meta.get(EXTRA_KEY) if isinstance(meta, dict) else None
    cid = own.get("conversation-id") if isinstance(own, dict) else None
    return cid if isinstance(cid, str) else None


def _calls(message: Any) -> dict[str, str]:
    """A stored response's tool calls: call id -> tool name."""
    if not isinstance(message, dict) or message.get("kind") != "response":
        return {}
    return {p["tool_call_id"]: str(p.get("tool_name")) for p in message.get("parts") or ()
            if isinstance(p, dict) and p.get("part_kind") == "tool-call" and isinstance(p.get("tool_call_id"), str)}


def _scan(envelopes: Iterable[Any]) -> _Scan:
    """Entries, the record, and what follows the record's head, from a file's lines.

    A ``tool`` message no adapter wrote (``Session.answer_unanswered_tool_calls``
    after a kill) that answers a call of the entry just before it is read as an
    entry too: one request per run of such lines, named ``line:`` and its first
    line's id, so the next load sends the call with its answer.
    """
    out = _Scan()
    last: str | None = None  # the entry a foreign answer may follow
    answer: tuple[str, dict[str, str], list[Any]] | None = None  # (entry id, calls still open, parts)
    for env in envelopes:
        payload = env.payload
        if not isinstance(payload, dict):
            continue
        if env.type == "message":
            own = payload.get(EXTRA_KEY)
            if isinstance(own, dict) and isinstance(own.get("entry"), str):
                if "message" in own:
                    parent = own.get("parent")
                    entry = own["entry"]
                    early = isinstance(own.get("run"), str)
                    _add(out, entry, parent if isinstance(parent, str) else None, own["message"], early)
                    if early:
                        out.runs[entry] = own["run"]
                    last, answer = entry, None
                continue
            call_id = payload.get("tool_call_id")
            if payload.get("role") != "tool" or not isinstance(call_id, str):
                last, answer = None, None
                continue
            if answer is None and last is not None:
                open_calls = _calls(out.entries[last][1])
                if call_id in open_calls:
                    answer = (f"line:{env.id}", open_calls, [])
                    _add(out, answer[0], last, None, True)
            if answer is None or call_id not in answer[1]:
                last, answer = None, None
                continue
            content = payload.get("content")
            when = line_time(env.ts)
            answer[2].append(ToolReturnPart(answer[1].pop(call_id), content if isinstance(content, str)
                                            else json.dumps(content, ensure_ascii=False),
                                            tool_call_id=call_id, timestamp=when))
            parent = out.entries[answer[0]][0]
            out.entries[answer[0]] = (parent, dump(ModelRequest(parts=list(answer[2]), timestamp=when)))
            out.answers[env.id] = answer[0]
            last = answer[0]
        elif env.type == "run-context":
            for fact in payload.get("facts") or ():
                if isinstance(fact, list) and len(fact) == 2 and fact[0] == RECORD_KEY:
                    out.record = fact[1] if isinstance(fact[1], dict) else None
                    out.extension = []
    return out


def _add(out: _Scan, entry: str, parent: str | None, message: Any, extends: bool) -> None:
    # Only what a run wrote early, or an answer, goes on from the head: the
    # entries of a save killed before its record line are not the conversation.
    if extends and parent == out.head and (parent is not None or out.record is None) \
            and entry not in out.extension:
        out.extension.append(entry)
    out.entries[entry] = (parent, message)


def _live(session: Session, scan: _Scan) -> list[tuple[str | None, str]]:
    """The live lines as entries: (entry id, or None for a line no entry stands
    for; the id of its last line). A run of answers is the one entry ``_scan`` made."""
    live: list[tuple[str | None, str]] = []
    for entry_id, last_line, _ in live_groups(session):
        if entry_id is None and last_line in scan.answers:
            entry_id = scan.answers[last_line]
            if live and live[-1][0] == entry_id:
                live[-1] = (entry_id, last_line)
                continue
        live.append((entry_id, last_line))
    return live


def _adopt(scan: _Scan, record: ConversationRecord, new_entries: list[ConversationEntry]) -> None:
    """Take the entries a run wrote before its tools ran for the save's own.

    ``save`` mints new entries for a run's messages after the head it read,
    which includes what that run wrote early: those stay as they are in the
    file, under their ids (in ``new_entries``, which ``save`` returns, and in
    ``record``), and the rest follows them. Early messages the run went past
    are left behind (the save then rewinds them).
    """
    ext = scan.extension
    stored_head = (scan.record or {}).get("head_id")
    if not new_entries or not ext or new_entries[0].parent_id not in (ext[-1], stored_head):
        return
    written = [(e, scan.runs.get(e), scan.entries[e][1]) for e in ext]
    b, k = early_block(written, [e.message for e in new_entries])
    if not b or (new_entries[0].parent_id != ext[-1] and b < len(ext)):
        return  # (a save that did not see the extension adopts only a run's own)
    block = ext[len(ext) - b:]
    before = ext[len(ext) - b - 1] if len(ext) > b else stored_head
    rest = new_entries[k:]
    if rest:
        rest[0] = dataclasses.replace(rest[0], parent_id=block[k - 1] if k else before)
    else:
        record.head_id = block[k - 1]
    new_entries[:] = [dataclasses.replace(e, id=t, parent_id=scan.entries[t][0])
                      for t, e in zip(block, new_entries[:k])] + rest


class TranscriptConversationStore(ConversationStore):
    """pydantic-ai's ``ConversationStore`` keeping each conversation in one
    transcript in ``folder`` (created ``0700`` if missing).

    Reads never lock; a save or delete opens the conversation's transcript (its
    lock held only meanwhile, and waited for up to a few seconds), checks the
    revision and writes. ``delete`` writes a tombstone record: the messages stay
    in the file (the ABC lets a backend keep them, and this one says so). A fork
    points at entries in the forked conversation's file, and its own file gets
    copies of the message lines it shares, so every transcript reads whole.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._cache: dict[Path, _FileState] = {}
        self._lock = threading.Lock()

    def transcript_path(self, conversation_id: str) -> Path:
        """The transcript that holds ``conversation_id``.

        An id that is a safe file name is the file's name; any other is named by
        its SHA-256 after a ``_``, which no safe name begins with, so two ids
        never share a file. A transcript named the way earlier versions named
        it (``c-`` and 32 digits of the digest) is still found, by the id in
        its first line.
        """
        if _SAFE_NAME.fullmatch(conversation_id):
            return self.folder / f"{conversation_id}.jsonl"
        hashed = hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()
        path = self.folder / f"_{hashed}.jsonl"
        legacy = self.folder / f"c-{hashed[:32]}.jsonl"
        if not path.exists() and legacy.is_file() and _conversation_of(legacy) == conversation_id:
            return legacy
        return path

    # -- reading (no lock) -------------------------------------------------------

    def _state(self, path: Path) -> _FileState | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            with self._lock:
                self._cache.pop(path, None)
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            cached = self._cache.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached
        peek = Session.peek(path)
        if peek.error is not None:
            return None
        state = _FileState(stamp, _scan(peek.envelopes))
        with self._lock:
            self._cache[path] = state
        return state

    def _paths(self) -> list[Path]:
        return sorted(p for p in self.folder.glob("*.jsonl") if p.is_file())

    def _find_entry(self, entry_id: str, first: Path | None = None) -> tuple[Path, ConversationEntry] | None:
        paths = self._paths()
        if first is not None and first in paths:
            paths.remove(first)
            paths.insert(0, first)
        for path in paths:
            state = self._state(path)
            if state is not None and entry_id in state.scan.entries:
                parent, data = state.scan.entries[entry_id]
                return path, ConversationEntry(id=entry_id, parent_id=parent, message=load(data))
        return None

    def _record_of(self, conversation_id: str) -> ConversationRecord | None:
        state = self._state(self.transcript_path(conversation_id))
        if state is None or state.scan.record is None:
            return None
        record = _RECORDS.validate_python(state.scan.record)
        if record.conversation_id != conversation_id:
            return None
        # A run killed mid-tool left its messages (and maybe their answers) after the head.
        return dataclasses.replace(record, head_id=state.scan.head) if state.scan.extension else record

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The stored record of a conversation (its head, usage, revision), or None if it has none."""
        return await asyncio.to_thread(self._record_of, conversation_id)

    def _records_in(self, scope: str | None, limit: int | None) -> list[ConversationRecord]:
        records = []
        for path in self._paths():
            state = self._state(path)
            if state is not None and state.scan.record is not None:
                record = _RECORDS.validate_python(state.scan.record)
                if scope is None or record.scope == scope:
                    records.append(record)
        records.sort(key=lambda r: r.updated_at, reverse=True)
        return records[:limit]

    async def read_records(self, *, scope: str | None = None,
                           limit: int | None = None) -> Sequence[ConversationRecord]:
        """The records of the conversations in the folder, in file-name order.

        Args:
            scope: only the records of this scope.
            limit: at most this many.
        """
        return await asyncio.to_thread(self._records_in, scope, limit)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The stored message entry ``entry_id``, from whichever transcript holds it.

        Raises:
            LookupError: no transcript in the folder holds it.
        """
        found = await asyncio.to_thread(self._find_entry, entry_id)
        if found is None:
            raise LookupError(entry_id)
        return found[1]

    def _history_from(self, head_id: str | None, limit: int | None) -> list[ConversationEntry]:
        out: list[ConversationEntry] = []
        where: Path | None = None
        entry_id = head_id
        while entry_id is not None and (limit is None or len(out) < limit):
            found = self._find_entry(entry_id, where)
            if found is None:
                raise LookupError(entry_id)
            where, entry = found
            out.append(entry)
            entry_id = entry.parent_id
        out.reverse()
        return out

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The history ending at ``head_id``, oldest entry first (``[]`` for None).

        Args:
            head_id: the newest entry.
            limit: at most this many entries, the newest ones.

        Raises:
            LookupError: an entry of the history is in no transcript of the folder.
        """
        return await asyncio.to_thread(self._history_from, head_id, limit)

    # -- writing (the conversation's transcript locked) ----------------------------

    def _open(self, conversation_id: str) -> Session:
        path = self.transcript_path(conversation_id)
        deadline = time.monotonic() + _LOCKED_RETRY_SECONDS
        while True:
            try:
                return Session.open(path, {EXTRA_KEY: {"conversation-id": conversation_id}})
            except SessionLocked:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)  # another writer's save takes milliseconds

    def _in_transcript(self, conversation_id: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(session, *args)`` with the conversation's transcript open (for
        ``TranscriptCapability``: a run's early messages and its tool calls)."""
        with self._open(conversation_id) as session:
            return fn(session, *args)

    def _write_early(self, conversation_id: str, messages: Sequence[Any]) -> None:
        """A run's messages, before its tools run: entries after the head, marked
        with the run, which the run's save adopts (``_adopt``)."""
        with self._open(conversation_id) as session:
            parent = _scan(session.events).head
            for message in messages:
                entry = ConversationEntry(parent_id=parent, message=message)
                write_entry(session, entry.id, parent, message, early=True)
                parent = entry.id

    @staticmethod
    def _current(session: Session) -> dict[str, Any] | None:
        events = session.events
        for i in range(len(events) - 1, -1, -1):
            env = events[i]
            if env.type != "run-context" or not isinstance(env.payload, dict):
                continue
            for fact in reversed(env.payload.get("facts") or ()):
                if isinstance(fact, list) and len(fact) == 2 and fact[0] == RECORD_KEY:
                    return fact[1] if isinstance(fact[1], dict) else None
        return None

    def _write(self, record: ConversationRecord, new_entries: list[ConversationEntry],
               expected_revision: str | None) -> None:
        cid = record.conversation_id
        if expected_revision is not None and not self.transcript_path(cid).exists():
            raise ConversationConflict(cid)
        with self._open(cid) as session:
            current = self._current(session)
            if (current.get("revision") if current is not None else None) != expected_revision:
                raise ConversationConflict(cid)
            scan = _scan(session.events)
            _adopt(scan, record, new_entries)
            own = {e.id: e for e in new_entries}
            groups = _live(session, scan)
            live = [g[0] for g in groups]
            tip = live[-1] if live else None
            if None not in live and (new_entries[0].parent_id == tip if new_entries else record.head_id == tip):
                keep, tail = len(groups), list(new_entries)  # the common case: a run's messages, appended
            else:
                target = self._target(record.head_id, own, session.path)
                if target is None:
                    raise ConversationConflict(cid)
                keep = 0
                while keep < min(len(live), len(target)) and live[keep] == target[keep].id:
                    keep += 1
                tail = target[keep:]
            if keep < len(groups):
                session.append_rewind(groups[keep - 1][1] if keep else None)
            for entry in tail:
                write_entry(session, entry.id, entry.parent_id, entry.message)
            session.append_run_context([], [(RECORD_KEY, _RECORDS.dump_python(record, mode="json"))])

    def _target(self, head_id: str | None, own: Mapping[str, ConversationEntry],
                here: Path) -> list[ConversationEntry] | None:
        """The history ending at ``head_id``: new entries, then stored ones; None if one is missing."""
        out: list[ConversationEntry] = []
        where: Path | None = here
        entry_id = head_id
        while entry_id is not None:
            entry = own.get(entry_id)
            if entry is None:
                found = self._find_entry(entry_id, where)
                if found is None:
                    return None
                where, entry = found
            out.append(entry)
            entry_id = entry.parent_id
        out.reverse()
        return out

    async def write_record(self, record: ConversationRecord, *,
                           new_entries: Sequence[ConversationEntry] = (),
                           expected_revision: str | None) -> None:
        """Store ``record`` and its new entries in the conversation's transcript, in one locked step.

        The entries are appended (after a rewind when the record's head is on
        another branch), then the record, so a write killed halfway leaves the
        record it had.

        Raises:
            ConversationConflict: the stored revision is not ``expected_revision``,
                or an entry of the record's history is nowhere in the folder.
        """
        # The list save() returns: entries a run wrote early are adopted in it (see _adopt).
        batch = new_entries if isinstance(new_entries, list) else list(new_entries)
        await write_off_loop(functools.partial(self._write, record, batch, expected_revision))

    def _tombstone(self, conversation_id: str, expected_revision: str) -> None:
        if not self.transcript_path(conversation_id).exists():
            raise ConversationConflict(conversation_id)
        with self._open(conversation_id) as session:
            current = self._current(session)
            if current is None or current.get("revision") != expected_revision:
                raise ConversationConflict(conversation_id)
            session.append_run_context([], [(RECORD_KEY, None)])

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Write a tombstone record; the conversation's messages stay in its transcript."""
        await write_off_loop(functools.partial(self._tombstone, conversation_id, expected_revision))

