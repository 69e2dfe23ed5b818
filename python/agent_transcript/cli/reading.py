"""Opening the file a command names: refused in one line when it is not a readable transcript."""

from __future__ import annotations

import os

from ..formats import describe, detect_format
from ..inspect import Reading, Unreadable, describe_os_error, reader
from ..inspect import require_file as _require
from .errors import CliError

__all__ = ["require_file", "read", "describe_os_error", "foreign_hint"]


def require_file(path: str) -> os.stat_result:
    """The stat of ``path`` if it is a regular file this process may read.

    Raises:
        CliError: missing, a directory, not a regular file, or unreadable.
    """
    try:
        return _require(path)
    except Unreadable as exc:
        raise CliError(str(exc)) from None


def read(path: str) -> Reading:
    """``path`` read for showing: what load makes of it, or peek's lenient index
    of a file load refuses (see ``agent_transcript.inspect.read``).

    Raises:
        CliError: the file is missing, unreadable, not a transcript, or holds an
            envelope version this does not read.
    """
    require_file(path)
    try:
        reading = reader.read(path, lenient=True)
    except OSError as exc:
        raise CliError(describe_os_error(exc, path)) from None
    refusal = reading.refusal
    if refusal is not None and refusal.status == "unsupported":
        # Not damage but a file this cannot show: say so, as load would.
        where = f"{path}:{refusal.line}" if refusal.line else path
        raise CliError(f"{where}: {refusal.reason}")
    if reading.error is not None:
        raise CliError(f"{path}: not a transcript: {foreign_hint(path) or reading.error}")
    return reading


def foreign_hint(path: str) -> str | None:
    """``"this is a Claude Code session: `agent-transcript import` converts it"`` (or a Codex
    rollout) when ``path`` is one, else None."""
    try:
        found = detect_format(path)
    except OSError:
        return None
    if found is None:
        return None
    return f"this is {describe(found)}: `agent-transcript import` converts it"
