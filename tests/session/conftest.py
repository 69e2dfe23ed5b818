"""Fixtures for the Session's tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A scratch folder on tmpfs when there is one, for tests that repair a file
    hundreds of times: a repair fsyncs the file and its folder, which costs tens
    of milliseconds each on a real disk and nothing on tmpfs. Falls back to
    ``tmp_path``."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="at-session-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
