"""Reading a transcript without opening it: the tail check, replay and pending
operations, for the command line.

Nothing here writes, locks or repairs. It answers the questions ``check``,
``show --replayed`` and ``stats`` ask of a file that a writer may hold or that
may be damaged, by SPEC's rules ("Load: repair, then replay", steps 2 and 3):

* :func:`tail_check` looks at the end of the file as bytes, like load does
  before anything else. It is written in Python over bytes, and reads backwards
  from the end, so its cost depends on the last two lines. It has the shape of
  the core's ``tail_scan`` (``Tail`` with kinds empty/whole/torn/corrupt) so it
  can be swapped for the native call when the binding exposes one.
* :func:`check_file` is what load would do: the tail check, then every line of
  the good prefix validated and replayed.
* :class:`Replayer` applies messages, compactions and elisions in file order,
  over anything that looks like an envelope (``Session.peek``'s or this
  module's own), and remembers what each compaction and elision replaced.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Literal, Protocol

from . import _core
from .errors import CorruptTranscript, UnsupportedVersion
from .message import Message

__all__ = [
    "MAX_DEPTH",
    "Tail",
    "tail_check",
    "parse_line",
    "read_envelope",
    "LineError",
    "ParsedLine",
    "iter_lines",
    "count_lines",
    "CheckReport",
    "check_file",
    "EnvelopeLike",
    "Replayer",
    "ReplayError",
    "LiveMessage",
    "PendingOperation",
    "pending_operations",
]

#: The deepest nesting of arrays and objects the reader accepts (the core's limit).
MAX_DEPTH = 512

_BLANK = b" \t\r"
_STEP = 64 * 1024


def is_blank(line: bytes) -> bool:
    """True when ``line`` holds only spaces, tabs and ``\\r`` (or nothing)."""
    return not line.strip(_BLANK)


# --------------------------------------------------------------------------- JSON


class LineError(ValueError):
    """A line that is not one whole JSON value, with the reason."""


def _no_constant(name: str) -> Any:
    raise LineError(f"{name} is not JSON")


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in item)
    return False


# The core's reader, the one load uses, when the native module has it.
_native_loads: Callable[[bytes], Any] | None = getattr(_core, "loads", None)


def parse_line(raw: bytes) -> Any:
    """The one JSON value on ``raw`` (a line without its ``\\n``).

    Strict UTF-8, RFC 8259 (no NaN or Infinity), at most :data:`MAX_DEPTH`
    levels of nesting; duplicate keys: the last wins. This is the core's reader
    (``_core.loads``), so the answer is load's; a Python reader of the same
    rules stands in when the native module lacks it.

    Raises:
        LineError: the line is not one whole JSON value; the message says why.
    """
    if _native_loads is not None:
        try:
            return _native_loads(raw)
        except ValueError as exc:
            message = str(exc)
            if message.startswith("invalid JSON: "):
                message = message[len("invalid JSON: ") :]
            raise LineError(f"not JSON: {message}") from None
    return _parse_line_python(raw)


def _parse_line_python(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end >= len(raw) - 1 and exc.reason == "unexpected end of data":
            raise LineError(f"cut in the middle of a UTF-8 character at byte {exc.start}") from None
        raise LineError(f"not UTF-8 (byte {exc.start}: {exc.reason})") from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except LineError:
        raise
    except RecursionError:
        raise LineError(f"nesting deeper than {MAX_DEPTH}") from None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip(" \t\r\n")) or exc.msg.startswith("Unterminated string"):
            raise LineError("cut short: the JSON value does not end") from None
        raise LineError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:  # e.g. an int of more digits than Python converts
        raise LineError(f"not JSON ({exc})") from None
    if (raw.count(b"[") + raw.count(b"{")) > MAX_DEPTH and _depth_exceeds(value, MAX_DEPTH):
        raise LineError(f"nesting deeper than {MAX_DEPTH}")
    return value


def _whole_value_reason(raw: bytes) -> str | None:
    try:
        parse_line(raw)
    except LineError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------- the tail


@dataclass(frozen=True)
class Tail:
    """What the tail check found at the end of a file.

    Attributes:
        kind: ``"empty"`` (no non-blank line), ``"whole"`` (the last non-blank
            line is one whole JSON value), ``"torn"`` (it is not: load removes
            it) or ``"corrupt"`` (the non-blank line before a torn one is not
            whole either: load refuses the file).
        size: the file's size in bytes when it was read.
        keep: the length of the good prefix (``size`` unless torn).
        line: the torn line's number (torn), or the earlier bad line's (corrupt).
        removed: bytes a repair removes (torn), else 0.
        reason: why the torn or corrupt line is not one whole JSON value.
        missing_newline: the last line is whole but lacks its ``\\n``.
    """

    kind: Literal["empty", "whole", "torn", "corrupt"]
    size: int
    keep: int
    line: int | None = None
    removed: int = 0
    reason: str | None = None
    missing_newline: bool = False


class _Backwards:
    """The end of a file, read backwards only as far as it has to be."""

    def __init__(self, f: BinaryIO, size: int) -> None:
        self.f = f
        self.buf = b""
        self.base = size
        self.step_size = _STEP

    def step(self) -> bool:
        if self.base == 0:
            return False
        want = min(self.step_size, self.base)
        self.step_size *= 2  # a very long line costs O(n), not O(n^2)
        at = self.base - want
        self.f.seek(at)
        chunk = self.f.read(want)
        if len(chunk) != want:
            raise OSError("the file shrank while it was read")
        self.buf = chunk + self.buf
        self.base = at
        return True

    def line_start(self, end: int) -> int:
        while True:
            i = self.buf.rfind(b"\n", 0, end - self.base)
            if i >= 0:
                return self.base + i + 1
            if not self.step():
                return 0

    def slice(self, start: int, end: int) -> bytes:
        return self.buf[start - self.base : end - self.base]

    def last_nonblank(self, end: int) -> tuple[int, int] | None:
        while True:
            start = self.line_start(end)
            if not is_blank(self.slice(start, end)):
                return start, end
            if start == 0:
                return None
            end = start - 1


def _count_lines_before(f: BinaryIO, offset: int) -> int:
    f.seek(0)
    count = 0
    left = offset
    while left > 0:
        chunk = f.read(min(1 << 20, left))
        if not chunk:
            break
        count += chunk.count(b"\n")
        left -= len(chunk)
    return count


def tail_check(f: BinaryIO, size: int | None = None) -> Tail:
    """Load's tail check (SPEC "Load", step 2) on an open binary file, read-only.

    The verdict is the core's (``_core.tail_check``, what load runs) when the
    native module has it; the reason a person reads is found here.

    Args:
        f: the transcript, opened for reading in binary mode (seekable).
        size: its size; the current end of the file when None.
    """
    if size is None:
        size = f.seek(0, os.SEEK_END)
    native = getattr(_core, "tail_check", None)
    if native is None:
        return _tail_check_python(f, size)
    kind, keep, line, removed, missing_newline, _read = native(f.fileno())
    if kind in ("empty", "whole"):
        return Tail(kind, size=keep, keep=keep, missing_newline=bool(missing_newline))
    if kind not in ("torn", "corrupt"):
        raise ValueError(f"the core's tail check answered {kind!r}")
    ours = _tail_check_python(f, size)
    if (ours.kind, ours.line) == (kind, line):
        reason = ours.reason
    else:  # the file changed between the two looks
        reason = "not one whole JSON value"
    size = keep + removed if kind == "torn" else keep
    return Tail(kind, size=size, keep=keep if kind == "torn" else size, line=line, removed=removed, reason=reason)


def _tail_check_python(f: BinaryIO, size: int) -> Tail:
    back = _Backwards(f, size)
    last = back.last_nonblank(size)
    if last is None:
        return Tail("empty", size=size, keep=size)
    start, end = last
    reason = _whole_value_reason(back.slice(start, end))
    if reason is None:
        missing = back.slice(size - 1, size) != b"\n"
        return Tail("whole", size=size, keep=size, missing_newline=missing)
    previous = back.last_nonblank(start - 1) if start > 0 else None
    if previous is not None:
        p_start, p_end = previous
        p_reason = _whole_value_reason(back.slice(p_start, p_end))
        if p_reason is not None:
            line = _count_lines_before(f, p_start) + 1
            return Tail("corrupt", size=size, keep=size, line=line, reason=p_reason)
    line = _count_lines_before(f, start) + 1
    return Tail("torn", size=size, keep=start, line=line, removed=size - start, reason=reason)


# --------------------------------------------------------------------------- lines


@dataclass(frozen=True)
class ParsedLine:
    """One non-blank line of a transcript that parsed as an envelope.

    The same attributes as ``Envelope`` (``id, type, ts, v, payload, line``),
    plus ``size``: the line's length in bytes, ``\\n`` included.
    """

    id: str
    type: str
    ts: str
    v: int
    payload: Any
    line: int
    size: int


class EnvelopeError(ValueError):
    """A line that is JSON but not an envelope, or an envelope replay refuses."""

    def __init__(self, line: int, reason: str, *, version: bool = False) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason
        self.version = version


def envelope_from_value(value: Any, line: int, size: int) -> ParsedLine:
    """The envelope a parsed line holds, checked as load checks it.

    Raises:
        EnvelopeError: not an object with a non-empty string ``id``, a string
            ``type``, a string ``ts``, an int ``v`` and a ``payload``; or a
            ``v`` other than 1 (``version`` is then True).
    """
    if not isinstance(value, dict):
        raise EnvelopeError(line, f"not an envelope (a JSON {_json_kind(value)}, not an object)")
    for key, kind in (("id", "a non-empty string"), ("type", "a string"), ("ts", "a string"), ("v", "an integer")):
        if key not in value:
            raise EnvelopeError(line, f"not an envelope (no {key!r})")
        item = value[key]
        ok = type(item) is int if key == "v" else isinstance(item, str) and (item != "" or key != "id")
        if not ok:
            raise EnvelopeError(line, f"not an envelope ({key!r} is not {kind})")
    if "payload" not in value:
        raise EnvelopeError(line, "not an envelope (no 'payload')")
    if value["v"] != 1:
        raise EnvelopeError(
            line, unsupported_version_reason(value["v"]), version=True
        )
    shape = _payload_shape_error(value["type"], value["payload"])
    if shape is not None:
        raise EnvelopeError(line, f"not an envelope: {shape}")
    return ParsedLine(value["id"], value["type"], value["ts"], 1, value["payload"], line, size)


_KNOWN_TYPES = {"message", "compaction", "elision", "tool-dispatched", "tool-settled", "run-context"}


def _payload_shape_error(env_type: str, p: Any) -> str | None:
    """What is wrong with the payload of a known type, as load's envelope check says it."""
    if env_type not in _KNOWN_TYPES:
        return None  # session-meta, grants and unknown types take any payload
    if not isinstance(p, dict):
        return "the payload is not an object"
    if env_type == "message" and not isinstance(p.get("role"), str):
        return "a message payload needs a string 'role'"
    if env_type == "compaction" and not isinstance(p.get("replaces-through-id"), str):
        return "a compaction needs a string 'replaces-through-id'"
    if env_type == "tool-settled" and not isinstance(p.get("op-id"), str):
        return "a tool-settled needs a string 'op-id'"
    if env_type == "elision":
        if "items" not in p:
            return "an elision needs 'items'"
        if not isinstance(p["items"], list):
            return "an elision's 'items' is not a list"
        for item in p["items"]:
            if not isinstance(item, dict):
                return "an elision item is not an object"
            if not isinstance(item.get("id"), str) or "stub" not in item:
                return "an elision item needs a string 'id' and a 'stub'"
    if env_type == "run-context" and "sections" in p and not isinstance(p["sections"], list):
        return "a run context's 'sections' is not a list"
    return None


# The core's envelope check, the one load runs on every line, when the native
# module has it: JSON, the envelope's keys, and each known type's payload shape.
_native_envelope: Callable[[bytes], tuple[str, str, str, int, Any]] | None = getattr(_core, "parse_envelope", None)


def read_envelope(raw: bytes, line: int, size: int) -> ParsedLine:
    """The envelope on ``raw`` (a line without its ``\\n``), checked as load checks it.

    Raises:
        EnvelopeError: not JSON, not an envelope, a payload of the wrong shape
            for its type, or a version other than 1 (``version`` is then True).
    """
    if _native_envelope is not None:
        try:
            env_id, env_type, ts, v, payload = _native_envelope(raw)
        except UnsupportedVersion:
            raise EnvelopeError(line, unsupported_version_reason(_version_of(raw)), version=True) from None
        except CorruptTranscript as exc:
            raise EnvelopeError(line, exc.message) from None
        return ParsedLine(env_id, env_type, ts, v, payload, line, size)
    try:
        value = parse_line(raw)
    except LineError as exc:
        raise EnvelopeError(line, str(exc)) from None
    return envelope_from_value(value, line, size)


def _version_of(raw: bytes) -> Any:
    try:
        value = parse_line(raw)
    except LineError:
        return "?"
    return value.get("v", "?") if isinstance(value, dict) else "?"


def unsupported_version_reason(v: Any) -> str:
    """Why an envelope of version ``v`` is refused, in one line."""
    return (
        f"envelope version {json.dumps(v)} is not supported: this agent-transcript reads "
        "version 1 (a newer one wrote this file?)"
    )


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return "literal"
    return "number"


def iter_lines(f: BinaryIO, limit: int) -> Iterator[tuple[int, bytes, int]]:
    """``(line number, bytes without the \\n, size with it)`` for the non-blank
    lines in the first ``limit`` bytes of ``f``."""
    f.seek(0)
    number = 0
    offset = 0
    while offset < limit:
        raw = f.readline(limit - offset)
        if not raw:
            break
        number += 1
        offset += len(raw)
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if not is_blank(body):
            yield number, body, len(raw)


# --------------------------------------------------------------------------- replay


class EnvelopeLike(Protocol):
    """What replay needs of an envelope: ``Envelope`` and :class:`ParsedLine` both fit."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def line(self) -> int: ...


class ReplayError(ValueError):
    """Replay cannot go on: an envelope names what is not there, or is malformed."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class LiveMessage:
    """One message of the live list: the message, its envelope id, and the line
    it came from (for a compaction's summary, the compaction's line)."""

    id: str
    message: Message
    line: int


@dataclass
class Replayer:
    """Replays envelopes in file order as load does (SPEC "Load", step 3).

    After each :meth:`apply`, ``last_effect`` describes what a compaction or an
    elision did, for a reader to show: ``{"replaced": [LiveMessage, ...],
    "kept": [...]}`` for a compaction, ``{"items": [(LiveMessage, stub), ...]}``
    for an elision, else None.
    """

    live: list[LiveMessage] = field(default_factory=list)
    grants: Any = None
    has_grants: bool = False
    last_effect: dict[str, Any] | None = None
    applied: int = 0

    def index_of(self, message_id: str) -> int | None:
        """The live index of ``message_id``, or None when it is not live."""
        for i in range(len(self.live) - 1, -1, -1):
            if self.live[i].id == message_id:
                return i
        return None

    def apply(self, env: EnvelopeLike) -> None:
        """Applies one envelope.

        Raises:
            ReplayError: a malformed message, compaction or elision, or one that
                names an id that is not live.
        """
        self.last_effect = None
        self.applied += 1
        payload = env.payload
        if env.type == "session-meta" and self.applied > 1:
            raise ReplayError(env.line, "a session-meta that is not the first line")
        if env.type == "message":
            try:
                message = Message.from_dict(payload)
            except TypeError as exc:
                raise ReplayError(env.line, f"a message that is not one ({exc})") from None
            self.live.append(LiveMessage(env.id, message, env.line))
        elif env.type == "grants":
            self.grants = payload.get("grants") if isinstance(payload, dict) else None
            self.has_grants = True
        elif env.type == "compaction":
            if not isinstance(payload, dict):
                raise ReplayError(env.line, "a compaction whose payload is not an object")
            through = payload.get("replaces-through-id")
            summary = payload.get("summary")
            i = self.index_of(through) if isinstance(through, str) else None
            if i is None:
                raise ReplayError(
                    env.line, f"a compaction replaces through {through!r}, which is not a live message"
                )
            head = self.live[: i + 1]
            kept = [m for m in head if m.message.is_sticky]
            replaced = [m for m in head if not m.message.is_sticky]
            summary_message = LiveMessage(env.id, Message.user(summary), env.line)
            self.live = kept + [summary_message] + self.live[i + 1 :]
            self.last_effect = {"replaced": replaced, "kept": kept}
        elif env.type == "elision":
            items = payload.get("items") if isinstance(payload, dict) else None
            if not isinstance(items, list):
                raise ReplayError(env.line, "an elision without a list of items")
            done: list[tuple[LiveMessage, Any]] = []
            for item in items:
                if not isinstance(item, dict):
                    raise ReplayError(env.line, "an elision item that is not an object")
                target = item.get("id")
                i = self.index_of(target) if isinstance(target, str) else None
                if i is None:
                    raise ReplayError(env.line, f"an elision names {target!r}, which is not a live message")
                before = self.live[i]
                after = Message(
                    role=before.message.role,
                    content=item.get("stub"),
                    name=before.message.name,
                    tool_calls=before.message.tool_calls,
                    tool_call_id=before.message.tool_call_id,
                    sticky=before.message.sticky,
                    sysprompt=before.message.sysprompt,
                    depth=before.message.depth,
                )
                self.live[i] = LiveMessage(before.id, after, before.line)
                done.append((before, item.get("stub")))
            self.last_effect = {"items": done}


# --------------------------------------------------------------------------- check


@dataclass
class CheckReport:
    """What load would do to a file, found without writing a byte.

    Attributes:
        status: ``"clean"``, ``"repairable"`` (a torn tail load would remove),
            ``"corrupt"`` (load would refuse it), ``"unsupported"`` (an envelope
            version this does not read), or ``"unreadable"``.
        exit_code: 0 clean, 1 repairable, 2 anything else.
        tail: the tail check, when the file could be read.
        line, reason: where and why, for corrupt, unsupported and unreadable.
        lines: how many lines the file has (blank ones too).
        envelopes, messages: counts in the good prefix (what load would keep).
    """

    path: str
    status: Literal["clean", "repairable", "corrupt", "unsupported", "unreadable"]
    size: int | None = None
    tail: Tail | None = None
    line: int | None = None
    reason: str | None = None
    lines: int = 0
    envelopes: int = 0
    messages: int = 0
    live_messages: int = 0

    @property
    def exit_code(self) -> int:
        """0 clean, 1 a torn tail load would repair, 2 corrupt or unreadable."""
        return {"clean": 0, "repairable": 1}.get(self.status, 2)

    def to_json(self) -> dict[str, Any]:
        """The report as the documented JSON object of ``check --json``."""
        torn = None
        if self.tail is not None and self.tail.kind == "torn":
            torn = {"line": self.tail.line, "bytes": self.tail.removed, "reason": self.tail.reason}
        return {
            "path": self.path,
            "status": self.status,
            "exit": self.exit_code,
            "size": self.size,
            "lines": self.lines,
            "envelopes": self.envelopes,
            "messages": self.messages,
            "live_messages": self.live_messages,
            "torn_tail": torn,
            "line": self.line,
            "reason": self.reason,
            "missing_newline": bool(self.tail is not None and self.tail.missing_newline),
        }


def check_file(f: BinaryIO, path: str) -> CheckReport:
    """What ``Session.load`` would do to the open file ``f``, without writing.

    The tail check first; then every non-blank line of what a repair would
    keep is parsed, checked as an envelope and replayed, stopping at the first
    line load would refuse.
    """
    size = f.seek(0, os.SEEK_END)
    tail = tail_check(f, size)
    report = CheckReport(path=path, status="clean", size=size, tail=tail)
    report.lines = count_lines(f, size)
    refused = _first_line_refusal(f, tail)
    if refused is not None:
        status, line, reason = refused
        return _refuse(report, status, line, reason)
    if tail.kind == "corrupt":
        report.status = "corrupt"
        report.line = tail.line
        report.reason = f"{tail.reason}, and the line after it is not whole either"
        return report
    replayer = Replayer()
    seen: set[str] = set()
    first = True
    for number, raw, raw_size in iter_lines(f, tail.keep):
        try:
            env = read_envelope(raw, number, raw_size)
        except EnvelopeError as exc:
            return _refuse(report, "unsupported" if exc.version else "corrupt", number, exc.reason)
        if first:
            first = False
            if env.type != "session-meta":
                return _refuse(report, "corrupt", number, f"the first line is a {env.type!r}, not a session-meta")
        if env.id in seen:
            return _refuse(report, "corrupt", number, f"duplicate id {env.id!r}")
        seen.add(env.id)
        try:
            replayer.apply(env)
        except ReplayError as exc:
            return _refuse(report, "corrupt", number, exc.reason)
        report.envelopes += 1
        if env.type == "message":
            report.messages += 1
    report.live_messages = len(replayer.live)
    if first:
        if tail.kind == "torn":
            return _refuse(report, "corrupt", tail.line, f"{tail.reason}; and with it removed the file is empty")
        return _refuse(report, "corrupt", None, "not a transcript: the file is empty")
    if tail.kind == "torn":
        report.status = "repairable"
    return report


def _first_line_refusal(
    f: BinaryIO, tail: Tail
) -> tuple[Literal["corrupt", "unsupported"], int, str] | None:
    """Why the first non-blank line makes this no transcript at all, or None.

    Not asked when that line is also the torn last one: then the file is a
    transcript whose creation was cut short, and the tail check says so.
    """
    for number, raw, size in iter_lines(f, tail.size):
        if tail.kind == "torn" and number == tail.line:
            return None
        try:
            env = read_envelope(raw, number, size)
        except EnvelopeError as exc:
            if exc.version:
                return "unsupported", number, exc.reason
            return "corrupt", number, f"not a transcript: the first line is {exc.reason}"
        if env.type != "session-meta":
            return "corrupt", number, f"not a transcript: the first line is a {env.type!r}, not a session-meta"
        return None
    return None


def count_lines(f: BinaryIO, size: int) -> int:
    """How many lines the first ``size`` bytes of ``f`` hold, a last one without ``\\n`` included."""
    if size == 0:
        return 0
    n = _count_lines_before(f, size)
    f.seek(size - 1)
    return n if f.read(1) == b"\n" else n + 1


def _refuse(
    report: CheckReport,
    status: Literal["corrupt", "unsupported", "unreadable"],
    line: int | None,
    reason: str,
) -> CheckReport:
    report.status = status
    report.line = line
    report.reason = reason
    return report


# --------------------------------------------------------------------------- tool operations


@dataclass(frozen=True)
class PendingOperation:
    """A dispatched, unsettled tool operation, as ``pending_tool_operations`` reports it."""

    op_id: str
    call_id: Any
    tool: Any
    arguments: Any
    idempotency: Any
    line: int
    dispatched_ts: str
    state: Literal["dispatched", "result-persisted"]
    result_message_id: str | None


class _EnvWithTs(EnvelopeLike, Protocol):
    @property
    def ts(self) -> str: ...


def pending_operations(envelopes: Iterable[_EnvWithTs]) -> list[PendingOperation]:
    """Every dispatched, unsettled operation in ``envelopes``, in dispatch order."""
    dispatched: dict[str, _EnvWithTs] = {}
    results: dict[str, str] = {}  # op id -> first tool message answering its call after it
    open_calls: dict[Any, list[str]] = {}
    for env in envelopes:
        p = env.payload if isinstance(env.payload, dict) else {}
        if env.type == "tool-dispatched":
            dispatched[env.id] = env
            open_calls.setdefault(p.get("call-id"), []).append(env.id)
        elif env.type == "tool-settled":
            dispatched.pop(p.get("op-id"), None)  # type: ignore[arg-type]
        elif env.type == "message" and p.get("role") == "tool":
            for op_id in open_calls.pop(p.get("tool_call_id"), []):
                results.setdefault(op_id, env.id)
    out = []
    for op_id, env in dispatched.items():
        p = env.payload
        result = results.get(op_id)
        out.append(
            PendingOperation(
                op_id=op_id,
                call_id=p.get("call-id"),
                tool=p.get("tool"),
                arguments=p.get("arguments"),
                idempotency=p.get("idempotency"),
                line=env.line,
                dispatched_ts=env.ts,
                state="result-persisted" if result else "dispatched",
                result_message_id=result,
            )
        )
    return out
