"""Strands Agents' ``SessionRepository`` over a folder of transcripts.

Switch an agent's session store with one line::

    session_manager = RepositorySessionManager(session_id="chat-1",
                                               session_repository=TranscriptSessionRepository("sessions/"))
    # was: FileSessionManager(session_id="chat-1", storage_dir="sessions/")
    agent = Agent(model=model, tools=[weather], session_manager=session_manager)

Each session is one transcript in the folder, ``<session id>.jsonl``. Each
Strands message is kept whole (its ``SessionMessage.to_dict()``) in the
``strands`` extra of the first line that stands for it, and comes back from
there exactly as Strands' ``FileSessionManager`` hands it back; the lines
themselves are OpenAI chat messages for everything else that reads the file:
``toolUse`` blocks are an assistant line's ``tool_calls``, each ``toolResult``
is a ``tool`` line. Agent records (state, conversation manager state, Strands'
internal state) and multi-agent states are run-context facts; ``update_message``
(Strands' redaction) is an elision of the message's lines plus a fact that
holds the updated message, in one write: earlier bytes are never rewritten.

Needs the ``strands`` extra: ``pip install "agent-transcript[strands]"``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

try:
    from strands.session.session_repository import SessionRepository
    from strands.types.exceptions import SessionException
    from strands.types.session import Session as StrandsSession
    from strands.types.session import SessionAgent, SessionMessage, decode_bytes_values, encode_bytes_values
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'agent_transcript.integrations.strands needs Strands Agents: pip install "agent-transcript[strands]"'
    ) from e

from agent_transcript import Message, Session

from ._names import OpenTranscripts, opened_when_free
from ._strands_lines import block_text, message_from_line, message_lines, result_block

if TYPE_CHECKING:
    from strands.multiagent.base import MultiAgentBase

__all__ = ["TranscriptSessionRepository", "EXTRA_KEY", "AGENT_FACT", "MULTI_AGENT_FACT", "UPDATE_FACT"]

#: The key of the session-meta payload that holds the Strands session record, and
#: the message line's extra that holds ``{"agent", "message": SessionMessage.to_dict()}``
#: (and ``"lines"``, when it is more than one) on the first line of those that stand
#: for one Strands message, ``{"part": k}`` on the others.
EXTRA_KEY = "strands"
#: The run-context fact that holds an agent's record (``SessionAgent.to_dict()``).
AGENT_FACT = "strands-agent"
#: The run-context fact that holds ``{"id", "state"}`` of a multi-agent.
MULTI_AGENT_FACT = "strands-multi-agent"
#: The run-context fact that holds ``{"agent", "message"}``: a message as
#: ``update_message`` left it, which the elision after it stands for.
UPDATE_FACT = "strands-message-update"

# Used as it is for the file name: no separator, no leading dot, no NUL.
_SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
_HEX_ID = re.compile(r"[0-9a-f]{32}")


# The keys SessionMessage.from_dict keeps (it asks inspect.signature for them on every call).
_MESSAGE_FIELDS = frozenset(f.name for f in dataclasses.fields(SessionMessage) if f.init)


def _session_message(data: dict[str, Any]) -> SessionMessage:
    """``SessionMessage.from_dict(data)``, without working out the class's signature each time."""
    return SessionMessage(**decode_bytes_values({k: v for k, v in data.items() if k in _MESSAGE_FIELDS}))


def _strands_json(value: Any) -> Any:
    """What Strands' ``to_dict`` makes of a value JSON has no form for."""
    if isinstance(value, bytes):
        return encode_bytes_values(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _record(record: Any) -> dict[str, Any]:
    """``record.to_dict()`` (a ``SessionMessage``, a ``SessionAgent``) as it reads
    back from JSON: what Strands' file store hands back. In one encoder pass:
    ``to_dict`` copies the whole value twice on the way, in Python."""
    fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    data: dict[str, Any] = json.loads(json.dumps(fields, ensure_ascii=False, default=_strands_json))
    return data


def _normal(value: Any) -> Any:
    """The value as it reads back from JSON (what Strands' file store hands back)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


@dataclass
class _Stored:
    """One Strands message: its ``SessionMessage`` dict as it reads back from
    JSON (never changed once kept: each read builds new containers from it), and its lines' ids."""

    data: dict[str, Any]
    ids: list[str]
    #: Whether it makes tool calls.
    calls: bool = False


@dataclass
class _Transcript:
    """One open transcript and what Strands reads of it."""

    session: Session
    record: dict[str, Any]
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    multi_agents: dict[str, Any] = field(default_factory=dict)
    messages: dict[str, dict[int, _Stored]] = field(default_factory=dict)
    call_agents: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Whether the calls left unanswered are this process's own or were looked at:
    #: set by the first read of an agent's record and by every write.
    resumed: bool = False

    def close(self) -> None:
        self.session.close()

    def read(self) -> None:
        """(Re)build what Strands reads from the session's facts and live lines."""
        self.agents, self.multi_agents, self.messages, self.call_agents = {}, {}, {}, {}
        updates: dict[tuple[str, int], dict[str, Any]] = {}
        entries = self.session.entries
        events = self.session.events
        message_lines = {e.line for e in entries}
        for line in range(2, len(events) + 1):
            if line in message_lines:
                continue  # (a live message's line: no need to decode it again)
            envelope = events[line - 1]
            if envelope.type != "run-context":
                continue
            for key, value in envelope.payload.get("facts", ()):
                if key == AGENT_FACT:
                    self.agents[value["agent_id"]] = value
                elif key == MULTI_AGENT_FACT:
                    self.multi_agents[value["id"]] = value["state"]
                elif key == UPDATE_FACT:
                    updates[(value["agent"], value["message"]["message_id"])] = value["message"]
        self.messages = {agent_id: {} for agent_id in self.agents}
        agent: str | None = None
        bare: tuple[str, dict[str, Any], _Stored] | None = None  # the bare tool answers being grouped
        i = 0
        while i < len(entries):
            e = entries[i]
            own = e.extra.get(EXTRA_KEY)
            if isinstance(own, dict) and isinstance(own.get("message"), dict):
                j = i + 1
                while j < len(entries) and isinstance((entries[j].extra.get(EXTRA_KEY) or {}).get("part"), int):
                    j += 1
                group, agent = entries[i:j], str(own.get("agent"))
                if len(group) == own.get("lines", 1):
                    data = own["message"]
                    if any(g.elided for g in group):  # another program's elision (ours come with an update)
                        data = {**data, "redact_message": {"role": data["message"]["role"],
                                                           "content": [{"text": _stub(e.message)}]}}
                    self._keep(agent, data, [g.id for g in group])
                    bare = None
                    i = j
                    continue
            # A line no whole Strands message stands behind: another program's, an answer to an
            # interrupted call, or a part of a message cut short.
            if e.message.role == "tool" and e.message.tool_call_id is not None:
                owner = self.call_agents.get(e.message.tool_call_id, agent)
                if owner is not None:
                    if bare is not None and bare[0] == owner:
                        bare[1]["message"]["content"].append(result_block(e.message))
                        bare[2].ids.append(e.id)
                    else:
                        bare = (owner, self._keep_line(owner, {"role": "user", "content": [result_block(e.message)]},
                                                       e), self._last(owner))
            else:
                bare = None
                message = message_from_line(e.message)
                if message is not None and agent is not None:
                    self._keep_line(agent, message, e)
            i += 1
        elided = {e.id for e in entries if e.elided}
        for (agent_id, message_id), data in updates.items():
            stored = self.messages.get(agent_id, {}).get(message_id)
            if stored is not None and elided.intersection(stored.ids):
                stored.data = data

    def _last(self, agent: str) -> _Stored:
        stored = self.messages[agent]
        return stored[max(stored)]

    def _keep(self, agent: str, data: dict[str, Any], ids: list[str]) -> None:
        stored = _Stored(data, ids)
        self.messages.setdefault(agent, {})[data["message_id"]] = stored
        for block in data["message"].get("content") or ():
            use = block.get("toolUse") if isinstance(block, dict) else None
            if isinstance(use, dict) and isinstance(use.get("toolUseId"), str):
                self.call_agents[use["toolUseId"]] = agent
                stored.calls = True

    def _keep_line(self, agent: str, message: dict[str, Any], e: Any) -> dict[str, Any]:
        stored = self.messages.get(agent)
        when = self.session.events[e.line - 1].ts.replace("Z", "+00:00")
        if _HEX_ID.fullmatch(e.id):  # a tracking id, as Strands gives each message it appends: the line's own
            message["tracking_id"] = str(uuid.UUID(hex=e.id))
        data = {"message": message, "message_id": max(stored) + 1 if stored else 0, "redact_message": None,
                "created_at": when, "updated_at": when}
        self._keep(agent, data, [e.id])
        return data

    def resumable(self) -> bool:
        """Whether every unanswered call is one of the last message of its agent, and
        no such agent waits for an interrupt's answer."""
        if not any(stored and stored[max(stored)].calls for stored in self.messages.values()):
            return False  # (no need to pair the whole conversation)
        calls = self.session.unanswered_tool_calls()
        if not calls:
            return False
        for call in calls:
            agent = self.call_agents.get(call.call_id)
            if agent is None or call.message_id not in self._last(agent).ids:
                return False
            interrupts = (self.agents.get(agent, {}).get("_internal_state") or {}).get("interrupt_state") or {}
            if interrupts.get("activated"):
                return False
        return True


def _stubs(message: dict[str, Any], count: int) -> list[str]:
    """The stubs of a message's ``count`` lines once it reads as ``message``: each
    line's text, when ``message`` makes as many lines; else its whole text, each."""
    lines, _ = message_lines(message)
    if len(lines) == count:
        return [line.content if isinstance(line.content, str) else "" for line in lines]
    return [block_text(message.get("content")) or ""] * count


def _stub(line: Message) -> str:
    """An elided line's stub."""
    return line.content if isinstance(line.content, str) else ""


class TranscriptSessionRepository(SessionRepository, OpenTranscripts[str, _Transcript]):
    """Strands' ``SessionRepository`` keeping each session in one transcript in
    ``folder`` (created ``0700`` if missing). Use it through Strands'
    ``RepositorySessionManager``.

    Reads hand back what Strands' ``FileSessionManager`` hands back for the
    same calls; a message is one write of whole lines, a torn last line is
    repaired on the next open instead of losing the session, and the file is
    locked against a second writer: a session's transcript is opened (and
    locked) the first time it is read or created, and stays open until
    ``close_session`` or ``close``; another repository that opens it
    meanwhile, in this process or another, waits a few seconds, then gets
    ``SessionLocked``.

    Restoring an agent from a transcript whose last run was killed while its
    tools ran answers those calls (a ``toolResult`` that says the call was
    interrupted and may or may not have run), once, in the file, through
    ``Session.answer_unanswered_tool_calls``, so the agent goes on with a
    conversation every model accepts. Not when the agent waits for an
    interrupt's response, and not when a call other than the agent's last
    message's is unanswered (Strands repairs those in memory itself).

    Args:
        folder: where the transcripts go, ``<session id>.jsonl`` each. A session
            id is letters, digits, ``.``, ``_`` and ``-``, not starting with a dot,
            at most 200 characters; any other is refused with ``ValueError``.
        durability: ``"flush"`` (a write is in the kernel when it returns) or
            ``"fsync"`` (on the disk), as for ``Session``.
    """

    def __init__(self, folder: str | os.PathLike[str], *, durability: Literal["flush", "fsync"] = "flush") -> None:
        if durability not in ("flush", "fsync"):
            raise ValueError(f"durability must be 'flush' or 'fsync', not {durability!r}")
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.durability: Literal["flush", "fsync"] = durability
        self._lock = threading.Lock()
        self._open: dict[str, _Transcript] = {}

    def transcript_path(self, session_id: str) -> Path:
        """The transcript that holds ``session_id``.

        Raises:
            ValueError: the id is not a safe file name (see the class).
        """
        if not isinstance(session_id, str) or not _SAFE_ID.fullmatch(session_id):
            raise ValueError(f"session_id={session_id!r} | a session id is 1 to 200 letters, digits, '.', '_' "
                             "or '-', not starting with '.'")
        return self.folder / f"{session_id}.jsonl"

    # -- life ----------------------------------------------------------------------

    def close_session(self, session_id: str) -> None:
        """Close ``session_id``'s transcript and let go of its lock (it reopens when next used)."""
        with self._lock:
            transcript = self._open.pop(session_id, None)
        if transcript is not None:
            with transcript.lock:
                transcript.session.close()

    def _transcript(self, session_id: str) -> _Transcript | None:
        """The session's open transcript; None when it has none (nothing is created)."""
        path = self.transcript_path(session_id)
        with self._lock:
            transcript = self._open.get(session_id)
            if transcript is not None or not path.exists() or path.stat().st_size == 0:
                return transcript  # (an empty file: a create killed before its first line, taken as new)
            session = opened_when_free(lambda: Session.load(path, durability=self.durability))
            try:
                meta = session.meta.get(EXTRA_KEY) if isinstance(session.meta, dict) else None
                record = meta.get("session") if isinstance(meta, dict) else None
                if not isinstance(record, dict):
                    raise SessionException(f"{path} is a transcript of no Strands session")
                if record.get("session_id") != session_id:
                    raise ValueError(f"session_id={session_id!r} | its file {path} holds session "
                                     f"{record.get('session_id')!r} (this file system folds their names)")
                transcript = _Transcript(session, record)
                transcript.read()
            except BaseException:
                session.close()
                raise
            self._open[session_id] = transcript
            return transcript

    def _existing(self, session_id: str) -> _Transcript:
        """The session's open transcript, to write to: from now on its calls are this process's own."""
        transcript = self._transcript(session_id)
        if transcript is None:
            raise SessionException(f"Session {session_id} does not exist")
        transcript.resumed = True
        return transcript

    # -- sessions --------------------------------------------------------------------

    def create_session(self, session: StrandsSession, **kwargs: Any) -> StrandsSession:
        """Create the session's transcript.

        Raises:
            SessionException: the session exists.
        """
        path = self.transcript_path(session.session_id)
        if self._transcript(session.session_id) is not None:
            raise SessionException(f"Session {session.session_id} already exists")
        record = _normal(session.to_dict())
        with self._lock:
            if session.session_id in self._open:
                raise SessionException(f"Session {session.session_id} already exists")
            try:
                created = Session.create(path, {EXTRA_KEY: {"session": record}}, durability=self.durability)
            except FileExistsError:
                raise SessionException(f"Session {session.session_id} already exists") from None
            self._open[session.session_id] = _Transcript(created, record, resumed=True)
        return session

    def read_session(self, session_id: str, **kwargs: Any) -> StrandsSession | None:
        """The session's record, or None when it has no transcript."""
        transcript = self._transcript(session_id)
        return None if transcript is None else StrandsSession.from_dict(dict(transcript.record))

    # -- agents ------------------------------------------------------------------------

    def _write_agent(self, transcript: _Transcript, data: dict[str, Any]) -> None:
        transcript.session.append_run_context([], [(AGENT_FACT, data)])
        transcript.agents[data["agent_id"]] = data
        transcript.messages.setdefault(data["agent_id"], {})

    def create_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Record a new agent of the session."""
        transcript = self._existing(session_id)
        with transcript.lock:
            self._write_agent(transcript, _record(session_agent))

    def read_agent(self, session_id: str, agent_id: str, **kwargs: Any) -> SessionAgent | None:
        """The agent's latest record, or None.

        The first read of a transcript's agent in this process answers the
        tool calls a killed run left unanswered (see the class).
        """
        transcript = self._transcript(session_id)
        if transcript is None:
            return None
        with transcript.lock:
            if not transcript.resumed:
                transcript.resumed = True
                if transcript.resumable():
                    transcript.session.answer_unanswered_tool_calls()
                    transcript.read()
            data = transcript.agents.get(agent_id)
            return None if data is None else SessionAgent.from_dict(data)

    def update_agent(self, session_id: str, session_agent: SessionAgent, **kwargs: Any) -> None:
        """Record the agent's new state (its ``created_at`` stays the first record's).

        Raises:
            SessionException: the agent does not exist.
        """
        transcript = self._existing(session_id)
        with transcript.lock:
            previous = transcript.agents.get(session_agent.agent_id)
            if previous is None:
                raise SessionException(f"Agent {session_agent.agent_id} in session {session_id} does not exist")
            session_agent.created_at = previous["created_at"]
            self._write_agent(transcript, _record(session_agent))

    # -- messages ----------------------------------------------------------------------

    def create_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Append the message's lines, in one write."""
        if not isinstance(session_message.message_id, int):
            raise ValueError(f"message_id=<{session_message.message_id}> | message id must be an integer")
        transcript = self._existing(session_id)
        data = _record(session_message)
        lines, extra = message_lines(data["message"])
        own: dict[str, Any] = {"agent": agent_id, "message": data}
        if len(lines) > 1:
            own["lines"] = len(lines)
        rows: list[tuple[Message, dict[str, Any] | None]] = [(lines[0], {**extra, EXTRA_KEY: own})]
        rows.extend((m, {EXTRA_KEY: {"part": k}}) for k, m in enumerate(lines[1:], 1))
        with transcript.lock:
            ids = transcript.session.append_messages(rows)
            transcript._keep(agent_id, data, ids)

    def _stored(self, session_id: str, agent_id: str, message_id: int) -> tuple[_Transcript, _Stored] | None:
        if not isinstance(message_id, int):
            raise ValueError(f"message_id=<{message_id}> | message id must be an integer")
        transcript = self._transcript(session_id)
        if transcript is None:
            return None
        stored = transcript.messages.get(agent_id, {}).get(message_id)
        return None if stored is None else (transcript, stored)

    def read_message(self, session_id: str, agent_id: str, message_id: int, **kwargs: Any) -> SessionMessage | None:
        """The message as it was last created or updated, or None."""
        found = self._stored(session_id, agent_id, message_id)
        return None if found is None else _session_message(found[1].data)

    def update_message(self, session_id: str, agent_id: str, session_message: SessionMessage, **kwargs: Any) -> None:
        """Record the updated message (Strands' redaction) as an elision of its
        lines, never a rewrite: the updated message (its ``created_at`` the
        first's) goes in a fact, and an elision says which lines it stands for,
        with the redacted text as their stubs; both in one write.

        Raises:
            SessionException: the message does not exist.
        """
        found = self._stored(session_id, agent_id, session_message.message_id)
        if found is None:
            raise SessionException(f"Message {session_message.message_id} does not exist")
        transcript, stored = found
        transcript.resumed = True
        with transcript.lock:
            session_message.created_at = stored.data["created_at"]
            data = _record(session_message)
            stubs = _stubs(data["redact_message"] or data["message"], len(stored.ids))
            live = set(transcript.session.message_ids)
            transcript.session.append_events([
                ("run-context", {"facts": [[UPDATE_FACT, {"agent": agent_id, "message": data}]], "sections": []}),
                ("elision", {"items": [{"id": i, "stub": stub} for i, stub in zip(stored.ids, stubs) if i in live]}),
            ])
            stored.data = data

    def list_messages(self, session_id: str, agent_id: str, limit: int | None = None, offset: int = 0,
                      **kwargs: Any) -> list[SessionMessage]:
        """The agent's messages in ``message_id`` order, from ``offset``, at most ``limit``.

        Raises:
            SessionException: the session or the agent does not exist.
        """
        transcript = self._transcript(session_id)
        stored = None if transcript is None else transcript.messages.get(agent_id)
        if stored is None:
            raise SessionException(f"Messages directory missing from agent: {agent_id} in session {session_id}")
        with transcript.lock:  # type: ignore[union-attr]
            keys = sorted(stored)
            keys = keys[offset:offset + limit] if limit is not None else keys[offset:]
            found = [stored[k].data for k in keys]
        return [_session_message(d) for d in found]

    # -- multi-agents ------------------------------------------------------------------

    def _write_multi_agent(self, transcript: _Transcript, multi_agent: MultiAgentBase) -> None:
        state = _normal(multi_agent.serialize_state())
        transcript.session.append_run_context([], [(MULTI_AGENT_FACT, {"id": multi_agent.id, "state": state})])
        transcript.multi_agents[multi_agent.id] = state

    def create_multi_agent(self, session_id: str, multi_agent: MultiAgentBase, **kwargs: Any) -> None:
        """Record a multi-agent's state in the session."""
        transcript = self._existing(session_id)
        with transcript.lock:
            self._write_multi_agent(transcript, multi_agent)

    def read_multi_agent(self, session_id: str, multi_agent_id: str, **kwargs: Any) -> dict[str, Any] | None:
        """The multi-agent's latest state, or None."""
        transcript = self._transcript(session_id)
        state = None if transcript is None else transcript.multi_agents.get(multi_agent_id)
        return None if state is None else _normal(state)

    def update_multi_agent(self, session_id: str, multi_agent: MultiAgentBase, **kwargs: Any) -> None:
        """Record the multi-agent's new state.

        Raises:
            SessionException: it has no state in the session yet.
        """
        transcript = self._existing(session_id)
        with transcript.lock:
            if multi_agent.id not in transcript.multi_agents:
                raise SessionException(f"MultiAgent state {multi_agent.id} in session {session_id} does not exist")
            self._write_multi_agent(transcript, multi_agent)
