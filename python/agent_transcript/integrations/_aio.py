"""Running a transcript write off the event loop, to the end, whatever the caller does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["write_off_loop"]


async def write_off_loop(fn: Callable[[], T]) -> T:
    """Run ``fn()`` in a worker thread and wait until it has finished.

    A write must not be abandoned halfway because its caller was cancelled (the
    agent frameworks' own stores lost history exactly that way): a cancellation
    that arrives meanwhile is held until the write is done, then re-raised. The
    event loop goes on running other tasks while the thread writes.
    """
    task = asyncio.ensure_future(asyncio.to_thread(fn))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as e:
            if cancelled is None:
                cancelled = e
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved, so an error of the write is not reported as lost
        raise cancelled
    return task.result()
