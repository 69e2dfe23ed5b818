"""The payloads of Session's appends, built from their checked arguments:
the core's rows of messages and events, compaction, tool-dispatched,
tool-settled and run-context."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from . import _core
from ._arguments import check_int, check_type, message_item, pairs, replacement_payloads
from ._core import digest
from .codec import canonical_json
from .message import Message

OUTCOMES = ("completed", "failed", "outcome-unknown")

# How deep parsed tool arguments may nest: a line nests 512 deep at most, and
# the line's object and its payload take two levels.
ARGUMENTS_DEPTH = 510


def message_rows(messages: Iterable[Message | tuple[Message, dict[str, Any] | None]]) -> list[tuple[Any, ...]]:
    """``append_messages``' items as the core's rows: a Message as its fields (the
    core writes its payload from them, as ``append_message`` does), any other item
    as a ``("message", payload)`` pair."""
    if isinstance(messages, (Message, str, bytes, dict)):
        raise TypeError("append_messages takes an iterable of messages or (message, extra) "
                        f"pairs, not a {type(messages).__name__}")
    return [(m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.sticky, m.sysprompt, m.depth)
            if type(m) is Message else ("message", message_item(m)) for m in messages]


def event_rows(events: Iterable[tuple[str, Any]]) -> list[tuple[Any, ...]]:
    """``append_events``' items as the core's rows, a session-meta refused."""
    rows = pairs(events, "event", ("type", "payload"), object)
    if any(t == "session-meta" for t, _ in rows):
        raise ValueError("a session-meta is only ever the first line")
    return rows


def compaction(summary: str, replaces_through_id: str, tokens_before: int, tokens_after: int,
               fallback: bool,
               replacement: Iterable[Message | tuple[Message, dict[str, Any] | None]] | None,
               ) -> dict[str, Any]:
    """A compaction's payload (see ``Session.append_compaction``)."""
    check_type("summary", summary, str)
    check_type("replaces_through_id", replaces_through_id, str)
    check_int("tokens_before", tokens_before)
    check_int("tokens_after", tokens_after)
    check_type("fallback", fallback, bool)
    payload: dict[str, Any] = {
        "summary": summary,
        "replaces-through-id": replaces_through_id,
        "tokens-before": tokens_before,
        "tokens-after": tokens_after,
        "fallback": fallback,
    }
    if replacement is not None:
        payload["replacement"] = replacement_payloads(replacement)
    return payload


def tool_dispatched(call_id: str, tool: str, arguments: Any, idempotency: str,
                    run_id: str | None, round: int | None) -> dict[str, Any]:
    """A tool-dispatched payload (see ``Session.append_tool_dispatched``)."""
    check_type("call_id", call_id, str)
    check_type("tool", tool, str)
    check_type("idempotency", idempotency, str)
    if run_id is not None:
        check_type("run_id", run_id, str)
    if round is not None:
        check_int("round", round)
    stored = arguments
    if isinstance(arguments, str):
        # Stored parsed only if the parsed value fits in a line: the line's
        # object and the payload hold it, so it may nest 510 deep of the
        # reader's 512. Anything else is stored as the string it is.
        try:
            stored = _core.loads(arguments, ARGUMENTS_DEPTH)
        except ValueError:
            stored = arguments
    return {
        "call-id": call_id,
        "tool": tool,
        "arguments": stored,
        "arguments-digest": digest(canonical_json(stored)),
        "idempotency": idempotency,
        "run-id": run_id,
        "round": round,
    }


def tool_settled(op_id: str, outcome: str, *, reason: Any, duration: Any, result_digest: Any,
                 artifact: Any, error: Any) -> dict[str, Any]:
    """A tool-settled payload (see ``Session.append_tool_settled``)."""
    check_type("op_id", op_id, str)
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))):
        raise TypeError("duration is a number of seconds")
    payload: dict[str, Any] = {"op-id": op_id, "outcome": outcome}
    for key, value in (("reason", reason), ("duration", duration), ("result-digest", result_digest),
                       ("artifact", artifact), ("error", error)):
        if value is not None:
            payload[key] = value
    return payload


def run_context_arguments(sections: Sequence[tuple[str, str]], facts: Sequence[tuple[str, Any]]
                          ) -> tuple[list[tuple[str, str]], list[list[Any]]]:
    """``append_run_context``'s sections and facts, checked: ``(sections, facts)``."""
    checked_sections = pairs(sections, "section", ("name", "text"), str)
    for name, text in checked_sections:
        if not text.isascii():
            try:
                text.encode()
            except UnicodeEncodeError:  # a section's digest is of its UTF-8 text
                raise ValueError(f"section {name!r}: its text holds a lone surrogate, "
                                 "which has no UTF-8 to digest") from None
    fact_list = [[key, value] for key, value in pairs(facts, "fact", ("key", "value"), object)]
    return checked_sections, fact_list


def run_context(t: _core.Transcript, own_id: str, sections: list[tuple[str, str]],
                facts: list[list[Any]]) -> dict[str, Any]:
    """A run-context payload for the line ``own_id`` of ``t``: a section's text
    only where no earlier line (nor an earlier section of this one) carries
    it, else ``rendered-in`` that line's id."""
    here: dict[str, str] = {}
    rendered = []
    for name, text in sections:
        d = digest(text)
        carrier = t.section_index(d)
        if carrier is not None:
            rendered.append({"name": name, "digest": d, "rendered-in": t.envelope_id(carrier)})
        elif d in here:
            rendered.append({"name": name, "digest": d, "rendered-in": own_id})
        else:
            here[d] = own_id
            rendered.append({"name": name, "digest": d, "text": text})
    return {"facts": facts, "sections": rendered}
