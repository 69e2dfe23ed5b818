"""``export PATH... -o OUT --format otlp-json``: transcripts as OpenTelemetry traces (``fleet.export_otlp``)."""

from __future__ import annotations

import argparse
import sys

from ..fleet import ENCODINGS, ExportError, OtlpExport, SendError, export_otlp
from .errors import CliError
from .redact import redactor_of
from .style import escaped, write_json

__all__ = ["otlp_arguments", "cmd_export_otlp"]


def otlp_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``export --format otlp-json``."""
    g = p.add_argument_group("otlp-json", "OpenTelemetry traces (GenAI semantic conventions, experimental)")
    g.add_argument("--content", action="store_true",
                   help="also export message content, tool arguments and results (left out by default)")
    g.add_argument("--endpoint", metavar="URL",
                   help="send the traces to this OTLP/HTTP receiver (/v1/traces added to a URL without a path); "
                        "-o is then optional")
    g.add_argument("--encoding", choices=ENCODINGS, default=ENCODINGS[0],
                   help="what --endpoint sends: protobuf (the default) or json")
    g.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                   help="an HTTP header for --endpoint (repeatable), e.g. Authorization=...")
    g.add_argument("--retries", type=int, default=4, metavar="N",
                   help="retries of a failed or throttled send, with backoff (default 4)")


def _headers(pairs: list[str]) -> dict[str, str]:
    headers = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--header {pair}: not NAME=VALUE")
        headers[name.strip()] = value.strip()
    return headers


def cmd_export_otlp(args: argparse.Namespace) -> int:
    """Export every transcript under each PATH as OTLP/JSON lines into OUT and/or
    send it to --endpoint. Exit 0, 1 when a file or folder could not be read
    (each named on stderr), 2 on bad input or a send that failed."""
    if args.out is None and args.endpoint is None:
        raise CliError("export --format otlp-json needs -o OUT, --endpoint URL, or both")
    if args.retries < 0:
        raise CliError(f"--retries {args.retries}: not a count")
    redactor = redactor_of(args)
    try:
        result = export_otlp(*args.paths, out=args.out, content=args.content, endpoint=args.endpoint,
                             encoding=args.encoding, headers=_headers(args.header), retries=args.retries,
                             redact=None if redactor is None else redactor.redact)
    except SendError as exc:
        sent = f" ({exc.sent} transcript(s) sent before; -o OUT not written)" if exc.sent else ""
        raise CliError(f"--endpoint: {exc}{sent}") from None
    except ExportError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        write_json(result.to_json())
    else:
        sys.stdout.write(_describe(result) + "\n")
    for path, why in result.refused.items():
        sys.stderr.write(f"warning: {escaped(str(path))}: not exported ({why})\n")
    for folder, why in result.unreadable.items():
        sys.stderr.write(f"warning: {escaped(str(folder))}: not read ({why})\n")
    return 1 if result.refused or result.unreadable else 0


def _describe(result: OtlpExport) -> str:
    where = [] if result.out is None else [str(result.out)]
    if result.sent:
        where.append(f"sent {result.sent:,} request(s)")
    return (f"exported {len(result.exported):,} transcript(s), {result.spans:,} span(s)"
            + (f" -> {escaped(', '.join(where))}" if where else ""))
