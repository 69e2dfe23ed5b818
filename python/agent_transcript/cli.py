"""The ``agent-transcript`` command line: show, check, repair, stats, follow, demo, bench.

Every command but ``repair`` and ``demo`` is read-only: it never locks,
repairs or writes, so it is safe on a transcript a writer holds and on a
damaged one. What load would do (``check``) and what replay makes of a file
(``show --replayed``, live counts, what a compaction replaced, pending
operations) are the core's answers, read through ``_inspect``; a file load
refuses is shown from peek's lenient index, with the refusal said. Only the
envelopes a command prints are decoded, so ``show --tail`` and ``stats`` take
about as long as a load on a big file. Bad input (a missing file, a
directory, not a transcript, a version from the future, ...) is one line on
stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import shutil
import stat
import sys
import textwrap
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TextIO

from . import _inspect
from ._inspect import CheckReport, Reading
from .envelope import Envelope
from .errors import CorruptTranscript, SessionLocked, TranscriptError, UnsupportedVersion
from .message import Message

if TYPE_CHECKING:
    from . import Session

__all__ = ["main", "CliError"]

PROG = "agent-transcript"


class CliError(Exception):
    """Bad input or a refused operation: one line on stderr, and an exit status (2)."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


def _session() -> type[Session]:
    from . import Session

    return Session


# --------------------------------------------------------------------------- output


class Style:
    """ANSI colour, or nothing: ``Style(False)`` returns every text unchanged."""

    _CODES = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "magenta": "35",
        "cyan": "36",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *names: str) -> str:
        """``text`` in the named styles (``"bold"``, ``"red"``, ...) when colour is on."""
        if not self.enabled or not names or not text:
            return text
        codes = ";".join(self._CODES[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"


def _colour_enabled(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width() -> int:
    return max(40, min(shutil.get_terminal_size((100, 24)).columns, 200))


def _human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{n} B"  # not reached


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def _compact(value: Any) -> str:
    """A JSON value on one line, readably spaced."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def _local_time(ts: str) -> datetime | None:
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).astimezone()
    except (ValueError, TypeError, OverflowError, OSError):
        return None


def _write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


# --------------------------------------------------------------------------- opening


def _describe_os_error(exc: OSError, path: str) -> str:
    """One line for an ``OSError`` about ``path``: what a person needs, no errno soup."""
    if isinstance(exc, FileNotFoundError):
        return f"{path}: no such file"
    if isinstance(exc, IsADirectoryError):
        return f"{path}: is a directory, not a transcript"
    if isinstance(exc, PermissionError):
        return f"{path}: permission denied"
    if isinstance(exc, NotADirectoryError):
        return f"{path}: a parent of this path is not a directory"
    reason = exc.strerror or str(exc)
    return f"{path}: {reason}"


def _require_file(path: str) -> os.stat_result:
    """The stat of ``path`` if it is a regular file this process may read.

    Raises:
        CliError: missing, a directory, not a regular file, or unreadable.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise CliError(f"{path}: is a directory, not a transcript")
    if not stat.S_ISREG(st.st_mode):
        raise CliError(f"{path}: not a regular file")
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    return st


def _read(path: str) -> Reading:
    """``path`` read for showing: what load makes of it, or peek's lenient index
    of a file load refuses (see :func:`agent_transcript._inspect.read`).

    Raises:
        CliError: the file is missing, unreadable, not a transcript, or holds an
            envelope version this does not read.
    """
    _require_file(path)
    try:
        reading = _inspect.read(path, lenient=True)
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    refusal = reading.refusal
    if refusal is not None and refusal.status == "unsupported":
        # Not damage but a file this cannot show: say so, as load would.
        where = f"{path}:{refusal.line}" if refusal.line else path
        raise CliError(f"{where}: {refusal.reason}")
    if reading.error is not None:
        raise CliError(f"{path}: not a transcript: {reading.error}")
    return reading


# --------------------------------------------------------------------------- rendering


def _content_text(content: Any) -> str | None:
    """A message's content as text to read: parts joined, non-text parts named."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict):
                kind = part.get("type")
                if kind == "text" and isinstance(part.get("text"), str):
                    pieces.append(part["text"])
                else:
                    pieces.append(f"[{kind or 'part'}]")
            else:
                pieces.append(_compact(part))
        return "\n".join(pieces)
    return _compact(content)


def _content_size(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content.encode("utf-8", "surrogatepass"))
    return len(json.dumps(content, ensure_ascii=False).encode("utf-8", "surrogatepass"))


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


def _printable(text: str) -> str:
    """``text`` with control characters made visible (``\\x1b``), newlines and tabs kept.

    A transcript holds what tools and models wrote; an escape sequence in it
    must not drive the reader's terminal.
    """
    return text.replace("\r\n", "\n").translate(_CONTROL)


def _sanitized(value: Any) -> Any:
    """``value`` with every string in it (keys too) passed through :func:`_printable`."""
    if isinstance(value, str):
        return _printable(value)
    if isinstance(value, dict):
        return {_printable(str(k)): _sanitized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sanitized(v) for v in value]
    return value


@dataclass(frozen=True)
class _View:
    """An envelope as it is shown: every string in it printable."""

    id: str
    type: str
    ts: str
    v: Any
    payload: Any
    line: int

    @classmethod
    def of(cls, env: Any) -> _View:
        return cls(_printable(str(env.id)), _printable(str(env.type)), _printable(str(env.ts)), env.v, _sanitized(env.payload), env.line)


def _calls(payload: dict[str, Any]) -> list[Any]:
    calls = payload.get("tool_calls")
    return calls if isinstance(calls, list) else []


def _tool_call_parts(call: Any) -> tuple[str, str, str]:
    """``(id, name, arguments)`` of an OpenAI-shaped tool call, as text."""
    if not isinstance(call, dict):
        return "?", "?", _compact(call)
    fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
    args: Any = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = _compact(json.loads(args))
        except ValueError:
            pass
    else:
        args = _compact(args)
    return str(call.get("id", "?")), str(fn.get("name", "?")), str(args)


class Renderer:
    """Turns envelopes into readable blocks.

    Over a :class:`~agent_transcript._inspect.Reading` (``show``),
    :meth:`block_at` renders envelope ``i`` and finds what its block needs in
    the reading — a settle's dispatch, the tool a call went to, what replay
    did at a compaction or an elision, what later lines did to it — decoding
    only those envelopes. Streaming (``follow``), :meth:`block` renders each
    envelope as it comes and remembers the little it needs to join later ones
    up (dispatches, tool calls, message and section lines); what only replay
    knows is not shown there.
    """

    INDENT = "      "
    #: How far back (in envelopes) to look for the message that made a tool call.
    CALL_LOOKBACK = 200

    def __init__(
        self,
        style: Style,
        width: int,
        *,
        full: bool = False,
        reading: Reading | None = None,
    ) -> None:
        self.s = style
        self.width = width
        self.full = full
        self.reading = reading
        self.transcript = reading.transcript if reading is not None else None
        self.dispatches: dict[str, Envelope] = {}
        self.message_lines: dict[str, int] = {}
        self.call_tools: dict[str, str] = {}
        self.section_lines: dict[str, int] = {}
        self.last_day: str | None = None

    # -- text helpers

    def _wrap(self, text: str, *, max_lines: int = 8, style: tuple[str, ...] = ()) -> list[str]:
        avail = max(20, self.width - len(self.INDENT))
        out: list[str] = []
        source = text.splitlines() or [""]
        for para in source:
            para = para.expandtabs(4).rstrip()
            body = para.lstrip(" ")
            lead = para[: len(para) - len(body)]
            if len(lead) > avail // 2:
                lead = lead[: avail // 2]
            wrapped = textwrap.wrap(body, avail, initial_indent=lead, subsequent_indent=lead) or [lead]
            out.extend(wrapped)
        if not self.full and len(out) > max_lines:
            hidden = len(out) - max_lines
            out = out[:max_lines]
            out.append(self.s(f"… {_plural(hidden, 'more line')} ({len(text):,} chars; --full shows all)", "dim"))
            return [self.INDENT + (self.s(line, *style) if i < max_lines else line) for i, line in enumerate(out)]
        return [self.INDENT + self.s(line, *style) for line in out]

    def _field(self, label: str, value: str) -> str:
        return f"{self.INDENT}{self.s(label, 'dim')} {value}"

    def _one_line(self, value: str) -> str:
        if self.full:
            return value
        return _clip(value, max(20, self.width - len(self.INDENT) - 12))

    def _head(self, env: Any, kind_style: tuple[str, ...], detail: str) -> list[str]:
        out: list[str] = []
        when = _local_time(env.ts)
        if when is not None:
            day = when.strftime("%Y-%m-%d")
            if day != self.last_day:
                self.last_day = day
                out.append(self.s(f"── {day} ({when.strftime('%Z')}) ──", "dim"))
            clock = when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d}"
        else:
            clock = _clip(str(env.ts), 12).ljust(12)
        number = self.s(f"{env.line:>5}", "dim")
        kind = self.s(env.type, *kind_style)
        out.append(f"{number} {self.s(clock, 'dim')}  {kind}{'  ' + detail if detail else ''}")
        return out

    # -- lookups: what a block needs from elsewhere in the file

    def _dispatch_of(self, op_id: Any) -> Envelope | None:
        """The tool-dispatched envelope of operation ``op_id``, or None."""
        if not isinstance(op_id, str):
            return None
        if op_id in self.dispatches:
            return self.dispatches[op_id]
        r = self.reading
        at = None if r is None else r.index_of(op_id)
        if r is None or at is None or r.type_name(at) != "tool-dispatched":
            return None
        env = r.event(at)
        self.dispatches[op_id] = env
        return env

    def _tool_of_call(self, call_id: str, index: int | None) -> str | None:
        """The tool the assistant message before envelope ``index`` called as ``call_id``."""
        if call_id in self.call_tools:
            return self.call_tools[call_id]
        r = self.reading
        if r is None or index is None:
            return None
        for j in range(index - 1, max(-1, index - 1 - self.CALL_LOOKBACK), -1):
            if r.role(j) != "assistant":
                continue
            p = r.payload(j)
            for call in _calls(p if isinstance(p, dict) else {}):
                cid, name, _ = _tool_call_parts(call)
                self.call_tools.setdefault(cid, name)
            if call_id in self.call_tools:
                return self.call_tools[call_id]
        return None

    def _line_of(self, envelope_id: Any) -> int | None:
        """The line of the envelope ``envelope_id`` (a message, for what a compaction names)."""
        if not isinstance(envelope_id, str):
            return None
        if envelope_id in self.message_lines:
            return self.message_lines[envelope_id]
        r = self.reading
        at = None if r is None else r.index_of(envelope_id)
        return None if r is None or at is None else r.line_number(at)

    def _section_line(self, digest: Any) -> int | None:
        """The line carrying the text of the run-context section ``digest``."""
        if not isinstance(digest, str):
            return None
        if digest in self.section_lines:
            return self.section_lines[digest]
        t = self.transcript
        at = None if t is None else t.section_index(digest)
        return None if t is None or at is None else t.line_number(at)

    def _later(self, index: int | None) -> tuple[int | None, int | None, int | None]:
        """Line numbers of what replay did later to envelope ``index``: the settle
        of a dispatch, the first elision of a message, the compaction that replaced it."""
        t = self.transcript
        if t is None or index is None:
            return None, None, None
        settled, elided, compacted = t.later(index)
        return (
            None if settled is None else t.line_number(settled),
            None if elided is None else t.line_number(elided),
            None if compacted is None else t.line_number(compacted),
        )

    def _pending_state(self, op_id: str) -> str | None:
        """The state load reports for pending operation ``op_id``, or None."""
        ops = self.reading.pending() if self.reading is not None else None
        for op in ops or ():
            if op.op_id == op_id:
                return op.state
        return None

    # -- the block

    def block_at(self, index: int) -> list[str]:
        """The lines that show envelope ``index`` of the reading."""
        if self.reading is None:
            raise ValueError("block_at needs a reading")
        return self._render(self.reading.event(index), index)

    def block(self, env: Envelope, *, show: bool = True) -> list[str]:
        """The lines that show ``env``, streamed (none when ``show`` is False).

        What later blocks need of it is remembered either way.
        """
        self._remember(env)
        return self._render(env, None) if show else []

    def _remember(self, env: Envelope) -> None:
        p = env.payload if isinstance(env.payload, dict) else {}
        if env.type == "message":
            self.message_lines[env.id] = env.line
            for call in _calls(p):
                call_id, name, _ = _tool_call_parts(call)
                self.call_tools[call_id] = name
        elif env.type == "tool-dispatched":
            self.dispatches[env.id] = env
        elif env.type == "run-context":
            for sec in p["sections"] if isinstance(p.get("sections"), list) else []:
                if isinstance(sec, dict) and "text" in sec and isinstance(sec.get("digest"), str):
                    self.section_lines.setdefault(sec["digest"], env.line)

    def _render(self, env: Envelope, index: int | None) -> list[str]:
        handler: Callable[[_View, Envelope, int | None], list[str]] = (
            getattr(self, "_" + env.type.replace("-", "_")) if env.type in _KNOWN else self._unknown
        )
        lines = handler(_View.of(env), env, index)
        refusal = self.reading.refusal if self.reading is not None else None
        if index is not None and refusal is not None and refusal.line == env.line:
            lines.append(self._field("!!", self.s(f"load refuses this: {_printable(refusal.reason)}", "red", "bold")))
        return lines

    def _session_meta(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        out = self._head(v, ("bold",), "")
        payload = v.payload
        if isinstance(payload, dict):
            for key, value in payload.items():
                text = value if isinstance(value, str) else _compact(value)
                out.append(self._field(f"{key}:", self._one_line(text)))
        else:
            out.append(self._field("meta:", self._one_line(_compact(payload))))
        return out

    def _message(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        return self.message_lines_for(v, v.payload if isinstance(v.payload, dict) else {}, index=index)

    def message_lines_for(
        self,
        env: Any,
        p: dict[str, Any],
        *,
        index: int | None = None,
        replayed_note: str = "",
        later: bool = True,
    ) -> list[str]:
        """The block of one message payload ``p`` (also used for ``--replayed``).

        ``index`` is its envelope index in the reading (to find the tool a
        call went to); ``later`` adds what later lines did to it.
        """
        role = str(p.get("role", "?"))
        bits = [self.s(role, *_ROLE_STYLE.get(role, ("bold",)))]
        if p.get("name"):
            bits.append(f"name={p['name']}")
        if p.get("tool_call_id"):
            tool = self._tool_of_call(str(p["tool_call_id"]), index)
            bits.append(f"answers {p['tool_call_id']}" + (f" ({_printable(tool)})" if tool else ""))
        flags = [f for f in ("sysprompt", "sticky") if p.get(f)]
        if p.get("depth") is not None:
            flags.append(f"depth={p['depth']}")
        if flags:
            bits.append(self.s("[" + ", ".join(flags) + "]", "magenta"))
        extras = {k: v for k, v in p.items() if k not in _MESSAGE_KEYS}
        for key, value in extras.items():
            bits.append(self.s(f"{key}={value if isinstance(value, str) else _compact(value)}", "dim"))
        if replayed_note:
            bits.append(self.s(replayed_note, "yellow"))
        if later:
            _, elided_line, compacted_line = self._later(index)
            if elided_line:
                bits.append(self.s(f"(elided at line {elided_line})", "yellow"))
            if compacted_line:
                bits.append(self.s(f"(compacted away at line {compacted_line})", "yellow"))
        out = self._head(env, ("cyan",), "  ".join(bits))
        text = _content_text(p.get("content"))
        if text is None:
            if not p.get("tool_calls"):
                out.append(self.INDENT + self.s("(no content)", "dim"))
        else:
            out.extend(self._wrap(text))
        for call in _calls(p):
            call_id, name, args = _tool_call_parts(call)
            out.append(f"{self.INDENT}{self.s('->', 'yellow')} {self.s(name, 'bold')} {self._one_line(args)}  {self.s(call_id, 'dim')}")
        return out

    def _grants(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        out = self._head(v, ("green",), "snapshot (the last one wins)")
        snapshot = v.payload.get("grants") if isinstance(v.payload, dict) else v.payload
        out.extend(self._wrap(_compact(snapshot), max_lines=4))
        return out

    def _compaction(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        before, after = p.get("tokens-before"), p.get("tokens-after")
        detail = f"tokens {before:,} -> {after:,}" if isinstance(before, int) and isinstance(after, int) else ""
        if p.get("fallback"):
            detail += "  " + self.s("[fallback: hard-trimmed, no summary model]", "red")
        out = self._head(v, ("magenta", "bold"), detail)
        through = raw.payload.get("replaces-through-id") if isinstance(raw.payload, dict) else None
        through_line = self._line_of(through)
        t = self.transcript
        if t is not None and index is not None:
            replaced, kept = t.compaction_effect(index)
            what = _plural(len(replaced), "message")
            lines = sorted(t.line_number(i) for i in replaced)
            if lines:
                what += f" ({_line_span(lines)})"
            out.append(self._field("replaced", what + (f", through line {through_line}" if through_line else "")))
            if kept:
                spans = _line_span([t.line_number(i) for i in kept])
                out.append(self._field("kept", f"{_plural(len(kept), 'sticky message')} ({spans})"))
        else:
            where = f"line {through_line}" if through_line else str(p.get("replaces-through-id"))
            out.append(self._field("replaced", f"through {where}"))
        out.append(self._field("summary", "").rstrip())
        out.extend(self._wrap(str(p.get("summary", "")), max_lines=4))
        return out

    def _elision(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        items = v.payload.get("items") if isinstance(v.payload, dict) else None
        items = items if isinstance(items, list) else []
        out = self._head(v, ("magenta",), _plural(len(items), "item"))
        if self.reading is not None and self.transcript is not None and index is not None:
            effect = self.reading.elision_effect(index)
            for (target, before), item in zip(effect, items):
                role = _printable(str(before.get("role")))
                call = before.get("tool_call_id")
                who = role + (f" {_printable(str(call))}" if call else "")
                size = _content_size(before.get("content"))
                stub = item.get("stub") if isinstance(item, dict) else None
                out.append(
                    self._field(
                        f"line {self.transcript.line_number(target)}",
                        f"{who}: {size:,} bytes of content -> stub {self._one_line(_compact(stub))}",
                    )
                )
        else:
            for item in items:
                if isinstance(item, dict):
                    out.append(self._field(str(item.get("id")), f"-> stub {self._one_line(_compact(item.get('stub')))}"))
        return out

    def _tool_dispatched(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        bits = [self.s(str(p.get("tool")), "bold"), self.s(str(p.get("call-id")), "dim")]
        if p.get("round") is not None:
            bits.append(f"round {p['round']}")
        if p.get("idempotency") is not None:
            bits.append(f"idempotency={p['idempotency']}")
        out = self._head(v, ("yellow",), "  ".join(bits))
        args = p.get("arguments")
        out.append(self._field("arguments", self._one_line(args if isinstance(args, str) else _compact(args))))
        out.append(self._field("op", self.s(v.id, "dim") + (f"  run {p['run-id']}" if p.get("run-id") else "")))
        settled_line, _, _ = self._later(index)
        if settled_line is not None:
            out.append(self._field("settled", f"at line {settled_line}"))
        elif self.transcript is not None and index is not None:
            # Load's own answer: pending, and whether its result is in the file.
            if self._pending_state(raw.id) == "result-persisted":
                what = "never settled, but its result is in the file (result-persisted: it completed)"
            else:
                what = "never settled, and no result: it may or may not have run (dispatched)"
            out.append(self._field("!!", self.s(what, "red", "bold")))
        return out

    def _tool_settled(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        op_id = raw.payload.get("op-id") if isinstance(raw.payload, dict) else None
        op = self._dispatch_of(op_id)
        dp = _sanitized(op.payload) if op is not None and isinstance(op.payload, dict) else {}
        outcome = str(p.get("outcome"))
        style = {"completed": ("green",), "failed": ("red", "bold"), "outcome-unknown": ("yellow", "bold")}.get(outcome, ("red",))
        bits = [self.s(str(dp.get("tool", "?")), "bold"), self.s(outcome, *style)]
        duration = p.get("duration")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            bits.append(_seconds(float(duration)))
        out = self._head(v, ("yellow",), "  ".join(bits))
        if op is not None:
            lag = ""
            t0, t1 = _local_time(op.ts), _local_time(v.ts)
            if t0 is not None and t1 is not None:
                lag = f", {_seconds((t1 - t0).total_seconds())} later"
            out.append(self._field("dispatched", f"at line {op.line} ({dp.get('call-id')}){lag}"))
        elif self.reading is None or self.transcript is not None:
            out.append(self._field("!!", self.s(f"settles {p.get('op-id')!r}, which this file never dispatched", "red")))
        for key in ("reason", "error"):
            if p.get(key) is not None:
                value = p[key]
                out.append(self._field(key, self._one_line(value if isinstance(value, str) else _compact(value))))
        art = p.get("artifact")
        if isinstance(art, dict):
            size = art.get("bytes")
            elided = art.get("elided-chars")
            desc = f"{art.get('file')}"
            if isinstance(size, int):
                desc += f"  {size:,} bytes"
            if isinstance(elided, int):
                desc += f", {elided:,} chars kept out of the conversation"
            out.append(self._field("artifact", desc))
        if p.get("result-digest"):
            out.append(self._field("result", self.s(str(p["result-digest"]), "dim")))
        return out

    def _run_context(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        sections: list[Any] = p["sections"] if isinstance(p.get("sections"), list) else []
        out = self._head(v, ("blue",), "")
        facts: list[Any] = p["facts"] if isinstance(p.get("facts"), list) else []
        if facts:
            shown = []
            for fact in facts:
                if isinstance(fact, list) and len(fact) == 2:
                    value = fact[1] if isinstance(fact[1], str) else _compact(fact[1])
                    shown.append(f"{fact[0]}={value}")
                else:
                    shown.append(_compact(fact))
            out.append(self._field("facts", self._one_line("  ".join(shown))))
        raw_sections = raw.payload.get("sections") if isinstance(raw.payload, dict) else None
        for k, sec in enumerate(sections):
            if not isinstance(sec, dict):
                continue
            name = sec.get("name")
            if "text" in sec:
                text = str(sec.get("text"))
                out.append(self._field("section", f"{self.s(str(name), 'bold')}: {len(text):,} chars"))
                if self.full:
                    out.extend(self._wrap(text))
            else:
                raw_sec = raw_sections[k] if isinstance(raw_sections, list) and k < len(raw_sections) else {}
                line = self._section_line(raw_sec.get("digest") if isinstance(raw_sec, dict) else None)
                where = f"line {line}" if line else f"envelope {sec.get('rendered-in')}"
                out.append(self._field("section", f"{self.s(str(name), 'bold')}: unchanged, text at {where}"))
        return out

    def _unknown(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        out = self._head(v, ("red",), self.s("(a type this version does not know; kept as it is)", "dim"))
        out.extend(self._wrap(_compact(v.payload), max_lines=3))
        return out


_KNOWN = {"session-meta", "message", "grants", "compaction", "elision", "tool-dispatched", "tool-settled", "run-context"}
_MESSAGE_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth"}
_ROLE_STYLE = {
    "system": ("magenta", "bold"),
    "user": ("green", "bold"),
    "assistant": ("cyan", "bold"),
    "tool": ("yellow", "bold"),
}


def _seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f} ms" if s >= 0.001 else f"{s * 1000:.2f} ms"
    if s < 120:
        return f"{s:.2f} s"
    return f"{s / 60:.1f} min"


def _line_span(lines: Sequence[int]) -> str:
    if not lines:
        return "no lines"
    lines = sorted(lines)
    if len(lines) == 1:
        return f"line {lines[0]}"
    if lines[-1] - lines[0] + 1 == len(lines):
        return f"lines {lines[0]}-{lines[-1]}"
    if len(lines) <= 6:
        return "lines " + ", ".join(map(str, lines))
    return f"lines {lines[0]}…{lines[-1]}"


# --------------------------------------------------------------------------- show


def _envelope_json(env: Any) -> dict[str, Any]:
    return {"line": env.line, "id": env.id, "type": env.type, "ts": env.ts, "v": env.v, "payload": env.payload}


def _select(reading: Reading, types: list[str] | None, tail: int | None) -> list[int]:
    """Indices of the envelopes to print, in file order; found in the index, none decoded."""
    if types:
        chosen: Sequence[int] = sorted(set().union(*(reading.indices_of_type(t) for t in types)))
    else:
        chosen = range(len(reading))
    if tail is not None:
        chosen = chosen[-tail:] if tail > 0 else []
    return list(chosen)


def _types_arg(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for value in values:
        out.extend(t.strip() for t in value.split(",") if t.strip())
    return out


def _grants(reading: Reading) -> tuple[Any, int | None]:
    """The grants snapshot load keeps (the last line's) and that line's number, or ``(None, None)``."""
    at = reading.grants_index()
    if at is None:
        return None, None
    payload = reading.payload(at)
    return (payload.get("grants") if isinstance(payload, dict) else None), reading.line_number(at)


def _op_line(reading: Reading, op_id: str) -> int | None:
    at = reading.index_of(op_id)
    return None if at is None else reading.line_number(at)


def _header(reading: Reading, s: Style, width: int) -> list[str]:
    out = [s(_printable(str(Path(reading.path))), "bold")]

    def row(label: str, value: str) -> None:
        out.append(f"  {s(label.ljust(9), 'dim')} {value}")

    meta = _sanitized(reading.meta)
    if isinstance(meta, dict) and meta:
        text = "  ".join(f"{k}={v if isinstance(v, str) else _compact(v)}" for k, v in meta.items())
        row("meta", _clip(text, max(20, width - 12)))
    n = len(reading)
    row("size", f"{_human_bytes(reading.size)} ({reading.size:,} bytes), {_plural(reading.lines, 'line')}, {_plural(n, 'envelope')}")
    written = sum(count for _, count in reading.role_counts())
    t = reading.transcript
    if t is not None:
        row("messages", f"{written:,} written, {t.live_len():,} live (what the model is sent next)")
    else:
        row("messages", f"{written:,} written; " + s(f"replay stops: {_printable(str(reading.refusal))}", "red"))
    if n:
        first, last = _local_time(reading.event(0).ts), _local_time(reading.event(n - 1).ts)
        if first and last:
            span = _seconds((last - first).total_seconds())
            row("time", f"{first.strftime('%Y-%m-%d %H:%M:%S %Z')} -> {last.strftime('%Y-%m-%d %H:%M:%S %Z')} ({span})")
    grants, grants_line = _grants(reading)
    if grants_line is not None:
        row("grants", _clip(_printable(_compact(grants)), max(20, width - 30)) + s(f"  (line {grants_line})", "dim"))
    else:
        row("grants", s("none", "dim"))
    pending = reading.pending()
    if pending is None:
        row("pending", s("unknown: load refuses this file", "yellow"))
    elif pending:
        row("pending", s(_plural(len(pending), "tool operation") + " never settled:", "yellow", "bold"))
        for op in pending:
            out.append(f"            {_printable(f'{op.tool} {op.call_id}')} {s(op.state, 'yellow')} (line {_op_line(reading, op.op_id)})")
    for warning in reading.warnings:
        row("warning", s(_printable(warning), "yellow"))
    return out


def cmd_show(args: argparse.Namespace) -> int:
    """``show PATH``: the transcript for a person (or ``--json``)."""
    path: str = args.path
    types = _types_arg(args.type)
    if args.tail is not None and args.tail < 0:
        raise CliError("--tail takes a number >= 0")
    reading = _read(path)
    if args.replayed:
        return _show_replayed(reading, args, types)
    chosen = _select(reading, types, args.tail)
    if args.json:
        _write_json(
            {
                "path": str(Path(path)),
                "size": reading.size,
                "meta": reading.meta,
                "grants": _grants(reading)[0],
                "warnings": list(reading.warnings),
                "envelopes": [_envelope_json(reading.event(i)) for i in chosen],
            }
        )
        return 0
    s = Style(_colour_enabled(args.color, sys.stdout))
    width = _width()
    out = _header(reading, s, width)
    out.append("")
    if types or args.tail is not None:
        out.append(s(f"showing {_plural(len(chosen), 'envelope')} of {len(reading):,}", "dim"))
    sys.stdout.write("\n".join(out) + "\n")
    renderer = Renderer(s, width, full=args.full, reading=reading)
    for i in chosen:
        block = renderer.block_at(i)
        if block:
            sys.stdout.write("\n".join(block) + "\n")
    return 0


def _show_replayed(reading: Reading, args: argparse.Namespace, types: list[str] | None) -> int:
    """The messages load would hand back (the core's replay), found without loading."""
    t = reading.transcript
    if t is None:
        raise CliError(_report_line(_inspect.check_report(reading)) + "; there is no replay to show")
    torn_line = reading.tail.line if reading.tail.kind == "torn" else None
    live = t.live()
    chosen = [k for k, (_, _, role) in enumerate(live) if not types or role in types]
    if args.tail is not None:
        chosen = chosen[-args.tail :] if args.tail > 0 else []
    if args.json:
        messages = []
        for k in chosen:
            env = reading.event(live[k][0])
            message = Message.from_dict(reading.live_message(k))
            messages.append({"id": env.id, "line": env.line, **message.to_dict()})
        _write_json(
            {
                "path": str(Path(reading.path)),
                "size": reading.size,
                "meta": reading.meta,
                "grants": _grants(reading)[0],
                "torn_tail": None if torn_line is None else {"line": torn_line, "bytes": reading.tail.removed},
                "messages": messages,
            }
        )
        return 0
    s = Style(_colour_enabled(args.color, sys.stdout))
    renderer = Renderer(s, _width(), full=args.full, reading=reading)
    written = sum(count for _, count in reading.role_counts())
    out = [
        s(_printable(str(Path(reading.path))), "bold"),
        s(
            f"  what the model would be sent next: {_plural(len(live), 'message')} "
            f"(from {_plural(written, 'message line')}), compaction and elision applied",
            "dim",
        ),
    ]
    if torn_line is not None:
        out.append(s(f"  line {torn_line} is a torn tail that load would remove; it is not in this replay", "yellow"))
    out.append("")
    for k in chosen:
        index, stub_at, _ = live[k]
        env = reading.event(index)
        note = ""
        if reading.type_name(index) == "compaction":
            note = f"(the compaction summary, line {env.line})"
        elif stub_at is not None:
            note = f"(content elided at line {reading.line_number(stub_at)})"
        shown = _Shown(id=_printable(env.id), type="message", ts=env.ts, line=env.line)
        message = _sanitized(Message.from_dict(reading.live_message(k)).to_dict())
        out.extend(renderer.message_lines_for(shown, message, index=index, replayed_note=note, later=False))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


@dataclass(frozen=True)
class _Shown:
    id: str
    type: str
    ts: str
    line: int


# --------------------------------------------------------------------------- check


def _report_line(r: CheckReport) -> str:
    """One line for a check report, ``path[:line]: what``."""
    size = f"{_plural(r.lines, 'line')}, {_human_bytes(r.size or 0)}"
    if r.status == "clean":
        extra = "; the last line lacks its newline (the next append writes it)" if r.tail and r.tail.missing_newline else ""
        return f"{r.path}: clean ({_plural(r.envelopes, 'envelope')}, {size}){extra}"
    if r.status == "repairable" and r.tail is not None:
        return (
            f"{r.path}:{r.tail.line}: torn tail: the last line ({_plural(r.tail.removed, 'byte')}) "
            f"is not whole ({r.tail.reason}); load would remove it and keep "
            f"{_plural(r.envelopes, 'envelope')}"
        )
    where = f"{r.path}:{r.line}" if r.line else r.path
    if r.status == "unsupported":
        return f"{where}: {r.reason} — load would refuse it"
    if r.status == "unreadable":
        return f"{where}: {r.reason}"
    prefix = ""
    if r.tail is not None and r.tail.kind == "torn" and r.line != r.tail.line:
        prefix = f" (and line {r.tail.line} is a torn tail)"
    what = r.reason if (r.reason or "").startswith("not a transcript") else f"corrupt: {r.reason}"
    return f"{where}: {what}{prefix} — load would refuse it"


def check_path(path: str) -> CheckReport:
    """What load would do to ``path``, without writing; never raises for bad input.

    The verdict is the core's: its tail check, then its replay of the good prefix.
    """
    try:
        _require_file(path)
        reading = _inspect.read(path, lenient=False)
    except CliError as exc:
        message = str(exc)
        reason = message[len(path) + 2 :] if message.startswith(path + ": ") else message
        return CheckReport(path=path, status="unreadable", reason=reason)
    except OSError as exc:
        return CheckReport(path=path, status="unreadable", reason=_describe_os_error(exc, path)[len(path) + 2 :])
    return _inspect.check_report(reading)


def cmd_check(args: argparse.Namespace) -> int:
    """``check PATH...``: exit 0 clean, 1 a torn tail load would repair, 2 corrupt or unreadable."""
    reports = [check_path(p) for p in args.paths]
    if args.json:
        _write_json([r.to_json() for r in reports])
    else:
        for r in reports:
            colour = {"clean": ("green",), "repairable": ("yellow",)}.get(r.status, ("red",))
            # A verdict of "no" (corrupt, unreadable) is a diagnostic: stderr, like a compiler's.
            stream = sys.stdout if r.exit_code < 2 else sys.stderr
            prefix = "" if r.exit_code < 2 else f"{PROG}: "
            stream.write(prefix + Style(_colour_enabled(args.color, stream))(_report_line(r), *colour) + "\n")
    return max(r.exit_code for r in reports)


# --------------------------------------------------------------------------- repair


def cmd_repair(args: argparse.Namespace) -> int:
    """``repair PATH``: load's repair (``Session.load(path).close()``), and what it removed."""
    path: str = args.path
    report = check_path(path)
    if report.status == "unreadable":
        raise CliError(f"{path}: {report.reason}")
    if report.exit_code == 2:
        raise CliError(_report_line(report).replace("load would refuse it", "not repaired: load refuses it"))
    try:
        session = _session().load(path)
    except SessionLocked:
        raise CliError(f"{path}: a writer holds this transcript (SessionLocked); not repaired. Try again once it has closed") from None
    except UnsupportedVersion as exc:
        raise CliError(f"{path}: {exc}") from None
    except CorruptTranscript as exc:
        raise CliError(f"{path}: corrupt: {exc}") from None
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    try:
        warnings = list(session.warnings)
        envelopes = len(session.events)
    finally:
        session.close()
    removed = None
    if report.tail is not None and report.tail.kind == "torn":
        removed = {"line": report.tail.line, "bytes": report.tail.removed}
    if args.json:
        _write_json({"path": path, "repaired": bool(warnings), "removed": removed if warnings else None, "warnings": warnings, "envelopes": envelopes})
        return 0
    if warnings:
        for w in warnings:
            sys.stdout.write(f"{path}: repaired: {w}\n")
        sys.stdout.write(f"{path}: {_plural(envelopes, 'envelope')} kept; the file loads cleanly now\n")
    else:
        sys.stdout.write(f"{path}: nothing to repair ({_plural(envelopes, 'envelope')}, clean)\n")
    return 0


# --------------------------------------------------------------------------- stats


def _percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(p * len(ordered))))
    return ordered[rank - 1]


def compute_stats(reading: Reading) -> dict[str, Any]:
    """Everything ``stats`` reports, as the JSON object ``stats --json`` prints.

    Counts and bytes come from the index; what replay did (live messages,
    what each compaction replaced, what each elision stubbed, pending
    operations) from the core's replay, and is None when load refuses the
    file. Only compactions, elisions, tool lines and what they name are decoded.
    """
    t = reading.transcript
    types = {name: {"count": count, "bytes": size} for name, count, size in reading.type_totals()}
    roles = dict(reading.role_counts())
    compactions: list[dict[str, Any]] = []
    for i in reading.indices_of_type("compaction"):
        env = reading.event(i)
        p = env.payload if isinstance(env.payload, dict) else {}
        compactions.append(
            {
                "line": env.line,
                "id": env.id,
                "tokens_before": p.get("tokens-before"),
                "tokens_after": p.get("tokens-after"),
                "fallback": bool(p.get("fallback")),
                "messages_replaced": None if t is None else len(t.compaction_effect(i)[0]),
            }
        )
    elision_at = reading.indices_of_type("elision")
    elided_items = 0
    elided_bytes: int | None = None if t is None else 0
    stub_bytes = 0
    # Replay's own record of what each message held just before, measured in the core.
    elided_sizes = reading.elided_sizes(elision_at)
    for i, sizes in zip(elision_at, elided_sizes):
        payload = reading.payload(i)
        items = payload.get("items") if isinstance(payload, dict) else None
        items = items if isinstance(items, list) else []
        elided_items += len(items)
        stub_bytes += sum(_content_size(item.get("stub")) for item in items if isinstance(item, dict))
        if elided_bytes is not None:
            if any(size is None for size in sizes):  # not a string: decoded and measured here
                sizes = [_content_size(before.get("content")) for _, before in reading.elision_effect(i)]
            elided_bytes += sum(size or 0 for size in sizes)
    dispatches = reading.indices_of_type("tool-dispatched")
    settles = reading.indices_of_type("tool-settled")
    dispatch_fields = _fields_in_chunks(reading, dispatches, ["tool"])
    settle_fields = _fields_in_chunks(reading, settles, ["op-id", "outcome", "duration", "artifact"])
    dispatch_set = set(dispatches)
    # A settle names its dispatch by id: load's id table finds it, else (a file
    # load refuses) the dispatches' ids are read. Only dispatches before it count.
    tool_of: dict[Any, Any] = {}
    tools: dict[str, dict[str, Any]] = {}  # name -> counts and percentiles
    durations: dict[str, list[float]] = {}
    art_count = 0
    art_bytes = 0
    art_missing = 0
    art_dir = Path(reading.path).parent / (Path(reading.path).stem + ".artifacts")  # run.jsonl -> run.artifacts/
    seen_art: set[str] = set()
    for i in sorted(dispatches + settles):
        if i in dispatch_set:
            p = next(dispatch_fields)
            tool_of[i if t is not None else reading.envelope_id(i)] = p.get("tool", "?")
            name = str(p.get("tool"))
            if name not in tools:
                tools[name] = _tool_row()
            tools[name]["calls"] += 1
            continue
        p = next(settle_fields)
        op_id = str(p.get("op-id"))
        name = str(tool_of.get(reading.index_of(op_id) if t is not None else op_id, "?"))
        if name not in tools:
            tools[name] = _tool_row()
        row = tools[name]
        outcome = str(p.get("outcome")).replace("-", "_")
        row[outcome] = row.get(outcome, 0) + 1
        d = p.get("duration")
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            durations.setdefault(name, []).append(float(d))
        art = p.get("artifact")
        if isinstance(art, dict):
            art_count += 1
            if isinstance(art.get("bytes"), int):
                art_bytes += art["bytes"]
            f = art.get("file")
            if isinstance(f, str) and f not in seen_art:
                seen_art.add(f)
                if "/" in f or f in ("", ".", "..") or not (art_dir / f).is_file():
                    art_missing += 1
    for name, row in tools.items():
        ds = durations.get(name, [])
        row["p50_s"] = _percentile(ds, 0.50)
        row["p95_s"] = _percentile(ds, 0.95)
    ops = reading.pending()
    pending = None
    if ops is not None:
        pending = [
            {
                "op_id": op.op_id,
                "call_id": op.call_id,
                "tool": op.tool,
                "state": op.state,
                "line": _op_line(reading, op.op_id),
                "dispatched_ts": op.dispatched_ts,
                "result_message_id": op.result_message_id,
            }
            for op in ops
        ]
    return {
        "path": str(Path(reading.path)),
        "size": reading.size,
        "lines": reading.lines,
        "envelopes": len(reading),
        "types": types,
        "messages": {
            "written": sum(roles.values()),
            "live": None if t is None else t.live_len(),
            "by_role": roles,
        },
        "replay_error": None if reading.refusal is None else str(reading.refusal),
        "compactions": compactions,
        "elisions": {"count": len(elision_at), "items": elided_items, "elided_bytes": elided_bytes, "stub_bytes": stub_bytes},
        "tools": tools,
        "pending": pending,
        "artifacts": {"count": art_count, "files": len(seen_art), "bytes": art_bytes, "missing": art_missing},
        "grants": _grants(reading)[0],
        "warnings": list(reading.warnings),
    }


def _fields_in_chunks(reading: Reading, indices: list[int], keys: list[str], chunk: int = 4096) -> Iterator[dict[str, Any]]:
    """``reading.payload_fields`` of ``indices``, asked for a chunk at a time so
    that memory holds one chunk's lines, not every one's."""
    for start in range(0, len(indices), chunk):
        yield from reading.payload_fields(indices[start : start + chunk], keys)


def _tool_row() -> dict[str, Any]:  # counts, then p50_s/p95_s (float or None)
    return {"calls": 0, "completed": 0, "failed": 0, "outcome_unknown": 0}


def cmd_stats(args: argparse.Namespace) -> int:
    """``stats PATH``: counts and sizes."""
    st = compute_stats(_read(args.path))
    if args.json:
        _write_json(st)
        return 0
    st = _sanitized(st)
    s = Style(_colour_enabled(args.color, sys.stdout))
    out = [s(st["path"], "bold") + f"  {_human_bytes(st['size'])} ({st['size']:,} bytes), {_plural(st['lines'], 'line')}, {_plural(st['envelopes'], 'envelope')}", ""]
    out.append(s(f"  {'type':<18}{'count':>8}{'bytes':>14}", "dim"))
    for name, t in sorted(st["types"].items(), key=lambda kv: -kv[1]["bytes"]):
        out.append(f"  {name:<18}{t['count']:>8,}{t['bytes']:>14,}")
    total_b = sum(t["bytes"] for t in st["types"].values())
    out.append(s(f"  {'total':<18}{st['envelopes']:>8,}{total_b:>14,}", "bold"))
    out.append("")

    def row(label: str, value: str) -> None:
        out.append(f"  {s(label.ljust(12), 'dim')} {value}")

    unknown = s("unknown: load refuses this file", "yellow")
    m = st["messages"]
    roles = ", ".join(f"{r} {n:,}" for r, n in m["by_role"].items())
    live = f"{m['live']:,} live" if m["live"] is not None else s(f"live unknown: {st['replay_error']}", "red")
    row("messages", f"{m['written']:,} written, {live}" + (f"  ({roles})" if roles else ""))
    if st["compactions"]:
        for i, c in enumerate(st["compactions"]):
            tb, ta = c["tokens_before"], c["tokens_after"]
            tokens = f"tokens {tb:,} -> {ta:,}" if isinstance(tb, int) and isinstance(ta, int) else "tokens ?"
            n = c["messages_replaced"]
            replaced = f", {_plural(n, 'message')} replaced" if n is not None else ""
            row("compactions" if i == 0 else "", f"line {c['line']}: {tokens}{replaced}" + (" [fallback]" if c["fallback"] else ""))
    else:
        row("compactions", "none")
    e = st["elisions"]
    if e["count"] and e["elided_bytes"] is not None:
        row("elisions", f"{e['count']:,} ({_plural(e['items'], 'message')}: {e['elided_bytes']:,} bytes of content stubbed to {e['stub_bytes']:,})")
    elif e["count"]:
        row("elisions", f"{e['count']:,} ({_plural(e['items'], 'message')} stubbed to {e['stub_bytes']:,} bytes)")
    else:
        row("elisions", "none")
    if st["tools"]:
        row("tools", s(f"{'name':<16}{'calls':>6}{'ok':>5}{'failed':>7}{'unknown':>8}{'p50':>10}{'p95':>10}", "dim"))
        for name, t in sorted(st["tools"].items(), key=lambda kv: -kv[1]["calls"]):
            p50 = _seconds(t["p50_s"]) if t["p50_s"] is not None else "-"
            p95 = _seconds(t["p95_s"]) if t["p95_s"] is not None else "-"
            row("", f"{_clip(name, 15):<16}{t['calls']:>6,}{t['completed']:>5,}{t['failed']:>7,}{t['outcome_unknown']:>8,}{p50:>10}{p95:>10}")
    else:
        row("tools", "none")
    if st["pending"] is None:
        row("pending", unknown)
    elif st["pending"]:
        for i, op in enumerate(st["pending"]):
            row("pending" if i == 0 else "", s(f"{op['tool']} {op['call_id']} {op['state']}", "yellow") + f" (line {op['line']}, op {op['op_id']})")
    else:
        row("pending", "none")
    a = st["artifacts"]
    if a["count"]:
        missing = f", {s(str(a['missing']) + ' missing', 'red')}" if a["missing"] else ""
        row("artifacts", f"{_plural(a['files'], 'file')}, {a['bytes']:,} bytes{missing}")
    else:
        row("artifacts", "none")
    for w in st["warnings"]:
        row("warning", s(w, "yellow"))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


# --------------------------------------------------------------------------- follow


def cmd_follow(args: argparse.Namespace) -> int:
    """``follow PATH``: print envelopes as they are appended; Ctrl-C exits 0."""
    path: str = args.path
    st = _require_file(path)
    if st.st_size > 0:
        try:
            with open(path, "rb") as f:
                head = f.read(65536)
        except OSError as exc:
            raise CliError(_describe_os_error(exc, path)) from None
        if head.strip(b" \t\r\n"):
            _read(path)  # refuses what is not a transcript, or one from the future
    types = _types_arg(args.type)
    s = Style(_colour_enabled(args.color, sys.stdout))
    renderer = Renderer(s, _width(), full=args.full)
    try:
        for env in _session().follow(path, poll=args.poll, idle_timeout=args.idle_timeout):
            show = not types or env.type in types
            if args.json:
                if show:
                    sys.stdout.write(json.dumps(_envelope_json(env), ensure_ascii=False) + "\n")
            else:
                block = renderer.block(env, show=show)
                if block:
                    sys.stdout.write("\n".join(block) + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    return 0


# --------------------------------------------------------------------------- demo and bench


def cmd_demo(args: argparse.Namespace) -> int:
    """``demo [DIR]``: the whole story on a scratch transcript."""
    from . import _demo

    return _demo.run(args.dir, colour=_colour_enabled(args.color, sys.stdout), width=_width())


def cmd_bench(argv: list[str]) -> int:
    """``bench ...``: hands its arguments to ``agent_transcript.bench.main``."""
    try:
        bench = importlib.import_module("agent_transcript.bench")
    except ModuleNotFoundError as exc:
        if exc.name in ("agent_transcript.bench",):
            raise CliError("bench is not available: this install has no agent_transcript.bench module") from None
        raise CliError(f"bench needs {exc.name}, which is not installed") from None
    result = bench.main(argv)
    return int(result or 0)


# --------------------------------------------------------------------------- main


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Read, check, repair and follow agent-transcript JSONL transcripts.",
        epilog="Exit status: 0 ok, 1 a torn tail that load would repair (check), 2 bad input or a corrupt file.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def colour_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--color",
            "--colour",
            choices=("auto", "always", "never"),
            default="auto",
            help="colour: auto (a terminal, and NO_COLOR unset), always or never",
        )

    p = sub.add_parser("show", help="the transcript for a person", description="Show a transcript for a person: a header, then each envelope as a block. Read-only: safe on a file being written or a damaged one.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--replayed", action="store_true", help="the messages the model would be sent next (compaction and elision applied); --type then filters by role")
    p.add_argument("--type", action="append", metavar="T", help="only envelopes of type T (repeat, or comma-separate)")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N envelopes (after --type)")
    p.add_argument("--full", action="store_true", help="whole contents, not excerpts")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    colour_opt(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="what load would do, without writing (exit 0 clean, 1 repairable, 2 corrupt)", description="Say what Session.load would do to each file, without writing: exit 0 clean, 1 a torn tail load would repair, 2 corrupt or unreadable (the worst of all files).")
    p.add_argument("paths", metavar="PATH", nargs="+")
    p.add_argument("--json", action="store_true", help="a JSON array, one object per file")
    colour_opt(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("repair", help="do load's repair: remove a torn last line", description="Do what Session.load does before replay: remove a torn last line (atomically, by rename). Refuses a corrupt file and one a writer holds.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=cmd_repair)

    p = sub.add_parser("stats", help="counts and sizes", description="Counts and bytes per type, messages, compactions, elisions, tools, pending operations, artifacts.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    colour_opt(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("follow", help="print envelopes as they are appended (Ctrl-C to stop)", description="Like tail -f: print each envelope as it is appended. Read-only; never locks.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--type", action="append", metavar="T", help="only envelopes of type T")
    p.add_argument("--full", action="store_true", help="whole contents, not excerpts")
    p.add_argument("--json", action="store_true", help="one JSON envelope per line")
    p.add_argument("--poll", type=float, default=0.1, metavar="SECONDS", help="how often to look for more (default 0.1)")
    p.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS", help="stop after this long with nothing new")
    colour_opt(p)
    p.set_defaults(func=cmd_follow)

    p = sub.add_parser("demo", help="the whole story on a scratch transcript: a kill -9 mid-tool-call, then repair and resume", description="A scripted agent (no model, no network) writes a transcript and is killed with SIGKILL mid-tool-call; the demo then shows peek, check, load's repair, the pending tool operations, their resolution and a resumed run.")
    p.add_argument("dir", metavar="DIR", nargs="?", help="where to write (default: a new temporary directory); the files are kept")
    colour_opt(p)
    p.set_defaults(func=cmd_demo)

    sub.add_parser("bench", help="measure against a plain-Python baseline (see: bench --help)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    _quiet_stdout_errors()
    try:
        if args_list and args_list[0] == "bench":
            return cmd_bench(args_list[1:])
        args = _parser().parse_args(args_list)
        status: int = args.func(args)
        sys.stdout.flush()
        return status
    except CliError as exc:
        _error(str(exc))
        return exc.status
    except (SessionLocked, UnsupportedVersion, CorruptTranscript, TranscriptError) as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _devnull_stdout()
        return 141
    except OSError as exc:
        _error(_describe_os_error(exc, getattr(exc, "filename", None) or "?"))
        return 2


def _error(message: str) -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass
    sys.stderr.write(f"{PROG}: {message}\n")


def _quiet_stdout_errors() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _devnull_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
