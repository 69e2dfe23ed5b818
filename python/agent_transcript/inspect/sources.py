"""Another tool's transcript read by the core: the native half of ``formats``' importers.

The Rust core reads a Claude Code session (or Codex rollout) and writes the
envelopes an import derives from it to a descriptor the caller owns; it never
opens, creates or renames a file itself. ``formats`` decides what to do with
them (the session-meta, the destination, the fallback to its Python importer).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from .. import _core
from .._archive import is_archive
from .._storage import read_regular_file

__all__ = ["NativeImport", "decompress", "decompressed_head", "is_compressed", "native_import"]


class NativeImport(Protocol):
    """A source the core converted: what the session-meta needs, and the source lines to write."""

    def summary(self) -> tuple[str, int, list[str], str | None, str, int, str, int, int, str | None, list[str]]:
        """``(info_json, message_count, pending, first_ts, last_ts, ids_used, sha256, size,
        line_count, first_line_ts, warnings)``."""
        ...

    def write_lines(self, dest_fd: int, ids_used: int, /) -> None:
        """Appends the ``source-line`` envelopes to ``dest_fd``'s file."""
        ...


def native_import(source_format: str, src_fd: int, spool_fd: int) -> NativeImport | str:
    """The core's conversion of the source open at ``src_fd`` (its derived envelopes appended
    to ``spool_fd``'s file), or a sentence saying why the core leaves it to the Python importer.

    Raises:
        OSError: a read or write failed.
        ValueError: the source changed while it was read.
    """
    return _core.import_native(source_format, src_fd, spool_fd)


def is_compressed(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a zstd-compressed source (``*.zst``: a Codex ``.jsonl.zst`` rollout)."""
    return is_archive(path)


def decompress(path: Path, dest_fd: int) -> None:
    """The zstd stream at ``path``, decompressed by the core a chunk at a time onto ``dest_fd``'s file.

    Raises:
        OSError: ``path`` cannot be read, or ``dest_fd`` written.
        ValueError: ``path`` is not a whole zstd stream.
    """
    read_regular_file(path, lambda f: _core.zstd_decompress(f.fileno(), dest_fd))  # never a FIFO's wait


def decompressed_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of the zstd stream at ``path``, decompressed (the rest is not read).

    Raises:
        OSError: ``path`` cannot be read.
        ValueError: ``path`` does not start a zstd stream.
    """
    return read_regular_file(path, lambda f: _core.zstd_head(f.fileno(), size))  # never a FIFO's wait
