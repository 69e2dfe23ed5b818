"""The records a transcript is read as: Envelope, Entry, Peek, PendingToolOperation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from .message import MESSAGE_FIELDS, Message

__all__ = ["Envelope", "Entry", "Peek", "PendingToolOperation"]

T = TypeVar("T")


@dataclass(frozen=True)
class Envelope:
    """One line of a transcript.

    Attributes:
        id: the envelope id.
        type: the envelope type (``"message"``, ``"compaction"``, … or an unknown one).
        ts: when it was written, ``%Y-%m-%dT%H:%M:%S.%fZ`` in UTC.
        v: the format version (``1``).
        payload: the per-type payload.
        line: its 1-based line number in the file.
    """

    id: str
    type: str
    ts: str
    v: int
    payload: Any
    line: int


@dataclass(frozen=True)
class Entry:
    """One live message, with its id, its extras and where it came from.

    ``Session.entries`` is parallel to ``Session.messages``: replay (compactions,
    elisions and rewinds) is already applied.

    Attributes:
        id: the message's id: its envelope's, a compaction's for its summary,
            ``"<compaction id>:<k>"`` for the k-th message of a replacement.
        message: the message, as ``Session.messages`` has it.
        extra: the rest of the message's payload (the keys that are not
            Message fields: what ``append_message(extra=...)`` wrote); ``{}``
            for a compaction's summary.
        line: the 1-based line of the envelope it came from (the compaction's
            line for a summary or a replacement message).
        elided: an elision replaced its content.
    """

    id: str
    message: Message
    extra: dict[str, Any]
    line: int
    elided: bool


@dataclass(frozen=True)
class PendingToolOperation:
    """A tool operation that was dispatched and never settled.

    ``state`` is ``"dispatched"`` when no tool message answers it (it may or may
    not have run) and ``"result-persisted"`` when its tool message is in the
    transcript but its settle line is not (it completed; the settle was lost).
    """

    op_id: str
    call_id: Any
    tool: Any
    arguments: Any
    arguments_digest: Any
    idempotency: Any
    run_id: Any
    round: Any
    dispatched_ts: str
    state: str
    result_message_id: str | None


@dataclass(frozen=True)
class Peek:
    """What a transcript file says, read without writing, locking or repairing.

    Attributes:
        path: the file read.
        size: its size in bytes when it was read.
        meta: the session-meta payload, or ``{}``.
        envelopes: every line that parsed, in file order.
        messages: the message lines as Messages, in file order, no replay.
        warnings: one line per line that did not parse.
        error: why there is nothing to read (no file, empty, first line not a
            session-meta), else None; the other fields are then empty.
    """

    path: Path
    size: int
    meta: Any
    envelopes: Sequence[Envelope]
    messages: Sequence[Message]
    warnings: list[str]
    error: str | None


class LazySequence(Sequence[T]):
    """A fixed-length sequence whose items are made when they are read."""

    __slots__ = ("_len", "_get")

    def __init__(self, length: int, get: Callable[[int], T]) -> None:
        self._len = length
        self._get = get

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._get(i) for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("envelope index out of range")
        return self._get(index)

    def __repr__(self) -> str:
        return f"<{self._len} items>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]


def live_entry(mid: str, payload: dict[str, Any], line: int, elided: bool) -> Entry:
    """The Entry of a live message with id ``mid``, its payload, line and
    whether an elision stubbed it (``Session.entries``, one a message)."""
    # Entry(...) without the frozen dataclass's object.__setattr__ a field.
    # Most payloads have no extra.
    extra = ({} if MESSAGE_FIELDS.issuperset(payload)
             else {k: v for k, v in payload.items() if k not in MESSAGE_FIELDS})
    e = object.__new__(Entry)
    vars(e).update(id=mid, message=Message.from_dict(payload), extra=extra, line=line,
                   elided=elided)
    return e
