"""The reference row reader, in Python: the oracle of the listing's differential tests.

``fleet.read_row`` was once this reader (the core answered most files and left
the rest to it). The core now reads every row; this one stays to check it on
generated files: the two must agree wherever a line is JSON both read, and
where Python's ``json`` reads a line the core's strict reader (the one
``Session.load`` uses) refuses, the core says what load would.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from agent_transcript import Session
from agent_transcript.fleet import TranscriptRow
from agent_transcript.formats import describe, detect_format
from agent_transcript.inspect import content_text, os_error_reason
from agent_transcript.inspect.paths import Descriptor

TITLE_CHARS = 80
# How much of each end is read. A first line longer than HEAD_MAX is not
# parsed (the file is listed as not a transcript); the title is looked for in
# the first HEAD bytes only.
HEAD = 64 * 1024
HEAD_MAX = 1 << 20
TAIL = 16 * 1024
TAIL_MAX = 4 << 20

# Why a row the core read is not clean.
_REASONS: dict[str, str | None] = {"clean": None, "torn tail": "the last line is cut short",
                                   "corrupt": "the last two lines are both damaged"}
#: A damaged last line that does not begin with ``{``: no torn write of this
#: library's (it never writes a leading blank), so load refuses it as damage.
_DAMAGED_END = "the last line is damaged and does not begin with '{'"

_PENDING = {"tool-dispatched": "the last line is a tool call dispatched and never settled",
            "message": "the last line is a tool call no tool message answers"}

# The end of every line this library writes: the canonical key order puts
# ts, type and v last, so a long line's type is read without reading it all.
_CANONICAL_END = re.compile(rb'"ts":"([^"\\]*)","type":"([^"\\]*)","v":([0-9]+)\}[ \t\r]*\Z')


def read_row(path: Path, locks: dict[tuple[int, int], int] | None = None) -> TranscriptRow:
    """The row of one file, from its first and last lines; never raises for a bad file.

    This is the reference reader, in Python; a listing reads most files with
    the core's (the same row, faster) and this one for the rest."""
    try:
        st = os.stat(path)
    except OSError as e:
        reason = "a dangling symlink" if os.path.islink(path) else os_error_reason(e)
        return TranscriptRow(path, "unreadable", 0, 0.0, reason=reason)
    pid = None if locks is None else locks.get((st.st_dev, st.st_ino))
    held = None if locks is None else pid is not None
    base = dict(path=path, size=st.st_size, mtime=st.st_mtime, held=held, writer_pid=pid)
    if not stat.S_ISREG(st.st_mode):
        return TranscriptRow(status="unreadable", reason="not a regular file", **base)  # type: ignore[arg-type]
    if path.name.endswith(".zst"):
        return _archive_row(path, base)
    # Held from the line that opens it, closed by this try's own lines: a
    # Ctrl-C at a finally's line would skip the close.
    fd = Descriptor()
    try:
        fd.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        fields = _read_ends(fd.fd, st.st_size, path)
        fd.close()
    except OSError as e:
        fd.close()
        return TranscriptRow(status="unreadable", reason=os_error_reason(e), **base)  # type: ignore[arg-type]
    except BaseException:
        fd.close()
        raise
    if fields.get("status") == "clean" and _ends_in_a_call(path, fields.get("last_type"), st.st_size):
        fields.update(status="pending", reason=_PENDING[fields["last_type"]])
    return TranscriptRow(**base, **fields)  # type: ignore[arg-type]


def _archive_row(path: Path, base: dict[str, Any]) -> TranscriptRow:
    """The row of an archive, from peek, which decompresses it as a stream to a
    temporary file (its lines are not at the ends of the file on disk)."""
    p = Session.peek(path)
    if p.error is not None:
        why = p.error.removeprefix(f"cannot read {path}: ")
        status = "unreadable" if p.error.startswith("cannot read") else "not a transcript"
        return TranscriptRow(status=status, reason=why, **base)
    meta = p.meta if isinstance(p.meta, dict) else {}
    last = p.envelopes[-1]
    torn = any(w.startswith("line ") for w in p.warnings)
    title = None
    for m in p.messages:
        if m.role == "user":
            title = _clip(content_text(m.content))
            break
    status, reason = ("torn tail", "a line is skipped") if torn else ("clean", None)
    if not torn and (last.type == "tool-dispatched" or last.type == "message" and _makes_calls(last.payload)):
        status, reason = "pending", _PENDING[last.type]
    return TranscriptRow(status=status, title=title,
                         agent=_str(meta.get("agent")), model=_str(meta.get("model")),
                         started=p.envelopes[0].ts, last_activity=last.ts, last_type=last.type,
                         reason=reason, **base)


def _makes_calls(payload: Any) -> bool:
    """``payload`` is an assistant message's that makes a tool call (an entry
    of its ``tool_calls`` with a string ``id``): on a last line, one no tool
    message answers."""
    if not isinstance(payload, dict) or payload.get("role") != "assistant":
        return False
    calls = payload.get("tool_calls")
    return isinstance(calls, list) and any(isinstance(c, dict) and isinstance(c.get("id"), str)
                                           for c in calls)


def _ends_in_a_call(path: Path, last_type: str | None, size: int) -> bool:
    """Whether the whole last line of a clean transcript is a dispatch (never
    settled: nothing follows it) or a message making a tool call (nothing
    answers it). Only a message's last line is read, and parsed only when it
    names ``tool_calls``; a line longer than 4 MiB is not looked into."""
    if last_type == "tool-dispatched":
        return True
    if last_type != "message":
        return False
    fd = Descriptor()
    try:
        fd.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        end = _skip_blank_back(fd.fd, size, 0)
        start = _line_start(fd.fd, end, 0)
        raw = os.pread(fd.fd, end - start, start) if end - start <= TAIL_MAX else b""
        fd.close()
    except OSError:
        fd.close()
        return False
    except BaseException:
        fd.close()
        raise
    if b'"tool_calls"' not in raw:
        return False
    env = _parse(raw)
    return env is not None and _makes_calls(env.get("payload"))


def _clip(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _read_ends(fd: int, size: int, path: Path) -> dict[str, Any]:
    head = os.pread(fd, HEAD, 0)
    body = head.lstrip(b" \t\r\n")
    if not body:
        why = "the file is empty" if not head else "the first line is blank as far as it was read"
        return {"status": "not a transcript", "reason": why}
    start = len(head) - len(body)
    end = head.find(b"\n", start)
    if end < 0 and len(head) == HEAD:
        more = os.pread(fd, HEAD_MAX, 0)
        end = more.find(b"\n", start)
        if end < 0 and len(more) == HEAD_MAX:
            return {"status": "not a transcript", "reason": "the first line is longer than 1 MiB"}
        head = more
    first_raw = head[start: end if end >= 0 else len(head)]
    first = _parse(first_raw)
    if first is None or first.get("type") != "session-meta" or "id" not in first:
        try:
            other = detect_format(path)  # the importers' own test, from the first lines
        except OSError:
            other = None
        if other:
            return {"status": other, "reason": f"{describe(other)}, which import reads"}
        return {"status": "not a transcript", "reason": "the first line is not a session-meta"}
    payload = first.get("payload")
    meta: dict[str, Any] = payload if isinstance(payload, dict) else {}
    out: dict[str, Any] = {
        "started": _str(first.get("ts")),
        "agent": _str(meta.get("agent")),
        "model": _str(meta.get("model")),
        "title": _title(head, end),
    }
    if first.get("v") != 1:
        return {**out, "status": "unsupported version", "reason": f"version {first.get('v')!r}"}
    last, brace = _last_lines(fd, size, end + 1 if end >= 0 else size)
    status, reason = "clean", None
    env: dict[str, Any] | None = first
    if last:
        env = last[0]
        if env is None and not brace:
            status, reason = "corrupt", _DAMAGED_END
        elif env is None:
            env = last[1] if len(last) > 1 else first
            status, reason = ("torn tail", "the last line is cut short") if env is not None else \
                ("corrupt", "the last two lines are both damaged")
    out.update(status=status, reason=reason)
    if env is not None:
        out.update(last_type=_str(env.get("type")), last_activity=_str(env.get("ts")))
    return out


def _last_lines(fd: int, size: int, floor: int) -> tuple[list[dict[str, Any] | None], bool]:
    """The last two non-blank lines after offset ``floor`` (the end of the first
    line), newest first, each parsed as far as needed (``type`` and ``ts``), or
    None when it does not parse; fewer when there are fewer. And whether the
    last one begins with ``{`` (true when its start was not found)."""
    out: list[dict[str, Any] | None] = []
    brace = True
    end = size
    while len(out) < 2:
        end = _skip_blank_back(fd, end, floor)
        if end <= floor:
            break
        read = min(TAIL, end - floor)
        block = os.pread(fd, read, end - read)
        nl = block.rfind(b"\n")
        if nl >= 0 or end - read == floor:
            raw = block[nl + 1:]
            if not out:
                brace = raw[:1] == b"{"
            out.append(_parse_line(raw))
            end -= len(raw)
            continue
        # A line longer than the block: its end is enough for a canonical one.
        start = _line_start(fd, end, floor)
        if not out and (start == floor or os.pread(fd, 1, start - 1) == b"\n"):
            brace = os.pread(fd, 1, start) == b"{"
        m = _CANONICAL_END.search(block)
        if m:
            out.append(_fields(m))
        else:
            out.append(_parse(os.pread(fd, end - start, start)) if end - start <= TAIL_MAX else None)
        if start > floor and os.pread(fd, 1, start - 1) != b"\n":
            break  # the search stopped short of the line's start: read no further
        end = start
    return out, brace


def _skip_blank_back(fd: int, end: int, floor: int) -> int:
    """``end`` moved back over blanks and newlines, no further than ``floor``."""
    while end > floor:
        read = min(TAIL, end - floor)
        block = os.pread(fd, read, end - read)
        kept = block.rstrip(b" \t\r\n")
        end -= read - len(kept)
        if kept:
            break
    return end


def _line_start(fd: int, end: int, least: int) -> int:
    """The offset of the start of the line that ends at ``end`` (searching back
    at most TAIL_MAX bytes; beyond that, where the search stopped)."""
    pos = end
    floor = max(least, end - TAIL_MAX)
    while pos > floor:
        read = min(TAIL, pos - floor)
        block = os.pread(fd, read, pos - read)
        nl = block.rfind(b"\n")
        if nl >= 0:
            return pos - read + nl + 1
        pos -= read
    return floor


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    m = _CANONICAL_END.search(raw)
    if m and raw.startswith(b'{"id":"'):
        return _fields(m)
    return _parse(raw)


def _fields(m: re.Match[bytes]) -> dict[str, Any] | None:
    """A canonical end's members; None when one is not UTF-8, a line load refuses."""
    try:
        return {"ts": m.group(1).decode(), "type": m.group(2).decode(), "v": int(m.group(3))}
    except UnicodeDecodeError:
        return None


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _title(head: bytes, first_end: int) -> str | None:
    """The first user message's text among the whole lines of ``head``, clipped.

    Found by searching for a user role, not by splitting every line: only the
    lines that have one are parsed."""
    if first_end < 0:
        return None
    at = first_end + 1
    while True:
        hit = head.find(b'"user"', at)
        if hit < 0:
            return None
        start = head.rfind(b"\n", 0, hit) + 1
        end = head.find(b"\n", hit)
        if end < 0:
            return None  # the line goes on past the head: not whole here
        at = end + 1
        env = _parse(head[start:end])
        payload = env.get("payload") if env else None
        if env and env.get("type") == "message" and isinstance(payload, dict) and payload.get("role") == "user":
            text = _clip(content_text(payload.get("content")))
            if text is not None:
                return text


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


