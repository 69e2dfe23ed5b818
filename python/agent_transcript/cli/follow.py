"""``follow PATH``: print envelopes as they are appended, like ``tail -f``."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..inspect import follow_file
from ..inspect.paths import read_regular_file
from .errors import PROG, CliError
from .reading import describe_os_error, read, require_file
from .render import Renderer
from .show import envelope_json, types_arg
from .style import Style, colour_enabled, escaped, json_text, terminal_width

__all__ = ["cmd_follow"]


def cmd_follow(args: argparse.Namespace) -> int:
    """``follow PATH``: print envelopes as they are appended; Ctrl-C exits 0."""
    path: str = args.path
    if not (math.isfinite(args.poll) and args.poll > 0):
        raise CliError(f"--poll takes a number of seconds > 0, not {args.poll!r}")
    if args.idle_timeout is not None and not (math.isfinite(args.idle_timeout) and args.idle_timeout >= 0):
        raise CliError(f"--idle-timeout takes a number of seconds >= 0, not {args.idle_timeout!r}")
    st = require_file(path)
    if st.st_size > 0:
        try:
            # Never a FIFO swapped in; closed whatever happens (a with's file is
            # left to the garbage collector by a Ctrl-C as its block ends).
            head = read_regular_file(Path(path), lambda f: f.read(65536))
        except OSError as exc:
            raise CliError(describe_os_error(exc, path)) from None
        if head.strip(b" \t\r\n"):
            read(path)  # refuses what is not a transcript, or one from the future
    types = types_arg(args.type)
    s = Style(colour_enabled(args.color, sys.stdout))
    renderer = Renderer(s, terminal_width(), full=args.full, extras=args.extras, ids=args.ids)
    def restart(why: str) -> None:
        # On stderr, flushed after what was printed of the old file: a reader of
        # stdout alone (a pipe) still gets only envelopes.
        sys.stdout.flush()
        if why == "truncated":
            note = "was truncated: following it again from its start"
        else:
            note = "is another file now (rotated or replaced): following that one from its start"
        sys.stderr.write(f"{PROG}: {escaped(path)}: {note}\n")
        sys.stderr.flush()

    try:
        for env in follow_file(Path(path).absolute(), poll=args.poll, idle_timeout=args.idle_timeout,
                               on_restart=restart):
            show = not types or env.type in types
            if args.json:
                if show:
                    sys.stdout.write(json_text(envelope_json(env)) + "\n")
            else:
                block = renderer.block(env, show=show)
                if block:
                    sys.stdout.write("\n".join(block) + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # the reader went away (follow ... | head): quiet, as every command
        raise
    except OSError as exc:
        raise CliError(describe_os_error(exc, path)) from None
    return 0
