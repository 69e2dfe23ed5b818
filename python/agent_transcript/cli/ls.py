"""``ls DIR...``: one row per transcript of a folder, from each file's first and last lines."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Iterator

from ..fleet import TranscriptRow, list_transcripts, sort_rows
from ..inspect import os_error_reason
from .errors import CliError
from .ls_tokens import write_with_tokens
from .style import clip, escaped, human_bytes, json_text, local_time, terminal_width

__all__ = ["cmd_ls", "ls_arguments", "SORT_KEYS"]

#: ``--sort`` names and the row field each sorts by.
SORT_KEYS = {"path": "path", "started": "started", "activity": "last_activity", "size": "size",
             "status": "status", "title": "title", "mtime": "mtime"}


def ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dirs", metavar="DIR", nargs="+", help="folders to walk (a file is listed itself)")
    p.add_argument("--json", action="store_true", help="a JSON array, one object per file")
    p.add_argument("--sort", choices=sorted(SORT_KEYS), default=None,
                   help="sort by this (default: the walk's order, name order in each folder, printed as found)")
    p.add_argument("--reverse", action="store_true", help="the other way round")
    p.add_argument("--no-recursive", dest="recursive", action="store_false", help="only the folder itself")
    p.add_argument("--tokens", action="store_true",
                   help="the tokens each run used and the folder's total, each model response once "
                        "(reads every file whole: slower)")


class _Progress:
    """``listed N files`` on stderr, redrawn at most ten times a second, when it is a terminal."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.n = 0
        self.last = 0.0
        self.shown = False

    def count(self, rows: Iterable[TranscriptRow]) -> Iterator[TranscriptRow]:
        for row in rows:
            self.n += 1
            if self.on and time.monotonic() - self.last > 0.1:
                self.last = time.monotonic()
                sys.stderr.write(f"\rlisted {self.n:,} files…")
                sys.stderr.flush()
                self.shown = True
            yield row

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def cmd_ls(args: argparse.Namespace) -> int:
    """List the transcripts under each DIR; never locks, never writes."""
    try:
        rows: Iterable[TranscriptRow] = list_transcripts(*args.dirs, recursive=args.recursive)
        progress = _Progress(sys.stderr.isatty() and (args.sort is not None or not sys.stdout.isatty()))
        rows = progress.count(rows)
        if args.sort is not None or args.reverse:
            listed = sort_rows(rows, SORT_KEYS[args.sort or "path"])
            rows = reversed(listed) if args.reverse else listed
        try:
            if args.tokens:
                write_with_tokens(rows, args.json)
            elif args.json:
                _write_json(rows)
            else:
                _write_text(rows)
        finally:
            progress.done()
    except BrokenPipeError:
        raise
    except OSError as exc:
        name = getattr(exc, "filename", None) or "?"
        raise CliError(f"{name}: {os_error_reason(exc)}") from None
    return 0


def _write_json(rows: Iterable[TranscriptRow]) -> None:
    out = sys.stdout
    first = True
    out.write("[")
    for row in rows:
        out.write(("\n  " if first else ",\n  ") + json_text(row.to_json()))
        first = False
    out.write("\n]\n" if not first else "]\n")


def _when(ts: str | None) -> str:
    """``ts`` in local time to the second, or ``-``."""
    t = local_time(ts) if ts else None
    return t.strftime("%Y-%m-%d %H:%M:%S") if t else "-"


def _write_text(rows: Iterable[TranscriptRow]) -> None:
    """One line a file: status, held, size, last activity, last type, path, then
    the title (or why it is not clean) as far as the terminal's width allows."""
    width = terminal_width()
    out = sys.stdout
    out.write(f"{'STATUS':<19} {'HELD':<4} {'SIZE':>9} {'LAST ACTIVITY':<19} {'LAST TYPE':<12} PATH  TITLE\n")
    for r in rows:
        held = "?" if r.held is None else ("yes" if r.held else "")
        fixed = (f"{r.status:<19} {held:<4} {human_bytes(r.size):>9} {_when(r.last_activity):<19} "
                 f"{clip(r.last_type or '-', 12):<12} ")
        name = str(r.path)
        if not name.isprintable():
            name = escaped(name)
        note = r.title if r.status in ("clean", "pending", "torn tail") else r.reason
        tail = (f"  {note}" if note.isprintable() else f"  {escaped(note)}") if note else ""
        room = max(0, width - len(fixed) - len(name))
        out.write(fixed + name + (clip(tail, room) if room > 3 else "") + "\n")
