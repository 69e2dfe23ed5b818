"""The check verdict: what load would do to a file, found without writing a byte."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from . import reader
from .files import Unreadable, os_error_reason, require_file
from ..tool_calls import MalformedToolCall, OrphanToolMessage, Pairing, PairedCall
from .reader import Reading, Refusal, Tail

__all__ = ["CheckReport", "check_report", "check_path", "unanswered_json", "orphans_json"]


def unanswered_json(calls: list[PairedCall]) -> list[dict[str, Any]]:
    """Unanswered calls as ``check --json`` and ``stats --json`` list them."""
    return [{"call_id": c.call_id, "tool": c.tool, "message_id": c.message_id, "line": c.line}
            for c in calls]


def orphans_json(orphans: list[OrphanToolMessage]) -> list[dict[str, Any]]:
    """Tool messages that answer no call, as ``check --json`` and ``stats --json`` list them."""
    return [{"message_id": o.message_id, "tool_call_id": o.tool_call_id, "line": o.line}
            for o in orphans]


@dataclass
class CheckReport:
    """What load would do to a file, found without writing a byte.

    Attributes:
        status: ``"clean"``, ``"repairable"`` (a torn tail load would remove),
            ``"corrupt"`` (load would refuse it), ``"unsupported"`` (an envelope
            version this does not read), or ``"unreadable"``.
        tail: the tail check, when the file could be read.
        line, reason: where and why, for corrupt, unsupported and unreadable.
        lines: how many lines the file has (blank ones too).
        envelopes, messages, live_messages: what load would keep (0 when it
            refuses the file).
        unanswered, orphans, malformed: the live tool calls no tool message
            answers, the live tool messages that answer no call, and the
            entries of a ``tool_calls`` that are not calls: a chat API refuses
            each, but load does not, so the status does not say them.
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
    unanswered: list[PairedCall] = field(default_factory=list)
    orphans: list[OrphanToolMessage] = field(default_factory=list)
    malformed: list[MalformedToolCall] = field(default_factory=list)

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
            "unanswered_tool_calls": unanswered_json(self.unanswered),
            "orphan_tool_messages": orphans_json(self.orphans),
        }


def check_report(reading: Reading) -> CheckReport:
    """The check verdict of a reading: the core's tail check and replay, framed."""
    report = CheckReport(path=reading.path, status="clean", size=reading.size, tail=reading.tail, lines=reading.lines)
    t = reading.transcript
    if t is None:
        refusal = reading.refusal or Refusal("corrupt", None, "load refuses this file")
        report.status = refusal.status
        report.line = refusal.line
        report.reason = refusal.reason
        return report
    report.envelopes = len(t)
    report.messages = sum(n for _, n in t.role_counts())
    report.live_messages = t.live_len()
    pairing: Pairing | None = reading.pairing()
    if pairing is not None:
        report.unanswered = pairing.unanswered
        report.orphans = pairing.orphans
        report.malformed = pairing.malformed
    if reading.tail.kind == "torn":
        report.status = "repairable"
    return report


def check_path(path: str) -> CheckReport:
    """What load would do to ``path``, without writing; never raises for bad input.

    The verdict is the core's: its tail check, then its replay of the good prefix.
    """
    try:
        require_file(path)
        reading = reader.read(path, lenient=False)
    except Unreadable as exc:
        return CheckReport(path=path, status="unreadable", reason=exc.reason)
    except OSError as exc:
        return CheckReport(path=path, status="unreadable", reason=os_error_reason(exc))
    return check_report(reading)
