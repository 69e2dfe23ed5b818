"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as transcripts.

Generations, told apart by shape: G2 (``{"timestamp", "type", "payload"}``
lines: ``session_meta``, ``response_item``, ``compacted``, ``turn_context``,
``event_msg``), G1b (``record_type`` lines with the item flattened), G1 (a bare
session meta line, then bare response items and ``{"record_type": "state"}``
lines) and G0 (one JSON document ``{"session", "items"}``).

The conversation is the one Codex rebuilds on resume
(``reconstruct_history_from_rollout``, forward form): response items append
(``system`` messages and ghost snapshots do not), a ``compacted`` line with
``replacement_history`` replaces the history (a compaction with a
replacement), a legacy one without it rebuilds it from the real user messages
(at most 20,000 approximate tokens, newest first, the first one past the budget
cut to what is left as Codex's ``truncate_text`` cuts it) and the summary, and
``thread_rolled_back`` drops the last ``num_turns`` real user turns (a rewind).
Items map as Codex's chat adapter maps them: user/developer/assistant text
parts, calls (function, custom, local shell) grouped as ``tool_calls`` on the
assistant message before them, outputs as ``tool`` messages, reasoning kept in
the next assistant message's extras.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from ..inspect.paths import read_regular_file
from ._emit import Emitter
from ._source import Line, strict_json, to_ts

__all__ = ["looks_like", "convert", "SUMMARY_PREFIX"]

G2_TYPES = frozenset(("session_meta", "response_item", "compacted", "turn_context", "event_msg"))
ITEM_TYPES = frozenset((
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "ghost_snapshot",
    "image_generation_call", "compaction", "compaction_summary", "tool_search_call", "tool_search_output",
))
CALLS = frozenset(("function_call", "custom_tool_call", "local_shell_call"))
OUTPUTS = frozenset(("function_call_output", "custom_tool_call_output"))
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking "
    "process. You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
    "summary produced by the other language model, use the information in this summary to  assist with "
    "your own analysis:"
)
_CONTEXTUAL = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for",
               "<user_shell_command>", "<turn_aborted>", "<skill>", "<subagent_notification>")
_COMPACT_BUDGET = 20_000
_EVENTS_READ = frozenset(("thread_rolled_back", "turn_aborted", "token_count", "task_started", "turn_started"))
_WALL = re.compile(r"^Wall time: ([0-9.]+) seconds$", re.M)


def looks_like(record: dict[str, Any], first: bool) -> bool:
    """Whether one parsed source line is a Codex rollout line (``first``: the first record of the file)."""
    if record.get("type") in G2_TYPES and "payload" in record and "timestamp" in record:
        return True
    if isinstance(record.get("record_type"), str) and "payload" not in record:
        return True
    if first and isinstance(record.get("id"), str) and "timestamp" in record and "type" not in record:
        return "instructions" in record or "git" in record or "cli_version" in record or "originator" in record
    return False


def slim(record: dict[str, Any]) -> dict[str, Any]:
    """What the first pass reads of a line: its shape and token counts (the rest is read
    again when the line is converted)."""
    out: dict[str, Any] = {k: record[k] for k in ("type", "timestamp", "record_type", "id") if k in record}
    payload = record.get("payload")
    if isinstance(payload, dict):
        small: dict[str, Any] = {"type": payload.get("type")}
        if payload.get("type") == "token_count":
            small["info"] = payload.get("info")
        out["payload"] = small
    return out


def _body(record: dict[str, Any]) -> dict[str, Any]:
    """A whole line's item, whatever its generation (as ``_items`` finds it)."""
    if record.get("type") in G2_TYPES and isinstance(record.get("payload"), dict):
        payload: dict[str, Any] = record["payload"]
        return payload
    if isinstance(record.get("record_type"), str):
        return {k: v for k, v in record.items() if k not in ("record_type", "timestamp")}
    return record


def _items(lines: list[Line]) -> list[tuple[Line, str, dict[str, Any], Any]]:
    """Every line as ``(line, kind, payload, timestamp)``, whatever its generation."""
    out: list[tuple[Line, str, dict[str, Any], Any]] = []
    first = True
    for line in lines:
        r = line.record
        if r is None:
            continue
        if r.get("type") in G2_TYPES and isinstance(r.get("payload"), dict):
            out.append((line, str(r["type"]), r["payload"], r.get("timestamp")))
        elif isinstance(r.get("record_type"), str):
            rt = r["record_type"]
            body = {k: v for k, v in r.items() if k not in ("record_type", "timestamp")}
            kind = {"response": "response_item", "event": "event_msg", "session_meta": "session_meta"}.get(rt)
            if kind is not None:
                out.append((line, kind, body, r.get("timestamp")))
        elif first and "type" not in r and isinstance(r.get("id"), str):
            out.append((line, "session_meta", r, r.get("timestamp")))
        elif r.get("type") in ITEM_TYPES:
            out.append((line, "response_item", r, None))
        first = False
    return out


def _parts(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    parts = []
    for p in content:
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": p.get("text", "")})
        elif kind == "input_image":
            url: dict[str, Any] = {"url": p.get("image_url")}
            if "detail" in p:
                url["detail"] = p["detail"]
            parts.append({"type": "image_url", "image_url": url})
        else:
            parts.append(p)
    return parts


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _is_real_user(item: dict[str, Any]) -> bool:
    if item.get("type") != "message" or item.get("role") != "user":
        return False
    content = item.get("content")
    first = ""
    if isinstance(content, list):
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                first = p["text"]
                break
    text = first.lstrip()
    return not any(text.startswith(m) or text.lower().startswith(m.lower()) for m in _CONTEXTUAL)


def _call(item: dict[str, Any]) -> tuple[str, str, str]:
    """A call item's ``(call id, tool name, arguments text)``."""
    kind = item.get("type")
    if kind == "local_shell_call":
        cid = item.get("call_id") or item.get("id") or ""
        return str(cid), "local_shell", json.dumps(item.get("action"), ensure_ascii=False, separators=(",", ":"))
    if kind == "custom_tool_call":
        return str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("input", ""))
    arguments = item.get("arguments")
    return (str(item.get("call_id", "")), str(item.get("name", "")),
            arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False))


def _stored_arguments(text: str) -> Any:
    try:
        return strict_json(text)
    except ValueError:
        return text


def _output(item: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An output item's tool-message content, and what the rest of it says."""
    out = item.get("output")
    rest: dict[str, Any] = {}
    if isinstance(out, dict):
        rest = {k: v for k, v in out.items() if k != "content"}
        out = out.get("content", "")
        if isinstance(out, list):
            out = _parts(out)
    elif isinstance(out, list):
        out = _parts(out)
    elif out is None:
        out = ""
    return out, rest


def _duration(content: Any) -> float | None:
    if not isinstance(content, str):
        return None
    if content.startswith("{"):
        try:
            parsed = strict_json(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
            value = parsed["metadata"].get("duration_seconds")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
    m = _WALL.search(content)
    return float(m.group(1)) if m else None


def _approx_tokens(text: str) -> int:
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


def _truncate_to_tokens(text: str, tokens: int) -> str:
    """Codex's ``truncate_text(text, TruncationPolicy::Tokens(tokens))``: at most ``4 * tokens``
    bytes kept, half from the start and half from the end on character boundaries, and
    ``…N tokens truncated…`` between them (N the approximate tokens of the bytes over)."""
    data = text.encode("utf-8", "surrogatepass")
    budget = 4 * tokens
    if not data or (tokens > 0 and len(data) <= budget):
        return text
    if budget == 0:
        return f"…{(len(data) + 3) // 4} tokens truncated…"
    left = budget // 2
    tail_start = max(len(data) - (budget - left), 0)
    prefix_end, suffix_start, at = 0, len(data), 0
    for ch in text:
        end = at + len(ch.encode("utf-8", "surrogatepass"))
        if end <= left:
            prefix_end = end
        elif at >= tail_start and suffix_start == len(data):
            suffix_start = at
        at = end
    suffix_start = max(suffix_start, prefix_end)
    marker = f"…{(len(data) - budget + 3) // 4} tokens truncated…".encode()
    return (data[:prefix_end] + marker + data[suffix_start:]).decode("utf-8", "surrogatepass")


class _Converter:
    def __init__(self, emit: Emitter, warnings: list[str]) -> None:
        self.emit = emit
        self.warnings = warnings
        self.real_user: list[bool] = []  # parallel to emit.live
        self.lines_of: list[list[Line]] = []  # parallel to emit.live
        self.payload_of: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, Any] | None = None  # the assistant message calls may still join
        self.pending_lines: list[Line] = []
        self.pending_calls: list[tuple[str, str, str, str | None]] = []
        self.reasoning: list[Any] = []
        self.reasoning_lines: list[Line] = []
        self.run_id: str | None = None
        self.turns = 0
        self.round = 0
        self.tokens = 0
        self.grants: Any = None
        # The token_count lines of the response still pending (its message has no id yet),
        # and the last assistant message written: a token_count is the usage of the response
        # before it, which Codex may follow with its calls' outputs before it counts.
        self.counts_waiting: list[Line] = []
        self.last_assistant: str | None = None

    def _message(self, payload: dict[str, Any], lines: list[Line], real_user: bool, ts: str | None) -> str:
        id_ = self.emit.message(payload, ts)
        self.payload_of[id_] = payload
        self.real_user.append(real_user)
        self.lines_of.append(lines)
        for line in lines:
            line.status = "used"
        return id_

    def flush(self) -> None:
        if self.pending is None:
            return
        ts = self.pending.pop("\0ts")
        self.last_assistant = self._message(self.pending, self.pending_lines, False, ts)
        for waiting in self.counts_waiting:
            waiting.message = self.last_assistant
        self.counts_waiting = []
        for call_id, tool, text, cts in self.pending_calls:
            self.emit.dispatch(call_id, tool, _stored_arguments(text), run_id=self.run_id, round_=self.round, ts=cts)
        self.round += 1
        self.pending, self.pending_lines, self.pending_calls = None, [], []

    def token_count(self, line: Line) -> None:
        """A ``token_count`` line: told of the response it follows (``inspect.tokens`` reads it)."""
        if self.pending is not None:
            self.counts_waiting.append(line)
        else:
            line.message = self.last_assistant

    def _codex_extra(self, item: dict[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {"items": [item.get("type")]}
        for key in ("phase", "end_turn"):
            if key in item:
                extra[key] = item[key]
        return extra

    def _take_reasoning(self, extra: dict[str, Any]) -> None:
        if self.reasoning:
            extra["reasoning"] = self.reasoning
            self.pending_lines.extend(self.reasoning_lines)
        self.reasoning, self.reasoning_lines = [], []

    def response_item(self, line: Line, item: dict[str, Any], ts: str | None) -> None:
        kind = item.get("type")
        if kind == "reasoning":
            self.reasoning.append(item)
            self.reasoning_lines.append(line)
            return
        if kind == "message" and item.get("role") == "assistant":
            self.flush()
            extra = self._codex_extra(item)
            self.pending = {"codex": extra, "role": "assistant", "content": _parts(item.get("content")), "\0ts": ts}
            self.pending_lines = [line]
            self._take_reasoning(extra)
            return
        if kind in CALLS:
            call_id, tool, text = _call(item)
            call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": text}}
            if self.pending is None:
                extra = {"items": []}
                self.pending = {"codex": extra, "role": "assistant", "content": None, "\0ts": ts}
                self.pending_lines = []
                self._take_reasoning(extra)
            self.pending.setdefault("tool_calls", []).append(call)
            self.pending["codex"]["items"].append(kind)
            if kind != "function_call":
                self.pending["codex"].setdefault("tool-kinds", {})[call_id] = kind
            self.pending_lines.append(line)
            self.pending_calls.append((call_id, tool, text, ts))
            return
        self.flush()
        self.reasoning, self.reasoning_lines = [], []
        if kind == "message" and item.get("role") in ("user", "developer"):
            payload = {"codex": self._codex_extra(item), "role": item["role"], "content": _parts(item.get("content"))}
            real = _is_real_user(item)
            self._message(payload, [line], real, ts)
            if real:
                self.turns += 1
                self.round = 0
                if self.run_id is None or self.run_id.startswith("turn-"):
                    self.run_id = f"turn-{self.turns}"
            return
        if kind in OUTPUTS:
            call_id = str(item.get("call_id", ""))
            content, rest = _output(item)
            if call_id not in self.emit.calls or self.emit.calls[call_id] in self.emit.settled:
                self.warnings.append(f"line {line.number}: an output for {call_id!r} answers no live call; "
                                     "not replayed (Codex drops orphan outputs)")
                return
            extra = self._codex_extra(item)
            if rest:
                extra["output"] = rest
            self._message({"codex": extra, "role": "tool", "tool_call_id": call_id, "content": content}, [line],
                          False, ts)
            outcome, reason = "completed", None
            if content == "aborted":
                outcome, reason = "outcome-unknown", "aborted"
            elif rest.get("success") is False:
                outcome = "failed"
            self.emit.settle(call_id, outcome, ts, reason=reason, duration=_duration(content))
            return
        # system messages, ghost snapshots, web searches, ...: not sent as chat messages

    def compacted(self, line: Line, body: dict[str, Any], ts: str | None, after: int) -> None:
        self.flush()
        message: str = body["message"] if isinstance(body.get("message"), str) else ""
        history = body.get("replacement_history")
        fallback = False
        if isinstance(history, list):
            sub = _Converter(_Scratch(), [])
            encrypted = False
            for item in history:
                if isinstance(item, dict) and item.get("type") in ("compaction", "compaction_summary"):
                    encrypted = True
                if isinstance(item, dict) and item.get("type") != "ghost_snapshot":
                    sub.response_item(line, item, ts)
            sub.flush()
            replacement = [p for p in sub.emitted()]
            flags = sub.real_user
            summary = message
            if not summary:
                texts = [_text(i) for i in history if isinstance(i, dict) and i.get("role") == "user"]
                summary = next((t for t in reversed(texts) if t.startswith(SUMMARY_PREFIX)), "")
            if not summary:
                summary = "(encrypted remote compaction)" if encrypted else "(no summary)"
                fallback = True
            if encrypted:
                self.warnings.append(f"line {line.number}: an encrypted remote compaction; its summary is not readable")
        else:
            users = [self._user_text(i) for i, real in enumerate(self.real_user) if real]
            users = [u for u in users if not u.startswith(SUMMARY_PREFIX + "\n")]
            # build_compacted_history: the newest user messages within 20,000 approximate
            # tokens, the first one past the budget cut to what is left of it, then none.
            kept: list[str] = []
            budget = _COMPACT_BUDGET
            for text in reversed(users):
                if budget == 0:
                    break
                cost = _approx_tokens(text)
                if cost > budget:
                    kept.append(_truncate_to_tokens(text, budget))
                    break
                kept.append(text)
                budget -= cost
            kept.reverse()
            replacement = [{"role": "user", "content": [{"type": "text", "text": t}]} for t in kept]
            replacement.append({"role": "user", "content": [{"type": "text", "text": message or "(no summary available)"}]})
            flags = [True] * len(kept) + [False]
            summary = message
        line.status = "used"
        self.emit.compaction(summary, self.tokens, after, fallback=fallback, replacement=replacement, ts=ts)
        self.real_user = list(flags)
        self.lines_of = [[line] for _ in flags]
        self.payload_of = dict(zip(self.emit.live, replacement))

    def _user_text(self, index: int) -> str:
        payload = self.payload_of.get(self.emit.live[index], {})
        content = payload.get("content")
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return content if isinstance(content, str) else ""

    def rollback(self, line: Line, turns: Any, ts: str | None) -> None:
        self.flush()
        line.status = "used"
        positions = [i for i, real in enumerate(self.real_user) if real]
        if not isinstance(turns, int) or turns <= 0 or not positions:
            return
        cut = positions[0] if turns >= len(positions) else positions[-turns]
        for lines in self.lines_of[cut:]:
            for ln in lines:
                ln.status = "rolled-back"
        self.emit.rewind(cut, ts)
        self.real_user = self.real_user[:cut]
        self.lines_of = self.lines_of[:cut]

    def aborted(self, reason: Any, ts: str | None) -> None:
        self.flush()
        for call_id in self.emit.pending_calls():
            self.emit.settle(call_id, "outcome-unknown", ts, reason=f"turn-aborted:{reason}")

    def emitted(self) -> list[dict[str, Any]]:
        return [self.payload_of[i] for i in self.emit.live]


class _Scratch(Emitter):
    """An emitter that only tracks: for mapping a replacement history."""

    def __init__(self) -> None:
        from ._source import Ids

        super().__init__(Ids("scratch"))


def convert(lines: list[Line], emit: Emitter, warnings: list[str],
            full: Callable[[Line], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Emit the replayed conversation of a Codex rollout; returns the session-meta facts
    (``lines`` hold what ``slim`` keeps, or whole records; ``full`` reads a line's whole
    record)."""
    items = _items(lines)
    info: dict[str, Any] = {}
    c = _Converter(emit, warnings)
    facts: dict[str, Any] = {}
    for index, (line, kind, small, stamp) in enumerate(items):
        # A line without a timestamp (None) is dated when its envelope is
        # written, as the one before it: not now, before the calls still
        # buffered are (else its tool message and settle came before their dispatch).
        ts = to_ts(stamp, "") or None
        if kind == "event_msg" and small.get("type") not in _EVENTS_READ:
            continue
        body = _body(full(line)) if full is not None and line.offset >= 0 else small
        if kind == "session_meta":
            if "session-id" not in info:
                info["generation"] = "G2" if line.record is not None and "payload" in line.record else "G1"
                for key, name in (("id", "session-id"), ("cwd", "cwd"), ("cli_version", "version"),
                                  ("originator", "originator"), ("model_provider", "model-provider"),
                                  ("git", "git"), ("forked_from_id", "forked-from")):
                    if key in body:
                        info[name] = body[key]
                if isinstance(body.get("cwd"), str):
                    facts["cwd"] = body["cwd"]
                emit.at(ts)
        elif kind == "response_item":
            if body.get("type") == "ghost_snapshot":
                continue
            if facts and body.get("type") == "message":
                emit.facts([[k, facts[k]] for k in sorted(facts)], ts)
            c.response_item(line, body, ts)
        elif kind == "compacted":
            after = 0
            for _, k2, b2, _ in items[index + 1:]:
                if k2 == "response_item":
                    break
                if k2 == "event_msg" and b2.get("type") == "token_count":
                    after = _total_tokens(b2) or 0
                    break
            c.compacted(line, body, ts, after)
        elif kind == "turn_context":
            c.flush()
            if isinstance(body.get("turn_id"), str):
                c.run_id = body["turn_id"]
            for key in ("cwd", "model", "effort", "approval_policy"):
                if isinstance(body.get(key), str):
                    facts[key.replace("_", "-")] = body[key]
            if isinstance(body.get("model"), str):
                info["model"] = body["model"]
                info.setdefault("cwd", body.get("cwd"))
            grants = {k.replace("_", "-"): body[k] for k in ("approval_policy", "sandbox_policy") if k in body}
            if grants:
                emit.grants({"codex": grants}, ts)
            line.status = "used"
        elif kind == "event_msg":
            et = body.get("type")
            if et == "thread_rolled_back":
                c.rollback(line, body.get("num_turns"), ts)
            elif et == "turn_aborted":
                c.aborted(body.get("reason"), ts)
            elif et == "token_count":
                if isinstance(body.get("info"), dict):
                    c.token_count(line)
                total = _total_tokens(body)
                if total is not None:
                    c.tokens = total
            elif et in ("task_started", "turn_started") and isinstance(body.get("turn_id"), str):
                c.run_id = body["turn_id"]
    c.flush()
    if c.reasoning_lines:
        for line in c.reasoning_lines:
            line.status = "metadata"
    return {k: v for k, v in info.items() if v is not None}


def _total_tokens(body: dict[str, Any]) -> int | None:
    info = body.get("info")
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    total = last.get("total_tokens") if isinstance(last, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def g0_lines(path: Path, lines: list[Line]) -> list[Line] | None:
    """A G0 rollout (one JSON document over many lines) as one synthetic record per item; None if it is not one."""
    try:
        doc = read_regular_file(path, lambda f: strict_json(f.read()))
    except (ValueError, OSError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("session"), dict) or not isinstance(doc.get("items"), list):
        return None
    number = lines[0].number if lines else 1
    session = {k: v for k, v in doc["session"].items() if k != "type"}
    out = [Line(number, -1, 0, session, None)]  # offset -1: the record is here, not in a line
    for item in doc["items"]:
        if isinstance(item, dict):
            out.append(Line(number, -1, 0, item, None))
    for line in lines:
        line.status = "used"
    return out
