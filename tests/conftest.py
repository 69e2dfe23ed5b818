"""Fixtures for every test."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A scratch folder on tmpfs when there is one, for tests that repair,
    fork, archive or interrupt a file hundreds of times: each fsyncs the file
    and its folder, which costs tens of milliseconds on a real disk and
    nothing on tmpfs. Falls back to ``tmp_path``."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK | os.X_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="at-test-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def small_stack() -> int:
    """A thread stack size, for ``threading.stack_size``, small enough to catch
    deep recursion and valid on every platform: 64 KiB, or the platform's minimum
    where that is more (glibc's ``PTHREAD_STACK_MIN`` is 16 KiB on x86_64 but
    128 KiB on aarch64 and ppc64le, and a smaller size raises ``ValueError``)."""
    try:
        least = os.sysconf("SC_THREAD_STACK_MIN")
    except (ValueError, OSError):  # the name is unknown here
        least = 0
    return max(64 * 1024, least)
