"""pydantic-ai messages as transcript lines, and back: the ``message_history=`` path.

Needs nothing of pydantic-ai newer than its message types, so it works with
the versions before ``ConversationStore`` too. The public names are in
``agent_transcript.integrations.pydantic_ai``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

try:
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

from agent_transcript import Message, Session

#: The message line's extra that carries a pydantic-ai message (on the first
#: line of those that stand for it) or points at it (on the others).
EXTRA_KEY = "pydantic-ai"


def dump(message: ModelMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    return dumped


def load(data: Any) -> ModelMessage:
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


def _chat_to_message(message: Message, tool_names: Mapping[str, str], when: datetime) -> ModelMessage:
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
        return ModelResponse(parts=parts, timestamp=when)
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        return ModelRequest(parts=[ToolReturnPart(tool_names.get(call_id, message.name or "tool"), text,
                                                  tool_call_id=call_id, timestamp=when)], timestamp=when)
    if message.role == "system":
        return ModelRequest(parts=[SystemPromptPart(text, timestamp=when)], timestamp=when)
    return ModelRequest(parts=[UserPromptPart(text, timestamp=when)], timestamp=when)


# -- lines of one transcript -------------------------------------------------


def write_entry(session: Session, entry_id: str, parent_id: str | None, message: ModelMessage,
                *, early: bool = False) -> str:
    """Append the message lines of one entry; returns the id of the last.

    ``early``: written by ``TranscriptCapability`` before the run handed its
    messages over; the run's id goes with it, so the hand-over adopts it.
    """
    chat, extra = message_to_chat(message)
    own: dict[str, Any] = {"entry": entry_id, "parent": parent_id, "message": dump(message)}
    if early:
        own["run"] = run_of(message)
    line_id = session.append_message(chat[0], {EXTRA_KEY: own, **extra})
    for k, m in enumerate(chat[1:], 1):
        line_id = session.append_message(m, {EXTRA_KEY: {"entry": entry_id, "part": k}})
    return line_id


def run_of(message: ModelMessage) -> str:
    """The id of the run that made a message ('' when it says none)."""
    run_id = getattr(message, "run_id", None)
    return run_id if isinstance(run_id, str) else ""


def early_block(written: Sequence[tuple[str, str | None, Any]], messages: Sequence[ModelMessage]
                ) -> tuple[int, int]:
    """How a run's messages meet what it wrote early.

    ``written`` is the newest entries, oldest first, as ``(entry id, run, message
    JSON)``. Returns ``(b, k)``: the last ``b`` of them were written early by
    the run that made ``messages``, and the first ``k`` of those are its first
    ``k`` messages (``k < b``: the run went past the others).
    """
    if not messages:
        return 0, 0
    run = run_of(messages[0])  # '' (a version without run ids) matches the lines marked so
    b = 0
    while b < len(written) and written[len(written) - 1 - b][1] == run:
        b += 1
    block = written[len(written) - b:]
    k = 0
    while k < min(b, len(messages)) and block[k][2] == dump(messages[k]):
        k += 1
    return b, k


def own_extra(extra: Mapping[str, Any]) -> dict[str, Any] | None:
    own = extra.get(EXTRA_KEY)
    return own if isinstance(own, dict) and isinstance(own.get("entry"), str) else None


def live_groups(session: Session) -> list[tuple[str | None, str, list[Any]]]:
    """The live lines grouped as entries: ``(entry id or None for a foreign
    line, id of the group's last line, its entries)``."""
    groups: list[tuple[str | None, str, list[Any]]] = []
    for e in session.entries:
        own = own_extra(e.extra)
        if own is not None and "message" not in own and groups and groups[-1][0] == own["entry"]:
            groups[-1] = (own["entry"], e.id, [*groups[-1][2], e])
        else:
            groups.append((own["entry"] if own is not None and "message" in own else None, e.id, [e]))
    return groups


def line_time(ts: str) -> datetime:
    """A line's ``ts`` as a datetime (the epoch for one this library did not write)."""
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return datetime.fromtimestamp(0, timezone.utc)


def load_messages(session: Session) -> list[ModelMessage]:
    """The transcript's live history as pydantic-ai messages, for ``message_history=``.

    Messages written by ``append_messages`` or the store come back exactly
    as they were; chat messages written by anything else are converted.
    """
    out: list[ModelMessage] = []
    tool_names: dict[str, str] = {}
    for entry_id, _, lines in live_groups(session):
        own = own_extra(lines[0].extra)
        if entry_id is not None and own is not None and not any(e.elided for e in lines):
            out.append(load(own["message"]))
            if isinstance(out[-1], ModelResponse):  # a tool message another program wrote may answer it
                tool_names.update((p.tool_call_id, p.tool_name) for p in out[-1].parts
                                  if isinstance(p, ToolCallPart))
            continue
        for e in lines:
            for call in e.message.tool_calls or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    tool_names[str(call.get("id"))] = str(function.get("name"))
            # Dated by its line, so two loads give equal messages.
            out.append(_chat_to_message(e.message, tool_names, line_time(session.events[e.line - 1].ts)))
    return out


def append_messages(session: Session, messages: Iterable[ModelMessage], *, early: bool = False) -> list[str]:
    """Append a run's new messages (``result.new_messages()``) after the live
    history; returns the entry ids given to them.

    Messages ``TranscriptCapability`` wrote before the run's tools ran are not
    written again: their entries are returned for them.
    """
    batch = list(messages)
    groups = live_groups(session)
    written: list[tuple[str, str | None, Any]] = []
    for entry_id, _, lines in groups:
        own = own_extra(lines[0].extra)
        if entry_id is not None and own is not None:
            run = own.get("run")
            written.append((entry_id, run if isinstance(run, str) else None, own["message"]))
        else:
            written.append(("", None, None))
    ids: list[str] = []
    b, k = (0, 0) if early else early_block(written, batch)
    if b > k:  # the run went past what it wrote early: that is left behind
        keep = len(groups) - b + k
        session.append_rewind(groups[keep - 1][1] if keep else None)
        groups = groups[:keep]
    if k:
        ids = [w[0] for w in written[len(written) - b:len(written) - b + k]]
        batch = batch[k:]
    parent = groups[-1][0] if groups else None
    for message in batch:
        entry_id = str(uuid.uuid4())
        write_entry(session, entry_id, parent, message, early=early)
        ids.append(entry_id)
        parent = entry_id
    return ids
