"""The ``agent-transcript`` command line: its parser, and one exit status for every outcome.

Every command but ``repair``, ``demo``, ``archive``, ``fork`` (which writes
only its new file) and ``export`` (only its output folder) is read-only: it never locks,
repairs or writes, so it is safe on a transcript a writer holds and on a
damaged one. What load would do (``check``) and what replay makes of a file
(``show --replayed``, live counts, what a compaction replaced, pending
operations) are the core's answers, read through ``agent_transcript.inspect``;
a file load refuses is shown from peek's lenient index, with the refusal said.
Only the envelopes a command prints are decoded, so ``show --tail`` and
``stats`` take about as long as a load on a big file. Bad input (a missing
file, a directory, not a transcript, a version from the future, ...) is one
line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .. import __version__
from .archive import archive_arguments, cmd_archive
from .bench import cmd_bench
from .check import cmd_check
from .demo import cmd_demo
from .diff import cmd_diff, diff_arguments
from .export import cmd_export, export_arguments
from .errors import PROG
from .follow import cmd_follow
from .grep import GREP_DESCRIPTION, GREP_HELP, cmd_grep, grep_arguments
from .fork import cmd_fork, fork_arguments
from .ls import cmd_ls, ls_arguments
from .html import cmd_html, html_arguments
from .importer import cmd_import, import_arguments
from .outcome import run
from .prices import prices_option
from .repair import cmd_repair
from .serve import cmd_serve, serve_arguments
from .show import cmd_show, show_arguments
from .stats import cmd_stats
from .style import colour_option

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Read, check, repair and follow agent-transcript JSONL transcripts.",
        epilog="Exit status: 0 ok, 1 a torn tail that load would repair (check), 2 bad input or a corrupt file.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("show", help="the transcript for a person", description="Show a transcript for a person: a header, then each envelope as a block. Read-only: safe on a file being written or a damaged one.")
    show_arguments(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="what load would do, without writing (exit 0 clean, 1 repairable, 2 corrupt)", description="Say what Session.load would do to each file, without writing: exit 0 clean, 1 a torn tail load would repair, 2 corrupt or unreadable (the worst of all files).")
    p.add_argument("paths", metavar="PATH", nargs="+")
    p.add_argument("--json", action="store_true", help="a JSON array, one object per file")
    colour_option(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("repair", help="do load's repair: remove a torn last line", description="Do what Session.load does before replay: remove a torn last line (atomically, by rename). Refuses a corrupt file and one a writer holds.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    p.set_defaults(func=cmd_repair)

    p = sub.add_parser("stats", help="counts and sizes", description="Counts and bytes per type, messages, compactions, elisions, tools, pending operations, artifacts, and the tokens the run used where its transcript records them (per model; each model response counted once).")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    prices_option(p)
    colour_option(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("follow", help="print envelopes as they are appended (Ctrl-C to stop)", description="Like tail -f: print each envelope as it is appended. Read-only; never locks.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--type", action="append", metavar="T", help="only envelopes of type T")
    p.add_argument("--full", action="store_true", help="whole contents, not excerpts")
    p.add_argument("--extras", action="store_true", help="each message's extras in full, not only their names")
    p.add_argument("--ids", action="store_true", help="each envelope's id")
    p.add_argument("--json", action="store_true", help="one JSON envelope per line")
    p.add_argument("--poll", type=float, default=0.1, metavar="SECONDS", help="how often to look for more (default 0.1)")
    p.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS", help="stop after this long with nothing new")
    colour_option(p)
    p.set_defaults(func=cmd_follow)

    p = sub.add_parser("html", help="a page for a person: one self-contained .html file (a folder of pages for a big one)", description="Render a transcript as HTML: one self-contained file (inline CSS and JS, no network, a strict Content-Security-Policy) for a transcript of ordinary size, a folder of pages (OUT/index.html) for a big one. Read-only.")
    html_arguments(p)
    p.set_defaults(func=cmd_html)

    p = sub.add_parser("serve", help="a local viewer of a folder of transcripts (127.0.0.1 only, read-only, live)", description="Serve a folder of transcripts on 127.0.0.1: a resume picker, each transcript opening at its tail, live follow of a run still being written. Read-only: no endpoint writes. Only transcripts and their artifacts are served (no hidden file or folder, no link out of DIR), and only to whoever has the secret token in the URL it prints.")
    serve_arguments(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("demo", help="the whole story on a scratch transcript: a kill -9 mid-tool-call, then repair and resume", description="A scripted agent (no model, no network) writes a transcript and is killed with SIGKILL mid-tool-call; the demo then shows peek, check, load's repair, the pending tool operations, their resolution and a resumed run.")
    p.add_argument("dir", metavar="DIR", nargs="?", help="where to write (default: a new temporary directory); the files are kept")
    p.add_argument("-v", "--verbose", action="store_true", help="tell each step at length and end by showing the whole transcript (the default fits one screen)")
    colour_option(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("ls", help="one row per transcript of a folder, from first and last lines", description="List every *.jsonl (and *.jsonl.zst) under each DIR: status, whether a writer holds it, size, started, last activity, the last envelope's type, title (the first user message) and path, each from the file's first and last lines only. Never locks: a writer's load never fails because of ls (held is read from /proc/locks).")
    ls_arguments(p)
    p.set_defaults(func=cmd_ls)

    p = sub.add_parser("grep", help=GREP_HELP, description=GREP_DESCRIPTION)
    grep_arguments(p)
    p.set_defaults(func=cmd_grep)

    p = sub.add_parser("export", help="transcripts as Parquet tables (DuckDB, Spark) or OpenTelemetry traces", description="Export every *.jsonl and *.jsonl.zst under each DIR into OUT as four Parquet tables (sessions, envelopes, messages, tool_operations), hive-partitioned by the day each session started, with replay's answers (live messages, tool operation states, pending ones included). A file unchanged since the last export into OUT is skipped. Needs pyarrow (pip install 'agent-transcript[arrow]'). With --format otlp-json: each transcript as an OpenTelemetry trace (GenAI semantic conventions), one OTLP/JSON request per line of the file OUT, and/or sent to an OTLP/HTTP receiver (--endpoint). --format markdown writes one transcript as a Markdown page instead (stdout, or -o FILE), --redact taking secrets out. The transcripts are only read.")
    export_arguments(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("archive", help="compress a closed transcript into PATH.zst (--extract: back)", description="Compress the transcript at PATH into PATH.zst (zstd), verified by reading it back before the transcript is removed (--keep keeps it). Refuses a transcript a writer holds. show, check, stats, ls and Session.peek read PATH.zst as they read PATH; to append to it again, --extract gives the transcript back.")
    archive_arguments(p)
    p.set_defaults(func=cmd_archive)

    p = sub.add_parser("fork", help="a new transcript from a prefix of another", description="Copy SOURCE's lines up to and including envelope --through (every whole line by default), byte for byte, into the new file DEST, made as Session.create makes one. SOURCE is only read, never locked: a writer may hold it.")
    fork_arguments(p)
    p.set_defaults(func=cmd_fork)

    p = sub.add_parser("import", help="a Claude Code session or Codex rollout as a transcript", description="Import Claude Code sessions and Codex rollouts (a file, several, or a folder, mirrored; a folder import skips what is unchanged since its import). The format is detected unless --from says it. An existing destination is never overwritten without --force. Exit 1 when a folder held a file that could not be read (named on stderr; the rest imported).")
    import_arguments(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("diff", help="where two transcripts part, and what each then has", description="Compare two transcripts envelope by envelope (a fork and its source, two retries of one task): the last line they share, then what each has after it. Exit 0 the same, 1 they part, 2 bad input. Both are only read.")
    diff_arguments(p)
    p.set_defaults(func=cmd_diff)

    sub.add_parser("bench", help="measure against a plain-Python baseline: a quick run of seconds; --mb 1024 for the 1 GiB targets (see: bench --help)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)

    def command() -> int:
        if args_list and args_list[0] == "bench":
            return cmd_bench(args_list[1:])
        args = _parser().parse_args(args_list)
        status: int = args.func(args)
        return status

    return run(command)
