"""Message: one conversation message, as the model is sent it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Message", "MESSAGE_FIELDS"]

_new = object.__new__

#: The payload keys a Message owns; every other key of a message payload is an extra.
MESSAGE_FIELDS = frozenset(
    ("role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth")
)


@dataclass(frozen=True)
class Message:
    """One conversation message.

    Attributes:
        role: ``"system"``, ``"user"``, ``"assistant"``, ``"tool"``, or any other role string.
        content: a string, a list of content parts, or None.
        name: the optional participant name.
        tool_calls: OpenAI-shaped tool calls
            (``{"id", "type": "function", "function": {"name", "arguments"}}``), or None.
        tool_call_id: on a tool message, the id of the call it answers.
        sticky: kept by every compaction.
        sysprompt: this is the system prompt (kept by every compaction).
        depth: a pinned depth (kept by every compaction), or None.
    """

    role: str
    content: Any = None
    name: str | None = None
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None
    sticky: bool = False
    sysprompt: bool = False
    depth: int | None = None

    @property
    def is_sticky(self) -> bool:
        """True when a compaction must keep this message: sticky, sysprompt or a depth."""
        return self.sticky or self.sysprompt or self.depth is not None

    def to_dict(self) -> dict[str, Any]:
        """The message as a payload: ``role`` and ``content`` always, the rest when set."""
        d = self.to_chat()
        if self.sticky:
            d["sticky"] = True
        if self.sysprompt:
            d["sysprompt"] = True
        if self.depth is not None:
            d["depth"] = self.depth
        return d

    def to_chat(self) -> dict[str, Any]:
        """The message as an OpenAI-style chat message, to send to a model:
        ``role`` and ``content``, and ``name``, ``tool_calls``, ``tool_call_id``
        when set; never the library's own flags (``sticky``, ``sysprompt``, ``depth``)."""
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            d["name"] = self.name
        if self.tool_calls is not None:
            d["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        """The inverse of ``to_dict``; keys that are not Message fields are ignored.

        Raises:
            TypeError: ``d`` is not a mapping, or has no string ``role``.
        """
        # typing.Mapping's isinstance took most of a from_dict; a dict needs none.
        if type(d) is not dict and not isinstance(d, Mapping):
            raise TypeError(f"a message payload must be an object, not {type(d).__name__}")
        get = d.get
        role = get("role")
        if not isinstance(role, str):
            raise TypeError("a message payload needs a string 'role'")
        fields: dict[str, Any] = {
            "role": role,
            "content": get("content"),
            "name": get("name"),
            "tool_calls": get("tool_calls"),
            "tool_call_id": get("tool_call_id"),
            "sticky": bool(get("sticky", False)),
            "sysprompt": bool(get("sysprompt", False)),
            "depth": get("depth"),
        }
        if cls is not Message:  # a subclass may have an __init__ of its own
            return cls(**fields)
        # What the frozen dataclass's __init__ sets, without its
        # object.__setattr__ a field: Session.messages and entries build one
        # Message a live message.
        m = _new(cls)
        vars(m).update(fields)
        return m

    @classmethod
    def system(cls, text: str) -> Message:
        """The system prompt (``sysprompt=True``, so compaction keeps it)."""
        return cls(role="system", content=text, sysprompt=True)

    @classmethod
    def user(cls, text: Any) -> Message:
        """A user turn."""
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, content: Any = None, tool_calls: list[Any] | None = None) -> Message:
        """An assistant turn, with its tool calls if it made any."""
        return cls(role="assistant", content=content, tool_calls=tool_calls)

    @classmethod
    def tool(cls, tool_call_id: str, content: Any) -> Message:
        """A tool result answering the call ``tool_call_id``."""
        return cls(role="tool", content=content, tool_call_id=tool_call_id)


# The dataclass keeps each default as a class attribute too (Message.content is
# None). CPython 3.12 and later do not specialise an instance attribute's load
# when the class has an attribute of the same name: message.content took
# about 47 ns there against 6 ns without it, and an append reads eight fields.
# The defaults live on in __init__ (bound when it was made) and in fields().
for _field in fields(Message):
    if _field.name in vars(Message):
        delattr(Message, _field.name)
del _field
