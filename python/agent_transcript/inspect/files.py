"""Opening a file a front end was asked to read: is it one, and what is wrong if not."""

from __future__ import annotations

import os
from collections.abc import Iterator
import stat
from pathlib import Path

from .._storage import open_regular

__all__ = ["Unreadable", "os_error_reason", "describe_os_error", "require_file"]


class Unreadable(Exception):
    """``path`` cannot be read as a transcript: missing, a directory, not a regular file, unreadable.

    Attributes:
        path: the path as given.
        reason: what is wrong, for a person (``"no such file"``).
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def os_error_reason(exc: OSError) -> str:
    """What an ``OSError`` means for a file a person named: no errno soup."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not a transcript"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, NotADirectoryError):
        return "a parent of this path is not a directory"
    return exc.strerror or str(exc)


def describe_os_error(exc: OSError, path: str) -> str:
    """One line for an ``OSError`` about ``path``: ``"path: reason"``."""
    return f"{path}: {os_error_reason(exc)}"


def require_file(path: str) -> os.stat_result:
    """The stat of ``path`` if it is a regular file this process may read.

    Raises:
        Unreadable: missing, a directory, not a regular file, or unreadable.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise Unreadable(path, os_error_reason(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise Unreadable(path, "is a directory, not a transcript")
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(path, "not a regular file")
    try:
        # Without blocking: it may have become a FIFO since the stat.
        os.close(open_regular(Path(path), os.O_RDONLY))
    except OSError as exc:
        raise Unreadable(path, os_error_reason(exc)) from None
    return st


def walk_transcripts(roots: list[Path], unreadable: dict[Path, str]) -> Iterator[Path]:
    """Every transcript under ``roots`` (a file named is itself), name order in
    each folder; symlinks to files are followed, to folders not (no loops). A
    folder that cannot be listed is put in ``unreadable``, with why."""
    for root in roots:
        if not root.is_dir():
            yield root
            continue
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed since its folder was listed: gone
            except OSError as exc:
                unreadable[folder] = os_error_reason(exc)
                continue
            subdirs = []
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        subdirs.append(Path(e.path))
                        continue
                except OSError:
                    continue
                if e.name.endswith((".jsonl", ".jsonl.zst")):
                    yield Path(e.path)
            stack.extend(reversed(subdirs))
