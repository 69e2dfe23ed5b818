"""``export RUN --format markdown``: one transcript as a Markdown page (``share.to_markdown``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from ..inspect.tokens import read_usage
from ..redaction import write_redacted_copy
from ..share import to_markdown
from .errors import CliError
from .reading import describe_os_error, read
from .redact import redactor_of

__all__ = ["cmd_markdown"]


def cmd_markdown(args: argparse.Namespace) -> int:
    """Write the Markdown page of the one transcript named to ``-o OUT`` (mode 0600), or to stdout
    without ``-o`` (or with ``-o -``)."""
    if len(args.paths) != 1:
        raise CliError("--format markdown: one transcript, not a folder's worth (name one file)")
    path = args.paths[0]
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory: --format markdown takes one transcript")
    redactor = redactor_of(args)
    read(path)  # refused in one line when it is not a readable transcript
    with tempfile.TemporaryDirectory(prefix="agent-transcript-redacted-") as scratch:
        source = path if redactor is None else write_redacted_copy(path, scratch, redactor)
        page = to_markdown(read(source), all_lines=args.all_lines, usages=read_usage(source))
    if page and not page.endswith("\n"):
        page += "\n"
    if args.out in (None, "-"):
        sys.stdout.write(page)
        return 0
    try:
        _write_private(args.out, page.encode("utf-8", "surrogatepass"))
    except OSError as exc:
        raise CliError(describe_os_error(exc, args.out)) from None
    sys.stdout.write(f"wrote {args.out}\n")
    return 0


def _write_private(out: str, data: bytes) -> None:
    """``data`` into ``out`` (mode 0600) through a temporary file beside it and a rename."""
    folder = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, out)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
