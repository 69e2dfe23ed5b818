"""Reading a transcript for a front end, without opening it as a session.

Nothing here writes, locks or repairs, and nothing here decides what load
would do: every verdict and every replayed state is the core's, from the code
load itself runs (``_core.tail_check``, then ``_core.Transcript.read_only`` on
the good prefix). A file load refuses is read with peek's lenient index
(``_core.Peeked``) so that it can still be shown, and then has no replayed
state at all: the refusal is said, never worked around.

What is here frames those answers (``Tail``, ``Refusal``), reads
the few envelopes a front end shows (``Reading``), decoding nothing it
was not asked for, and hands back the replay's history as plain data
(``Later``, ``CompactionEffect``, ``LiveMessage``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, TypeVar

from .. import _core
from .._archive import open_for_reading
from .._storage import TAIL_DAMAGE, Descriptor
from ..envelope import Envelope, PendingToolOperation
from ..errors import CorruptTranscript, UnsupportedVersion
from ..peek import judge, skipped_warning
from ..tool_calls import Pairing, call_rows, pair, pending_operations
from .values import content_size

__all__ = ["Tail", "Refusal", "Reading", "read", "excerpt", "open_file", "tail", "Later", "CompactionEffect", "LiveMessage"]

_BLANK = b" \t\r\n"
_CHUNK = 1 << 20
_T = TypeVar("_T")


@dataclass(frozen=True)
class Tail:
    """What the core's tail check (load's step 2) found at the end of a file.

    Attributes:
        kind: ``"empty"``, ``"whole"``, ``"torn"`` (load removes the last
            line), ``"corrupt"`` (the line before a torn one is not whole
            either) or ``"damaged"`` (the last line is malformed and does not
            begin with ``{``, so no crash explains it): load refuses the last
            two, leaving the file as it is.
        size: the file's size in bytes when it was checked.
        keep: the length of the good prefix (``size`` unless torn).
        line: the torn line's number (torn), the earlier bad line's
            (corrupt), the last line's (damaged), else None.
        removed: bytes a repair removes (torn), else 0.
        reason: why the torn line is not whole, in the core's words (torn).
        missing_newline: the last line is whole but lacks its ``\\n``.
        scanned: how many bytes the check read.
    """

    kind: Literal["empty", "whole", "torn", "corrupt", "damaged"]
    size: int
    keep: int
    line: int | None = None
    removed: int = 0
    reason: str | None = None
    missing_newline: bool = False
    scanned: int = 0


@dataclass(frozen=True)
class Refusal:
    """Why load would refuse a file: its exception, framed for a person.

    Attributes:
        status: ``"corrupt"`` or ``"unsupported"`` (an envelope version this
            library does not read).
        line: the line load names, or None when the damage is not one line's.
        reason: what is wrong, in load's words; ``"not a transcript: ..."``
            when it is the first line (or the whole file) that is wrong.
    """

    status: Literal["corrupt", "unsupported"]
    line: int | None
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line is not None else self.reason


@dataclass(frozen=True)
class Later:
    """What replay did later to one envelope, as line numbers (None: nothing).

    Attributes:
        settled_line: the settle of a dispatch.
        elided_line: the first elision that stubbed a message.
        compacted_line: the compaction that replaced a message.
        rewound_line: the rewind that dropped a message.
    """

    settled_line: int | None = None
    elided_line: int | None = None
    compacted_line: int | None = None
    rewound_line: int | None = None


_NOTHING_LATER = Later()


@dataclass(frozen=True)
class CompactionEffect:
    """What one compaction did to the live messages, as line numbers.

    Attributes:
        replaced: the lines of the messages it replaced, sorted (a compaction's
            line once for each of its replacement messages).
        kept: the lines of the sticky messages it kept, in live order.
        replacement: how many messages its replacement put in, or None when it
            has none (its summary went in).
    """

    replaced: list[int]
    kept: list[int]
    replacement: int | None = None


@dataclass(frozen=True)
class RewindEffect:
    """What one rewind dropped from the live messages.

    Attributes:
        dropped: the lines of the messages it dropped, in live order (a
            compaction's line for its summary or a replacement message).
    """

    dropped: list[int]


@dataclass(frozen=True)
class LiveMessage:
    """One message load would hand back, found in the index (nothing decoded).

    Attributes:
        position: its place in the live list (for ``Reading.live_message``).
        index: the envelope it came from (a message, or the compaction of a summary).
        role: its role.
        summary: it is a compaction's summary.
        elided_line: the line of the elision that stubbed its content, or None.
        part: its position in compaction ``index``'s replacement (its id is
            ``"<compaction id>:<part>"``), or None.
    """

    position: int
    index: int
    role: str | None
    summary: bool
    elided_line: int | None
    part: int | None = None


@dataclass
class Reading:
    """A transcript file as a front end reads it.

    ``transcript`` is what load would make of the file (the core's replay,
    with its history) or None when load would refuse it; ``refusal`` then says
    why. ``index`` is the envelope list shown: the transcript itself, or for a
    refused file peek's lenient index, which skips the lines it cannot read
    (``warnings``). ``error`` is peek's reason when there is nothing to show.

    Envelopes are decoded one at a time, on request; ``decoded`` counts them,
    so that tests can hold a command to decoding only what it shows.
    ``call_fields`` counts the messages whose ``tool_calls`` or
    ``tool_call_id`` alone ``pairing`` read.
    """

    path: str
    size: int
    tail: Tail
    lines: int
    index: _core.Transcript | _core.Peeked | None
    transcript: _core.Transcript | None
    refusal: Refusal | None
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    decoded: int = 0
    call_fields: int = 0
    _pending: list[PendingToolOperation] | None = None
    _pairing: Pairing | None = None

    def _index(self) -> _core.Transcript | _core.Peeked:
        if self.index is None:
            raise ValueError(f"{self.path}: nothing to read ({self.error})")
        return self.index

    def __len__(self) -> int:
        return 0 if self.index is None else len(self.index)

    def event(self, i: int) -> Envelope:
        """Envelope ``i``, decoded."""
        self.decoded += 1
        return Envelope(*self._index().event(i))

    def shown(self, i: int, indent: str, avail: int, max_lines: int | None
              ) -> tuple[Envelope, bool, tuple[list[str], int, int] | None]:
        """Envelope ``i`` as ``show`` reads it: decoded; whether no string in it
        holds a character a front end must make visible (a control character,
        ``\\r``), so that every string prints as it is (False may be said of a
        line that holds none); and for a message whose content is a string,
        the excerpt of that content (``_core.excerpt(content, indent, avail,
        max_lines)``) in its place, the payload then without ``content`` (else
        None)."""
        self.decoded += 1
        id_, type_, ts, v, payload, line, as_is, excerpt = self._index().shown(i, indent, avail, max_lines)
        return Envelope(id_, type_, ts, v, payload, line), as_is, excerpt

    def payload(self, i: int) -> Any:
        """Envelope ``i``'s payload, decoded."""
        self.decoded += 1
        return self._index().payload(i)

    def envelope_id(self, i: int) -> str:
        """Envelope ``i``'s id (its payload is not decoded)."""
        self.decoded += 1
        return self._index().envelope_id(i)

    def payload_fields(self, indices: list[int], keys: list[str]) -> list[dict[str, Any]]:
        """For each envelope in ``indices``, the members ``keys`` of its payload
        that it has; nothing else is decoded (the lines are searched in the core)."""
        self.decoded += len(indices)
        return [] if self.index is None else self.index.payload_fields(indices, keys)

    def type_name(self, i: int) -> str:
        """Envelope ``i``'s type, from the index (nothing is decoded)."""
        return self._index().type_name(i)

    def role(self, i: int) -> str | None:
        """Envelope ``i``'s role if it is a message, from the index."""
        return self._index().role(i)

    def line_number(self, i: int) -> int:
        """Envelope ``i``'s line number."""
        return self._index().line_number(i)

    def indices_of_type(self, name: str) -> list[int]:
        """The indices of the envelopes of type ``name``, in file order."""
        return [] if self.index is None else self.index.indices_of_type(name)

    def type_totals(self) -> list[tuple[str, int, int]]:
        """``(type, count, bytes)`` per type, in order of first appearance."""
        return [] if self.index is None else self.index.type_totals()

    def role_counts(self) -> list[tuple[str, int]]:
        """``(role, count)`` of the message lines, in order of first appearance."""
        return [] if self.index is None else self.index.role_counts()

    @property
    def meta(self) -> Any:
        """The session-meta payload (the first envelope's), or ``{}``."""
        return self.payload(0) if len(self) else {}

    def grants_index(self) -> int | None:
        """The index of the last grants line (the one load keeps), or None."""
        if self.transcript is not None:
            return self.transcript.grants_index()
        found = self.indices_of_type("grants")
        return found[-1] if found else None

    def index_of(self, envelope_id: str) -> int | None:
        """The index of envelope ``envelope_id``; None when not found or refused."""
        return None if self.transcript is None else self.transcript.index_of(envelope_id)

    def elision_effect(self, i: int) -> list[tuple[int, dict[str, Any]]]:
        """The messages elision ``i`` stubbed, each as it was just before (replay's own record)."""
        if self.transcript is None:
            return []
        effect = self.transcript.elision_effect(i)
        self.decoded += len(effect)
        return effect

    def elision_rows(self, i: int, *, decoded: bool = False) -> list[tuple[int, Any, Any, int]]:
        """For each message elision ``i`` stubbed: its envelope index, role and
        ``tool_call_id``, and the UTF-8 size of the content it had just before
        (``content_size`` of it), its content decoded only where the core cannot
        measure it (a content that is not a string), or with ``decoded`` always."""
        if self.transcript is None:
            return []
        rows = self.transcript.elision_rows(i)
        if decoded or any(size is None for *_, size in rows):
            return [(target, before.get("role"), before.get("tool_call_id"), content_size(before.get("content")))
                    for target, before in self.elision_effect(i)]
        return [(target, role, call, size or 0) for target, role, call, size in rows]

    def elided_sizes(self, indices: list[int]) -> list[list[int | None]]:
        """For each elision in ``indices``, the UTF-8 size of each message's content
        just before it stubbed it, measured in the core without decoding (None for
        a content that is not a string); empty lists when load refuses the file."""
        if self.transcript is None:
            return [[] for _ in indices]
        return self.transcript.elided_sizes(indices)

    def live_message(self, k: int) -> dict[str, Any]:
        """The ``k``-th live message as load hands it back (a payload dict)."""
        if self.transcript is None:
            raise ValueError(f"{self.path}: load refuses this file")
        self.decoded += 1
        return self.transcript.live_message(k)

    @property
    def replayed(self) -> bool:
        """Load would accept the file: the replay's answers below are known."""
        return self.transcript is not None

    def live_len(self) -> int | None:
        """How many messages load would hand back; None when it refuses the file."""
        return None if self.transcript is None else self.transcript.live_len()

    def live(self) -> list[LiveMessage]:
        """The messages load would hand back, in order; empty when it refuses the file."""
        t = self.transcript
        if t is None:
            return []
        return [
            LiveMessage(k, index, role, part is None and t.type_name(index) == "compaction",
                        None if stub_at is None else t.line_number(stub_at), part)
            for k, (index, stub_at, role, part) in enumerate(t.live())
        ]

    def later(self, i: int | None, part: int | None = None) -> Later:
        """What replay did later to envelope ``i`` (with ``part``, to that message of
        compaction ``i``'s replacement); nothing known for None or a refused file."""
        t = self.transcript
        if t is None or i is None:
            return _NOTHING_LATER
        found = t.later(i, part)
        if found.count(None) == len(found):  # most envelopes: built once
            return _NOTHING_LATER
        return Later(*(None if at is None else t.line_number(at) for at in found))

    def compaction_effect(self, i: int) -> CompactionEffect | None:
        """What compaction ``i`` replaced and kept; None when load refuses the file."""
        t = self.transcript
        if t is None:
            return None
        replaced, kept, replacement = t.compaction_effect(i)
        return CompactionEffect(sorted(t.line_number(j) for j, _ in replaced), [t.line_number(j) for j, _ in kept],
                                replacement)

    def rewind_effect(self, i: int) -> RewindEffect | None:
        """What rewind ``i`` dropped; None when load refuses the file."""
        t = self.transcript
        if t is None:
            return None
        return RewindEffect([t.line_number(j) for j, _ in t.rewind_effect(i)])

    def message_line(self, message_id: str) -> int | None:
        """The line a live or earlier message ``message_id`` came from: its envelope's,
        or its compaction's for a replacement message; None when not found or refused."""
        t = self.transcript
        found = None if t is None else t.resolve(message_id)
        return None if t is None or found is None else t.line_number(found[0])

    def section_line(self, digest: str) -> int | None:
        """The line carrying the text of run-context section ``digest``, or None."""
        t = self.transcript
        at = None if t is None else t.section_index(digest)
        return None if t is None or at is None else t.line_number(at)

    def line_of(self, envelope_id: str) -> int | None:
        """The line of envelope ``envelope_id``; None when not found or refused."""
        at = self.index_of(envelope_id)
        return None if at is None else self.line_number(at)

    def grants(self) -> tuple[Any, int | None]:
        """The grants snapshot load keeps (the last line's) and that line's number, or ``(None, None)``."""
        at = self.grants_index()
        if at is None:
            return None, None
        payload = self.payload(at)
        return (payload.get("grants") if isinstance(payload, dict) else None), self.line_number(at)

    def pending(self) -> list[PendingToolOperation] | None:
        """The pending tool operations load would report; None when load refuses the file."""
        if self.transcript is None:
            return None
        if self._pending is None:
            self._pending = pending_operations(self.transcript)
            self.decoded += len(self._pending)
        return self._pending


    def pairing(self) -> Pairing | None:
        """The live conversation's tool calls, what answers each, and the tool
        messages that answer none (``agent_transcript.tool_calls``, the
        pairing ``Session.unanswered_tool_calls`` uses); None when load refuses
        the file. Only the live assistant and tool messages' call fields are read."""
        if self.transcript is None:
            return None
        if self._pairing is None:
            rows = call_rows(self.transcript)
            self.call_fields += len(rows)
            self._pairing = pair(rows)
        return self._pairing


def excerpt(text: str, indent: str, avail: int, max_lines: int | None) -> tuple[list[str], int, int]:
    """The excerpt of ``text`` a front end shows: ``(lines, total, chars)``
    (see ``_core.excerpt``).

    Args:
        text: The text, made printable here (control characters as ``\\xNN``).
        indent: What each line starts with.
        avail: The columns a line has after ``indent``.
        max_lines: How many lines to build (the rest are only counted); None
            for all of them.

    Returns:
        The lines built, how many lines the whole text wraps to, and its
        printable length in characters.
    """
    return _core.excerpt(text, indent, avail, max_lines)


def read(path: str, *, lenient: bool) -> Reading:
    """Read ``path`` as load would, without writing, locking or repairing.

    The tail check, then the core's replay of the good prefix. When load would
    refuse the file and ``lenient`` is true, the envelope list is peek's
    lenient index instead (for ``show`` and ``stats``); otherwise there is none
    (for ``check``, which only needs the verdict).

    Raises:
        OSError: the file cannot be opened or read.
    """
    return _reading(path, lambda fd: _read(fd, path, lenient))


def tail(path: str) -> Tail:
    """The core's tail check of ``path`` alone (load's step 2), without writing.

    Raises:
        OSError: the file cannot be opened or read.
    """
    return _reading(path, lambda fd: _tail(fd)[0])


def open_file(path: str) -> int:
    """A read-only descriptor of the transcript ``path``, whose bytes are the lines
    ``read`` read: an archive (``*.jsonl.zst``) decompressed, in an unlinked
    temporary file. The caller closes it.

    Raises:
        OSError: the file cannot be opened or read.
    """
    return _open(path)


def _open(path: str) -> int:
    """A read-only descriptor of ``path``; an archive (``*.jsonl.zst``) is read
    decompressed, from an unlinked temporary file. What is not a regular file
    is refused rather than opened: a FIFO would wait for a writer (a folder's
    export or listing must not hang on one), a device may act on open."""
    return open_for_reading(Path(path))


def _reading(path: str, read: Callable[[int], _T]) -> _T:
    """``read(fd)`` of the descriptor ``_open`` gives for ``path``, closed
    afterwards whatever happens: by this try's own lines, since a Ctrl-C at a
    finally's line would skip the close."""
    fd = Descriptor()
    try:
        fd.fd = _open(path)
        got = read(fd.fd)
        fd.close()
        return got
    except BaseException:
        fd.close()
        raise


def _tail(fd: int) -> tuple[Tail, bytes]:
    """The tail check of ``fd`` and the torn part of the file (empty unless torn)."""
    kind, keep, line, removed, missing_newline, scanned = _core.tail_check(fd)
    if kind not in ("empty", "whole", "torn", "corrupt", "damaged"):
        raise ValueError(f"the core's tail check answered {kind!r}")
    torn_part = _pread_all(fd, removed, keep) if kind == "torn" else b""
    tail = Tail(
        kind,  # type: ignore[arg-type]
        size=keep + removed,
        keep=keep,
        line=line or None,
        removed=removed,
        reason=_torn_reason(torn_part) if kind == "torn" else None,
        missing_newline=missing_newline,
        scanned=scanned,
    )
    return tail, torn_part


def _read(fd: int, path: str, lenient: bool) -> Reading:
    tail, torn_part = _tail(fd)
    kind, keep, size = tail.kind, tail.keep, tail.size
    transcript = None
    refusal = None
    if kind == "empty":
        refusal = Refusal("corrupt", None, "not a transcript: the file is empty")
    else:
        try:
            transcript = _core.Transcript.read_only(fd, keep)
        except CorruptTranscript as exc:
            refusal = _refusal(fd, tail, exc)
        if kind in TAIL_DAMAGE:
            transcript = None
            if refusal is None:  # the file changed between the two looks
                refusal = Refusal("corrupt", tail.line, TAIL_DAMAGE[kind])
    if transcript is not None:
        warnings = [skipped_warning(tail.line or 0, tail.reason or "")] if kind == "torn" else []
        lines = transcript.line_count() + _count_lines(torn_part)
        return Reading(path, size, tail, lines, transcript, transcript, None, warnings)
    if not lenient:
        return Reading(path, size, tail, _count_file_lines(fd, size), None, None, refusal)
    peeked = _core.Peeked.open(fd)
    warnings, error = judge(peeked)
    index = None if error is not None else peeked
    return Reading(path, peeked.size(), tail, peeked.line_count(), index, None, refusal, warnings, error)


def _refusal(fd: int, tail: Tail, exc: CorruptTranscript) -> Refusal:
    """Load's exception for a file, framed: which line, and what is wrong with it."""
    message, line = exc.message, exc.line
    version = isinstance(exc, UnsupportedVersion)
    if line is None:  # no envelope at all
        if tail.kind == "torn":
            return Refusal("corrupt", tail.line, f"{tail.reason}; and with it removed the file is empty")
        return Refusal("corrupt", None, "not a transcript: the file is empty")
    if line == _first_line_number(fd, line):
        if version:
            return Refusal("unsupported", line, message)
        what = message if message.startswith("the first line") else f"the first line is {message}"
        return Refusal("corrupt", line, f"not a transcript: {what}")
    if tail.kind == "corrupt":
        # Load refuses at the tail, before replay; replay's first damage says more.
        if line == tail.line:
            return Refusal("corrupt", line, f"{message}, and the line after it is not whole either")
        return Refusal("corrupt", tail.line, f"{TAIL_DAMAGE['corrupt']} (and line {line}: {message})")
    if tail.kind == "damaged":
        if line == tail.line:
            return Refusal("corrupt", line, f"{message} (a last line that does not begin with '{{' is damage, not a torn write)")
        return Refusal("corrupt", tail.line, f"{TAIL_DAMAGE['damaged']} (and line {line}: {message})")
    return Refusal("unsupported" if version else "corrupt", line, message)


def _torn_reason(part: bytes) -> str:
    """Why the torn line at the start of ``part`` is not whole, in the core's words."""
    torn_line = part.split(b"\n", 1)[0]
    try:
        _core.parse_envelope(torn_line)
    except CorruptTranscript as exc:
        return exc.message
    return "not one whole JSON value"


def _pread_all(fd: int, length: int, offset: int) -> bytes:
    chunks = []
    while length > 0:
        chunk = os.pread(fd, min(length, _CHUNK), offset)
        if not chunk:
            raise OSError("the file shrank while it was read")
        chunks.append(chunk)
        length -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _count_lines(data: bytes) -> int:
    """Lines in ``data``, a last one without its ``\\n`` included."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _count_file_lines(fd: int, size: int) -> int:
    """Lines in the first ``size`` bytes of ``fd``, counted a chunk at a time."""
    count = 0
    offset = 0
    last = b"\n"
    while offset < size:
        chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        if not chunk:
            break
        count += chunk.count(b"\n")
        offset += len(chunk)
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _first_line_number(fd: int, upto: int) -> int:
    """The number of the first non-blank line, looked for no further than line ``upto``."""
    offset = 0
    newlines = 0
    while newlines < upto:
        chunk = os.pread(fd, 1 << 16, offset)
        if not chunk:
            break
        rest = chunk.lstrip(_BLANK)
        if rest:
            return newlines + chunk.count(b"\n", 0, len(chunk) - len(rest)) + 1
        newlines += chunk.count(b"\n")
        offset += len(chunk)
    return newlines + 1
