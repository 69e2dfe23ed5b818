"""The OpenAI Agents SDK's ``Session`` protocol over one transcript.

Switch an agent's history store with one line::

    session = TranscriptSession("run.jsonl")          # was: SQLiteSession("run", "run.db")
    result = await Runner.run(agent, "hello", session=session)

One SDK item is one message line: the item itself, byte for byte as JSON, in the
line's ``openai-agents`` extra (read back through ``Session.entries``), and a
``agent_transcript.Message`` in OpenAI chat shape for everything else that
reads the file (``function_call`` items are an assistant message's
``tool_calls``, ``function_call_output`` items are ``tool`` messages).
``pop_item`` and ``clear_session`` append a rewind, and the SDK's whole-history
compaction appends one compaction with a replacement: the file never loses a
line. The SDK hands a session a turn's items only when the turn is over, so
``TranscriptRunHooks`` writes the model's output items (the function
calls among them) just before a tool starts, then a ``tool-dispatched`` line,
and a ``tool-settled`` line when it ends: a run killed mid-tool leaves the call
and its pending operation in the file, and when the SDK hands the turn over
the items already written are not written again.
``TranscriptSession.save_run_state`` keeps the SDK's ``RunState`` (an
approval interrupt) in the same file.

Needs the ``openai-agents`` extra: ``pip install "agent-transcript[openai-agents]"``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

try:
    from agents import Agent, ModelResponse, RunHooks, RunState
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
    from agents.tool_context import ToolContext
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agent_transcript.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "agent-transcript[openai-agents]"'
    ) from e

from agent_transcript import Message, Session, SessionClosed, digest

from ._aio import write_off_loop
from ._json import decode_all

__all__ = [
    "TranscriptSession",
    "TranscriptRunHooks",
    "item_to_message",
    "message_to_items",
    "EXTRA_KEY",
    "RUN_STATE_KEY",
]

#: The message line's extra that holds the SDK item, exactly as it was added.
EXTRA_KEY = "openai-agents"
#: The run-context fact that holds a saved ``RunState.to_json()`` (``None`` once cleared).
RUN_STATE_KEY = "openai-agents.run-state"

_TEXT_PARTS = ("input_text", "output_text", "text")


# -- projection: SDK item <-> Message ----------------------------------------


def _chat_part(part: Any) -> Any:
    """One Responses content part as an OpenAI chat content part."""
    if not isinstance(part, Mapping):
        return part
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return {"type": "text", "text": part.get("text")}
    if kind == "refusal":
        return {"type": "text", "text": part.get("refusal")}
    if kind == "input_image":
        image = {"url": part.get("image_url") or part.get("file_id")}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        return {"type": "file",
                "file": {k: part[k] for k in ("file_id", "file_data", "filename", "file_url") if k in part}}
    return dict(part)


def _content(content: Any) -> Any:
    """A Responses message's content as chat content: a string when it is all text."""
    if not isinstance(content, list):
        return content
    parts = [_chat_part(p) for p in content]
    if all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _output(output: Any) -> Any:
    if isinstance(output, (str, list)) or output is None:
        return _content(output)
    return json.dumps(output, ensure_ascii=False)


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def item_to_message(item: Mapping[str, Any]) -> Message:
    """The OpenAI chat message that stands for one SDK item in the transcript.

    Never sticky: a compaction replaces every item the SDK asked it to.
    """
    kind = item.get("type")
    role = item.get("role")
    call_id = item.get("call_id")
    if kind == "function_call":
        return Message.assistant(tool_calls=[_tool_call(call_id, item.get("name"), item.get("arguments"))])
    if kind == "function_call_output":
        return Message.tool(str(call_id), _output(item.get("output")))
    if isinstance(role, str) and kind in (None, "message"):
        return Message(role="system" if role == "developer" else role, content=_content(item.get("content")))
    if kind == "reasoning":
        summary = [s.get("text") for s in item.get("summary") or () if isinstance(s, Mapping)]
        text = "\n".join(t for t in summary if isinstance(t, str))
        return Message(role="assistant", content=text or None, name="openai-agents:reasoning")
    if isinstance(kind, str) and isinstance(call_id, str):
        if kind.endswith("_call_output"):
            return Message.tool(call_id, _output(item.get("output")))
        if kind.endswith("_call"):
            arguments = next((item[k] for k in ("arguments", "input", "action") if k in item), None)
            return Message.assistant(tool_calls=[_tool_call(call_id, item.get("name") or kind, arguments)])
    return Message(role="assistant", content=None, name=f"openai-agents:{kind or 'item'}")


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content
                       if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return json.dumps(content, ensure_ascii=False)


def message_to_items(message: Message) -> list[dict[str, Any]]:
    """SDK items for a message that no SDK item stands behind (written by another
    program, or a compaction's summary): text messages, ``function_call`` items
    for an assistant's ``tool_calls``, a ``function_call_output`` for a tool message."""
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "",
                 "output": _text(message.content)}]
    if message.role == "assistant":
        items: list[dict[str, Any]] = []
        if message.content not in (None, "", []):
            items.append({"role": "assistant", "content": _text(message.content)})
        for call in message.tool_calls or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                continue
            arguments = function.get("arguments")
            items.append({"type": "function_call", "call_id": str(call.get("id")), "name": str(function.get("name")),
                          "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)})
        return items or [{"role": "assistant", "content": ""}]
    role = message.role if message.role in ("user", "system", "developer") else "user"
    return [{"role": role, "content": _text(message.content)}]


def _elided_item(item: Mapping[str, Any], stub: Any) -> dict[str, Any]:
    """The item with its content replaced by an elision's stub, as the model is to see it."""
    out = dict(item)
    if "output" in out:
        out["output"] = stub
    elif "content" in out:
        if isinstance(out["content"], list):
            kind = "output_text" if out.get("role") == "assistant" else "input_text"
            part: dict[str, Any] = {"type": kind, "text": _text(stub)}
            if kind == "output_text":
                part["annotations"] = []
            out["content"] = [part]
        else:
            out["content"] = stub
    return out


def _identity(item: Mapping[str, Any]) -> str:
    """What makes two items the same item: a call (or a call's output) by its type
    and call id; anything else by its content, its ``id`` and ``status`` aside
    (the SDK may drop a reasoning item's id, or a ``None`` status, on its way)."""
    kind, call_id = item.get("type"), item.get("call_id")
    if isinstance(kind, str) and isinstance(call_id, str):
        return json.dumps([kind, call_id], ensure_ascii=False)
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "status")},
                      sort_keys=True, ensure_ascii=False, default=str)



# -- the session --------------------------------------------------------------


class TranscriptSession:
    """The OpenAI Agents SDK's ``Session`` protocol over one transcript file.

    Behaves as the SDK's ``SQLiteSession`` does (limits, ``limit=0``, the settings'
    limit, ``pop_item`` on an empty session), but keeps everything: a pop or a
    clear is a rewind line, a compaction one compaction line with its
    replacement. Every write runs in a worker thread and finishes even if the
    awaiting task is cancelled. The file is locked for the session's life: close
    it (or use it as a context manager) to let go.

    Args:
        path: the transcript; created (with its parents) if it does not exist.
        session_id: the SDK's session id; default: the one this file was created
            with, else the file's stem.
        meta: the session-meta of a new file (ignored when the file exists).
        session_settings: the SDK's ``SessionSettings`` (or a dict of them);
            its ``limit`` is ``get_items``'s default.
        durability: ``"flush"`` (every add is in the kernel when it returns) or
            ``"fsync"`` (on the disk), as for ``Session``.

    Raises:
        SessionLocked: another session holds the file.
        CorruptTranscript: the file is damaged beyond a torn last line.
    """

    session_id: str
    session_settings: SessionSettings | None = None

    def __init__(self, path: str | os.PathLike[str], *, session_id: str | None = None,
                 meta: dict[str, Any] | None = None,
                 session_settings: SessionSettings | dict[str, Any] | None = None,
                 durability: Literal["flush", "fsync"] = "flush") -> None:
        p = Path(path)
        if meta is not None and not isinstance(meta, dict):
            raise TypeError(f"meta must be a dict or None, not {type(meta).__name__}")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str or None, not {type(session_id).__name__}")
        self.session_settings = (SessionSettings() if session_settings is None
                                 else coerce_session_settings(session_settings))
        new_meta = dict(meta or {})
        new_meta.setdefault(EXTRA_KEY, {"session-id": session_id if session_id is not None else p.stem})
        self._lock = threading.Lock()
        self._closed = False
        self._texts: list[str] = []  # json.dumps of each live item, in order
        self._ids: list[str] = []  # the id of the line each item came from
        # Identities of the items written before the SDK handed them over (see
        # write_model_output), each skipped once when it does.
        self._early: list[str] = []
        self._transcript = Session.open(p, new_meta, durability=durability)
        try:
            if session_id is None:
                stored = self._transcript.meta
                own = stored.get(EXTRA_KEY) if isinstance(stored, dict) else None
                sid = own.get("session-id") if isinstance(own, dict) else None
                session_id = sid if isinstance(sid, str) else p.stem
            self.session_id = session_id
            self._reload()
        except BaseException:
            self._transcript.close()  # a session that failed to start holds no lock
            raise

    # -- life ----------------------------------------------------------------

    @property
    def transcript(self) -> Session:
        """The transcript underneath: read it, or ask it for pending tool operations."""
        return self._transcript

    @property
    def path(self) -> Path:
        """The transcript's path."""
        return self._transcript.path

    def close(self) -> None:
        """Close the transcript and let go of its lock. Idempotent; reading goes on working."""
        self._closed = True
        self._transcript.close()

    def __enter__(self) -> TranscriptSession:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> TranscriptSession:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TranscriptSession {self.session_id!r} {str(self.path)!r}, {len(self._texts)} items>"

    def _reload(self) -> None:
        """Rebuild the item view from the transcript's live entries."""
        texts: list[str] = []
        ids: list[str] = []
        for entry in self._transcript.entries:
            raw = entry.extra.get(EXTRA_KEY)
            if isinstance(raw, dict):
                items = [_elided_item(raw, entry.message.content) if entry.elided else raw]
            else:
                items = message_to_items(entry.message)
            for item in items:
                texts.append(json.dumps(item, ensure_ascii=False))
                ids.append(entry.id)
        self._texts, self._ids = texts, ids
        self._early = []

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(f"{self.path}: the session is closed")

    # -- the Session protocol ----------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The history, oldest first; with a limit only the newest ``limit`` items.

        ``limit=None`` takes the settings' limit; ``0`` returns ``[]``; a negative
        limit returns everything (as ``SQLiteSession`` does).
        """
        limit = resolve_session_limit(limit, self.session_settings)
        with self._lock:
            if limit is None or limit < 0:
                texts = list(self._texts)
            elif limit == 0:
                return []
            else:
                texts = self._texts[-limit:]
        return decode_all(texts)

    async def add_items(self, items: list[Any]) -> None:
        """Append each item as one message line, in order."""
        self._check_open()
        if not items:
            return
        batch = list(items)
        await write_off_loop(functools.partial(self._add, batch))

    def _add(self, items: list[Any]) -> None:
        with self._lock:
            self._add_locked(items)

    def _add_locked(self, items: list[Any]) -> None:
        for item in items:
            if not isinstance(item, Mapping):
                raise TypeError(f"an item is a dict, not {type(item).__name__}")
            if self._early:
                key = _identity(item)
                if key in self._early:
                    self._early.remove(key)  # written before the tool ran: the same item, once
                    continue
            text = json.dumps(item, ensure_ascii=False)
            line_id = self._transcript.append_message(item_to_message(item), {EXTRA_KEY: dict(item)})
            self._texts.append(text)
            self._ids.append(line_id)

    async def write_model_output(self, items: list[Any]) -> None:
        """Write a model response's items now, before the SDK hands the turn over.

        ``TranscriptRunHooks`` calls this just before a tool starts, so a
        process killed while the tool runs leaves the function call that made it
        in the file (the SDK adds a turn's items only when the turn is over).
        When the SDK does add them, each item written here is skipped once. An
        item whose call is already in the history is not written again.
        """
        self._check_open()
        batch = [dict(item) for item in items]
        if batch:
            await write_off_loop(functools.partial(self._write_early, batch))

    def _write_early(self, items: list[dict[str, Any]]) -> None:
        with self._lock:
            fresh: list[dict[str, Any]] = []
            keys: list[str] = []
            for item in items:
                key = _identity(item)
                if key in self._early or key in keys or self._holds_call(item):
                    continue
                fresh.append(item)
                keys.append(key)
            if not fresh:
                return
            ids = self._transcript.append_messages(
                [(item_to_message(item), {EXTRA_KEY: item}) for item in fresh])
            self._texts.extend(json.dumps(item, ensure_ascii=False) for item in fresh)
            self._ids.extend(ids)
            self._early.extend(keys)

    def _forget_early(self) -> None:
        """The SDK has handed over every turn before this one: an item written early
        and never handed over (its run failed) is not one a later turn may skip."""
        with self._lock:
            self._early = []

    def _holds_call(self, item: Mapping[str, Any]) -> bool:
        """Whether the history already holds this call (a resumed turn's call, say)."""
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            return False
        needle = json.dumps(call_id, ensure_ascii=False)
        key = _identity(item)
        return any(needle in text and _identity(json.loads(text)) == key for text in self._texts)

    async def pop_item(self) -> Any | None:
        """Take the newest item off the history (a rewind line) and return it; None when empty."""
        self._check_open()
        return await write_off_loop(self._pop)

    def _pop(self) -> Any | None:
        with self._lock:
            if not self._texts:
                return None
            last = self._ids[-1]
            k = 1
            while k < len(self._ids) and self._ids[-k - 1] == last:
                k += 1  # one foreign line stood for several items: it goes, the others come back
            through = self._ids[-k - 1] if len(self._ids) > k else None
            popped = self._texts[-1]
            kept = self._texts[-k:-1]
            self._transcript.append_rewind(through)
            del self._texts[-k:]
            del self._ids[-k:]
            if kept:
                self._add_locked([json.loads(t) for t in kept])
        return json.loads(popped)

    async def clear_session(self) -> None:
        """Empty the history (a rewind line; the file keeps every earlier line)."""
        self._check_open()
        await write_off_loop(self._clear)

    def _clear(self) -> None:
        with self._lock:
            if self._texts:
                self._transcript.append_rewind(None)
            self._texts, self._ids = [], []

    async def _atomic_replace_items(self, items: list[Any]) -> bool:
        """Replace the whole history by ``items`` with one compaction line.

        Called by the SDK's ``OpenAIResponsesCompactionSession``; one line, so a
        crash leaves the old history or the new one, never neither.
        """
        self._check_open()
        batch = list(items)
        await write_off_loop(functools.partial(self._replace, batch))
        return True

    def _replace(self, items: list[Any]) -> None:
        with self._lock:
            if not self._ids:
                self._add_locked(items)  # nothing to replace: the items are simply the history
            else:
                replacement: list[tuple[Message, dict[str, Any] | None]] = []
                for item in items:
                    if not isinstance(item, Mapping):
                        raise TypeError(f"an item is a dict, not {type(item).__name__}")
                    replacement.append((item_to_message(item), {EXTRA_KEY: dict(item)}))
                summary = (f"the OpenAI Agents SDK compacted {len(self._texts)} items "
                           f"into {len(items)}")
                # Token counts are the SDK's and not told to the session: 0 says "not measured".
                self._transcript.append_compaction(summary, self._ids[-1], 0, 0, replacement=replacement)
                self._reload()

    # -- RunState in the same file ---------------------------------------------

    async def save_run_state(self, state: RunState[Any, Any]) -> str:
        """Keep ``state.to_json()`` in the transcript (a run-context line) and return
        that line's id; ``load_run_state`` reads the newest one back."""
        self._check_open()
        value = state.to_json()
        return await write_off_loop(
            functools.partial(self._transcript.append_run_context, [], [(RUN_STATE_KEY, value)]))

    async def clear_run_state(self) -> str:
        """Record that no run waits to be resumed: ``load_run_state`` returns None."""
        self._check_open()
        return await write_off_loop(
            functools.partial(self._transcript.append_run_context, [], [(RUN_STATE_KEY, None)]))

    async def load_run_state(self, agent: Agent[Any], **from_json: Any) -> RunState[Any, Agent[Any]] | None:
        """The newest saved ``RunState``, rebuilt for ``agent`` (keywords go to
        ``RunState.from_json``), or None when none was saved or it was cleared."""
        value = await asyncio.to_thread(self.saved_run_state)
        if value is None:
            return None
        return await RunState.from_json(agent, value, **from_json)

    def saved_run_state(self) -> dict[str, Any] | None:
        """The newest saved ``RunState.to_json()`` as it is in the file, or None."""
        events = self._transcript.events
        for i in range(len(events) - 1, -1, -1):
            envelope = events[i]
            if envelope.type != "run-context" or not isinstance(envelope.payload, dict):
                continue
            for fact in reversed(envelope.payload.get("facts") or ()):
                if isinstance(fact, list) and len(fact) == 2 and fact[0] == RUN_STATE_KEY:
                    return fact[1] if isinstance(fact[1], dict) else None
        return None


# -- tool lifecycle -----------------------------------------------------------


class TranscriptRunHooks(RunHooks[Any]):
    """``RunHooks`` that journal each function tool call in the session's transcript.

    Just before a tool runs, the model output that called it goes in (through
    ``TranscriptSession.write_model_output``), then a ``tool-dispatched``
    line; a ``tool-settled`` line just after. A process killed mid-tool leaves
    the call in the conversation and its operation pending
    (``Session.unanswered_tool_calls``, ``Session.pending_tool_operations``)
    for whoever resumes.
    Pass it as ``Runner.run(..., hooks=TranscriptRunHooks(session))``; subclass it
    (calling ``super()``) to add hooks of your own.

    Args:
        session: the session whose file gets the lines.
        idempotency: what the dispatch line says about re-running the tool
            (``"unknown"`` unless you know better).
    """

    def __init__(self, session: TranscriptSession, *, idempotency: str = "unknown") -> None:
        self.session = session
        self.idempotency = idempotency
        self._started: dict[str, tuple[str, float]] = {}
        self._output: list[dict[str, Any]] = []  # the last response's items, not written yet
        self._written: asyncio.Future[None] | None = None  # their write, which every tool waits for

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        self._output, self._written = [], None
        self.session._forget_early()  # the SDK adds a turn's items before the next model call

    async def on_llm_end(self, context: Any, agent: Any, response: ModelResponse) -> None:
        # Kept until a tool starts: a turn that runs no tool is written by the SDK, as ever.
        self._written = None
        self._output = [{k: v for k, v in item.items() if not (k == "status" and v is None)}
                        for item in response.to_input_items() if isinstance(item, Mapping)]

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self._output:
            output, self._output = self._output, []
            self._written = asyncio.ensure_future(self.session.write_model_output(output))
        if self._written is not None:
            # Tools of one response start together: none runs before the calls are in the file.
            await asyncio.shield(self._written)
        if not isinstance(context, ToolContext):
            return  # only function tools say which call they are
        t = self.session.transcript
        op_id = await write_off_loop(functools.partial(
            t.append_tool_dispatched, context.tool_call_id, context.tool_name, context.tool_arguments,
            idempotency=self.idempotency))
        self._started[context.tool_call_id] = (op_id, time.monotonic())

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: object) -> None:
        if not isinstance(context, ToolContext):
            return
        started = self._started.pop(context.tool_call_id, None)
        if started is None:
            return
        op_id, t0 = started
        t = self.session.transcript
        await write_off_loop(functools.partial(
            t.append_tool_settled, op_id, "completed", duration=round(time.monotonic() - t0, 6),
            result_digest=digest(result if isinstance(result, str) else str(result))))
