"""The ``agent-transcript`` command line: show, check, repair, stats, follow, demo, bench.

Every command but ``repair`` and ``demo`` is read-only: it reads with
``Session.peek``/``Session.follow`` or over the file's bytes, and never locks,
repairs or writes, so it is safe on a transcript a writer holds and on a
damaged one. Bad input (a missing file, a directory, not a transcript, a
version from the future, ...) is one line on stderr and exit status 2.
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
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterable, Sequence, TextIO

from . import _inspect
from ._inspect import CheckReport, LiveMessage, Replayer, ReplayError
from .errors import CorruptTranscript, SessionLocked, TranscriptError, UnsupportedVersion

if TYPE_CHECKING:
    from . import Envelope, Peek, Session

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


def _open_bytes(path: str) -> BinaryIO:
    _require_file(path)
    try:
        return open(path, "rb")
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None


def _peek(path: str) -> Peek:
    """``Session.peek(path)``, or a :class:`CliError` when there is nothing to read.

    Raises:
        CliError: the file is missing, unreadable, not a transcript, or holds an
            envelope version this does not read.
    """
    _require_file(path)
    try:
        peek = _session().peek(path)
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    if peek.error is not None or peek.warnings:
        # peek skips a line it cannot read; one from a newer version is not
        # damage but a file this cannot show: say so, as load would.
        report = check_path(path)
        if report.status == "unsupported":
            raise CliError(_future(path, report.line, None, report.reason))
    if peek.error is not None:
        raise CliError(f"{path}: not a transcript: {peek.error}")
    return peek


def _future(path: str, line: int | None, v: Any, reason: str | None = None) -> str:
    where = f"{path}:{line}" if line else path
    return f"{where}: {reason or _inspect.unsupported_version_reason(v)}"


def _line_sizes(path: str, upto: int) -> dict[int, int]:
    """Bytes per line number (``\\n`` included) for lines 1..``upto``."""
    sizes: dict[int, int] = {}
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                if number > upto:
                    break
                sizes[number] = len(raw)
    except OSError as exc:
        raise CliError(_describe_os_error(exc, path)) from None
    return sizes


# --------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class _Later:
    """What the file says later about an envelope: a settle, an elision, a compaction."""

    settled_line: int | None = None
    elided_line: int | None = None
    compacted_line: int | None = None


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
    """Turns envelopes into readable blocks, in file order.

    It keeps what it needs to join things up: dispatches (for settles), message
    lines (for elisions), a tolerant replay (for what a compaction replaced),
    and run-context sections (for ``rendered-in``). Call :meth:`block` for every
    envelope in order, with ``show=False`` for the ones not printed.
    """

    INDENT = "      "

    def __init__(
        self,
        style: Style,
        width: int,
        *,
        full: bool = False,
        later: dict[str, _Later] | None = None,
        pending: Sequence[_inspect.PendingOperation] = (),
    ) -> None:
        self.s = style
        self.pending = {op.op_id: op for op in pending}
        self.width = width
        self.full = full
        self.later = later or {}
        self.dispatches: dict[str, Any] = {}
        self.replay = Replayer()
        self.replay_error: str | None = None
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

    def _head(self, env: Envelope | Any, kind_style: tuple[str, ...], detail: str) -> list[str]:
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

    # -- the block

    def block(self, env: Envelope | Any, *, show: bool = True) -> list[str]:
        """The lines that show ``env``; state is updated even when ``show`` is False."""
        handler: Callable[[Any, bool], list[str]] = getattr(
            self, "_" + env.type.replace("-", "_"), self._unknown
        ) if env.type in _KNOWN else self._unknown
        effect_error = None
        try:
            if self.replay_error is None:
                self.replay.apply(env)
        except ReplayError as exc:
            self.replay_error = str(exc)
            effect_error = exc.reason
        lines = handler(_View.of(env) if show else env, show)
        if show and effect_error:
            lines.append(self._field("!!", self.s(f"load refuses this: {effect_error}", "red", "bold")))
        return lines

    def _session_meta(self, env: Any, show: bool) -> list[str]:
        if not show:
            return []
        out = self._head(env, ("bold",), "")
        payload = env.payload
        if isinstance(payload, dict):
            for key, value in payload.items():
                text = value if isinstance(value, str) else _compact(value)
                out.append(self._field(f"{key}:", self._one_line(text)))
        else:
            out.append(self._field("meta:", self._one_line(_compact(payload))))
        return out

    def _message(self, env: Any, show: bool) -> list[str]:
        p = env.payload if isinstance(env.payload, dict) else {}
        self.message_lines[env.id] = env.line
        for call in _calls(p):
            call_id, name, _ = _tool_call_parts(call)
            self.call_tools[call_id] = name
        if not show:
            return []
        return self.message_lines_for(env, p)

    def message_lines_for(self, env: Any, p: dict[str, Any], *, replayed_note: str = "") -> list[str]:
        """The block of one message payload ``p`` (also used for ``--replayed``)."""
        role = str(p.get("role", "?"))
        bits = [self.s(role, *_ROLE_STYLE.get(role, ("bold",)))]
        if p.get("name"):
            bits.append(f"name={p['name']}")
        if p.get("tool_call_id"):
            tool = self.call_tools.get(p["tool_call_id"])
            bits.append(f"answers {p['tool_call_id']}" + (f" ({tool})" if tool else ""))
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
        later = self.later.get(env.id)
        if later and later.elided_line:
            bits.append(self.s(f"(elided at line {later.elided_line})", "yellow"))
        if later and later.compacted_line:
            bits.append(self.s(f"(compacted away at line {later.compacted_line})", "yellow"))
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

    def _grants(self, env: Any, show: bool) -> list[str]:
        if not show:
            return []
        out = self._head(env, ("green",), "snapshot (the last one wins)")
        snapshot = env.payload.get("grants") if isinstance(env.payload, dict) else env.payload
        out.extend(self._wrap(_compact(snapshot), max_lines=4))
        return out

    def _compaction(self, env: Any, show: bool) -> list[str]:
        effect = self.replay.last_effect if self.replay_error is None else None
        if not show:
            return []
        p = env.payload if isinstance(env.payload, dict) else {}
        before, after = p.get("tokens-before"), p.get("tokens-after")
        detail = f"tokens {before:,} -> {after:,}" if isinstance(before, int) and isinstance(after, int) else ""
        if p.get("fallback"):
            detail += "  " + self.s("[fallback: hard-trimmed, no summary model]", "red")
        out = self._head(env, ("magenta", "bold"), detail)
        through = p.get("replaces-through-id")
        through_line = self.message_lines.get(through) if isinstance(through, str) else None
        if effect is not None and "replaced" in effect:
            replaced: list[LiveMessage] = effect["replaced"]
            kept: list[LiveMessage] = effect["kept"]
            what = _plural(len(replaced), "message")
            lines = sorted({m.line for m in replaced})
            if lines:
                what += f" ({_line_span(lines)})"
            out.append(self._field("replaced", what + (f", through line {through_line}" if through_line else "")))
            if kept:
                out.append(self._field("kept", f"{_plural(len(kept), 'sticky message')} ({_line_span([m.line for m in kept])})"))
        else:
            out.append(self._field("replaced", f"through {through}"))
        out.append(self._field("summary", "").rstrip())
        out.extend(self._wrap(str(p.get("summary", "")), max_lines=4))
        return out

    def _elision(self, env: Any, show: bool) -> list[str]:
        effect = self.replay.last_effect if self.replay_error is None else None
        if not show:
            return []
        items = env.payload.get("items") if isinstance(env.payload, dict) else None
        items = items if isinstance(items, list) else []
        out = self._head(env, ("magenta",), _plural(len(items), "item"))
        if effect is not None and "items" in effect:
            for before, stub in effect["items"]:
                m = before.message
                who = m.role + (f" {m.tool_call_id}" if m.tool_call_id else "")
                size = _content_size(m.content)
                out.append(
                    self._field(
                        f"line {before.line}",
                        f"{who}: {size:,} bytes of content -> stub {self._one_line(_compact(stub))}",
                    )
                )
        else:
            for item in items:
                if isinstance(item, dict):
                    out.append(self._field(str(item.get("id")), f"-> stub {self._one_line(_compact(item.get('stub')))}"))
        return out

    def _tool_dispatched(self, env: Any, show: bool) -> list[str]:
        p = env.payload if isinstance(env.payload, dict) else {}
        self.dispatches[env.id] = env
        if not show:
            return []
        bits = [self.s(str(p.get("tool")), "bold"), self.s(str(p.get("call-id")), "dim")]
        if p.get("round") is not None:
            bits.append(f"round {p['round']}")
        if p.get("idempotency") is not None:
            bits.append(f"idempotency={p['idempotency']}")
        out = self._head(env, ("yellow",), "  ".join(bits))
        args = p.get("arguments")
        out.append(self._field("arguments", self._one_line(args if isinstance(args, str) else _compact(args))))
        out.append(self._field("op", self.s(env.id, "dim") + (f"  run {p['run-id']}" if p.get("run-id") else "")))
        later = self.later.get(env.id)
        if later is None or later.settled_line is None:
            pending = self.pending.get(env.id)
            if pending is not None and pending.state == "result-persisted":
                what = "never settled, but its result is in the file (result-persisted: it completed)"
            else:
                what = "never settled, and no result: it may or may not have run (dispatched)"
            out.append(self._field("!!", self.s(what, "red", "bold")))
        else:
            out.append(self._field("settled", f"at line {later.settled_line}"))
        return out

    def _tool_settled(self, env: Any, show: bool) -> list[str]:
        if not show:
            return []
        p = env.payload if isinstance(env.payload, dict) else {}
        op = self.dispatches.get(p.get("op-id"))  # type: ignore[arg-type]
        dp = op.payload if op is not None and isinstance(op.payload, dict) else {}
        outcome = str(p.get("outcome"))
        style = {"completed": ("green",), "failed": ("red", "bold"), "outcome-unknown": ("yellow", "bold")}.get(outcome, ("red",))
        bits = [self.s(str(dp.get("tool", "?")), "bold"), self.s(outcome, *style)]
        duration = p.get("duration")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            bits.append(_seconds(float(duration)))
        out = self._head(env, ("yellow",), "  ".join(bits))
        if op is not None:
            lag = ""
            t0, t1 = _local_time(op.ts), _local_time(env.ts)
            if t0 is not None and t1 is not None:
                lag = f", {_seconds((t1 - t0).total_seconds())} later"
            out.append(self._field("dispatched", f"at line {op.line} ({dp.get('call-id')}){lag}"))
        else:
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

    def _run_context(self, env: Any, show: bool) -> list[str]:
        p = env.payload if isinstance(env.payload, dict) else {}
        sections: list[Any] = p["sections"] if isinstance(p.get("sections"), list) else []
        for sec in sections:
            if isinstance(sec, dict) and "text" in sec and isinstance(sec.get("digest"), str):
                self.section_lines.setdefault(sec["digest"], env.line)
        if not show:
            return []
        out = self._head(env, ("blue",), "")
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
        for sec in sections:
            if not isinstance(sec, dict):
                continue
            name = sec.get("name")
            if "text" in sec:
                text = str(sec.get("text"))
                out.append(self._field("section", f"{self.s(str(name), 'bold')}: {len(text):,} chars"))
                if self.full:
                    out.extend(self._wrap(text))
            else:
                carrier = sec.get("rendered-in")
                line = self.section_lines.get(str(sec.get("digest")))
                where = f"line {line}" if line else f"envelope {carrier}"
                out.append(self._field("section", f"{self.s(str(name), 'bold')}: unchanged, text at {where}"))
        return out

    def _unknown(self, env: Any, show: bool) -> list[str]:
        if not show:
            return []
        out = self._head(env, ("red",), self.s("(a type this version does not know; kept as it is)", "dim"))
        out.extend(self._wrap(_compact(env.payload), max_lines=3))
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


def _later_map(envelopes: Iterable[Any]) -> dict[str, _Later]:
    """For each envelope id, what later lines say about it."""
    settled: dict[str, int] = {}
    elided: dict[str, int] = {}
    for env in envelopes:
        p = env.payload if isinstance(env.payload, dict) else {}
        if env.type == "tool-settled" and isinstance(p.get("op-id"), str):
            settled.setdefault(p["op-id"], env.line)
        elif env.type == "elision" and isinstance(p.get("items"), list):
            for item in p["items"]:
                if isinstance(item, dict) and isinstance(item.get("id"), str):
                    elided.setdefault(item["id"], env.line)
    out: dict[str, _Later] = {}
    for key in set(settled) | set(elided):
        out[key] = _Later(settled_line=settled.get(key), elided_line=elided.get(key))
    return out


def _compacted_map(envelopes: Iterable[Any], later: dict[str, _Later]) -> None:
    """Adds, to ``later``, the line of the compaction that replaced each message."""
    replay = Replayer()
    for env in envelopes:
        try:
            replay.apply(env)
        except ReplayError:
            return
        effect = replay.last_effect
        if effect and "replaced" in effect:
            for m in effect["replaced"]:
                old = later.get(m.id, _Later())
                later[m.id] = _Later(old.settled_line, old.elided_line, env.line)


# --------------------------------------------------------------------------- show


def _envelope_json(env: Any) -> dict[str, Any]:
    return {"line": env.line, "id": env.id, "type": env.type, "ts": env.ts, "v": env.v, "payload": env.payload}


def _select(envelopes: Sequence[Any], types: list[str] | None, tail: int | None) -> set[int]:
    """Indices of the envelopes to print."""
    chosen = [i for i, env in enumerate(envelopes) if not types or env.type in types]
    if tail is not None:
        chosen = chosen[-tail:] if tail > 0 else []
    return set(chosen)


def _types_arg(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for value in values:
        out.extend(t.strip() for t in value.split(",") if t.strip())
    return out


def _header(
    peek: Peek,
    envelopes: Sequence[Envelope],
    s: Style,
    width: int,
    lines: int,
    replay: Replayer,
    replay_error: str | None,
) -> list[str]:
    out = [s(_printable(str(peek.path)), "bold")]

    def row(label: str, value: str) -> None:
        out.append(f"  {s(label.ljust(9), 'dim')} {value}")

    meta = _sanitized(peek.meta) if isinstance(peek.meta, dict) else {}
    if meta:
        text = "  ".join(f"{k}={v if isinstance(v, str) else _compact(v)}" for k, v in meta.items())
        row("meta", _clip(text, max(20, width - 12)))
    row("size", f"{_human_bytes(peek.size)} ({peek.size:,} bytes), {_plural(lines, 'line')}, {_plural(len(envelopes), 'envelope')}")
    written = sum(1 for e in envelopes if e.type == "message")
    if replay_error is None:
        row("messages", f"{written:,} written, {len(replay.live):,} live (what the model is sent next)")
    else:
        row("messages", f"{written:,} written; " + s(f"replay stops: {replay_error}", "red"))
    if envelopes:
        first, last = _local_time(envelopes[0].ts), _local_time(envelopes[-1].ts)
        if first and last:
            span = _seconds((last - first).total_seconds())
            row("time", f"{first.strftime('%Y-%m-%d %H:%M:%S %Z')} -> {last.strftime('%Y-%m-%d %H:%M:%S %Z')} ({span})")
    if replay.has_grants:
        grant_lines = [e.line for e in envelopes if e.type == "grants"]
        row("grants", _clip(_printable(_compact(replay.grants)), max(20, width - 30)) + s(f"  (line {grant_lines[-1]})", "dim"))
    else:
        row("grants", s("none", "dim"))
    pending = _inspect.pending_operations(envelopes)
    if pending:
        row("pending", s(_plural(len(pending), "tool operation") + " never settled:", "yellow", "bold"))
        for op in pending:
            out.append(f"            {_printable(f'{op.tool} {op.call_id}')} {s(op.state, 'yellow')} (line {op.line})")
    for warning in peek.warnings:
        row("warning", s(_printable(warning), "yellow"))
    return out


def cmd_show(args: argparse.Namespace) -> int:
    """``show PATH``: the transcript for a person (or ``--json``)."""
    path: str = args.path
    peek = _peek(path)
    types = _types_arg(args.type)
    if args.tail is not None and args.tail < 0:
        raise CliError("--tail takes a number >= 0")
    if args.replayed:
        return _show_replayed(path, peek, args, types)
    envelopes = list(peek.envelopes)
    chosen = _select(envelopes, types, args.tail)
    if args.json:
        _write_json(
            {
                "path": str(peek.path),
                "size": peek.size,
                "meta": peek.meta,
                "grants": _last_grants(envelopes),
                "warnings": list(peek.warnings),
                "envelopes": [_envelope_json(e) for i, e in enumerate(envelopes) if i in chosen],
            }
        )
        return 0
    s = Style(_colour_enabled(args.color, sys.stdout))
    width = _width()
    later = _later_map(envelopes)
    _compacted_map(envelopes, later)
    renderer = Renderer(s, width, full=args.full, later=later, pending=_inspect.pending_operations(envelopes))
    body: list[str] = []
    for i, env in enumerate(envelopes):
        block = renderer.block(env, show=i in chosen)
        if block:
            body.extend(block)
    with open(path, "rb") as f:
        lines = _inspect.count_lines(f, peek.size)
    out = _header(peek, envelopes, s, width, lines, renderer.replay, renderer.replay_error)
    out.append("")
    if types or args.tail is not None:
        out.append(s(f"showing {_plural(len(chosen), 'envelope')} of {len(envelopes):,}", "dim"))
    out.extend(body)
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _last_grants(envelopes: Sequence[Any]) -> Any:
    for env in reversed(envelopes):
        if env.type == "grants":
            return env.payload.get("grants") if isinstance(env.payload, dict) else None
    return None


def _show_replayed(path: str, peek: Peek, args: argparse.Namespace, types: list[str] | None) -> int:
    """The messages load would hand back, found without loading (no lock, no repair)."""
    with _open_bytes(path) as f:
        report = _inspect.check_file(f, path)
    if report.exit_code == 2:
        raise CliError(_report_line(report) + "; there is no replay to show")
    torn_line = report.tail.line if report.tail is not None and report.tail.kind == "torn" else None
    replay = Replayer()
    seen_lines = []
    for env in peek.envelopes:
        if torn_line is not None and env.line >= torn_line:
            break
        try:
            replay.apply(env)
        except ReplayError as exc:  # the file changed between the check and peek
            raise CliError(f"{path}:{exc.line}: {exc.reason}") from None
        seen_lines.append(env)
    live = replay.live
    if types:
        roles = set(types)
        live = [m for m in live if m.message.role in roles]
    if args.tail is not None:
        live = live[-args.tail :] if args.tail > 0 else []
    if args.json:
        _write_json(
            {
                "path": str(peek.path),
                "size": peek.size,
                "meta": peek.meta,
                "grants": replay.grants,
                "torn_tail": None if torn_line is None else {"line": torn_line, "bytes": report.tail.removed if report.tail else None},
                "messages": [{"id": m.id, "line": m.line, **m.message.to_dict()} for m in live],
            }
        )
        return 0
    s = Style(_colour_enabled(args.color, sys.stdout))
    renderer = Renderer(s, _width(), full=args.full)
    elided_by: dict[str, int] = {}
    summaries: set[str] = set()
    ts_by_line = {env.line: str(env.ts) for env in seen_lines}
    for env in seen_lines:
        if env.type == "message":
            renderer.block(env, show=False)
        elif env.type == "elision" and isinstance(env.payload, dict):
            for item in env.payload.get("items") or []:
                if isinstance(item, dict):
                    elided_by[str(item.get("id"))] = env.line
        elif env.type == "compaction":
            summaries.add(env.id)
    out = [
        s(str(peek.path), "bold"),
        s(
            f"  what the model would be sent next: {_plural(len(replay.live), 'message')} "
            f"(from {_plural(sum(1 for e in seen_lines if e.type == 'message'), 'message line')}), "
            "compaction and elision applied",
            "dim",
        ),
    ]
    if torn_line is not None:
        out.append(s(f"  line {torn_line} is a torn tail that load would remove; it is not in this replay", "yellow"))
    out.append("")
    for m in live:
        note = ""
        if m.id in summaries:
            note = f"(the compaction summary, line {m.line})"
        elif m.id in elided_by:
            note = f"(content elided at line {elided_by[m.id]})"
        shown = _Shown(id=m.id, type="message", ts=ts_by_line.get(m.line, ""), line=m.line)
        out.extend(renderer.message_lines_for(shown, _sanitized(m.message.to_dict()), replayed_note=note))
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
    """What load would do to ``path``, without writing; never raises for bad input."""
    try:
        with _open_bytes(path) as f:
            return _inspect.check_file(f, path)
    except CliError as exc:
        message = str(exc)
        reason = message[len(path) + 2 :] if message.startswith(path + ": ") else message
        return CheckReport(path=path, status="unreadable", reason=reason)
    except OSError as exc:
        return CheckReport(path=path, status="unreadable", reason=_describe_os_error(exc, path)[len(path) + 2 :])


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


def compute_stats(path: str, peek: Peek) -> dict[str, Any]:
    """Everything ``stats`` reports, as the JSON object ``stats --json`` prints."""
    envelopes = list(peek.envelopes)
    last_line = envelopes[-1].line if envelopes else 0
    sizes = _line_sizes(path, last_line)
    types: dict[str, dict[str, int]] = {}
    for env in envelopes:
        counts = types.setdefault(env.type, {"count": 0, "bytes": 0})
        counts["count"] += 1
        counts["bytes"] += sizes.get(env.line, 0)
    roles: dict[str, int] = {}
    for env in envelopes:
        if env.type == "message" and isinstance(env.payload, dict):
            role = str(env.payload.get("role"))
            roles[role] = roles.get(role, 0) + 1
    replay = Replayer()
    replay_error = None
    compactions: list[dict[str, Any]] = []
    elided_bytes = 0
    stub_bytes = 0
    elided_items = 0
    elisions = 0
    for env in envelopes:
        try:
            replay.apply(env)
        except ReplayError as exc:
            replay_error = str(exc)
            break
        effect = replay.last_effect
        p = env.payload if isinstance(env.payload, dict) else {}
        if env.type == "compaction" and effect is not None:
            compactions.append(
                {
                    "line": env.line,
                    "id": env.id,
                    "tokens_before": p.get("tokens-before"),
                    "tokens_after": p.get("tokens-after"),
                    "fallback": bool(p.get("fallback")),
                    "messages_replaced": len(effect["replaced"]),
                }
            )
        elif env.type == "elision" and effect is not None:
            elisions += 1
            for before, stub in effect["items"]:
                elided_items += 1
                elided_bytes += _content_size(before.message.content)
                stub_bytes += _content_size(stub)
    dispatched: dict[str, Any] = {}
    tools: dict[str, dict[str, Any]] = {}  # name -> counts and percentiles
    durations: dict[str, list[float]] = {}
    art_count = 0
    art_bytes = 0
    art_missing = 0
    art_dir = Path(path).parent / (Path(path).stem + ".artifacts")  # run.jsonl -> run.artifacts/
    seen_art: set[str] = set()
    for env in envelopes:
        p = env.payload if isinstance(env.payload, dict) else {}
        if env.type == "tool-dispatched":
            dispatched[env.id] = p
            name = str(p.get("tool"))
            t = tools.setdefault(name, _tool_row())
            t["calls"] += 1
        elif env.type == "tool-settled":
            dp = dispatched.get(str(p.get("op-id")), {})
            name = str(dp.get("tool", "?"))
            t = tools.setdefault(name, _tool_row())
            outcome = str(p.get("outcome"))
            t[outcome.replace("-", "_")] = t.get(outcome.replace("-", "_"), 0) + 1
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
    pending = [
        {
            "op_id": op.op_id,
            "call_id": op.call_id,
            "tool": op.tool,
            "state": op.state,
            "line": op.line,
            "dispatched_ts": op.dispatched_ts,
            "result_message_id": op.result_message_id,
        }
        for op in _inspect.pending_operations(envelopes)
    ]
    with open(path, "rb") as fh:
        lines = _inspect.count_lines(fh, peek.size)
    return {
        "path": str(peek.path),
        "size": peek.size,
        "lines": lines,
        "envelopes": len(envelopes),
        "types": types,
        "messages": {
            "written": sum(roles.values()),
            "live": None if replay_error else len(replay.live),
            "by_role": roles,
        },
        "replay_error": replay_error,
        "compactions": compactions,
        "elisions": {"count": elisions, "items": elided_items, "elided_bytes": elided_bytes, "stub_bytes": stub_bytes},
        "tools": tools,
        "pending": pending,
        "artifacts": {"count": art_count, "files": len(seen_art), "bytes": art_bytes, "missing": art_missing},
        "grants": replay.grants if replay.has_grants else _last_grants(envelopes),
        "warnings": list(peek.warnings),
    }


def _tool_row() -> dict[str, Any]:  # counts, then p50_s/p95_s (float or None)
    return {"calls": 0, "completed": 0, "failed": 0, "outcome_unknown": 0}


def cmd_stats(args: argparse.Namespace) -> int:
    """``stats PATH``: counts and sizes."""
    path: str = args.path
    peek = _peek(path)
    st = compute_stats(path, peek)
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

    m = st["messages"]
    roles = ", ".join(f"{r} {n:,}" for r, n in m["by_role"].items())
    live = f"{m['live']:,} live" if m["live"] is not None else s(f"live unknown: {st['replay_error']}", "red")
    row("messages", f"{m['written']:,} written, {live}" + (f"  ({roles})" if roles else ""))
    if st["compactions"]:
        for i, c in enumerate(st["compactions"]):
            tb, ta = c["tokens_before"], c["tokens_after"]
            tokens = f"tokens {tb:,} -> {ta:,}" if isinstance(tb, int) and isinstance(ta, int) else "tokens ?"
            row("compactions" if i == 0 else "", f"line {c['line']}: {tokens}, {_plural(c['messages_replaced'], 'message')} replaced" + (" [fallback]" if c["fallback"] else ""))
    else:
        row("compactions", "none")
    e = st["elisions"]
    if e["count"]:
        row("elisions", f"{e['count']:,} ({_plural(e['items'], 'message')}: {e['elided_bytes']:,} bytes of content stubbed to {e['stub_bytes']:,})")
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
    if st["pending"]:
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
        with _open_bytes(path) as f:
            head = f.read(65536)
        if head.strip(b" \t\r\n"):
            _peek(path)  # refuses what is not a transcript, or one from the future
    types = _types_arg(args.type)
    s = Style(_colour_enabled(args.color, sys.stdout))
    renderer = Renderer(s, _width(), full=args.full)
    try:
        for env in _session().follow(path, poll=args.poll, idle_timeout=args.idle_timeout):
            if env.v != 1:
                raise CliError(_future(path, env.line, env.v))
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
