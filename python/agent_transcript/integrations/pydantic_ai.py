"""pydantic-ai's ``ConversationStore`` over a folder of transcripts, and the
``message_history=`` path over one.

Switch an agent's conversation store with one line::

    store = TranscriptConversationStore("conversations/")   # was: InMemoryConversationStore()
    conversation = await store.load(cid) or Conversation(conversation_id=cid)
    result = await agent.run("hello", conversation=conversation)
    await store.save(result)

Each conversation is one transcript in the folder. Each pydantic-ai message is
kept whole (its JSON, exactly as ``ModelMessagesTypeAdapter`` writes it) in the
``pydantic-ai`` extra of the first message line that stands for it, and
projected as OpenAI chat messages for everything else that reads the file: a
response is one assistant message (its text, its tool calls; its thinking in a
``thinking`` extra), a request one message per part (system prompt, user
prompt, one ``tool`` message per tool return). The store's record (head, usage,
deferred tool requests, scope, revision) is a run-context line after the
messages it points at, so a save that is killed halfway leaves the record it
had. A transcript's live messages are always its conversation's history: a
branch appends a rewind, then the branch's messages.

For any pydantic-ai version, :func:`load_messages` and :func:`append_messages`
carry the plain ``message_history=`` path over a :class:`~agent_transcript.Session`.

Needs the ``pydantic-ai`` extra: ``pip install "agent-transcript[pydantic-ai]"``.
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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    import pydantic
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationEntry,
        ConversationRecord,
        ConversationStore,
    )
    from pydantic_ai.messages import (
        ImageUrl,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agent_transcript.integrations.pydantic_ai needs pydantic-ai (Python >= 3.11): "
        'pip install "agent-transcript[pydantic-ai]"'
    ) from e

from agent_transcript import Message, Session, SessionLocked

from ._aio import write_off_loop

__all__ = [
    "TranscriptConversationStore",
    "load_messages",
    "append_messages",
    "message_to_chat",
    "EXTRA_KEY",
    "RECORD_KEY",
]

#: The message line's extra that carries a pydantic-ai message (on the first
#: line of those that stand for it) or points at it (on the others).
EXTRA_KEY = "pydantic-ai"
#: The run-context fact holding the conversation's record (``None``: deleted).
RECORD_KEY = "pydantic-ai.record"

_RECORDS: pydantic.TypeAdapter[ConversationRecord] = pydantic.TypeAdapter(ConversationRecord)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_LOCKED_RETRY_SECONDS = 5.0


def _dump(message: ModelMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    return dumped


def _load(data: Any) -> ModelMessage:
    message: ModelMessage = ModelMessagesTypeAdapter.validate_python([data])[0]
    return message


# -- projection: ModelMessage -> chat messages -------------------------------


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    parts: list[Any] = []
    for item in content if isinstance(content, Sequence) else (content,):
        if isinstance(item, str):
            parts.append({"type": "text", "text": item})
        elif isinstance(item, ImageUrl):
            parts.append({"type": "image_url", "image_url": {"url": item.url}})
        else:
            kind = getattr(item, "kind", type(item).__name__)
            parts.append({"type": "text", "text": f"[{kind}]"})
    return parts


def message_to_chat(message: ModelMessage) -> tuple[list[Message], dict[str, Any]]:
    """The OpenAI chat messages that stand for one pydantic-ai message, and the
    extras of the first of them (``thinking``: a response's thinking text)."""
    extra: dict[str, Any] = {}
    if isinstance(message, ModelResponse):
        calls = [{"id": p.tool_call_id, "type": "function",
                  "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                 for p in message.parts if isinstance(p, ToolCallPart)]
        thinking = "\n\n".join(p.content for p in message.parts if isinstance(p, ThinkingPart) and p.content)
        if thinking:
            extra["thinking"] = thinking
        return [Message.assistant(message.text, calls or None)], extra
    out: list[Message] = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            out.append(Message.system(part.content))
        elif isinstance(part, UserPromptPart):
            out.append(Message.user(_user_content(part.content)))
        elif isinstance(part, ToolReturnPart):
            out.append(Message.tool(part.tool_call_id, part.model_response_str()))
        elif isinstance(part, RetryPromptPart):
            text = part.model_response()
            out.append(Message.tool(part.tool_call_id, text) if part.tool_name else Message.user(text))
    if not out:
        out.append(Message(role="user", content=None, name="pydantic-ai:request"))
    return out, extra


def _chat_to_message(message: Message, tool_names: Mapping[str, str]) -> ModelMessage:
    """A pydantic-ai message for a chat message no pydantic-ai message stands behind."""
    content = message.content
    text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
    if message.role == "assistant":
        parts: list[Any] = [TextPart(text)] if text else []
        for call in message.tool_calls or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                parts.append(ToolCallPart(str(function.get("name")), function.get("arguments"),
                                          tool_call_id=str(call.get("id"))))
        return ModelResponse(parts=parts)
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        return ModelRequest(parts=[ToolReturnPart(tool_names.get(call_id, message.name or "tool"), text,
                                                  tool_call_id=call_id)])
    if message.role == "system":
        return ModelRequest(parts=[SystemPromptPart(text)])
    return ModelRequest(parts=[UserPromptPart(text)])


# -- lines of one transcript -------------------------------------------------


def _write_entry(session: Session, entry: ConversationEntry) -> str:
    """Append the message lines of one entry; returns the id of the last."""
    chat, extra = message_to_chat(entry.message)
    first = {EXTRA_KEY: {"entry": entry.id, "parent": entry.parent_id, "message": _dump(entry.message)}, **extra}
    line_id = session.append_message(chat[0], first)
    for k, m in enumerate(chat[1:], 1):
        line_id = session.append_message(m, {EXTRA_KEY: {"entry": entry.id, "part": k}})
    return line_id


def _own(extra: Mapping[str, Any]) -> dict[str, Any] | None:
    own = extra.get(EXTRA_KEY)
    return own if isinstance(own, dict) and isinstance(own.get("entry"), str) else None


def _live_groups(session: Session) -> list[tuple[str | None, str, list[Any]]]:
    """The live lines grouped as entries: ``(entry id or None for a foreign
    line, id of the group's last line, its entries)``."""
    groups: list[tuple[str | None, str, list[Any]]] = []
    for e in session.entries:
        own = _own(e.extra)
        if own is not None and "message" not in own and groups and groups[-1][0] == own["entry"]:
            groups[-1] = (own["entry"], e.id, [*groups[-1][2], e])
        else:
            groups.append((own["entry"] if own is not None and "message" in own else None, e.id, [e]))
    return groups


def load_messages(session: Session) -> list[ModelMessage]:
    """The transcript's live history as pydantic-ai messages, for ``message_history=``.

    Messages written by :func:`append_messages` or the store come back exactly
    as they were; chat messages written by anything else are converted.
    """
    out: list[ModelMessage] = []
    tool_names: dict[str, str] = {}
    for entry_id, _, lines in _live_groups(session):
        own = _own(lines[0].extra)
        if entry_id is not None and own is not None and not any(e.elided for e in lines):
            out.append(_load(own["message"]))
            continue
        for e in lines:
            for call in e.message.tool_calls or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    tool_names[str(call.get("id"))] = str(function.get("name"))
            out.append(_chat_to_message(e.message, tool_names))
    return out


def append_messages(session: Session, messages: Iterable[ModelMessage]) -> list[str]:
    """Append a run's new messages (``result.new_messages()``) after the live
    history; returns the entry ids given to them."""
    groups = _live_groups(session)
    parent = groups[-1][0] if groups else None
    ids: list[str] = []
    for message in messages:
        entry = ConversationEntry(parent_id=parent, message=message)
        _write_entry(session, entry)
        ids.append(entry.id)
        parent = entry.id
    return ids


# -- the store -----------------------------------------------------------------


@dataclasses.dataclass
class _FileState:
    stamp: tuple[int, int, int]
    record: dict[str, Any] | None
    entries: dict[str, tuple[str | None, Any]]  # entry id -> (parent id, message JSON)


def _scan(envelopes: Iterable[Any]) -> tuple[dict[str, Any] | None, dict[str, tuple[str | None, Any]]]:
    record: dict[str, Any] | None = None
    entries: dict[str, tuple[str | None, Any]] = {}
    for env in envelopes:
        payload = env.payload
        if not isinstance(payload, dict):
            continue
        if env.type == "message":
            own = payload.get(EXTRA_KEY)
            if isinstance(own, dict) and isinstance(own.get("entry"), str) and "message" in own:
                parent = own.get("parent")
                entries[own["entry"]] = (parent if isinstance(parent, str) else None, own["message"])
        elif env.type == "run-context":
            for fact in payload.get("facts") or ():
                if isinstance(fact, list) and len(fact) == 2 and fact[0] == RECORD_KEY:
                    record = fact[1] if isinstance(fact[1], dict) else None
    return record, entries


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
        """The transcript that holds ``conversation_id``."""
        if _SAFE_NAME.fullmatch(conversation_id):
            name = conversation_id
        else:
            name = "c-" + hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.folder / f"{name}.jsonl"

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
        record, entries = _scan(peek.envelopes)
        state = _FileState(stamp, record, entries)
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
            if state is not None and entry_id in state.entries:
                parent, data = state.entries[entry_id]
                return path, ConversationEntry(id=entry_id, parent_id=parent, message=_load(data))
        return None

    def _record_of(self, conversation_id: str) -> ConversationRecord | None:
        state = self._state(self.transcript_path(conversation_id))
        if state is None or state.record is None:
            return None
        record = _RECORDS.validate_python(state.record)
        return record if record.conversation_id == conversation_id else None

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await asyncio.to_thread(self._record_of, conversation_id)

    def _records_in(self, scope: str | None, limit: int | None) -> list[ConversationRecord]:
        records = []
        for path in self._paths():
            state = self._state(path)
            if state is not None and state.record is not None:
                record = _RECORDS.validate_python(state.record)
                if scope is None or record.scope == scope:
                    records.append(record)
        records.sort(key=lambda r: r.updated_at, reverse=True)
        return records[:limit]

    async def read_records(self, *, scope: str | None = None,
                           limit: int | None = None) -> Sequence[ConversationRecord]:
        return await asyncio.to_thread(self._records_in, scope, limit)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
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

    def _write(self, record: ConversationRecord, new_entries: Sequence[ConversationEntry],
                      expected_revision: str | None) -> None:
        cid = record.conversation_id
        if expected_revision is not None and not self.transcript_path(cid).exists():
            raise ConversationConflict(cid)
        with self._open(cid) as session:
            current = self._current(session)
            if (current.get("revision") if current is not None else None) != expected_revision:
                raise ConversationConflict(cid)
            own = {e.id: e for e in new_entries}
            groups = _live_groups(session)
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
                _write_entry(session, entry)
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
        await write_off_loop(functools.partial(self._write, record, list(new_entries), expected_revision))

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

