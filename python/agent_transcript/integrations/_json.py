"""Many JSON texts decoded at once, for the adapters that keep a history's items as text."""

from __future__ import annotations

import gc
import json
from typing import Any

__all__ = ["decode_all"]


def decode_all(texts: list[str]) -> list[Any]:
    """Fresh values from their JSON texts, in one decoder call.

    The decoder makes every container of the history in one C loop; the cycle
    collector, woken every few hundred of them, would walk the growing result
    (and the whole heap, now and then) dozens of times per call, which costs
    more than the decoding. It waits until the list is whole: reference
    counting frees as ever, only cycle collection is deferred, and its state
    is restored as it was.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        values: list[Any] = json.loads("[" + ",".join(texts) + "]")
    finally:
        if enabled:
            gc.enable()
    return values
