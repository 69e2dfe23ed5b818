"""Tool calls and their answers in the live conversation, and the pending tool
operations of the file: one reading for ``agent_transcript.Session``,
``check``, ``stats``, ``show`` and the viewer.

A chat API refuses a conversation in which an assistant's tool call has no
answer, or a tool message answers no call. The pairing here is worked out on
demand from the live messages (load never parses a ``tool_calls``):

* a *call* is an entry of an assistant message's ``tool_calls`` with a string
  ``id``; any other entry there is *malformed*;
* walking the live messages in order, a ``tool`` message answers the earliest
  live call before it with its ``tool_call_id`` that is not answered yet; a
  tool message that finds none (an unknown id, an id already answered, one
  placed before its call) is an *orphan*.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import _core
from .envelope import PendingToolOperation
from .message import Message

__all__ = [
    "INTERRUPTED",
    "UnansweredToolCall",
    "PairedCall",
    "OrphanToolMessage",
    "MalformedToolCall",
    "Pairing",
    "pair",
    "call_rows",
    "pairing_of",
    "pending_operations",
    "unanswered_tool_calls",
    "answer_rows",
    "chat_messages",
]

#: The answer ``Session.answer_unanswered_tool_calls`` gives a call by default.
INTERRUPTED = ("This tool call was interrupted before its result was recorded: "
               "it may or may not have run.")

#: The reason of the settle lines written for an answered, interrupted call.
INTERRUPTED_REASON = "interrupted: the call was answered after the run stopped before its result"


@dataclass(frozen=True)
class UnansweredToolCall:
    """A live tool call that no tool message answers.

    Attributes:
        call_id: the call's ``id``.
        tool: the tool's name as the call states it (``function.name``), or None.
        arguments: the arguments as the call states them (``function.arguments``), or None.
        message_id: the id of the assistant message that made the call.
        operation: the latest operation dispatched for ``call_id`` that is still
            unsettled, or None (none was dispatched, or it is settled).
    """

    call_id: str
    tool: str | None
    arguments: Any
    message_id: str
    operation: PendingToolOperation | None


@dataclass(frozen=True)
class PairedCall:
    """A call of the live conversation and what answers it.

    Attributes:
        call_id, tool, arguments: as the call states them.
        message_id, line, position: its assistant message's id, line and place
            in the live list.
        index: its place in that message's ``tool_calls``.
        answer: the live-list position of the tool message that answers it, or None.
    """

    call_id: str
    tool: str | None
    arguments: Any
    message_id: str
    line: int
    position: int
    index: int
    answer: int | None


@dataclass(frozen=True)
class OrphanToolMessage:
    """A live tool message that answers no call: ``tool_call_id`` as it states it."""

    message_id: str
    tool_call_id: Any
    line: int
    position: int


@dataclass(frozen=True)
class MalformedToolCall:
    """An entry of an assistant's ``tool_calls`` that is not a call (no string
    ``id``), or a ``tool_calls`` that is not a list (``index`` None)."""

    message_id: str
    line: int
    index: int | None


@dataclass(frozen=True)
class Pairing:
    """The live conversation's calls (in conversation order), orphans and malformed calls."""

    calls: list[PairedCall]
    orphans: list[OrphanToolMessage]
    malformed: list[MalformedToolCall]

    @property
    def unanswered(self) -> list[PairedCall]:
        """The calls no tool message answers, in conversation order."""
        return [c for c in self.calls if c.answer is None]


def _stated(call: dict[str, Any]) -> tuple[str | None, Any]:
    """A call's tool name and arguments, as its ``function`` states them."""
    function = call.get("function")
    if not isinstance(function, dict):
        return None, None
    name = function.get("name")
    return (name if isinstance(name, str) else None), function.get("arguments")


def pair(rows: Iterable[tuple[int, str, int, dict[str, Any]]]) -> Pairing:
    """The pairing of live messages given as ``(position, id, line, payload)``
    rows in conversation order; rows of roles other than assistant and tool
    may be left out (they take no part)."""
    calls: list[PairedCall] = []
    orphans: list[OrphanToolMessage] = []
    malformed: list[MalformedToolCall] = []
    waiting: dict[str, deque[int]] = {}  # call id -> its unanswered calls, earliest first
    for position, mid, line, payload in rows:
        role = payload.get("role")
        if role == "assistant":
            listed = payload.get("tool_calls")
            if listed is None:
                continue
            if not isinstance(listed, list):
                malformed.append(MalformedToolCall(mid, line, None))
                continue
            for i, call in enumerate(listed):
                call_id = call.get("id") if isinstance(call, dict) else None
                if not isinstance(call_id, str):
                    malformed.append(MalformedToolCall(mid, line, i))
                    continue
                tool, arguments = _stated(call)
                waiting.setdefault(call_id, deque()).append(len(calls))
                calls.append(PairedCall(call_id, tool, arguments, mid, line, position, i, None))
        elif role == "tool":
            answers = payload.get("tool_call_id")
            queue = waiting.get(answers) if isinstance(answers, str) else None
            if queue:
                k = queue.popleft()
                c = calls[k]
                calls[k] = PairedCall(c.call_id, c.tool, c.arguments, c.message_id, c.line,
                                      c.position, c.index, position)
            else:
                orphans.append(OrphanToolMessage(mid, answers, line, position))
    return Pairing(calls, orphans, malformed)


_CALL_FIELDS = ["tool_calls", "tool_call_id"]


def call_rows(t: _core.Transcript) -> list[tuple[int, str, int, dict[str, Any]]]:
    """The live assistant and tool messages of ``t`` as ``pair`` takes them,
    found in the index: only their ``tool_calls`` and ``tool_call_id`` are decoded."""
    rows: list[tuple[int, str, int, dict[str, Any]]] = []
    whole: list[int] = []  # the rows of message lines, whose fields are read below
    indices: list[int] = []  # their envelopes
    for position, (index, _, role, part) in enumerate(t.live()):
        if role != "assistant" and role != "tool":
            continue
        line = t.line_number(index)
        if part is None:
            whole.append(len(rows))
            indices.append(index)
            rows.append((position, t.envelope_id(index), line, {"role": role}))
        else:  # a message of a compaction's replacement: its own id, the compaction's line
            payload = t.live_message(position)
            rows.append((position, f"{t.envelope_id(index)}:{part}", line, payload))
    for k, found in zip(whole, t.payload_fields(indices, _CALL_FIELDS)):
        rows[k][3].update(found)
    return rows


def pairing_of(t: _core.Transcript) -> Pairing:
    """The pairing of the core transcript ``t``'s live messages."""
    return pair(call_rows(t))


def pending_operations(t: _core.Transcript) -> list[PendingToolOperation]:
    """The core's pending operations of ``t`` (``t.pending()``), as the public records."""
    out = []
    for index, result in t.pending():
        op_id, _, ts, _, payload, _ = t.event(index)
        p = payload if isinstance(payload, dict) else {}
        out.append(PendingToolOperation(
            op_id=op_id,
            call_id=p.get("call-id"),
            tool=p.get("tool"),
            arguments=p.get("arguments"),
            arguments_digest=p.get("arguments-digest"),
            idempotency=p.get("idempotency"),
            run_id=p.get("run-id"),
            round=p.get("round"),
            dispatched_ts=ts,
            state="dispatched" if result is None else "result-persisted",
            result_message_id=None if result is None else t.envelope_id(result),
        ))
    return out


def unanswered_tool_calls(t: _core.Transcript) -> list[UnansweredToolCall]:
    """The live calls of ``t`` that no tool message answers, each with its
    latest unsettled operation."""
    unanswered = pairing_of(t).unanswered
    if not unanswered:
        return []
    latest: dict[str, PendingToolOperation] = {}
    for op in pending_operations(t):  # dispatch order: the last one wins
        if isinstance(op.call_id, str):
            latest[op.call_id] = op
    return [UnansweredToolCall(c.call_id, c.tool, c.arguments, c.message_id, latest.get(c.call_id))
            for c in unanswered]


def answer_rows(t: _core.Transcript, content: str | Callable[[UnansweredToolCall], str]
                ) -> tuple[list[tuple[Any, ...]], list[int]]:
    """The rows of ``t.append_messages`` that answer every unanswered call of
    ``t`` (each call's pending operations settled as outcome-unknown, then its
    tool message), and the positions of the tool messages among them.

    Raises:
        TypeError: ``content`` is neither a string nor a callable, or returned
            something that is not a string (nothing is written).
    """
    calls = unanswered_tool_calls(t)
    if not calls:
        return [], []
    if not isinstance(content, str) and not callable(content):
        raise TypeError(f"content must be a str or a callable, not {type(content).__name__}")
    pending: dict[str, list[str]] = {}
    for op in pending_operations(t):
        if isinstance(op.call_id, str):
            pending.setdefault(op.call_id, []).append(op.op_id)
    rows: list[tuple[Any, ...]] = []
    answers: list[int] = []
    for call in calls:
        text = content if isinstance(content, str) else content(call)
        if not isinstance(text, str):
            raise TypeError(f"content({call!r}) must return a str, not {type(text).__name__}")
        # pop: a call id that two calls share has its operations settled once.
        for op_id in pending.pop(call.call_id, []):
            rows.append(("tool-settled", {"op-id": op_id, "outcome": "outcome-unknown",
                                          "reason": INTERRUPTED_REASON}))
        answers.append(len(rows))
        m = Message.tool(call.call_id, text)
        rows.append((m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.sticky,
                     m.sysprompt, m.depth))
    return rows, answers


def chat_messages(t: _core.Transcript) -> list[dict[str, Any]]:
    """The live conversation of ``t`` as a strict chat API takes it: each
    answer right after its call's assistant message, orphans left out."""
    pairing = pairing_of(t)
    answers: dict[int, list[int]] = {}  # assistant position -> its answers, in call order
    placed: set[int] = set()  # tool messages laid after their call, or orphans: skipped
    for c in pairing.calls:
        if c.answer is not None:
            answers.setdefault(c.position, []).append(c.answer)
            placed.add(c.answer)
    placed.update(o.position for o in pairing.orphans)
    chat = [Message.from_dict(payload).to_chat() for payload in t.live_payloads()]
    out: list[dict[str, Any]] = []
    for position, message in enumerate(chat):
        if position not in placed:
            out.append(message)
            out.extend(chat[answer] for answer in answers.get(position, ()))
    return out
