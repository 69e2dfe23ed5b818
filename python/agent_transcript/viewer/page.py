"""Pages: the shell around the fragments (head, CSP, toolbar, summary panels) and ``html``'s two outputs.

A transcript of ordinary size becomes one self-contained file: the package's
CSS and JS inline, allowed by their SHA-256 in a Content-Security-Policy that
forbids every other load (``default-src 'none'``). A big one becomes a folder:
``index.html`` (the verdict, the pending calls, the outline, the page list),
``p/NNNNNN.html`` (standalone pages of records, cut at a turn or a
compaction), and ``pages.js`` and ``s/NNNNNN.js`` (the page table and each
page's search text), loaded with ``<script src>`` so that the folder works
from ``file://``, where ``fetch`` does not. Either way the envelopes are
rendered one at a time and written as they are rendered: memory does not grow
with the file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import urllib.parse
from dataclasses import dataclass
from importlib import resources
from typing import IO, Any, Callable

from ..inspect import Reading, check_report, content_text
from .markup import text
from .render import Outline, Renderer, anchor, size_text

__all__ = ["Assets", "assets", "csp", "write_html", "HtmlResult", "SINGLE_LIMIT", "head", "summary_panel", "outline_nav", "ended_banner"]

#: Files up to this size become one page; bigger ones a folder of pages.
SINGLE_LIMIT = 8 * 1024 * 1024
#: A page is cut after this many records or this many rendered bytes (at the next
#: turn or compaction once past 3/4 of either; at once past twice either).
PAGE_RECORDS = 400
PAGE_BYTES = 1_500_000


@dataclass(frozen=True)
class Assets:
    """The package's stylesheet and script, and their CSP hashes."""

    css: str
    js: str

    @property
    def css_hash(self) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(self.css.encode()).digest()).decode() + "'"

    @property
    def js_hash(self) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(self.js.encode()).digest()).decode() + "'"


_ASSETS: Assets | None = None


def assets() -> Assets:
    """The viewer's CSS and JS, read once from the package data."""
    global _ASSETS
    if _ASSETS is None:
        here = resources.files(__package__ or "agent_transcript.viewer")
        _ASSETS = Assets((here / "viewer.css").read_text("utf-8"), (here / "viewer.js").read_text("utf-8"))
    return _ASSETS


def csp(*, self_scripts: bool = False, connect: bool = False) -> str:
    """The Content-Security-Policy of a page: nothing loads but the inline CSS and JS
    (and, for a folder's pages, its own chunk scripts; for ``serve``, its event stream)."""
    a = assets()
    script = ("'self' " if self_scripts else "") + a.js_hash
    connect_src = "'self'" if connect else "'none'"
    return (
        f"default-src 'none'; script-src {script}; style-src {a.css_hash}; img-src data:; "
        f"connect-src {connect_src}; base-uri 'none'; form-action 'none'"
    )


def head(title: str, policy: str, *, body_data: dict[str, str] | None = None, tools: bool = True) -> str:
    """The document up to the start of ``<main>``, with the toolbar."""
    a = assets()
    data = "".join(f' data-{k}="{text(v)}"' for k, v in (body_data or {}).items())
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>\n"
        f'<meta http-equiv="Content-Security-Policy" content="{text(policy)}">\n'
        '<meta name=referrer content=no-referrer><meta name=viewport content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)}</title>\n<style>{a.css}</style></head>\n"
        f"<body{data}>\n"
        '<div class=toolbar role=toolbar>'
        f'<span class=title>{text(title)}</span>'
        + (_TOOLS if tools else '<input id=find type=search placeholder="find (/)" aria-label="find"><span id=find-count></span><button id=theme type=button title="dark / light (t)">◐</button>')
        + "</div>\n"
    )


_TOOLS = (
        '<input id=find type=search placeholder="find (/)" aria-label="find in the page"><span id=find-count></span>'
        '<select id=f-role aria-label="role"><option value="">every role</option><option value=user>user</option><option value=assistant>assistant</option><option value=tool>tool</option><option value=system>system</option></select>'
        '<select id=f-tool aria-label="tool"><option value="">every tool</option></select>'
        '<label><input id=f-errors type=checkbox> errors and pending only</label>'
        '<label><input id=f-raw type=checkbox> raw JSON</label>'
        '<button id=theme type=button title="dark / light (t)">◐</button>'
        '<span class=keys>j/k next/prev · / find · o open · t theme</span>'
)


def summary_panel(reading: Reading, title: str, go: Callable[[str, int], str] | None = None) -> str:
    """The verdict, the counts, the run's meta, the pending calls and the grants at the end."""
    to = _linker(reading, go)
    report = check_report(reading)
    status = report.status
    if status == "clean":
        verdict = "clean: load reads it as it is"
    elif status == "repairable":
        t = reading.tail
        verdict = f"torn tail: line {t.line} is not whole ({t.reason}); load removes it ({t.removed:,} bytes) and goes on"
    else:
        verdict = f"{status}: load refuses this file" + (f" at line {report.line}" if report.line else "") + f": {report.reason}"
    rows = [
        f'<div class="verdict v-{text(status)}" id=verdict><b>check</b> {text(verdict)}</div>',
        f"<p class=counts>{reading.lines:,} lines, {size_text(reading.size)}; "
        + ", ".join(f"{n:,} {text(role)}" for role, n in reading.role_counts())
        + (f"; {reading.live_len():,} messages sent to the model next" if reading.replayed else "")
        + "</p>",
    ]
    for w in reading.warnings[:5]:
        rows.append(f"<p class=warning>{text(w)}</p>")
    meta = reading.meta
    if isinstance(meta, dict) and meta:
        rows.append("<table class=kv>" + "".join(f"<tr><th>{text(k)}</th><td>{text(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))}</td></tr>" for k, v in list(meta.items())[:20]) + "</table>")
    pending = reading.pending() or []
    if pending:
        items = "".join(
            f'<li><a href="{text(to(op.op_id))}">{text(op.tool)} <code>{text(op.call_id)}</code></a> <span class="chip bad">{text(op.state)}</span></li>'
            for op in pending[:200]
        )
        rows.append(f'<div class=pending-list><b>{len(pending)} tool call{"s" if len(pending) != 1 else ""} never settled</b><ul>{items}</ul></div>')
    grants, line = reading.grants()
    if line is not None:
        rows.append(f'<p>grants at the end: <a class=lref href="{text(go("L" + str(line), line) if go else "#L" + str(line))}">line {line}</a> <code>{text(json.dumps(grants, ensure_ascii=False)[:400])}</code></p>')
    return f'<section class=summary aria-label="summary">{"".join(rows)}</section>\n'


def _linker(reading: Reading, go: Callable[[str, int], str] | None) -> Callable[[str], str]:
    def to(envelope_id: str) -> str:
        a = anchor(envelope_id)
        line = reading.line_of(envelope_id) if go is not None else None
        return go(a, line) if go is not None and line is not None else "#" + a
    return to


def ended_banner(reading: Reading, go: Callable[[str, int], str] | None = None) -> str:
    """After a crash: the calls that never settled, and where the run ended."""
    to = _linker(reading, go)
    pending = reading.pending() or []
    if not pending and reading.tail.kind != "torn":
        return ""
    bits = []
    if reading.tail.kind == "torn":
        bits.append(f"line {reading.tail.line} was cut mid-write ({reading.tail.removed:,} bytes; load removes it)")
    if pending:
        links = ", ".join(f'<a href="{text(to(op.op_id))}">{text(op.tool)} ({text(op.state)})</a>' for op in pending[:50])
        bits.append(f"{len(pending)} tool call{'s' if len(pending) != 1 else ''} never settled: {links}")
    return f'<div class=ended id=ended role=note><b>The run ended here.</b> {"; ".join(bits)}</div>\n'


def outline_nav(outline: Outline, href: Callable[[str, int], str] | None = None) -> str:
    """The outline of turns, compactions and rewinds."""
    go = href or (lambda a, line: "#" + a)
    items = "".join(
        f'<li class="o-{kind}"><a href="{text(go(a, line))}">{text(label or kind)}</a></li>' for kind, a, label, line in outline.items
    )
    more = f"<li>… {outline.more:,} more</li>" if outline.more else ""
    return f'<nav id=outline aria-label="outline"><h3>outline</h3><ol>{items}{more}</ol></nav>\n'


def _artifact_href(out_dir: str) -> Callable[[str, str | None], str | None]:
    def href(name: str, path: str | None) -> str | None:
        if path is None:
            return None
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(out_dir))
        return urllib.parse.quote(rel.replace(os.sep, "/"))
    return href


def _title(reading: Reading) -> str:
    meta = reading.meta
    name = os.path.basename(reading.path)
    if isinstance(meta, dict):
        for key in ("title", "task", "agent"):
            if isinstance(meta.get(key), str) and meta[key]:
                return f"{meta[key]} — {name}"
    return name


@dataclass(frozen=True)
class HtmlResult:
    """What ``html`` wrote: the page, or the folder and its page count."""

    path: str
    pages: int
    single: bool


def write_html(reading: Reading, out: str, *, single: bool | None = None) -> HtmlResult:
    """Render ``reading`` to ``out``: one file when ``single`` (default: when the
    transcript is at most :data:`SINGLE_LIMIT` bytes), else a folder of pages
    (``out``, or ``out`` without its ``.html``: ``big.html`` gives ``big/index.html``).

    Raises:
        OSError: ``out`` cannot be written.
    """
    if single is None:
        single = reading.size <= SINGLE_LIMIT
    if single:
        if os.path.isdir(out):
            out = os.path.join(out, os.path.splitext(os.path.basename(reading.path))[0] + ".html")
        _write_single(reading, out)
        return HtmlResult(out, 1, True)
    if out.endswith(".html") and not os.path.isdir(out):
        out = out[: -len(".html")] or "."  # big.html asked for, big/index.html written
    pages = _write_folder(reading, out)
    return HtmlResult(os.path.join(out, "index.html"), pages, False)


def _atomic(path: str) -> tuple[IO[str], str]:
    tmp = path + ".tmp"
    return open(tmp, "w", encoding="utf-8", errors="surrogateescape", newline="\n"), tmp


def _write_single(reading: Reading, out: str) -> None:
    title = _title(reading)
    out_dir = os.path.dirname(os.path.abspath(out))
    r = Renderer(reading, artifact_href=_artifact_href(out_dir))
    f, tmp = _atomic(out)
    try:
        with f:
            f.write(head(title, csp()))
            f.write('<div class=layout><main id=records>\n')
            f.write(summary_panel(reading, title))
            for i in range(len(reading)):
                f.write(r.fragment_at(i))
            f.write(ended_banner(reading))
            f.write("</main>\n")
            f.write(outline_nav(r.outline))
            f.write(f"</div>\n<script>{assets().js}</script>\n</body></html>\n")
        os.replace(tmp, out)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _js_call(fn: str, *args: Any) -> str:
    body = ",".join(json.dumps(a, ensure_ascii=True) for a in args).replace("</", "<\\/")
    return f"window.AT&&AT.{fn}({body});\n"


def _search_text(reading: Reading, i: int) -> str:
    if reading.type_name(i) != "message":
        return reading.type_name(i)
    return ""


def _write_folder(reading: Reading, out: str) -> int:
    os.makedirs(os.path.join(out, "p"), exist_ok=True)
    os.makedirs(os.path.join(out, "s"), exist_ok=True)
    title = _title(reading)
    r = Renderer(reading, artifact_href=_artifact_href(os.path.join(out, "p")))
    policy = csp(self_scripts=True)
    ranges: list[tuple[int, int]] = []
    page_starts: list[tuple[int, str]] = []  # first line, label
    n = len(reading)
    i = 0
    total = len(reading)
    while i < n:
        number = len(ranges) + 1
        name = f"{number:06d}"
        path = os.path.join(out, "p", name + ".html")
        f, tmp = _atomic(path)
        search: list[list[Any]] = []
        first_line = reading.line_number(i)
        last_line = first_line
        with f:
            f.write(head(f"{title} — page {number}", policy, body_data={"page": str(number), "base": "../"}))
            f.write('<div class=layout><main id=records>\n')
            prev = f' · <a href="{number - 1:06d}.html" rel=prev>previous</a>' if number > 1 else ""
            f.write(f'<nav class=pager><a href="../index.html">index</a>{prev} · page {number}</nav>\n')
            count = 0
            written = 0
            while i < n:
                t = reading.type_name(i)
                soft = count >= PAGE_RECORDS * 3 // 4 or written >= PAGE_BYTES * 3 // 4
                hard = count >= PAGE_RECORDS * 2 or written >= PAGE_BYTES * 2
                boundary = t == "compaction" or (t == "message" and reading.role(i) == "user")
                if count and (hard or (soft and boundary)):
                    break
                frag = r.fragment_at(i)
                f.write(frag)
                written += len(frag)
                count += 1
                last_line = reading.line_number(i)
                search.append([last_line, " ".join(r.search_text.lower().split())])
                i += 1
            if i >= total:
                f.write(ended_banner(reading))
            nxt = f' · <a href="{number + 1:06d}.html" rel=next>next</a>' if i < total else ""
            f.write(f'<nav class=pager><a href="../index.html">index</a> · page {number}{nxt}</nav>\n')
            f.write('</main></div>\n<script src="../pages.js"></script>\n')
            f.write(f"<script>{assets().js}</script>\n</body></html>\n")
        os.replace(tmp, path)
        with open(os.path.join(out, "s", name + ".js"), "w", encoding="utf-8") as sf:
            sf.write(_js_call("addText", number, search))
        ranges.append((first_line, last_line))
    with open(os.path.join(out, "pages.js"), "w", encoding="utf-8") as pf:
        pf.write(_js_call("setPages", ranges))
    index_path = os.path.join(out, "index.html")
    f, tmp = _atomic(index_path)
    with f:
        f.write(head(title, policy, body_data={"index": "1", "pages": str(len(ranges)), "base": ""}))
        f.write('<div class=layout><main id=records>\n')
        def go(a: str, line: int) -> str:
            return f"p/{_page_of(ranges, line):06d}.html#{a}"
        f.write(summary_panel(reading, title, go))
        f.write(ended_banner(reading, go))
        f.write('<section class=pages><h3>pages</h3><p><button id=search-all type=button>search every page</button> <span id=search-status></span></p><ol id=search-hits></ol><ol class=page-list>')
        for k, (a, b) in enumerate(ranges, 1):
            f.write(f'<li><a href="p/{k:06d}.html">page {k}</a>: lines {a:,}–{b:,}</li>')
        f.write("</ol></section></main>\n")
        f.write(outline_nav(r.outline, go))
        f.write('</div>\n<script src="pages.js"></script>\n')
        f.write(f"<script>{assets().js}</script>\n</body></html>\n")
    os.replace(tmp, index_path)
    return len(ranges)


def _page_of(ranges: list[tuple[int, int]], line: int) -> int:
    lo, hi = 0, len(ranges) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ranges[mid][0] <= line:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1
