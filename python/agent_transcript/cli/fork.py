"""``fork SOURCE DEST [--through ID | --through-line N]``: a new transcript from a prefix of
another (``Session.fork``)."""

from __future__ import annotations

import argparse
import bisect
import sys

from .. import CorruptTranscript, Session, SessionLocked, UnknownId, UnsupportedVersion
from .errors import CliError
from .reading import describe_os_error
from .style import escaped, plural, write_json

__all__ = ["cmd_fork", "fork_arguments"]


def fork_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("dest", metavar="DEST")
    p.add_argument("--through", metavar="ID", default=None,
                   help="the last envelope to copy, by id (default: the last whole one)")
    p.add_argument("--through-line", metavar="N", default=None,
                   help="the last envelope to copy, by the line number show prints before it (1 is "
                        "the session-meta). Any envelope counts, a message or not: the fork copies "
                        "through it and replays as SOURCE did at that line. A line that holds no "
                        "envelope (blank, damaged, torn, or past the end) is refused")
    p.add_argument("--json", action="store_true", help="JSON instead of text")


def cmd_fork(args: argparse.Namespace) -> int:
    """Fork ``SOURCE`` into the new file ``DEST``; the source is only read."""
    source: str = args.source
    dest: str = args.dest
    through: str | None = args.through
    if args.through_line is not None:
        if through is not None:
            raise CliError("--through and --through-line name the same thing: give one")
        through = _envelope_on_line(source, _line_number(args.through_line))
    try:
        with Session.fork(source, dest, through_id=through) as fork:
            envelopes = len(fork.events)
            last = fork.events[-1].id
            live = len(fork.message_ids)
    except FileExistsError:
        raise CliError(f"{dest}: exists and is not empty; a fork makes a new file") from None
    except SessionLocked:
        raise CliError(f"{dest}: another session holds it") from None
    except (UnknownId, ValueError) as exc:
        raise CliError(str(exc)) from None
    except (CorruptTranscript, UnsupportedVersion) as exc:
        raise CliError(f"{source}: not forked: {exc}") from None
    except OSError as exc:
        raise CliError(describe_os_error(exc, getattr(exc, "filename", None) or source)) from None
    if args.json:
        write_json({"source": source, "path": dest, "through_id": last, "envelopes": envelopes,
                    "live_messages": live})
        return 0
    sys.stdout.write(f"{escaped(dest)}: forked from {escaped(source)} through {escaped(last)} "
                     f"({plural(envelopes, 'envelope')}, {plural(live, 'live message')})\n")
    return 0


def _line_number(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise CliError(f"--through-line {text!r}: not a line number (1 or more)")
    return int(text)


def _envelope_on_line(source: str, number: int) -> str:
    """The id of the envelope on line ``number`` of ``source``, read as show reads it."""
    peek = Session.peek(source)
    if peek.error is not None:
        raise CliError(f"{source}: not forked: {peek.error}")
    envelopes = peek.envelopes
    # In file order, so found by their line numbers in a few decodes, not all.
    i = bisect.bisect_left(envelopes, number, key=lambda e: e.line)
    if i < len(envelopes) and envelopes[i].line == number:
        return envelopes[i].id
    last = envelopes[-1].line
    if number > last:
        raise CliError(f"{source}: line {number} is past the last envelope (line {last}); not forked")
    why = next((w for w in peek.warnings if w.startswith(f"line {number}:")), None)
    what = f"is damaged ({why})" if why else "is blank"
    raise CliError(f"{source}: line {number} {what}: no envelope to fork through; not forked")
