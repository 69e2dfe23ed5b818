"""Google ADK's ``BaseSessionService`` over a folder of transcripts.

Switch a runner's session store with one line::

    session_service = TranscriptSessionService("sessions/")   # was: InMemorySessionService()
    runner = Runner(app_name="weather", agent=agent, session_service=session_service)

Each session is one transcript, ``<folder>/<app>/<user>/<session>.jsonl``.
Every ADK event is kept whole (its JSON, as ADK's ``DatabaseSessionService``
stores it) in the ``google-adk`` extra of the first line that stands for it,
and comes back from there exactly; the lines themselves are chat messages for
everything else that reads the file: the model's text is an assistant message,
its function calls that message's ``tool_calls``, each function response a
``tool`` message, the user's content a user message. An event with no content
(a state change, a rewind, a compaction) is a run-context line. ADK's rewinds
and compactions are also written as the transcript's own rewind and compaction
records, so the file's live conversation is the one ADK sends the model.

App- and user-scoped state (``app:`` and ``user:`` keys) is shared by sessions
as ADK defines it, kept in ``<app>/~-app-state.jsonl`` and
``<app>/<user>/~-user-state.jsonl``; ``temp:`` state is never written.

A run killed while a tool ran leaves the model's function call without a
response. The first time a process opens such a session (``get_session``, which
ADK's ``Runner`` calls before each run), each such call is answered, once, in
the file, by a function response that says it was interrupted and may or may
not have run (``Session.answer_unanswered_tool_calls``), so the next run sends
the model a conversation it accepts and carries on.

Needs the ``google-adk`` extra: ``pip install "agent-transcript[google-adk]"``.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

try:
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.platform import time as platform_time
    from google.adk.platform import uuid as platform_uuid
    from google.adk.sessions import _session_util
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session as AdkSession
    from google.adk.sessions.state import State
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agent_transcript.integrations.google_adk needs Google ADK (Python >= 3.11): "
        'pip install "agent-transcript[google-adk]"'
    ) from e

from agent_transcript import Envelope, Message, Session

from ._aio import write_off_loop
from ._names import OpenTranscripts, opened_when_free, transcript_name

__all__ = ["TranscriptSessionService", "EXTRA_KEY", "EVENT_FACT", "event_to_messages"]

#: The message line's extra that holds ``{"event": <the event's JSON>}`` on the
#: first line of those that stand for one event, ``{"part": k}`` on the others.
EXTRA_KEY = "google-adk"

#: The run-context fact that holds the JSON of an event with no content.
EVENT_FACT = "google-adk:event"

_APP_STATE = "~-app-state.jsonl"
_USER_STATE = "~-user-state.jsonl"


# -- projection: ADK event -> chat messages ------------------------------------------


def _event_json(event: Event) -> dict[str, Any]:
    """The event as ADK's ``DatabaseSessionService`` stores it."""
    data: dict[str, Any] = event.model_dump(exclude_none=True, mode="json")
    return data


def _part_text(part: Mapping[str, Any]) -> str:
    """What a part that is neither text nor a function call or response shows."""
    for kind in ("inline_data", "file_data"):
        blob = part.get(kind)
        if isinstance(blob, Mapping):
            return f"[{kind}: {blob.get('mime_type') or blob.get('file_uri') or ''}]"
    others = sorted(k for k in part if k not in ("thought", "thought_signature"))
    return f"[{others[0]}]" if others else ""


def _texts(parts: Sequence[Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """The parts' text and their thoughts' text (None where there is none)."""
    shown: list[str] = []
    thought: list[str] = []
    for part in parts:
        if "function_call" in part or "function_response" in part:
            continue
        text = part.get("text")
        text = text if isinstance(text, str) else _part_text(part)
        (thought if part.get("thought") else shown).append(text)
    return ("".join(shown) if shown else None), ("".join(thought) if thought else None)


def event_to_messages(data: Mapping[str, Any]) -> list[tuple[Message, dict[str, Any]]]:
    """The chat messages that stand for an event (given as its JSON), each with
    the extras of its line but ``google-adk``; ``[]`` for an event with no content.

    A model event is one assistant message with its text and its function calls
    as ``tool_calls`` (the thoughts in the ``thinking`` extra); any other event
    is one ``tool`` message per function response (its JSON as the content),
    then a user message with its text, if it has any.
    """
    content = data.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list) or not parts:
        return []
    text, thought = _texts(parts)
    extra: dict[str, Any] = {"thinking": thought} if thought is not None else {}
    if content.get("role") == "model":  # type: ignore[union-attr]
        calls = [{"id": fc["id"], "type": "function",
                  "function": {"name": fc.get("name") or "",
                               "arguments": json.dumps(fc.get("args") or {}, ensure_ascii=False)}}
                 for fc in (p.get("function_call") for p in parts)
                 if isinstance(fc, Mapping) and isinstance(fc.get("id"), str)]
        return [(Message.assistant(text, calls or None), extra)]
    rows: list[tuple[Message, dict[str, Any]]] = [
        (Message.tool(fr["id"], json.dumps(fr.get("response"), ensure_ascii=False)), {})
        for fr in (p.get("function_response") for p in parts)
        if isinstance(fr, Mapping) and isinstance(fr.get("id"), str)]
    if text is not None or not rows:
        rows.append((Message.user(text or ""), extra))
    return rows


def _answer_event(tool_messages: list[tuple[Envelope, Message]], calls: Mapping[str, dict[str, Any]]
                  ) -> dict[str, Any]:
    """The function response event for tool messages no event stands behind
    (the answers to calls a killed run left open): one event, as ADK merges the
    responses to one model turn's calls, by the author of the calls."""
    first, _ = tool_messages[0]
    parts = []
    for _, message in tool_messages:
        call_id = message.tool_call_id or ""
        try:
            response = json.loads(message.content) if isinstance(message.content, str) else None
        except ValueError:
            response = None
        if not isinstance(response, dict):
            response = {"result": message.content}
        call = calls.get(call_id, {})
        parts.append({"function_response": {"id": call_id, "name": call.get("name", ""),
                                            "response": response}})
    call = calls.get(tool_messages[0][1].tool_call_id or "", {})
    stamp = datetime.strptime(first.ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return {"id": first.id, "invocation_id": call.get("invocation_id", ""),
            "author": call.get("author", "user"), "timestamp": stamp.timestamp(),
            "content": {"role": "user", "parts": parts}}


# -- one transcript, read back --------------------------------------------------------


@dataclass
class _Replay:
    """What a session's transcript holds, as ADK sees it."""

    events: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    last_update_time: float = 0.0
    #: Each line's id that stands for an event -> that event's index in ``events``.
    index_of_line: dict[str, int] = field(default_factory=dict)
    #: The events' ids (to make an equal re-delivery a no-op, as ADK's services do).
    ids: dict[str, int] = field(default_factory=dict)

    def add(self, data: dict[str, Any], line_ids: Sequence[str]) -> None:
        """Take in one event, kept as ``data``, written as the lines ``line_ids``."""
        k = len(self.events)
        self.events.append(data)
        self.ids.setdefault(str(data.get("id")), k)
        for line_id in line_ids:
            self.index_of_line[line_id] = k
        delta = (data.get("actions") or {}).get("state_delta") or {}
        for key, value in delta.items():
            if not key.startswith((State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX)):
                self.state[key] = value
        if isinstance(data.get("timestamp"), (int, float)):
            self.last_update_time = float(data["timestamp"])


def _replay(meta: Any, envelopes: Sequence[Envelope]) -> _Replay:
    """Every event of a transcript in file order (the answers written for calls
    a killed run left open as function response events), and its session state."""
    own = meta.get(EXTRA_KEY) if isinstance(meta, Mapping) else None
    own = own if isinstance(own, Mapping) else {}
    r = _Replay(state=dict(own.get("state") or {}), last_update_time=float(own.get("create-time") or 0.0))
    calls: dict[str, dict[str, Any]] = {}
    answers: list[tuple[Envelope, Message]] = []

    def flush() -> None:
        if answers:
            r.add(_answer_event(answers, calls), [env.id for env, _ in answers])
            answers.clear()

    for env in envelopes:
        payload = env.payload
        if env.type == "message" and isinstance(payload, Mapping):
            mine = payload.get(EXTRA_KEY)
            if isinstance(mine, Mapping) and isinstance(mine.get("event"), dict):
                flush()
                data = mine["event"]
                for p in (data.get("content") or {}).get("parts") or ():
                    fc = p.get("function_call") if isinstance(p, Mapping) else None
                    if isinstance(fc, Mapping) and isinstance(fc.get("id"), str):
                        calls[fc["id"]] = {"name": fc.get("name") or "", "author": data.get("author", "user"),
                                           "invocation_id": data.get("invocation_id", "")}
                r.add(data, [env.id])
            elif isinstance(mine, Mapping) and "part" in mine:
                if r.events:
                    r.index_of_line[env.id] = len(r.events) - 1
            elif payload.get("role") == "tool":
                answers.append((env, Message.from_dict(dict(payload))))
        elif env.type == "run-context" and isinstance(payload, Mapping):
            for fact in payload.get("facts") or ():
                if isinstance(fact, list) and len(fact) == 2 and fact[0] == EVENT_FACT:
                    flush()
                    r.add(fact[1], [env.id])
    flush()
    return r


def _scoped_state(path: Path) -> dict[str, Any]:
    """The app- or user-scoped state a state file holds (empty when there is none)."""
    state: dict[str, Any] = {}
    if not path.exists():
        return state
    for env in Session.peek(path).envelopes:
        if env.type == "run-context" and isinstance(env.payload, Mapping):
            for fact in env.payload.get("facts") or ():
                if isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str):
                    state[fact[0]] = fact[1]
    return state


# -- the service ----------------------------------------------------------------------


@dataclass
class _Open:
    """One open transcript and what it holds."""

    session: Session
    replay: _Replay
    lock: threading.Lock = field(default_factory=threading.Lock)

    def close(self) -> None:
        self.session.close()


class TranscriptSessionService(BaseSessionService, OpenTranscripts[Path, _Open]):
    """ADK's ``BaseSessionService`` keeping each session in one transcript in
    ``folder`` (created ``0700`` if missing).

    Hands back what ADK's own services hand back (the same events, state and
    order), and keeps what they keep: a session's state deltas, ``app:`` state
    shared by an app's sessions and ``user:`` state by a user's, none of
    ``temp:``. An append is one write of whole lines, a torn last line is
    repaired on the next open, and the file is locked against a second writer.

    A session's transcript is opened (and locked) the first time the service
    reads or appends to it, and stays open until ``close_session`` or
    ``close``; another process that opens it meanwhile waits a few seconds,
    then gets ``SessionLocked``. Opening one answers the function calls a
    killed run left without a response (see the module's docstring) unless one
    of them is a long-running call, whose response the application sends.

    App, user and session ids may be any strings: each is a safe file name,
    distinct from any other id's (see ``transcript_name``).

    Args:
        folder: where the transcripts go.
        durability: ``"flush"`` (an append is in the kernel when it returns) or
            ``"fsync"`` (on the disk), as for ``Session``.
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
        self._state_lock = threading.Lock()

    # -- paths -----------------------------------------------------------------------

    def transcript_path(self, app_name: str, user_id: str, session_id: str) -> Path:
        """The transcript that holds a session."""
        return self._user_folder(app_name, user_id) / f"{transcript_name(_id('session_id', session_id))}.jsonl"

    def _app_folder(self, app_name: str) -> Path:
        return self.folder / transcript_name(_id("app_name", app_name))

    def _user_folder(self, app_name: str, user_id: str) -> Path:
        return self._app_folder(app_name) / transcript_name(_id("user_id", user_id))

    # -- life ------------------------------------------------------------------------

    def close_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Close a session's transcript and let go of its lock (it reopens when next used)."""
        with self._lock:
            opened = self._open.pop(self.transcript_path(app_name, user_id, session_id.strip()), None)
        if opened is not None:
            with opened.lock:
                opened.session.close()

    def _opened(self, path: Path) -> _Open | None:
        """The session's open transcript, opening it if it exists; None if it does not."""
        with self._lock:
            o = self._open.get(path)
            if o is not None:
                return o
            try:
                if path.stat().st_size == 0:
                    return None  # a create killed before its first line: no session (create takes it as new)
            except FileNotFoundError:
                return None
            session = opened_when_free(lambda: Session.load(path, durability=self.durability))
            try:
                replay = _replay(session.meta, session.events)
                if _answer_interrupted(session, replay):
                    replay = _replay(session.meta, session.events)
            except BaseException:
                session.close()
                raise
            o = self._open[path] = _Open(session, replay)
            return o

    # -- state shared by sessions -------------------------------------------------------

    def _write_scoped(self, app_name: str, user_id: str, deltas: Mapping[str, Mapping[str, Any]]) -> None:
        for path, delta in ((self._app_folder(app_name) / _APP_STATE, deltas["app"]),
                            (self._user_folder(app_name, user_id) / _USER_STATE, deltas["user"])):
            if not delta:
                continue
            with self._state_lock:
                with opened_when_free(lambda: Session.open(path, {EXTRA_KEY: {"state-of": path.stem}},
                                                      durability=self.durability)) as s:
                    s.append_run_context([], list(delta.items()))

    def _merged_state(self, app_name: str, user_id: str, state: Mapping[str, Any]) -> dict[str, Any]:
        merged = copy.deepcopy(dict(state))
        for key, value in _scoped_state(self._app_folder(app_name) / _APP_STATE).items():
            merged[State.APP_PREFIX + key] = value
        for key, value in _scoped_state(self._user_folder(app_name, user_id) / _USER_STATE).items():
            merged[State.USER_PREFIX + key] = value
        return merged

    # -- the BaseSessionService methods ----------------------------------------------------

    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> AdkSession:
        """Create a session (its transcript), as ADK's services do.

        Raises:
            AlreadyExistsError: a session with ``session_id`` exists.
        """
        session_id = (_id("session_id", session_id).strip() or None) if session_id is not None else None
        return await write_off_loop(functools.partial(self._create, app_name, user_id, state,
                                                      session_id or platform_uuid.new_uuid()))

    def _create(self, app_name: str, user_id: str, state: dict[str, Any] | None, session_id: str) -> AdkSession:
        path = self.transcript_path(app_name, user_id, session_id)
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = platform_time.get_time()
        meta = {EXTRA_KEY: {"app-name": app_name, "user-id": user_id, "session-id": session_id,
                            "state": deltas["session"], "create-time": now}}
        with self._lock:
            if path in self._open:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.")
            try:
                session = Session.create(path, meta, durability=self.durability)
            except FileExistsError:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
            self._open[path] = _Open(session, _replay(meta, []))
        self._write_scoped(app_name, user_id, deltas)
        return AdkSession(id=session_id, app_name=app_name, user_id=user_id,
                          state=self._merged_state(app_name, user_id, deltas["session"]), last_update_time=now)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> AdkSession | None:
        """The session with its events (filtered by ``config`` as ADK's services
        filter them) and merged state, or None if there is no such session.

        The first time this process opens it, each function call a killed run
        left without a response is answered first (see the module's docstring).
        """
        return await write_off_loop(functools.partial(self._get, app_name, user_id,
                                                      _id("session_id", session_id).strip(), config))

    def _get(self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
             ) -> AdkSession | None:
        o = self._opened(self.transcript_path(app_name, user_id, session_id))
        if o is None:
            return None
        with o.lock:
            events = o.replay.events
            if config is not None and config.num_recent_events is not None:
                events = events[max(0, len(events) - config.num_recent_events):] if config.num_recent_events else []
            if config is not None and config.after_timestamp is not None:
                i = len(events) - 1
                while i >= 0 and events[i]["timestamp"] >= config.after_timestamp:
                    i -= 1
                events = events[i + 1:]
            state, last = dict(o.replay.state), o.replay.last_update_time
            adk_events = [Event.model_validate(d) for d in events]
        return AdkSession(id=session_id, app_name=app_name, user_id=user_id, events=adk_events,
                          state=self._merged_state(app_name, user_id, state), last_update_time=last)

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """The app's sessions (one user's, or every user's), without events,
        oldest update first, as ADK's services list them."""
        return await write_off_loop(functools.partial(self._list, app_name, user_id))

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        folders = ([self._user_folder(app_name, user_id)] if user_id is not None
                   else sorted(p for p in self._app_folder(app_name).glob("*") if p.is_dir()))
        sessions = []
        for path in (p for folder in folders for p in sorted(folder.glob("*.jsonl")) if p.name != _USER_STATE):
            with self._lock:
                o = self._open.get(path)
            if o is not None:
                with o.lock:
                    meta, replay = o.session.meta, _Replay(state=dict(o.replay.state),
                                                           last_update_time=o.replay.last_update_time)
            else:
                peek = Session.peek(path)
                if peek.error is not None:
                    continue
                meta, replay = peek.meta, _replay(peek.meta, peek.envelopes)
            own = meta.get(EXTRA_KEY) if isinstance(meta, Mapping) else None
            if not isinstance(own, Mapping) or own.get("app-name") != app_name:
                continue
            sessions.append(AdkSession(id=own["session-id"], app_name=app_name, user_id=own["user-id"],
                                       state=self._merged_state(app_name, own["user-id"], replay.state),
                                       last_update_time=replay.last_update_time))
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session's transcript (nothing happens if there is none)."""
        await write_off_loop(functools.partial(self._delete, app_name, user_id, _id("session_id", session_id).strip()))

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        path = self.transcript_path(app_name, user_id, session_id)
        self.close_session(app_name=app_name, user_id=user_id, session_id=session_id)
        with self._lock:
            path.unlink(missing_ok=True)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user-scoped state of ``user_id`` in ``app_name``, keys without ``user:``."""
        path = self._user_folder(app_name, user_id) / _USER_STATE
        return await write_off_loop(functools.partial(_scoped_state, path))

    async def append_event(self, session: AdkSession, event: Event) -> Event:
        """Append an event to the session's transcript, then to ``session``, as
        ADK's services do (a partial event is not kept; ``temp:`` state is
        applied to ``session`` only; an equal event appended again is a no-op).

        The write finishes even if the awaiting task is cancelled meanwhile.

        Raises:
            SessionNotFoundError: the session has no transcript.
        """
        if event.partial:
            return event
        path = self.transcript_path(session.app_name, session.user_id, session.id)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        if await write_off_loop(functools.partial(self._append, path, session, event)):
            self._commit_event_to_session(session, event)
            session.last_update_time = event.timestamp
        return event

    def _append(self, path: Path, session: AdkSession, event: Event) -> bool:
        """Write the event; False when an equal one with its id is there already."""
        o = self._opened(path)
        if o is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        data = _event_json(event)
        with o.lock:
            seen = o.replay.ids.get(event.id)
            if seen is not None and o.replay.events[seen] == data:
                return False
            rows = event_to_messages(data)
            if rows:
                first, extra = rows[0]
                ids = o.session.append_messages(
                    [(first, {**extra, EXTRA_KEY: {"event": data}})]
                    + [(m, {**x, EXTRA_KEY: {"part": k}}) for k, (m, x) in enumerate(rows[1:], 1)])
            else:
                ids = [o.session.append_run_context([], [(EVENT_FACT, data)])]
            o.replay.add(data, ids)
            _apply_records(o, event)
        deltas = _session_util.extract_json_safe_state_delta(event.actions.state_delta or {})
        self._write_scoped(session.app_name, session.user_id, deltas)
        return True


# -- helpers --------------------------------------------------------------------------


def _id(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _long_running(replay: _Replay) -> Iterator[str]:
    for data in replay.events:
        yield from data.get("long_running_tool_ids") or ()


def _answer_interrupted(session: Session, replay: _Replay) -> bool:
    """Answer the calls an earlier process left open; whether anything was written.

    Not when one of them is a long-running call: its response is the
    application's to send (a person's approval, a job's result).
    """
    open_calls = {c.call_id for c in session.unanswered_tool_calls()}
    if not open_calls or open_calls & set(_long_running(replay)):
        return False
    return bool(session.answer_unanswered_tool_calls())


def _apply_records(o: _Open, event: Event) -> None:
    """Write ADK's rewind or compaction as the transcript's own, so the file's
    live conversation is what ADK sends the model."""
    actions = event.actions
    if actions.rewind_before_invocation_id:
        _rewind(o, actions.rewind_before_invocation_id)
    if actions.compaction is not None:
        c = actions.compaction
        parts = c.compacted_content.parts or []
        summary = "".join(p.text for p in parts if p.text)
        _compact(o, summary, c.start_timestamp, c.end_timestamp)


def _rewind(o: _Open, invocation_id: str) -> None:
    events = o.replay.events
    first = next((k for k, d in enumerate(events) if d.get("invocation_id") == invocation_id), None)
    if first is None:
        return
    entries = o.session.entries
    kept = [e for e in entries if o.replay.index_of_line.get(e.id, -1) < first]
    if len(kept) < len(entries) and entries[:len(kept)] == kept:
        o.session.append_rewind(kept[-1].id if kept else None)


def _compact(o: _Open, summary: str, start: float, end: float) -> None:
    events, where = o.replay.events, o.replay.index_of_line
    entries = o.session.entries
    covered = {k for k, e in enumerate(entries) if e.id in where
               and start <= events[where[e.id]].get("timestamp", start - 1) <= end}
    if not covered:
        return
    through = max(covered)
    kept = [e for k, e in enumerate(entries[:through]) if not e.message.is_sticky and k not in covered]
    if not kept:
        o.session.append_compaction(summary, entries[through].id, 0, 0)
    else:
        o.session.append_compaction(summary, entries[through].id, 0, 0,
                                    replacement=[*((e.message, e.extra) for e in kept),
                                                 (Message.user(summary), None)])
