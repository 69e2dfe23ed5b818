"""Shared helpers: hand-written transcripts, file snapshots, child processes.

Nothing here looks inside the package: a transcript is bytes on disk, and the
session under test is only ever driven through what ``agent_transcript`` exports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

TS = "2026-08-09T13:10:08.542283Z"
ENVELOPE_KEYS = ["id", "payload", "ts", "type", "v"]


def dumps(value: Any) -> str:
    """The SPEC's canonical JSON, as the standard library writes it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def line(id: str, type: str, payload: Any, *, ts: str = TS, v: Any = 1) -> bytes:
    """One hand-written envelope line, ``\\n`` included."""
    return (dumps({"id": id, "type": type, "ts": ts, "v": v, "payload": payload}) + "\n").encode()


def meta(id: str = "meta", payload: Any = None) -> bytes:
    return line(id, "session-meta", {} if payload is None else payload)


def msg(id: str, role: str = "user", content: Any = "hi", **fields: Any) -> bytes:
    return line(id, "message", {"role": role, "content": content, **fields})


def write(path: Path, *chunks: bytes) -> bytes:
    data = b"".join(chunks)
    path.write_bytes(data)
    return data


def lines(path: Path) -> list[bytes]:
    """The file's lines, each with its ``\\n``."""
    return path.read_bytes().splitlines(keepends=True)


def parsed(path: Path) -> list[dict[str, Any]]:
    """Every non-blank line of the file, parsed."""
    return [json.loads(b) for b in path.read_bytes().split(b"\n") if b.strip(b" \t\r")]


def freeze(path: Path) -> tuple[bytes, int]:
    """Set the file's mtime into the past and return (bytes, mtime_ns), to show later
    that nothing touched it."""
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    return path.read_bytes(), os.stat(path).st_mtime_ns


def state(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), os.stat(path).st_mtime_ns


def python(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the one running the tests)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )


def spawn(code: str, *args: str) -> subprocess.Popen[str]:
    """Start ``code`` in a fresh interpreter with piped stdin/stdout, line buffered."""
    return subprocess.Popen(
        [sys.executable, "-u", "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Reap a child (killing it if it still runs) and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    out, err = proc.communicate(timeout=30)
    return out, err


class umask:
    """``with umask(0o077):`` — the process umask for the block."""

    def __init__(self, mask: int) -> None:
        self.mask = mask

    def __enter__(self) -> None:
        self.old = os.umask(self.mask)

    def __exit__(self, *exc: object) -> None:
        os.umask(self.old)
