"""Search transcripts: where a pattern matches the text a person reads in them.

The pattern matches the *decoded* text of message content, tool calls and their
arguments, tool results, compaction summaries and replacements, a dispatched
operation's tool and arguments, a settled one's error and reason, and an
elision's stubs: ``"quoted"`` finds the text a model wrote as ``"quoted"``,
which the file holds as ``\\"quoted\\"``. Ids, part types, signatures and base64
``data`` are not searched. A match never spans two strings.

By default only the live messages are searched: what replay gives, what the
model is sent next (a compaction's summary in place of what it replaced, an
elision's stub in place of the content). ``all_lines=True`` searches every line
instead: messages a compaction or a rewind took out of the live conversation,
dispatched and settled tool operations, elisions. A line that is not an
envelope (damage) has nothing to search.

The scan runs in the native core, a file per thread, and decodes only the
lines a raw-byte prefilter cannot rule out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import _core
from .files import os_error_reason, walk_transcripts

__all__ = ["Hit", "Unsearchable", "SEARCHED_TYPES", "grep", "transcript_paths"]

#: The envelope types whose text is searched (``type`` takes one of them).
SEARCHED_TYPES = ("message", "compaction", "tool-dispatched", "tool-settled", "elision")

# Files handed to the core at once: enough to keep both threads busy, few
# enough that the first hits are printed early.
_BATCH = 64


@dataclass(frozen=True)
class Hit:
    """One string of a transcript the pattern matched.

    Attributes:
        path: the transcript.
        line: the 1-based line of the envelope the string is in (for a stub,
            in the default live mode, the line of the message it stubs).
        id: the envelope's id (``"<compaction id>:<k>"`` for a replacement message).
        type: the envelope type.
        role: the message's role (a compaction's summary is a user message), else None.
        field: the payload key the string is under: ``content``, ``tool_calls``,
            ``summary``, ``replacement``, ``tool``, ``arguments``, ``error``,
            ``reason`` or ``stub``.
        text: the decoded string (a lone surrogate as U+FFFD).
        spans: ``(start, end)`` of each match, in characters of ``text``.
    """

    path: Path
    line: int
    id: str
    type: str
    role: str | None
    field: str
    text: str
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Unsearchable:
    """A file that could not be searched.

    Attributes:
        path: the file.
        reason: why, for a person (``"no such file"``, ``"corrupt at line 7: ..."``).
    """

    path: Path
    reason: str


def transcript_paths(paths: list[Path]) -> Iterator[Path | Unsearchable]:
    """Every transcript under ``paths``, as ``export`` walks them: a file named is
    itself, a folder gives its ``*.jsonl`` and ``*.jsonl.zst`` (name order in each
    folder, its files before its subfolders, links to folders not followed); a
    folder that cannot be listed gives an ``Unsearchable`` after the rest."""
    unreadable: dict[Path, str] = {}
    yield from walk_transcripts(paths, unreadable)
    for folder, reason in unreadable.items():
        yield Unsearchable(folder, reason)


def grep(pattern: str, *paths: str | os.PathLike[str], literal: bool = False, ignore_case: bool = False,
         all_lines: bool = False, role: str | None = None, type: str | None = None,
         threads: int = 2) -> Iterator[Hit | Unsearchable]:
    """Search ``paths`` (files and folders) for ``pattern``; hits file by file, in line order.

    Args:
        pattern: a regular expression in the syntax of Rust's ``regex`` crate
            (Python's ``re`` without look-around and backreferences), or with
            ``literal`` a fixed string. ``^`` and ``$`` match at each line of a text.
        paths: transcripts and folders of them (``.jsonl`` and ``.jsonl.zst``).
        literal: ``pattern`` is a fixed string.
        ignore_case: match case-insensitively (Unicode simple case folding).
        all_lines: search every line, not only the live messages replay gives.
        role: only hits in messages of this role.
        type: only hits in envelopes of this type (one of ``SEARCHED_TYPES``).
        threads: how many files are searched at once.

    Yields:
        A ``Hit`` per matched string, or an ``Unsearchable`` per file that
        could not be read (or, in the default live mode, that replay refuses).

    Raises:
        ValueError: the pattern is not a valid regular expression, or ``type``
            is not one of ``SEARCHED_TYPES``.
    """
    if type is not None and type not in SEARCHED_TYPES:
        raise ValueError(f"type must be one of {', '.join(SEARCHED_TYPES)}, not {type!r}")
    # Refused here, before any file is read: found or not, a bad pattern is bad.
    _core.grep([], pattern, literal, ignore_case, all_lines, role, type, threads)
    return _hits(pattern, [Path(p) for p in paths], literal, ignore_case, all_lines, role, type, threads)


def _hits(pattern: str, paths: list[Path], literal: bool, ignore_case: bool, all_lines: bool,
          role: str | None, type: str | None, threads: int) -> Iterator[Hit | Unsearchable]:
    batch: list[Path] = []
    for found in transcript_paths(paths):
        if isinstance(found, Unsearchable):
            yield from _search(batch, pattern, literal, ignore_case, all_lines, role, type, threads)
            batch = []
            yield found
            continue
        batch.append(found)
        if len(batch) == _BATCH:
            yield from _search(batch, pattern, literal, ignore_case, all_lines, role, type, threads)
            batch = []
    yield from _search(batch, pattern, literal, ignore_case, all_lines, role, type, threads)


def _search(batch: list[Path], pattern: str, literal: bool, ignore_case: bool, all_lines: bool,
            role: str | None, type: str | None, threads: int) -> Iterator[Hit | Unsearchable]:
    if not batch:
        return
    results = _core.grep(batch, pattern, literal, ignore_case, all_lines, role, type, threads)
    for path, result in zip(batch, results):
        if isinstance(result, tuple):
            errno, reason = result
            if errno is not None:
                reason = os_error_reason(OSError(errno, reason))
            yield Unsearchable(path, reason)
            continue
        for line, id, kind, hit_role, field, text, spans in result:
            yield Hit(path, line, id, kind, hit_role, field, text, tuple(spans))
