"""agent_transcript: a durable, resumable, append-only JSONL transcript of an LLM agent run.

One file per run, one self-describing envelope per line, complete after every
line. ``Session`` writes and resumes it (repairing only a torn last line and
refusing real damage), ``Session.peek`` and ``Session.follow`` read it without
touching it.
"""

from __future__ import annotations

# First: on Windows this raises the ImportError that says why it is not supported.
from . import _platform  # noqa: F401  # isort: skip
from ._core import __version__
from ._core import digest as _digest
from .errors import (
    CorruptTranscript,
    SessionBroken,
    SessionClosed,
    SessionLocked,
    ToolOperationError,
    TranscriptError,
    UnknownId,
    UnsupportedVersion,
)
from .codec import canonical_json
from .envelope import Entry, Envelope, Peek, PendingToolOperation
from .message import Message
from .session import Session
from .tool_calls import INTERRUPTED, UnansweredToolCall

__all__ = [
    "__version__",
    "Session",
    "Message",
    "Envelope",
    "Entry",
    "Peek",
    "PendingToolOperation",
    "UnansweredToolCall",
    "INTERRUPTED",
    "canonical_json",
    "digest",
    "TranscriptError",
    "CorruptTranscript",
    "UnsupportedVersion",
    "SessionLocked",
    "SessionClosed",
    "SessionBroken",
    "UnknownId",
    "ToolOperationError",
]


def digest(data: str | bytes) -> str:
    """``"sha256:" + hexdigest`` of ``data``; a ``str`` is UTF-8 encoded first.

    Raises:
        TypeError: ``data`` is neither ``str`` nor ``bytes``.
    """
    return _digest(data)
