"""A transcript as one Markdown page: the live conversation, or every line (``all_lines``).

Each message is a heading (its number, role and time, its line in the file)
and its text; a tool call's arguments and a tool result are fenced, with a
fence longer than any run of backticks inside them, so no content can close
it. A message's own text is written as it is (it is Markdown more often than
not), unless its fences do not balance: then it is fenced too, so it cannot
swallow the messages after it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..inspect import Reading, content_text
from ..inspect.tokens import TokenCount, TokenTotals, Usage, token_totals

__all__ = ["to_markdown", "fence"]

_BACKTICKS = re.compile(r"`+")
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block no backtick run inside it can close."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}\n"


def _inline(text: str) -> str:
    """``text`` as inline code, whatever backticks it holds."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _prose(text: str) -> str:
    """A message's text as it is, or fenced when its own fences would not close."""
    if len(_FENCE_LINE.findall(text)) % 2:
        return fence(text)
    return text.rstrip("\n") + "\n"


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return str(raw)
    return json.dumps(raw, ensure_ascii=False, indent=2)


def _tokens(count: TokenCount) -> str:
    parts = [f"{count.input:,} in", f"{count.output:,} out"]
    if count.cache_read:
        parts.append(f"{count.cache_read:,} cache read")
    if count.cache_creation:
        parts.append(f"{count.cache_creation:,} cache write")
    return ", ".join(parts)


def _when(ts: Any) -> str:
    if isinstance(ts, str) and len(ts) >= 19:
        return f"{ts[:10]} {ts[11:19]} UTC"
    return ""


def _message(out: list[str], heading: str, payload: dict[str, Any], tokens: TokenCount | None) -> None:
    out.append(f"### {heading}\n")
    if tokens is not None:
        out.append(f"*tokens: {_tokens(tokens)}*\n")
    role = payload.get("role")
    text = content_text(payload.get("content"))
    if role == "tool":
        call = payload.get("tool_call_id")
        out.append(f"Result of {_inline(str(call))}:\n" if call is not None else "Result:\n")
        out.append(fence(text or ""))
    elif text:
        out.append(_prose(text))
    for call in payload.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
        name, cid = str(fn.get("name", "?")), str(call.get("id", "?"))
        out.append(f"Tool call {_inline(name)} ({_inline(cid)}):\n")
        out.append(fence(_arguments(fn.get("arguments")), "json"))


def to_markdown(reading: Reading, *, all_lines: bool = False, usages: list[Usage] | None = None) -> str:
    """The Markdown page of ``reading``: its live conversation (what load hands back), or with
    ``all_lines`` every envelope in file order. ``usages`` (``inspect.tokens.read_usage``) adds
    each message's tokens and the run's. (A redacted page is the page of a redacted copy:
    ``redaction.write_redacted_copy``.)"""
    totals = token_totals(usages or [])
    meta = reading.meta if isinstance(reading.meta, dict) else {}
    title = next((meta[k] for k in ("title", "task", "agent") if isinstance(meta.get(k), str) and meta[k]), None)
    name = os.path.basename(reading.path)
    out = [f"# {_one_line(title) if title else name}\n"]
    facts = [f"- transcript: {_inline(name)}"]
    if reading.replayed:
        facts.append(f"- messages: {reading.live_len() or 0:,} live, {len(reading.indices_of_type('message')):,} written")
    elif reading.refusal is not None:
        facts.append(f"- load refuses this file ({_one_line(reading.refusal.reason)}): every line that reads is shown")
    if totals.responses:
        facts.append(f"- tokens: {_tokens(totals.total)} ({totals.responses:,} response{'s' if totals.responses != 1 else ''})")
        for model, count in sorted(totals.by_model.items()):
            facts.append(f"  - {_inline(model)}: {_tokens(count)}")
    out.append("\n".join(facts) + "\n")
    if all_lines or not reading.replayed:
        _every_line(out, reading, totals)
    else:
        _live(out, reading, totals)
    return "\n".join(out)


def _live(out: list[str], reading: Reading, totals: TokenTotals) -> None:
    for n, lm in enumerate(reading.live(), 1):
        payload = reading.live_message(lm.position)
        envelope = reading.event(lm.index)
        eid = envelope.id if lm.part is None else f"{envelope.id}:{lm.part}"
        what = str(payload.get("role", "?"))
        if lm.summary:
            what = "summary of a compaction"
        elif lm.part is not None:
            what += " (from a compaction)"
        note = " (elided)" if lm.elided_line is not None else ""
        _message(out, f"{n}. {what}{note} · {_when(envelope.ts)} · line {envelope.line}", payload,
                 totals.by_message.get(eid))


def _every_line(out: list[str], reading: Reading, totals: TokenTotals) -> None:
    for i in range(len(reading)):
        envelope = reading.event(i)
        heading = f"line {envelope.line} · {envelope.type} · {_when(envelope.ts)}"
        if envelope.type == "message" and isinstance(envelope.payload, dict):
            _message(out, f"{heading} · {envelope.payload.get('role', '?')}", envelope.payload,
                     totals.by_message.get(envelope.id))
        else:
            out.append(f"### {heading}\n")
            out.append(fence(json.dumps(envelope.payload, ensure_ascii=False, indent=2), "json"))
