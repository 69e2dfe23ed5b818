"""Terminal text helpers: colour, width, numbers, clipping, times, and printable text."""

from __future__ import annotations

import argparse
import codecs
import json
import os
import re
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
    "CANONICAL_TS",
    "write_json",
    "json_text",
    "escaped",
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


#: Whether a time has the form every line's ``ts`` has (``...T12:00:00.000000Z``).
CANONICAL_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", re.ASCII).fullmatch


def local_time(ts: str) -> datetime | None:
    try:
        if isinstance(ts, str) and CANONICAL_TS(ts):
            # The form every line has, read as strptime reads it, without its cost.
            when = datetime.fromisoformat(ts[:-1])
        else:
            when = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")
        return when.replace(tzinfo=timezone.utc).astimezone()
    except (ValueError, TypeError, OverflowError, OSError):
        return None


def _writes_utf8(stream: TextIO) -> bool:
    try:
        return codecs.lookup(stream.encoding or "ascii").name == "utf-8"
    except (AttributeError, LookupError):
        return False


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON text for stdout: UTF-8 as it is when stdout writes UTF-8,
    else every non-ASCII character escaped, so that it is JSON in any encoding
    (``backslashreplace`` would write ``\\U0001f600``, which JSON has no escape for)."""
    return json.dumps(value, ensure_ascii=not _writes_utf8(sys.stdout), indent=indent)


def write_json(value: Any) -> None:
    sys.stdout.write(json_text(value, indent=2) + "\n")



_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}
# The characters _CONTROL rewrites: most text has none, and a search is far
# cheaper than a translate (a dict lookup per character).
_CONTROL_FOUND = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]").search


def printable(text: str) -> str:
    """``text`` with control characters made visible (``\\x1b``), newlines and tabs kept.

    A transcript holds what tools and models wrote; an escape sequence in it
    must not drive the reader's terminal.
    """
    text = text.replace("\r\n", "\n")
    return text if _CONTROL_FOUND(text) is None else text.translate(_CONTROL)


_ALL_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]} | {0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r"}


def escaped(text: str) -> str:
    """``text`` on one line with every control character made visible (``\\n``, ``\\x1b``):
    for a file name or a diagnostic, where a newline would forge a line."""
    return text.translate(_ALL_CONTROL)


def sanitized(value: Any) -> Any:
    """``value`` with every string in it (keys too) passed through ``printable``.

    Iterative: a value nested as deep as the reader allows (512) is no deeper
    for this than a flat one.
    """
    if isinstance(value, str):
        return printable(value)
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, copy = stack.pop()
        pairs = ((printable(str(k)), v) for k, v in source.items()) if isinstance(source, dict) else ((None, v) for v in source)
        for key, v in pairs:
            if isinstance(v, (dict, list)):
                inner: Any = {} if isinstance(v, dict) else []
                stack.append((v, inner))
                v = inner
            elif isinstance(v, str):
                v = printable(v)
            if key is None:
                copy.append(v)
            else:
                copy[key] = v
    return root



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
