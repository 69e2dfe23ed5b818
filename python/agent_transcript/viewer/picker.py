"""The picker's cells for a person: times to read, a title on one line, the tokens a run used.

Times are written as ``<time datetime=… data-human>`` with the ISO stamp inside;
the page's script (``render.js``'s ``humanTime``) shows them in the reader's
zone ("today 11:00", "3 days ago") with the exact UTC on hover. Tokens are read
from each whole file (``inspect.tokens``) once per size and mtime, and kept; a
picker reads at most ``PICKER_TOKEN_BYTES`` of files it has not counted yet,
newest first, so that a big folder opens at once and a reload counts on.
"""

from __future__ import annotations

import os
import threading

from ..inspect.tokens import TokenCount, TokenTotals, read_usage, token_totals
from .markup import text

__all__ = ["TokenCache", "time_cell", "title_cell", "tokens_cell", "tokens_text", "tokens_summary",
           "PICKER_TOKEN_BYTES", "UNCOUNTED_CELL"]

#: How many bytes of files whose tokens are not kept yet one picker page reads.
PICKER_TOKEN_BYTES = 128 << 20
#: The tokens cell of a run not counted yet.
UNCOUNTED_CELL = '<td class=num title="not counted yet: reload the page to count more">…</td>'


def time_cell(ts: str) -> str:
    """A ``<td>`` holding ``ts`` as a ``<time>`` the page's script shows for a person."""
    if not ts:
        return "<td class=when>-</td>"
    return f'<td class=when><time datetime="{text(ts)}" data-human title="{text(ts)}">{text(ts)}</time></td>'


def title_cell(title: str, href: str) -> str:
    """A ``<td>`` with the title on one line (its whitespace folded; the stylesheet cuts it with
    an ellipsis), the whole of it on hover."""
    one = " ".join(title.split()) or "-"
    return f'<td class=title title="{text(one)}"><a href="{text(href)}">{text(one)}</a></td>'


def tokens_text(t: TokenTotals | None) -> str:
    """``"12.3k in · 1.2k out"`` (cached input in the title), or ``-`` when none is recorded."""
    if t is None or not t.responses:
        return "-"
    return f"{_short(t.total.input + t.total.cache_read + t.total.cache_creation)} in · {_short(t.total.output)} out"


def tokens_cell(t: TokenTotals | None) -> str:
    """A ``<td>`` of a run's tokens; the exact counts on hover."""
    if t is None or not t.responses:
        return "<td class=num>-</td>"
    c = t.total
    exact = (f"input {c.input:,}, cache read {c.cache_read:,}, cache write {c.cache_creation:,}, "
             f"output {c.output:,} ({t.responses:,} responses)")
    return f'<td class=num title="{text(exact)}">{text(tokens_text(t))}</td>'


def _short(n: int) -> str:
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


class TokenCache:
    """Each file's ``TokenTotals``, read again only when its size or mtime changed."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple[int, int], TokenTotals]] = {}
        self._lock = threading.Lock()

    def totals(self, path: str) -> TokenTotals | None:
        """The run's tokens, or None when the file cannot be read."""
        return self._get(path, True)[1]

    def kept(self, path: str) -> tuple[bool, TokenTotals | None]:
        """``(known, totals)``: whether the run's tokens are kept for its file as it
        is now (or it cannot be read: totals None), and them; nothing is counted."""
        return self._get(path, False)

    def _get(self, path: str, count: bool) -> tuple[bool, TokenTotals | None]:
        try:
            st = os.stat(path)
            key = (st.st_size, st.st_mtime_ns)
            with self._lock:
                kept = self._kept.get(path)
            if kept is not None and kept[0] == key:
                return True, kept[1]
            if not count:
                return False, None
            totals = token_totals(read_usage(path))
        except OSError:
            return True, None
        with self._lock:
            self._kept[path] = (key, totals)
        return True, totals


def tokens_summary(t: TokenTotals | None) -> str | None:
    """The summary's line of a run's tokens (the run's, then per model), or None when none is recorded."""
    if t is None or not t.responses:
        return None
    def one(c: TokenCount) -> str:
        cached = c.cache_read + c.cache_creation
        return f"{c.input:,} in, {c.output:,} out" + (f", {cached:,} cached" if cached else "")
    models = "; ".join(f"{m}: {one(c)}" for m, c in sorted(t.by_model.items()))
    return f"tokens: {one(t.total)} ({t.responses:,} responses; {models})"
