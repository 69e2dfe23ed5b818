"""``agent-transcript serve DIR``: a local viewer of a folder of transcripts (127.0.0.1 only)."""

from __future__ import annotations

import argparse
import os
import sys

from ..viewer import make_server
from ..viewer.server import shown_name
from .errors import CliError
from .reading import describe_os_error

__all__ = ["cmd_serve", "serve_arguments"]


def serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--port", type=int, default=8765, metavar="N", help="the port on 127.0.0.1 (default 8765; 0: any free one)")
    p.add_argument("--no-token", action="store_true",
                   help="ask no token: any local user (any process on this machine) can then read every transcript in DIR. "
                        "By default each request must carry a new random token: open the URL printed (?token=...); "
                        "the browser keeps it in a cookie after")


def cmd_serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port}: not a port (0 to 65535)")
    if not os.path.isdir(args.dir):
        raise CliError(f"{args.dir}: not a directory" if os.path.exists(args.dir) else f"{args.dir}: no such directory")
    try:
        server = make_server(args.dir, args.port, token=not args.no_token)
    except OSError as exc:
        raise CliError(f"127.0.0.1:{args.port}: {describe_os_error(exc, args.dir) if exc.filename else exc.strerror or exc}") from None
    anyone = "; no token: any local user can read it" if server.token is None else ""
    sys.stdout.write(f"serving {shown_name(server.root)} at {server.url} (read-only{anyone}; Ctrl-C to stop)\n")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.stopping.set()
        server.server_close()
    return 0
