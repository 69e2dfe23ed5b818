"""``check PATH...``: what load would do to each file, without writing (exit 0, 1 or 2)."""

from __future__ import annotations

import argparse
import sys

from ..inspect import CheckReport, check_path
from .errors import PROG
from .reading import foreign_hint
from .style import Style, colour_enabled, escaped, human_bytes, plural, write_json

__all__ = ["cmd_check", "report_line"]


def report_line(r: CheckReport) -> str:
    """One line for a check report, ``path[:line]: what``; a control character in
    the name (or anywhere) is shown escaped, so that it cannot drive the terminal
    or forge a line."""
    return escaped(_report_text(r))


def _report_text(r: CheckReport) -> str:
    size = f"{plural(r.lines, 'line')}, {human_bytes(r.size or 0)}"
    if r.status == "clean":
        extra = "; the last line lacks its newline (the next append writes it)" if r.tail and r.tail.missing_newline else ""
        return f"{r.path}: clean ({plural(r.envelopes, 'envelope')}, {size}){extra}"
    if r.status == "repairable" and r.tail is not None:
        return (
            f"{r.path}:{r.tail.line}: torn tail: the last line ({plural(r.tail.removed, 'byte')}) "
            f"is not whole ({r.tail.reason}); load would remove it and keep "
            f"{plural(r.envelopes, 'envelope')}"
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
