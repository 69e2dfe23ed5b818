"""Text made safe for a page: escaping, visible control characters, and a small safe Markdown.

Every string that comes from a transcript goes through :func:`text` (or
:func:`markdown`, which escapes first and only then adds its own tags), so a
transcript that contains HTML or script is shown, never run. Links are kept
only for ``http:`` and ``https:`` addresses.
"""

from __future__ import annotations

import html
import re

__all__ = ["text", "attr", "markdown", "safe_url", "visible"]

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


def safe_url(url: str) -> str | None:
    """``url`` if it is an absolute ``http:``/``https:`` address without spaces, else None."""
    u = url.strip()
    if re.fullmatch(r"https?://[^\s<>\"'`\\]+", u, flags=re.IGNORECASE) is None:
        return None
    return u


_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)(?:\n```[ \t]*$|\Z)", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)")
_AUTO = re.compile(r"(?<![\"=/\w])(https?://[^\s<>\"'`)\]]+)")
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")
_EM = re.compile(r"(?<![*\w])\*([^*\n]+)\*(?![*\w])")


def _link(label: str, url: str) -> str:
    ok = safe_url(url)
    if ok is None:
        return html.escape(f"[{label}]({url})", quote=True)
    return f'<a href="{html.escape(ok, quote=True)}" rel="noopener noreferrer nofollow">{html.escape(label, quote=True)}</a>'


def _inline(raw: str) -> str:
    """One paragraph's inline Markdown: code spans, links, bold, emphasis; all else escaped."""
    out: list[str] = []
    pos = 0
    for m in _CODE.finditer(raw):
        out.append(_inline_text(raw[pos : m.start()]))
        out.append(f"<code>{html.escape(m.group(1), quote=True)}</code>")
        pos = m.end()
    out.append(_inline_text(raw[pos:]))
    return "".join(out)


def _inline_text(raw: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _LINK.finditer(raw):
        out.append(_emphasis(raw[pos : m.start()]))
        out.append(_link(m.group(1), m.group(2)))
        pos = m.end()
    out.append(_emphasis(raw[pos:]))
    return "".join(out)


def _emphasis(raw: str) -> str:
    pieces: list[str] = []
    pos = 0
    for m in _AUTO.finditer(raw):
        pieces.append(_bold(raw[pos : m.start()]))
        pieces.append(_link(m.group(1), m.group(1)))
        pos = m.end()
    pieces.append(_bold(raw[pos:]))
    return "".join(pieces)


def _bold(raw: str) -> str:
    s = html.escape(raw, quote=True)
    s = _BOLD.sub(r"<strong>\1</strong>", s)
    return _EM.sub(r"<em>\1</em>", s)


def _blocks(raw: str) -> str:
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(_inline(p) for p in para) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in raw.split("\n"):
        stripped = line.strip()
        heading = re.match(r"(#{1,6})\s+(.*)", stripped)
        item = re.match(r"[-*+]\s+(.*)", stripped) or re.match(r"\d{1,9}[.)]\s+(.*)", stripped)
        if not stripped:
            flush()
        elif heading:
            flush()
            level = min(6, len(heading.group(1)) + 2)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif item:
            if para:
                flush()
            items.append(item.group(1))
        else:
            if items:
                flush()
            para.append(line)
    flush()
    return "".join(out)


def markdown(value: str) -> str:
    """``value`` as safe HTML: fenced code, headings, lists, paragraphs, code spans,
    bold, emphasis and http(s) links; any HTML in it is escaped, never kept."""
    value = visible(value)
    out: list[str] = []
    pos = 0
    for m in _FENCE.finditer(value):
        out.append(_blocks(value[pos : m.start()]))
        lang = m.group(1).strip()
        cls = f' data-lang="{html.escape(lang[:40], quote=True)}"' if lang else ""
        out.append(f"<pre class=code{cls}><code>{html.escape(m.group(2), quote=True)}</code></pre>")
        pos = m.end()
    out.append(_blocks(value[pos:]))
    return "".join(out)
