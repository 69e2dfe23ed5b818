"""The reliability suite needs Linux: its fault shim is an ``LD_PRELOAD`` library
built with gcc, its full-disk scenarios mount a tmpfs, its permission scenarios
run as ``nobody`` and several read ``/proc``. Elsewhere (macOS) every test here is
skipped with that reason; on Linux nothing is skipped: a missing tool fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REASON = "Linux only: the LD_PRELOAD fault shim, tmpfs mounts, setuid nobody and /proc"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if sys.platform.startswith("linux"):
        return
    skip = pytest.mark.skip(reason=REASON)
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(skip)
