"""``grep PATTERN PATH...``: where a pattern matches the text of transcripts, printed as ripgrep prints."""

from __future__ import annotations

import argparse
import sys

from ..redaction import Redactor
from ..search import SEARCHED_TYPES, Hit, Unsearchable, grep
from .errors import PROG, CliError
from .outcome import run
from .redact import redaction_options, redactor_of
from .style import Style, colour_enabled, colour_option, escaped, json_text

__all__ = ["GREP_DESCRIPTION", "GREP_HELP", "cmd_grep", "grep_arguments", "main"]

#: The command's one-line help in the list of commands, and its description.
GREP_HELP = "where a pattern matches the text of transcripts (files and folders)"
GREP_DESCRIPTION = ("Search the text of transcripts (message content, tool calls and their arguments, tool "
                    "results, compaction summaries) for PATTERN, matched against the decoded text, and print "
                    "each matching line of it as path:line:text. The live messages replay gives by default; "
                    "every line with --all-lines. Exit status: 0 a match, 1 none, 2 bad input or a file that "
                    "could not be searched.")

# A text line longer than this is shown as a window around its first match.
_WIDE = 400


def grep_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pattern", metavar="PATTERN",
                   help="a regular expression (Rust regex syntax: Python's re without look-around "
                        "and backreferences), or with -F a fixed string; matched against the decoded text")
    p.add_argument("paths", metavar="PATH", nargs="+", help="transcripts and folders of them (.jsonl, .jsonl.zst)")
    p.add_argument("-F", "--fixed-strings", dest="literal", action="store_true", help="PATTERN is a fixed string")
    p.add_argument("-i", "--ignore-case", action="store_true", help="match case-insensitively")
    p.add_argument("--role", help="only messages of this role (a compaction's summary is a user message)")
    p.add_argument("--type", choices=SEARCHED_TYPES, help="only envelopes of this type")
    p.add_argument("--all-lines", action="store_true",
                   help="search every line: also what compactions and rewinds took out of the live "
                        "conversation, tool operations and elisions (default: the live messages replay gives)")
    p.add_argument("--json", action="store_true", help="one JSON object per hit, one per line")
    colour_option(p)
    redaction_options(p)


def main(argv: list[str]) -> int:
    """``agent-transcript grep ARGS...`` (``argv`` without ``grep``), run without importing the
    other commands: the same parser and exit statuses as through the whole command line."""

    def command() -> int:
        parser = argparse.ArgumentParser(prog=f"{PROG} grep", description=GREP_DESCRIPTION)
        grep_arguments(parser)
        return cmd_grep(parser.parse_args(argv))

    return run(command)


def cmd_grep(args: argparse.Namespace) -> int:
    try:
        found = grep(args.pattern, *args.paths, literal=args.literal, ignore_case=args.ignore_case,
                     all_lines=args.all_lines, role=args.role, type=args.type)
    except ValueError as exc:
        raise CliError(f"bad pattern: {exc}") from None
    redactor = redactor_of(args)
    style = Style(colour_enabled(args.color, sys.stdout))
    matched = failed = False
    out = sys.stdout
    for item in found:
        if isinstance(item, Unsearchable):
            failed = True
            out.flush()
            sys.stderr.write(f"agent-transcript: {escaped(str(item.path))}: {escaped(item.reason)}\n")
            continue
        matched = True
        if args.json:
            out.write(json_text(_json(item, redactor)) + "\n")
        else:
            for row in _rows(item, style, redactor):
                out.write(row + "\n")
    return 2 if failed else 0 if matched else 1


def _json(hit: Hit, redactor: Redactor | None) -> dict[str, object]:
    text = hit.text if redactor is None else redactor.redact(hit.text)
    # Spans into the text as it was: a redacted text has none to give.
    matches = [list(s) for s in hit.spans] if text == hit.text else None
    return {"path": str(hit.path), "line": hit.line, "id": hit.id, "type": hit.type, "role": hit.role,
            "field": hit.field, "text": text, "matches": matches}


def _rows(hit: Hit, style: Style, redactor: Redactor | None = None) -> list[str]:
    """``path:line:text`` for each line of the hit's text that holds a match, the matches
    highlighted; with ``redactor``, a line that held a secret is printed redacted, unhighlighted."""
    prefix = f"{style(escaped(str(hit.path)), 'magenta')}:{style(str(hit.line), 'green')}:"
    text = hit.text
    rows = []
    k = 0
    while k < len(hit.spans):  # only the lines with a match are looked at: a tool result can be megabytes
        start = text.rfind("\n", 0, hit.spans[k][0]) + 1
        end = text.find("\n", hit.spans[k][0])
        end = len(text) if end < 0 else end
        here = []
        while k < len(hit.spans) and hit.spans[k][0] <= end:
            s, e = hit.spans[k]
            here.append((s - start, min(e, end) - start))
            k += 1
        line = text[start:end]
        redacted = line if redactor is None else redactor.redact(line)
        rows.append(prefix + (_marked(line, here, style) if redacted == line else _marked(redacted, [], style)))
    return rows


def _marked(text: str, spans: list[tuple[int, int]], style: Style) -> str:
    """``text`` with ``spans`` highlighted, control characters made visible, a long line cut
    to a window around its first match."""
    lo, hi = 0, len(text)
    if hi > _WIDE:
        lo = max(0, spans[0][0] - _WIDE // 4) if spans else 0
        hi = min(len(text), lo + _WIDE)
    parts = ["…" if lo else ""]
    at = lo
    for s, e in spans:
        s, e = max(s, at), min(e, hi)
        if s >= hi:
            break
        if e <= s:
            continue
        parts.append(escaped(text[at:s]))
        parts.append(style(escaped(text[s:e]), "bold", "red"))
        at = e
    parts.append(escaped(text[at:hi]))
    parts.append("…" if hi < len(text) else "")
    return "".join(parts)
