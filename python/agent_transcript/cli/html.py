"""``agent-transcript html PATH -o OUT``: a page for a person (one file, or a folder of pages)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from ..viewer import HtmlResult, write_html, write_page_json
from ..inspect import Reading
from .errors import CliError
from ..redaction import write_redacted_copy
from .reading import describe_os_error, read
from .redact import redaction_options, redactor_of

__all__ = ["cmd_html", "html_arguments"]


def html_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH")
    p.add_argument("-o", "--output", metavar="OUT", required=True, help="the .html file to write (a folder of pages for a big transcript)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--single", dest="single", action="store_const", const=True, default=None, help="one self-contained file, whatever the size")
    mode.add_argument("--pages", dest="single", action="store_const", const=False, help="a folder of pages, whatever the size")
    p.add_argument("--json", action="store_true", help="write the page's data to OUT as JSON instead: every record with what replay says of it, the tokens, the check's verdict")
    redaction_options(p)


def cmd_html(args: argparse.Namespace) -> int:
    redactor = redactor_of(args)
    reading = read(args.path)
    out = args.output
    try:
        if redactor is None:
            result = _write(reading, out, args)
        else:  # the page of a redacted copy, in a private folder removed afterwards
            with tempfile.TemporaryDirectory(prefix="agent-transcript-redacted-") as scratch:
                copy = read(write_redacted_copy(args.path, scratch, redactor))
                result = _write(copy, out, args)
    except OSError as exc:
        raise CliError(describe_os_error(exc, getattr(exc, "filename", None) or out)) from None
    if result is None:
        sys.stdout.write(f"wrote {out}\n")
        return 0
    if result.single:
        sys.stdout.write(f"wrote {result.path}\n")
    else:
        pages = f"{result.pages} page{'s' if result.pages != 1 else ''}"
        sys.stdout.write(f"wrote {os.path.dirname(result.path) or '.'}/ ({pages}; open {result.path})\n")
    return 0


def _write(reading: Reading, out: str, args: argparse.Namespace) -> HtmlResult | None:
    if args.json:
        write_page_json(reading, out)
        return None
    return write_html(reading, out, single=args.single)
