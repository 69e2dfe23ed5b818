"""Fixtures for every test."""

from __future__ import annotations

import os

import pytest


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
