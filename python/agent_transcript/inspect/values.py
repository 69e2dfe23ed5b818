"""What a payload's values say, as text a front end shows or measures (no printing)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

__all__ = ["compact", "content_text", "content_size", "ToolCall", "tool_call_parts"]


def compact(value: Any) -> str:
    """A JSON value on one line, readably spaced."""
    return _compact(value)


# What json.dumps(value, ensure_ascii=False, separators=(", ", ": ")) does,
# without building an encoder for each value.
_compact = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


def content_text(content: Any) -> str | None:
    """A message's content as text to read: parts joined, non-text parts named."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict):
                kind = part.get("type")
                if kind == "text" and isinstance(part.get("text"), str):
                    pieces.append(part["text"])
                else:
                    pieces.append(f"[{kind or 'part'}]")
            else:
                pieces.append(compact(part))
        return "\n".join(pieces)
    return compact(content)


def content_size(content: Any) -> int:
    """The UTF-8 size of a message's content (a string's bytes, else its JSON's)."""
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass"))
    return len(json.dumps(content, ensure_ascii=False).encode("utf-8", "surrogatepass"))


class ToolCall(NamedTuple):
    """An OpenAI-shaped tool call's ``(id, name, arguments)``, as text (``"?"`` where missing)."""

    id: str
    name: str
    arguments: str


def tool_call_parts(call: Any) -> ToolCall:
    """The parts of a tool call, its arguments on one line."""
    if not isinstance(call, dict):
        return ToolCall("?", "?", compact(call))
    fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
    args: Any = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = compact(json.loads(args))
        except (ValueError, RecursionError):  # not JSON, or nested deeper than json reads: shown as written
            pass
    else:
        args = compact(args)
    return ToolCall(str(call.get("id", "?")), str(fn.get("name", "?")), str(args))
