"""What the adapters that keep one transcript per session share: the file name
a session id gets, opening a transcript another process holds a moment, and
closing the transcripts they keep open."""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from agent_transcript import SessionLocked

__all__ = ["transcript_name", "opened_when_free", "OpenTranscripts"]

T = TypeVar("T")
K = TypeVar("K")

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


class Held(Protocol):
    """One transcript an adapter holds open, with the lock its uses take."""

    lock: threading.Lock

    def close(self) -> None: ...


H = TypeVar("H", bound=Held)
Self = TypeVar("Self", bound="OpenTranscripts[Any, Any]")


class OpenTranscripts(Generic[K, H]):
    """The transcripts an adapter keeps open, one per session (``_open``, guarded
    by ``_lock``; the adapter's ``__init__`` makes both), and their closing.

    Each stays open (and locked against a second writer) from its first use
    until ``close_session`` or ``close``: a framework calls the store once per
    item or turn, and a reopening would replay the file each time."""

    _lock: threading.Lock
    _open: dict[K, H]

    def close(self) -> None:
        """Close every transcript this opened. Idempotent; it stays usable (a
        later call opens the session's transcript again)."""
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for held in opened:
            with held.lock:
                held.close()

    def __enter__(self: Self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
