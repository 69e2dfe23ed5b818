"""``archive PATH``: a closed transcript compressed into ``PATH.zst`` (``Session.archive``);
``archive --extract PATH.zst``: the transcript back (``Session.unarchive``)."""

from __future__ import annotations

import argparse
import os
import sys

from .. import CorruptTranscript, Session, SessionLocked
from .errors import CliError
from .reading import describe_os_error
from .style import escaped, human_bytes, write_json

__all__ = ["cmd_archive", "archive_arguments"]


def archive_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", metavar="PATH")
    p.add_argument("--extract", action="store_true",
                   help="the other way: extract the archive PATH (run.jsonl.zst) into the transcript "
                        "beside it (run.jsonl), verified before the archive is removed")
    p.add_argument("--keep", action="store_true",
                   help="keep the transcript beside its archive (with --extract: keep the archive)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")


def cmd_archive(args: argparse.Namespace) -> int:
    """Archive PATH; the transcript is removed only once the archive reads back the same."""
    if args.extract:
        return _extract(args)
    path: str = args.path
    try:
        size = os.stat(path).st_size
        dest = Session.archive(path, keep=args.keep)
    except SessionLocked:
        raise CliError(f"{path}: a writer holds this transcript; not archived. Try again once it has closed") from None
    except FileExistsError as exc:
        raise CliError(f"{exc.filename or path}: the archive is there already; not archived") from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(describe_os_error(exc, getattr(exc, "filename", None) or path)) from None
    packed = os.stat(dest).st_size
    shown = path + ".zst"  # as PATH was given
    if args.json:
        write_json({"path": path, "archive": shown, "bytes": size, "archive_bytes": packed,
                    "kept": bool(args.keep)})
        return 0
    ratio = size / packed if packed else 0.0
    what = "kept" if args.keep else "removed"
    sys.stdout.write(f"{escaped(path)} -> {escaped(shown)}: {human_bytes(size)} -> {human_bytes(packed)} "
                     f"({ratio:.1f}x), read back and verified; the transcript {what}\n")
    return 0


def _extract(args: argparse.Namespace) -> int:
    """Extract the archive PATH; it is removed only once the transcript reads back the same."""
    path: str = args.path
    try:
        packed = os.stat(path).st_size
        dest = Session.unarchive(path, keep=args.keep)
    except SessionLocked:
        raise CliError(f"{path}: another process is extracting this archive; not extracted") from None
    except FileExistsError as exc:
        raise CliError(f"{exc.filename or path}: a file is there already; not extracted") from None
    except (ValueError, CorruptTranscript) as exc:
        raise CliError(f"{exc}; not extracted") from None
    except OSError as exc:
        raise CliError(describe_os_error(exc, getattr(exc, "filename", None) or path)) from None
    size = os.stat(dest).st_size
    shown = path[: -len(".zst")]  # as PATH was given
    if args.json:
        write_json({"archive": path, "path": shown, "bytes": size, "archive_bytes": packed,
                    "kept": bool(args.keep)})
        return 0
    what = "kept" if args.keep else "removed"
    sys.stdout.write(f"{escaped(path)} -> {escaped(shown)}: {human_bytes(packed)} -> {human_bytes(size)}, "
                     f"read back and verified; the archive {what}\n")
    return 0
