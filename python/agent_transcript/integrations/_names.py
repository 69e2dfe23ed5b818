"""What the adapters that keep one transcript per session share: the file name
a session id gets, and opening a transcript another process holds a moment."""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Callable
from typing import TypeVar

from agent_transcript import SessionLocked

__all__ = ["transcript_name", "opened_when_free"]

T = TypeVar("T")

# A name used as it is: lowercase ASCII only, so that no file system folds two
# of them (case, Unicode normalization) into one file.
_LITERAL_NAME = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9_-])?")
_ENCODED_NAME_MAX = 180


def transcript_name(session_id: str | None) -> str:
    """The file name (without ``.jsonl``) of a session's transcript.

    Distinct session ids get distinct names, on case-insensitive file systems
    too: a lowercase ASCII id is its own name; any other is ``~`` and its
    UTF-8 in lowercase base32 (reversible; no literal name starts with ``~``);
    one whose encoding would be longer than 180 characters is
    ``~sha256-`` and its digest (``-`` is not base32, so it meets no encoded
    name); no session id at all is ``~-none``.
    """
    if session_id is None:
        return "~-none"
    if _LITERAL_NAME.fullmatch(session_id):
        return session_id
    raw = session_id.encode("utf-8", "surrogatepass")
    encoded = "~" + base64.b32encode(raw).decode("ascii").rstrip("=").lower()
    if len(encoded) <= _ENCODED_NAME_MAX:
        return encoded
    return "~sha256-" + hashlib.sha256(raw).hexdigest()


def opened_when_free(open_: Callable[[], T], seconds: float = 5.0) -> T:
    """``open_()``, tried again for up to ``seconds`` while another process holds
    the transcript (``SessionLocked``), which is then raised."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return open_()
        except SessionLocked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
