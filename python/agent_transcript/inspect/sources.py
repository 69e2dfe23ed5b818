"""What ``formats``' importers read through the core: a source line's JSON
value, and a Codex ``.jsonl.zst`` rollout a chunk at a time, never whole in memory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import _core
from .._archive import is_archive
from .._storage import read_regular_file

__all__ = ["decompress", "decompressed_head", "is_compressed", "json_value"]


def json_value(raw: bytes | str) -> Any:
    """The JSON value ``raw`` holds, read by the core: what ``json.loads`` gives for
    every JSON text (RFC 8259: no ``NaN`` or ``Infinity``), in half its time.

    Raises:
        ValueError: ``raw`` is not JSON, or is nested deeper than 512 levels.
    """
    return _core.loads(raw)


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
