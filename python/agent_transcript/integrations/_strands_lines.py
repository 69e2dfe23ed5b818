"""Strands messages as transcript lines, and lines no Strands message stands behind as Strands messages.

A Strands message is ``{"role", "content": [block, ...]}`` in Bedrock's shape.
Its lines, for everything else that reads the file: an assistant message is
one assistant line with its text and its ``toolUse`` blocks as ``tool_calls``;
a user message is one ``tool`` line per ``toolResult`` block, then one user
line for the rest when there is any rest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_transcript import Message

__all__ = ["message_lines", "block_text", "message_from_line", "result_block"]


def block_text(blocks: Any) -> str | None:
    """The text of content blocks: their ``text`` and ``json`` joined by
    newlines, ``[kind]`` for what has no text; None when there are none."""
    if not isinstance(blocks, Sequence) or isinstance(blocks, (str, bytes)):
        return None
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"], ensure_ascii=False, sort_keys=True))
        elif block and not {"toolUse", "toolResult", "reasoningContent", "cachePoint"} & block.keys():
            parts.append(f"[{next(iter(block))}]")
    return "\n".join(parts) if parts else None


def _call(use: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": str(use.get("toolUseId")), "type": "function",
            "function": {"name": str(use.get("name")),
                         "arguments": json.dumps(use.get("input"), ensure_ascii=False)}}


def message_lines(message: Mapping[str, Any]) -> tuple[list[Message], dict[str, Any]]:
    """The lines that stand for one Strands message, and the extras of the first
    (``thinking``: its reasoning text)."""
    role = message.get("role")
    blocks = [b for b in message.get("content") or () if isinstance(b, Mapping)]
    extra: dict[str, Any] = {}
    reasoning = [b["reasoningContent"].get("reasoningText", {}).get("text") for b in blocks
                 if isinstance(b.get("reasoningContent"), Mapping)]
    thinking = "\n".join(t for t in reasoning if isinstance(t, str))
    if thinking:
        extra["thinking"] = thinking
    uses = [b["toolUse"] for b in blocks if isinstance(b.get("toolUse"), Mapping)]
    if role == "assistant":
        return [Message.assistant(block_text(blocks), [_call(u) for u in uses] or None)], extra
    results = [b["toolResult"] for b in blocks if isinstance(b.get("toolResult"), Mapping)]
    lines = [Message.tool(str(r.get("toolUseId")), block_text(r.get("content")) or "") for r in results]
    rest = [b for b in blocks if "toolResult" not in b]
    if rest or not lines:
        lines.append(Message(role=role if isinstance(role, str) else "user", content=block_text(rest)))
    return lines, extra


def result_block(line: Message) -> dict[str, Any]:
    """A ``toolResult`` block for a tool line no Strands message stands behind
    (an answer ``Session.answer_unanswered_tool_calls`` wrote, say)."""
    return {"toolResult": {"toolUseId": line.tool_call_id, "status": "error",
                           "content": [{"text": _text(line.content)}]}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def message_from_line(line: Message) -> dict[str, Any] | None:
    """A Strands message for a user or assistant line no Strands message stands
    behind; None for a role Strands has no message of (``system``)."""
    if line.role not in ("user", "assistant"):
        return None
    text = _text(line.content)
    content: list[dict[str, Any]] = [{"text": text}] if text else []
    for call in line.tool_calls or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(call.get("id"), str):
            arguments = function.get("arguments")
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                parsed = arguments
            content.append({"toolUse": {"toolUseId": call["id"], "name": str(function.get("name")),
                                        "input": parsed}})
    return {"role": line.role, "content": content}
