"""The frameworks run offline: their own scripted models, no tracing export, no network."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ._helpers import close_default_loop

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture(autouse=True)
def close_the_loop_run_sync_leaves() -> Iterator[None]:
    """See ``close_default_loop``."""
    yield
    close_default_loop()
