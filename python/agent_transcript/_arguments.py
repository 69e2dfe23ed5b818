"""The checks of Session's arguments, and the message payloads its appends write."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .message import MESSAGE_FIELDS, Message


def message_payload(message: Message, extra: dict[str, Any] | None) -> dict[str, Any]:
    """A message line's payload: ``{**extra, **message.to_dict()}``, a message key
    dropping an extra of the same name even when the message leaves it unset."""
    if extra is None:
        return message.to_dict()
    if not isinstance(extra, dict):
        raise TypeError(f"extra must be a dict or None, not {type(extra).__name__}")
    payload = {k: v for k, v in extra.items() if k not in MESSAGE_FIELDS}
    payload.update(message.to_dict())
    return payload


def message_item(item: Any) -> dict[str, Any]:
    """The payload of one item of ``Session.append_messages``: a Message (a
    subclass's own ``to_dict()``) or a ``(message, extra)`` pair, or a TypeError."""
    if isinstance(item, Message):
        return item.to_dict()
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Message):
        return message_payload(item[0], item[1])
    raise TypeError(f"each item is a Message or a (Message, extra) pair, not {item!r}")


def replacement_payloads(replacement: Iterable[Any]) -> list[dict[str, Any]]:
    """A compaction's ``replacement`` as message payloads, or a TypeError."""
    if isinstance(replacement, (Message, str, bytes, dict)):
        raise TypeError("replacement is an iterable of messages or (message, extra) pairs, "
                        f"not a {type(replacement).__name__}")
    out = []
    for item in replacement:
        if isinstance(item, Message):
            out.append(item.to_dict())
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Message):
            out.append(message_payload(item[0], item[1]))
        else:
            raise TypeError(f"each replacement item is a Message or a (Message, extra) pair, not {item!r}")
    return out


def check_type(what: str, value: Any, kind: type) -> None:
    """A TypeError naming ``what`` unless ``value`` is a ``kind``."""
    if not isinstance(value, kind):
        raise TypeError(f"{what} must be {kind.__name__}, not {type(value).__name__}")


def pairs(items: Iterable[Any], what: str, names: tuple[str, str],
          second: type) -> list[tuple[str, Any]]:
    """``items`` as a list of ``(str, second)`` pairs, or a TypeError naming ``what``."""
    out = []
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise TypeError(f"each {what} is a ({names[0]}, {names[1]}) pair, not {item!r}")
        first, other = item
        check_type(f"a {what}'s {names[0]}", first, str)
        check_type(f"a {what}'s {names[1]}", other, second)
        out.append((first, other))
    return out


def check_int(what: str, value: Any) -> None:
    """A TypeError naming ``what`` unless ``value`` is an int (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be int, not {type(value).__name__}")
