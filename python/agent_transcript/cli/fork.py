"""``fork SOURCE DEST [--through ID]``: a new transcript from a prefix of another (``Session.fork``)."""

from __future__ import annotations

import argparse
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
                   help="the last envelope to copy (default: the last whole one)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")


def cmd_fork(args: argparse.Namespace) -> int:
    """Fork ``SOURCE`` into the new file ``DEST``; the source is only read."""
    source: str = args.source
    dest: str = args.dest
    try:
        with Session.fork(source, dest, through_id=args.through) as fork:
            envelopes = len(fork.events)
            last = fork.events[-1].id
            live = len(fork.message_ids)
    except FileExistsError:
        raise CliError(f"{dest}: exists and is not empty; a fork makes a new file") from None
    except SessionLocked:
        raise CliError(f"{dest}: another session holds it") from None
    except UnknownId as exc:
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
