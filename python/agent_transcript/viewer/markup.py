"""Text made safe for the parts of a page Python writes (the summary, the outline, the picker).

Every string from a transcript that Python puts in a page goes through
``text``, so a transcript that contains HTML or script is shown, never
run. (The cards themselves, and their Markdown, are drawn by the page's
script with DOM calls: ``render.js``.)
"""

from __future__ import annotations

import html
import re

__all__ = ["text", "attr", "visible"]

# C0 controls but tab and newline, DEL, C1 controls, lone surrogates, and the
# two JavaScript line terminators (harmless in HTML, but shown, not hidden).
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def _show(match: re.Match[str]) -> str:
    ch = match.group(0)
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures: ␀ ␛ ␍ ...
    if code == 0x7F:
        return "\u2421"
    return f"\\u{code:04x}"


def visible(value: str) -> str:
    """``value`` with control characters and lone surrogates made visible (``\\r\\n`` kept as ``\\n``)."""
    return _INVISIBLE.sub(_show, value.replace("\r\n", "\n"))


def text(value: object) -> str:
    """Any value as escaped text for an element's content or a quoted attribute."""
    return html.escape(visible(value if isinstance(value, str) else str(value)), quote=True)


attr = text
