"""``export DIR... -o OUT --format parquet``: transcripts as Parquet tables (``fleet.export_transcripts``)."""

from __future__ import annotations

import argparse
import sys

from ..fleet import FORMATS, OTLP_FORMAT, ExportError, export_transcripts
from ..fleet.export import describe
from .errors import CliError
from .markdown import cmd_markdown
from .otlp import cmd_export_otlp, otlp_arguments
from .redact import redaction_options
from .style import escaped, write_json

__all__ = ["cmd_export", "export_arguments"]


def export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", metavar="DIR", nargs="+", help="folders to walk (a file is exported itself)")
    p.add_argument("-o", "--out", metavar="OUT",
                   help="the export's folder: new, empty, or an earlier export's (unchanged files are skipped); "
                        f"for {OTLP_FORMAT}, a JSON Lines file; for markdown the page's file (default: stdout)")
    p.add_argument("--format", default="parquet", metavar="FORMAT",
                   help=f"the format: {', '.join((*FORMATS, OTLP_FORMAT))} (the default: {FORMATS[0]}), "
                        "or markdown: one transcript as a page")
    p.add_argument("--all-lines", action="store_true", help="markdown: every line, not only the live conversation")
    redaction_options(p)
    p.add_argument("--json", action="store_true", help="what was exported, as JSON")
    otlp_arguments(p)


def cmd_export(args: argparse.Namespace) -> int:
    """Export every transcript under each DIR into OUT; the transcripts are only read.
    Exit 0, or 1 when a folder could not be listed (each named on stderr; the
    rows an earlier export had of its transcripts are kept), 2 on bad input."""
    if args.format == "markdown":
        return cmd_markdown(args)
    if args.format == OTLP_FORMAT:
        return cmd_export_otlp(args)
    if args.redact or args.redact_rules:
        raise CliError(f"--redact: --format {args.format} is not redacted (markdown, otlp-json and html are)")
    if args.format not in FORMATS:
        raise CliError(f"--format {args.format}: not a format export writes "
                       f"(it writes {', '.join((*FORMATS, OTLP_FORMAT, 'markdown'))})")
    if args.out is None:
        raise CliError(f"export --format {args.format} needs -o OUT")
    try:
        result = export_transcripts(*args.paths, out=args.out, format=args.format)
    except ExportError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        write_json(result.to_json())
    else:
        sys.stdout.write("\n".join(describe(result)) + "\n")
    for folder, why in result.unreadable.items():
        sys.stderr.write(f"warning: {escaped(str(folder))}: not read ({why}); "
                         "the rows of its transcripts are kept as the last export wrote them\n")
    return 1 if result.unreadable else 0
