"""``repair PATH``: load's repair of a torn last line, and what it removed."""

from __future__ import annotations

import argparse
import sys

from .. import CorruptTranscript, Session, SessionLocked, UnsupportedVersion
from ..inspect import check_path
from .check import report_line
from .errors import CliError
from .reading import describe_os_error
from .style import escaped, plural, write_json

__all__ = ["cmd_repair"]


def cmd_repair(args: argparse.Namespace) -> int:
    """``repair PATH``: load's repair (``Session.load(path).close()``), and what it removed."""
    path: str = args.path
    report = check_path(path)
    if report.status == "unreadable":
        raise CliError(f"{path}: {report.reason}")
    if report.exit_code == 2:
        raise CliError(report_line(report).replace("load would refuse it", "not repaired: load refuses it"))
    try:
        session = Session.load(path)
    except SessionLocked:
        raise CliError(f"{path}: a writer holds this transcript (SessionLocked); not repaired. Try again once it has closed") from None
    except UnsupportedVersion as exc:
        raise CliError(f"{path}: {exc}") from None
    except CorruptTranscript as exc:
        raise CliError(f"{path}: corrupt: {exc}") from None
    except OSError as exc:
        raise CliError(describe_os_error(exc, path)) from None
    try:
        warnings = list(session.warnings)
        envelopes = len(session.events)
    finally:
        session.close()
    removed = None
    if report.tail is not None and report.tail.kind == "torn":
        removed = {"line": report.tail.line, "bytes": report.tail.removed}
    if args.json:
        write_json({"path": path, "repaired": bool(warnings), "removed": removed if warnings else None, "warnings": warnings, "envelopes": envelopes})
        return 0
    name = escaped(path)  # a file name is shown on one line, its control characters escaped
    if warnings:
        for w in warnings:
            sys.stdout.write(f"{name}: repaired: {escaped(w)}\n")
        sys.stdout.write(f"{name}: {plural(envelopes, 'envelope')} kept; the file loads cleanly now\n")
    else:
        sys.stdout.write(f"{name}: nothing to repair ({plural(envelopes, 'envelope')}, clean)\n")
    return 0
