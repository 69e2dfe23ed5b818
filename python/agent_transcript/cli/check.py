"""``check PATH...``: what load would do to each file, without writing (exit 0, 1 or 2)."""

from __future__ import annotations

import argparse
import sys

from ..inspect import CheckReport, check_path
from .errors import PROG
from .reading import foreign_hint
from .style import Style, colour_enabled, escaped, human_bytes, plural, write_json

__all__ = ["cmd_check", "report_line", "tool_call_notes"]


def report_line(r: CheckReport) -> str:
    """One line for a check report, ``path[:line]: what``; a control character in
    the name (or anywhere) is shown escaped, so that it cannot drive the terminal
    or forge a line."""
    return escaped(_report_text(r))


def _listed(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:_LISTED])
    more = f" and {len(lines) - _LISTED} more" if len(lines) > _LISTED else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


_LISTED = 5


def tool_call_notes(r: CheckReport) -> str:
    """What a chat API would refuse in the live conversation, as ``; ...``
    clauses for a report's line (empty when there is nothing)."""
    notes = ""
    if r.unanswered:
        calls = ", ".join(f"{c.tool or '?'} {c.call_id} (line {c.line})" for c in r.unanswered[:_LISTED])
        more = f" and {len(r.unanswered) - _LISTED} more" if len(r.unanswered) > _LISTED else ""
        notes += f"; {plural(len(r.unanswered), 'tool call')} unanswered: {calls}{more}"
    if r.orphans:
        notes += (f"; {plural(len(r.orphans), 'tool message')} answering no call: "
                  f"{_listed([o.line for o in r.orphans])}")
    if r.malformed:
        n = len(r.malformed)
        notes += (f"; {n:,} tool_calls {'entry' if n == 1 else 'entries'} "
                  f"that {'is' if n == 1 else 'are'} not a call (no string id): "
                  f"{_listed(sorted({m.line for m in r.malformed}))}")
    return notes


def _report_text(r: CheckReport) -> str:
    size = f"{plural(r.lines, 'line')}, {human_bytes(r.size or 0)}"
    if r.status == "clean":
        extra = "; the last line lacks its newline (the next append writes it)" if r.tail and r.tail.missing_newline else ""
        return f"{r.path}: clean ({plural(r.envelopes, 'envelope')}, {size}){extra}{tool_call_notes(r)}"
    if r.status == "repairable" and r.tail is not None:
        return (
            f"{r.path}:{r.tail.line}: torn tail: the last line ({plural(r.tail.removed, 'byte')}) "
            f"is not whole ({r.tail.reason}); load would remove it and keep "
            f"{plural(r.envelopes, 'envelope')}{tool_call_notes(r)}"
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
    if what and what.startswith("not a transcript"):
        hint = foreign_hint(str(r.path))
        if hint is not None:
            return f"{where}: not a transcript: {hint}"
    return f"{where}: {what}{prefix} — load would refuse it"


def cmd_check(args: argparse.Namespace) -> int:
    """``check PATH...``: exit 0 clean, 1 a torn tail load would repair, 2 corrupt or unreadable."""
    reports = [check_path(p) for p in args.paths]
    if args.json:
        write_json([r.to_json() for r in reports])
    else:
        for r in reports:
            colour = {"clean": ("green",), "repairable": ("yellow",)}.get(r.status, ("red",))
            # A verdict of "no" (corrupt, unreadable) is a diagnostic: stderr, like a compiler's.
            stream = sys.stdout if r.exit_code < 2 else sys.stderr
            prefix = "" if r.exit_code < 2 else f"{PROG}: "
            stream.write(prefix + Style(colour_enabled(args.color, stream))(report_line(r), *colour) + "\n")
    return max(r.exit_code for r in reports)
