"""The exceptions agent_transcript raises.

Every error that is about a transcript derives from ``TranscriptError``.
They are defined here, in Python, so that they are documented, importable and
picklable; the native core raises these same classes.

Plain Python exceptions keep their usual meaning: ``FileNotFoundError`` and the
other ``OSError`` subclasses for the filesystem, ``FileExistsError`` from
``Session.create`` on a non-empty file, ``TypeError``/``ValueError`` for values
that cannot be written.
"""

from __future__ import annotations

__all__ = [
    "TranscriptError",
    "CorruptTranscript",
    "UnsupportedVersion",
    "SessionLocked",
    "SessionClosed",
    "SessionBroken",
    "UnknownId",
    "ToolOperationError",
]


class TranscriptError(Exception):
    """Base class of every error about a transcript."""


class CorruptTranscript(TranscriptError):
    """The file is damaged in a way no crash produces; nothing was changed.

    Attributes:
        line: the 1-based line number of the damage, or None when the damage is
            not one line's (an empty file, say).
        path: the transcript's path as a string, or None.
    """

    def __init__(self, message: str, line: int | None = None, path: str | None = None) -> None:
        super().__init__(message, line, path)
        self.message = message
        self.line = line
        self.path = path

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}"
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        return where + self.message


class UnsupportedVersion(CorruptTranscript):
    """An envelope's ``v`` is not one this library reads (it reads ``1``)."""


class SessionLocked(TranscriptError):
    """Another open session, in this process or another, holds the transcript."""


class SessionClosed(TranscriptError):
    """The session was closed; nothing more can be appended through it."""


class SessionBroken(TranscriptError):
    """The session refuses appends: an earlier write failed and could not be
    undone, the file was deleted, replaced, truncated or written to under it, or
    this is a forked child of the process that opened it.

    The file holds every line a method returned from. It may also hold the line
    of the append that raised (a write that went through but whose check
    failed): an exception never promises that its line is absent. Load it again
    to go on.
    """


class UnknownId(TranscriptError, KeyError):
    """A compaction or elision names an id that is not in the live message set."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown id"


class ToolOperationError(TranscriptError):
    """A tool operation cannot be settled: it is unknown or already settled."""
