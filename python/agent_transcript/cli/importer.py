"""``import SRC... -o DEST``: Claude Code sessions and Codex rollouts as transcripts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..formats import FORMATS, ImportResult, UnknownFormat, import_transcript
from .errors import CliError
from .reading import describe_os_error

__all__ = ["cmd_import", "import_arguments"]


def import_arguments(p: argparse.ArgumentParser) -> None:
    """The ``import`` command's arguments."""
    p.add_argument("sources", metavar="SRC", nargs="+", help="a Claude Code session or Codex rollout, or a folder of them")
    p.add_argument("-o", "--output", metavar="DEST", required=True,
                   help="the transcript to write (a folder for a folder or several sources)")
    p.add_argument("--from", dest="source_format", choices=FORMATS, help="the source format (default: detected)")
    p.add_argument("--force", action="store_true", help="replace an existing destination (atomically)")
    p.add_argument("--quiet", action="store_true", help="no line per file, no warnings")


def cmd_import(args: argparse.Namespace) -> int:
    """``import SRC... -o DEST``: exit 0 when every source was imported, 1 when a
    folder held a file it could not read (the others imported; each such file
    named on stderr), 2 on bad input."""
    targets = _targets([Path(s) for s in args.sources], Path(args.output))
    results: list[ImportResult] = []
    for src, target in zip(args.sources, targets):
        source = Path(src)
        try:
            results.extend(import_transcript(source, target, source_format=args.source_format, force=args.force))
        except UnknownFormat as exc:
            raise CliError(str(exc)) from None
        except FileExistsError as exc:
            raise CliError(f"{exc.filename}: {exc.strerror}") from None
        except OSError as exc:
            raise CliError(describe_os_error(exc, getattr(exc, "filename", None) or src)) from None
    refused = any(r.refused is not None for r in results)
    if not args.quiet:
        for r in results:
            if r.refused is not None:
                sys.stderr.write(f"warning: {r.source}: not imported: {r.refused}\n")
                continue
            if r.skipped:
                sys.stdout.write(f"{r.source}: unchanged since its import to {r.dest}, skipped\n")
                continue
            sys.stdout.write(f"{r.source}: {r.source_format} -> {r.dest}\n")
            for w in r.warnings:
                sys.stderr.write(f"warning: {r.source}: {w}\n")
    return 1 if refused else 0


def _targets(sources: list[Path], dest: Path) -> list[Path]:
    """Where each source goes: ``dest`` for one, ``dest/<name>.jsonl`` (a folder's
    ``dest/<name>``) for several. Two sources that would go to one place are
    refused before anything is written: the second would replace the first."""
    if len(sources) == 1:
        return [dest]
    targets = []
    for source in sources:
        plain = source.name[: -len(".zst")] if source.name.endswith(".jsonl.zst") else source.name
        targets.append(dest / source.name if source.is_dir() else (dest / plain).with_suffix(".jsonl"))
    first: dict[Path, Path] = {}
    for source, target in zip(sources, targets):
        other = first.setdefault(target, source)
        if other is not source:
            raise CliError(f"{other} and {source} would both be imported to {target}; import them to different places")
    return targets
