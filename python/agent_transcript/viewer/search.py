"""``serve``'s search: a box on the picker that searches every transcript the viewer serves
(``agent_transcript.search.grep``) and lists the hits, each a link that opens its
transcript at its line.

``GET /search?q=TEXT`` searches the live messages for ``TEXT`` as a fixed string,
ignoring case; ``re=1`` takes it as a regular expression, ``case=1`` matches
case, ``all=1`` searches every line. The files searched are the picker's, in
its order (newest activity first). A hit links to ``/t/<name>?line=N#LN``: the
page of records that holds line ``N``.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Iterable, Protocol

from ..inspect import Reading
from ..search import Hit, Unsearchable, grep
from .markup import text



class _Named(Protocol):
    """A picker row, as far as the search needs it."""

    @property
    def name(self) -> str: ...

__all__ = ["search_form", "search_page", "first_record", "first_index", "HITS_SHOWN"]

#: The hits a results page lists; the count goes on past it.
HITS_SHOWN = 500
# Records shown above the line a hit opens at.
_CONTEXT = 5
# Characters of a hit's text shown either side of its first match.
_AROUND = 80


def search_form(query: dict[str, list[str]] | None = None) -> str:
    """The search box, filled in with ``query``'s values."""
    q = (query or {}).get("q", [""])[-1]

    def box(name: str, label: str) -> str:
        checked = " checked" if (query or {}).get(name, [""])[-1] == "1" else ""
        return f"<label><input type=checkbox name={name} value=1{checked}> {label}</label>"

    return ('<form class=search method=get action="/search" role=search>'
            f'<input type=search name=q value="{text(q)}" placeholder="search every transcript" '
            'aria-label="search every transcript" required>'
            f'{box("re", "regex")}{box("case", "match case")}{box("all", "every line")}'
            "<button type=submit>search</button></form>\n")


def first_index(reading: Reading, line: int) -> int:
    """The first envelope at or after ``line``."""
    lo, hi = 0, len(reading)
    while lo < hi:
        mid = (lo + hi) // 2
        if reading.line_number(mid) < line:
            lo = mid + 1
        else:
            hi = mid
    return lo


def first_record(reading: Reading, line: int) -> int:
    """The first record of the page that opens at ``line``: a few records above it."""
    return max(0, first_index(reading, line) - _CONTEXT)


def search_page(rows: Iterable[_Named], root: str, query: dict[str, list[str]]) -> tuple[list[str], int]:
    """The results' HTML for ``query`` over the transcripts ``rows`` (names under
    ``root``), and how many hits there were in all."""
    q = query.get("q", [""])[-1]
    if not q:
        return ["<p>type something to search for</p>"], 0
    names = {os.path.join(root, r.name): r.name for r in rows}
    try:
        found = grep(q, *names, literal=query.get("re", [""])[-1] != "1",
                     ignore_case=query.get("case", [""])[-1] != "1", all_lines=query.get("all", [""])[-1] == "1")
    except ValueError as exc:
        return [f"<p class=search-error>not a regular expression: {text(exc)}</p>"], 0
    out: list[str] = ["<ol class=search-hits>"]
    total = 0
    for hit in found:
        if isinstance(hit, Unsearchable):
            out.append(f"<li class=search-error><code>{text(names.get(str(hit.path), hit.path))}</code>: "
                       f"{text(hit.reason)}</li>")
            continue
        total += 1
        if total <= HITS_SHOWN:
            out.append(_item(names[str(hit.path)], hit))
    out.append("</ol>")
    return out, total


def _item(name: str, hit: Hit) -> str:
    href = f"/t/{urllib.parse.quote(name)}?line={hit.line}#L{hit.line}"
    start, end = hit.spans[0]
    lo = max(0, start - _AROUND)
    hi = min(len(hit.text), end + _AROUND)
    snippet = (("…" if lo else "") + text(hit.text[lo:start]) + f"<mark>{text(hit.text[start:end])}</mark>"
               + text(hit.text[end:hi]) + ("…" if hi < len(hit.text) else ""))
    who = hit.role or hit.type
    more = f" (+{len(hit.spans) - 1} more)" if len(hit.spans) > 1 else ""
    return (f'<li class=search-hit><a href="{text(href)}"><code>{text(name)}</code> line {hit.line}</a> '
            f"<span class=role>{text(who)} · {text(hit.field)}{more}</span><div class=snippet>{snippet}</div></li>")
