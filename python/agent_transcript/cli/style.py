"""Terminal text helpers: colour, width, numbers, clipping, times, and printable text."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from datetime import datetime, timezone
from typing import Any, Sequence, TextIO

__all__ = [
    "Style",
    "colour_enabled",
    "colour_option",
    "terminal_width",
    "human_bytes",
    "plural",
    "clip",
    "local_time",
    "write_json",
    "printable",
    "sanitized",
    "seconds",
    "line_span",
]


class Style:
    """ANSI colour, or nothing: ``Style(False)`` returns every text unchanged."""

    _CODES = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "magenta": "35",
        "cyan": "36",
    }

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *names: str) -> str:
        """``text`` in the named styles (``"bold"``, ``"red"``, ...) when colour is on."""
        if not self.enabled or not names or not text:
            return text
        codes = ";".join(self._CODES[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"


def colour_enabled(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def colour_option(p: argparse.ArgumentParser) -> None:
    """``--color``/``--colour`` on a command's parser."""
    p.add_argument(
        "--color",
        "--colour",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour: auto (a terminal, and NO_COLOR unset), always or never",
    )


def terminal_width() -> int:
    return max(40, min(shutil.get_terminal_size((100, 24)).columns, 200))


def human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{n} B"  # not reached


def plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def local_time(ts: str) -> datetime | None:
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).astimezone()
    except (ValueError, TypeError, OverflowError, OSError):
        return None


def write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")



_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}


def printable(text: str) -> str:
    """``text`` with control characters made visible (``\\x1b``), newlines and tabs kept.

    A transcript holds what tools and models wrote; an escape sequence in it
    must not drive the reader's terminal.
    """
    return text.replace("\r\n", "\n").translate(_CONTROL)


def sanitized(value: Any) -> Any:
    """``value`` with every string in it (keys too) passed through :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(k)): sanitized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitized(v) for v in value]
    return value



def seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.0f} ms" if s >= 0.001 else f"{s * 1000:.2f} ms"
    if s < 120:
        return f"{s:.2f} s"
    return f"{s / 60:.1f} min"


def line_span(lines: Sequence[int]) -> str:
    if not lines:
        return "no lines"
    lines = sorted(lines)
    if len(lines) == 1:
        return f"line {lines[0]}"
    if lines[-1] - lines[0] + 1 == len(lines):
        return f"lines {lines[0]}-{lines[-1]}"
    if len(lines) <= 6:
        return "lines " + ", ".join(map(str, lines))
    return f"lines {lines[0]}…{lines[-1]}"
