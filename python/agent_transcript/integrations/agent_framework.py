"""Microsoft Agent Framework's ``HistoryProvider`` over a folder of transcripts.

Switch an agent's history store with one line::

    history = TranscriptHistoryProvider("history/")     # was: FileHistoryProvider("history/")
    agent = Agent(client, instructions="Answer briefly.", context_providers=[history])

Each session is one transcript in the folder. Each framework ``Message`` is
kept whole (its ``to_dict()``) in the ``agent-framework`` extra of the first
message line that stands for it, and comes back from there exactly; the lines
themselves are OpenAI chat messages for everything else that reads the file: an
assistant message's function calls are its ``tool_calls``, each function result
is a ``tool`` message. A save is one ``write(2)`` of all its lines. With the
agent's ``require_per_service_call_history_persistence=True`` the framework
saves after every model call, so a run killed mid-tool keeps everything up to
the call it was running, and the next run answers that call (it was
interrupted) before the model is sent the history.

Needs the ``agent-framework`` extra: ``pip install "agent-transcript[agent-framework]"``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

try:
    from agent_framework import Content, HistoryProvider
    from agent_framework import Message as FrameworkMessage
    from agent_framework._sessions import filter_new_messages
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "agent_transcript.integrations.agent_framework needs the Microsoft Agent Framework (Python >= 3.11): "
        'pip install "agent-transcript[agent-framework]"'
    ) from e

from agent_transcript import Message, Session

from ._aio import write_off_loop
from ._json import decode_all
from ._names import OpenTranscripts, opened_when_free, transcript_name

__all__ = ["TranscriptHistoryProvider", "message_to_chat", "chat_to_message", "transcript_name", "EXTRA_KEY"]

#: The message line's extra that holds ``{"message": Message.to_dict()}`` (and
#: ``"lines"``, when it is more than one) on the first line of those that stand
#: for one framework message, ``{"part": k}`` on the others.
EXTRA_KEY = "agent-framework"

# -- projection: framework Message <-> chat messages --------------------------------


def _result_text(content: Content) -> str:
    result = content.result
    if isinstance(result, str):
        return result
    return "" if result is None else json.dumps(result, ensure_ascii=False, default=str)


def _chat_part(content: Content) -> dict[str, Any]:
    if content.type == "text":
        return {"type": "text", "text": content.text or ""}
    if content.type in ("uri", "data") and (content.media_type or "").startswith("image/"):
        return {"type": "image_url", "image_url": {"url": content.uri}}
    return {"type": "text", "text": f"[{content.type}]"}


def _chat_content(contents: Sequence[Content]) -> Any:
    """Contents as chat content: their text when they are all text, else parts."""
    parts = [_chat_part(c) for c in contents]
    if not parts:
        return None
    if all(c.type == "text" for c in contents):
        return " ".join(p["text"] for p in parts)  # as Message.text joins them
    return parts


def _is_local_call(content: Content) -> bool:
    """A function call this side answers (not one the service ran or only reports)."""
    return (content.type == "function_call" and bool(content.call_id)
            and not content.informational_only and not content.hosted)


def message_to_chat(message: FrameworkMessage) -> tuple[list[Message], dict[str, Any]]:
    """The chat messages that stand for one framework message, and the extras of
    the first of them (``thinking``: its reasoning text).

    A tool message is one ``tool`` message per function result; an assistant
    message is one assistant message with its text and its function calls as
    ``tool_calls``; anything else one message of its role with its text (parts
    when it is not all text).
    """
    contents = list(message.contents)
    extra: dict[str, Any] = {}
    reasoning = " ".join(c.text for c in contents if c.type == "text_reasoning" and c.text)
    if reasoning:
        extra["thinking"] = reasoning
    results = [c for c in contents if c.type == "function_result" and c.call_id]
    if message.role == "tool" and results:
        return [Message.tool(str(c.call_id), _result_text(c)) for c in results], extra
    if message.role == "assistant":
        calls = [{"id": c.call_id, "type": "function",
                  "function": {"name": c.name or "",
                               "arguments": c.arguments if isinstance(c.arguments, str)
                               else json.dumps(c.arguments or {}, ensure_ascii=False)}}
                 for c in contents if _is_local_call(c)]
        shown = [c for c in contents if c.type != "text_reasoning" and not _is_local_call(c)]
        return [Message.assistant(_chat_content(shown), calls or None)], extra
    shown = [c for c in contents if c.type != "text_reasoning"]
    if message.role == "system":
        return [Message(role="system", content=_chat_content(shown), sysprompt=True)], extra
    if message.role == "tool":  # a tool message without a result: not an answer to any call
        return [Message(role="assistant", content=_chat_content(shown), name="agent-framework:tool")], extra
    return [Message(role=message.role, content=_chat_content(shown))], extra


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content
                        if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return json.dumps(content, ensure_ascii=False)


def chat_to_message(message: Message) -> FrameworkMessage:
    """A framework message for a chat message no framework message stands behind
    (written by another program, or a compaction's summary)."""
    text = _text(message.content)
    if message.role == "tool":
        return FrameworkMessage("tool", [Content.from_function_result(message.tool_call_id or "", result=text)])
    contents: list[Content] = [Content.from_text(text)] if text else []
    if message.role == "assistant":
        for call in message.tool_calls or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                arguments = function.get("arguments")
                contents.append(Content.from_function_call(
                    str(call.get("id")), str(function.get("name")),
                    arguments=arguments if isinstance(arguments, (str, Mapping)) else json.dumps(arguments)))
    return FrameworkMessage(message.role, contents)


def _history_texts(session: Session) -> list[str]:
    """The live history as the JSON texts of framework messages' ``to_dict()``.

    A framework message whose lines are all live and none elided comes back
    from its extra; any other line (another program's, an elided one, a compaction's
    summary) is converted on its own.
    """
    entries = session.entries
    texts: list[str] = []
    i = 0
    while i < len(entries):
        own = entries[i].extra.get(EXTRA_KEY)
        if isinstance(own, dict) and isinstance(own.get("message"), dict):
            j = i + 1
            while j < len(entries) and _is_part(entries[j].extra.get(EXTRA_KEY)):
                j += 1
            group = entries[i:j]
            if len(group) == own.get("lines", 1) and not any(e.elided for e in group):
                texts.append(json.dumps(own["message"], ensure_ascii=False))
            else:
                texts.extend(json.dumps(chat_to_message(e.message).to_dict(), ensure_ascii=False) for e in group)
            i = j
        else:
            texts.append(json.dumps(chat_to_message(entries[i].message).to_dict(), ensure_ascii=False))
            i += 1
    return texts


def _is_part(own: Any) -> bool:
    return isinstance(own, dict) and isinstance(own.get("part"), int)


def _answered_by(messages: Sequence[FrameworkMessage]) -> set[str]:
    """The call ids the messages answer or approve."""
    ids: set[str] = set()
    for message in messages:
        for c in message.contents:
            if c.type == "function_result" and c.call_id:
                ids.add(c.call_id)
            elif c.type == "function_approval_response" and c.function_call is not None and c.function_call.call_id:
                ids.add(c.function_call.call_id)
    return ids


# -- the provider -----------------------------------------------------------------


@dataclass
class _History:
    """One open transcript and its live history, as JSON texts of ``to_dict()``."""

    session: Session
    texts: list[str]
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Whether a run has looked for calls an earlier process left unanswered.
    resumed: bool = False

    def close(self) -> None:
        self.session.close()


class TranscriptHistoryProvider(HistoryProvider, OpenTranscripts[Path, _History]):
    """The Agent Framework's ``HistoryProvider`` keeping each session in one
    transcript in ``folder`` (created ``0700`` if missing).

    Behaves as the framework's ``FileHistoryProvider`` does (a save skips the
    messages the history already ends with, as the framework's providers all
    do), but a save is one write of whole lines, a torn last line is repaired on
    the next open instead of making the session unreadable, and the file is
    locked against a second writer.

    A session's transcript is opened (and locked) the first time the provider
    reads or saves it, and stays open until ``close_session`` or
    ``close``; another process that opens it meanwhile waits a few seconds,
    then gets ``SessionLocked``. Reading a session that has no transcript yet
    returns ``[]`` and creates nothing. The first run that opens a transcript
    answers the tool calls a killed run left without a result (see
    ``before_run``), so close a session between runs, never during one.

    Args:
        folder: where the transcripts go, one per session id (see ``transcript_name``).
        source_id: this provider's id among the agent's context providers.
        load_messages: load the history before each run.
        store_inputs: save the run's input messages.
        store_context_messages: save messages other context providers added.
        store_context_from: if set, only those other providers' messages.
        store_outputs: save the run's response messages.
        skip_excluded: leave out messages whose ``additional_properties["_excluded"]``
            is true (a ``CompactionProvider``'s marks) when reading.
        durability: ``"flush"`` (a save is in the kernel when it returns) or
            ``"fsync"`` (on the disk), as for ``Session``.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "agent_transcript"

    def __init__(self, folder: str | os.PathLike[str], *, source_id: str = DEFAULT_SOURCE_ID,
                 load_messages: bool = True, store_inputs: bool = True,
                 store_context_messages: bool = False, store_context_from: set[str] | None = None,
                 store_outputs: bool = True, skip_excluded: bool = False,
                 durability: Literal["flush", "fsync"] = "flush") -> None:
        super().__init__(source_id, load_messages=load_messages, store_inputs=store_inputs,
                         store_context_messages=store_context_messages,
                         store_context_from=store_context_from, store_outputs=store_outputs)
        if durability not in ("flush", "fsync"):
            raise ValueError(f"durability must be 'flush' or 'fsync', not {durability!r}")
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.skip_excluded = skip_excluded
        self.durability: Literal["flush", "fsync"] = durability
        self._lock = threading.Lock()
        self._open: dict[Path, _History] = {}

    def transcript_path(self, session_id: str | None) -> Path:
        """The transcript that holds ``session_id``'s history."""
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str or None, not {type(session_id).__name__}")
        return self.folder / f"{transcript_name(session_id)}.jsonl"

    # -- life ----------------------------------------------------------------------

    def close_session(self, session_id: str | None) -> None:
        """Close ``session_id``'s transcript and let go of its lock (it reopens when next used)."""
        path = self.transcript_path(session_id)
        with self._lock:
            history = self._open.pop(path, None)
        if history is not None:
            with history.lock:
                history.session.close()

    def _history(self, session_id: str | None) -> _History:
        """The session's transcript, opened (or created) if it is not open yet."""
        path = self.transcript_path(session_id)
        with self._lock:
            history = self._open.get(path)
            if history is not None:
                return history
            session = self._open_locked_out(path, session_id)
            try:
                history = _History(session, _history_texts(session))
            except BaseException:
                session.close()
                raise
            self._open[path] = history
            return history

    def _open_locked_out(self, path: Path, session_id: str | None) -> Session:
        """Open the transcript, waiting a little while another process holds it."""
        meta = {EXTRA_KEY: {"session-id": session_id, "source-id": self.source_id}}
        return opened_when_free(lambda: Session.open(path, meta, durability=self.durability))

    # -- the HistoryProvider methods ---------------------------------------------------

    def _saved(self, session_id: str | None) -> _History | None:
        """The session's transcript if anything was ever saved to it, else None
        (a read creates no file)."""
        path = self.transcript_path(session_id)
        with self._lock:
            known = path in self._open
        if not known and not path.exists():
            return None
        return self._history(session_id)

    def _texts(self, session_id: str | None) -> list[str]:
        history = self._saved(session_id)
        if history is None:
            return []
        with history.lock:
            return list(history.texts)

    def _resume(self, session_id: str | None, inputs: Sequence[FrameworkMessage]) -> None:
        history = self._saved(session_id)
        if history is None:
            return
        with history.lock:
            if history.resumed:
                return  # a later model call of a run, whose calls are its own
            history.resumed = True
            calls = history.session.unanswered_tool_calls()
            if not calls or _answered_by(inputs) & {c.call_id for c in calls}:
                return  # nothing left hanging, or the run goes on with an approval of it
            history.session.answer_unanswered_tool_calls()
            history.texts = _history_texts(history.session)

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        """Answer what an earlier process left hanging, then load the history.

        The first run that opens a session's transcript answers each tool call
        that a run killed mid-tool left without a result (a tool message that
        says it was interrupted and may or may not have run, written to the
        file once, through ``Session.answer_unanswered_tool_calls``), so the
        model is sent a conversation a chat API takes. Not when the run's input
        answers one of them itself (an approval response, a function result).
        """
        await write_off_loop(functools.partial(self._resume, context.session_id, list(context.input_messages)))
        await super().before_run(agent=agent, session=session, context=context, state=state)

    async def get_messages(self, session_id: str | None, *, state: dict[str, Any] | None = None,
                           **kwargs: Any) -> list[FrameworkMessage]:
        """The session's history, oldest first, as new ``Message`` objects."""
        texts = await asyncio.to_thread(self._texts, session_id)
        messages = [FrameworkMessage.from_dict(d) for d in decode_all(texts)]
        if self.skip_excluded:
            messages = [m for m in messages if not m.additional_properties.get("_excluded", False)]
        return messages

    async def save_messages(self, session_id: str | None, messages: Sequence[FrameworkMessage], *,
                            state: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Append the messages the history does not already end with, in one write.

        The write finishes even if the awaiting task is cancelled meanwhile.
        """
        if not messages:
            return
        self.transcript_path(session_id)  # a bad id fails here, in the caller's task
        await write_off_loop(functools.partial(self._save, session_id, list(messages)))

    def _save(self, session_id: str | None, messages: list[FrameworkMessage]) -> None:
        history = self._history(session_id)
        with history.lock:
            texts = history.texts
            # The framework's rule for what is new only looks at as many stored
            # messages as it is given (unless given at least as many as are
            # stored), so only that tail is decoded.
            tail = texts if len(messages) >= len(texts) else texts[len(texts) - len(messages):]
            stored = [FrameworkMessage.from_dict(d) for d in decode_all(tail)]
            new = filter_new_messages(stored, messages)
            rows: list[tuple[Message, dict[str, Any] | None]] = []
            new_texts: list[str] = []
            for message in new:
                data = message.to_dict()
                chat, extra = message_to_chat(message)
                own: dict[str, Any] = {"message": data}
                if len(chat) > 1:
                    own["lines"] = len(chat)
                rows.append((chat[0], {**extra, EXTRA_KEY: own}))
                rows.extend((m, {EXTRA_KEY: {"part": k}}) for k, m in enumerate(chat[1:], 1))
                new_texts.append(json.dumps(data, ensure_ascii=False))
            if rows:
                history.session.append_messages(rows)
                texts.extend(new_texts)
