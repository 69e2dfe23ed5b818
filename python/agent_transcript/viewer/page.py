"""Pages: the shell around the records (head, CSP, toolbar, summary panels) and ``html``'s two outputs.

A page carries its records as data, the file's own lines copied a byte range
at a time (no envelope is decoded to be shown), with the notes of what replay
says of them; the page's script draws the cards. A transcript of ordinary size
becomes one self-contained file: the lines in a ``<script
type=application/json>`` element (never run, every ``<`` escaped), the
package's CSS and JS inline, allowed by their SHA-256 in a
Content-Security-Policy that forbids every other load (``default-src
'none'``). A big one becomes a folder: ``index.html`` (the verdict, the
pending calls, the outline, the page list), ``p/NNNNNN.html`` (a page of
records, cut at a turn or a compaction) with its lines in ``c/NNNNNN.js`` (a
``String.raw`` template), and ``pages.js`` (the page table), loaded with
``<script src>`` so that the folder works from ``file://``, where ``fetch``
does not; the index's search reads the same chunks. Either way a page is
written as soon as its lines are found: memory does not grow with the file.
The walk over the records is the core's (``PageWalk``: the pages found from
the envelope index, a run of damaged lines one entry, a page's bytes bounded
whatever its lines are); a folder's files are written by the core on a thread
of its own (``PageWriter``: the chunk escaped there), so that writing overlaps
the next page's notes.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import IO, Any, Callable, Iterator
from pathlib import Path

from .. import canonical_json
from ..inspect.pages import PageBytes, PageWalk, PageWriter
from ..inspect.paths import make_folders, name_max, open_replacement, replace_with
from ..inspect import Reading, check_report, open_file
from ..inspect.tokens import TokenTotals, read_usage, token_totals
from .markup import text
from .picker import tokens_summary
from .render import BIG_LINE, MAX_BLOCK, Annotator, Outline, anchor, damaged_line, island_bytes, short_line, size_text

__all__ = ["Assets", "assets", "csp", "write_html", "write_page_json", "HtmlResult", "SINGLE_LIMIT", "head", "summary_panel", "outline_nav", "ended_banner", "unpaired_lines",
           "verdict", "one_page", "data_islands", "PageData", "script_tag", "take_line"]

#: Files up to this size become one page; bigger ones a folder of pages.
SINGLE_LIMIT = 8 * 1024 * 1024
#: A page is cut after this many records or this many rendered bytes (at the next
#: turn or compaction once past 3/4 of either; at once past twice either).
PAGE_RECORDS = 400
PAGE_BYTES = 1_500_000
#: How many files may wait for the writer's thread.
WRITE_DEPTH = 8


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
        js = (here / "render.js").read_text("utf-8") + (here / "viewer.js").read_text("utf-8")
        _ASSETS = Assets((here / "viewer.css").read_text("utf-8"), js)
    return _ASSETS


def csp(*, self_scripts: bool = False, connect: bool = False, forms: bool = False) -> str:
    """The Content-Security-Policy of a page: nothing loads but the inline CSS and JS
    (and, for a folder's pages, its own chunk scripts; for ``serve``, its event stream
    and, with ``forms``, its search form)."""
    a = assets()
    script = ("'self' " if self_scripts else "") + a.js_hash
    connect_src = "'self'" if connect else "'none'"
    form_action = "'self'" if forms else "'none'"
    return (
        f"default-src 'none'; script-src {script}; style-src {a.css_hash}; img-src data:; "
        f"connect-src {connect_src}; base-uri 'none'; form-action {form_action}"
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


def verdict(reading: Reading) -> tuple[str, str]:
    """The check's status and its verdict for a person."""
    report = check_report(reading)
    status = report.status
    if status == "clean":
        return status, "clean: load reads it as it is"
    if status == "repairable":
        t = reading.tail
        return status, f"torn tail: line {t.line} is not whole ({t.reason}); load removes it ({t.removed:,} bytes) and goes on"
    return status, f"{status}: load refuses this file" + (f" at line {report.line}" if report.line else "") + f": {report.reason}"


def summary_panel(reading: Reading, title: str, go: Callable[[str, int], str] | None = None,
                  tokens: TokenTotals | None = None) -> str:
    """The verdict, the counts, the tokens, the run's meta, the pending calls and the grants at the end."""
    to = _linker(reading, go)
    status, said = verdict(reading)
    rows = [
        f'<div class="verdict v-{text(status)}" id=verdict><b>check</b> {text(said)}</div>',
        f"<p class=counts>{reading.lines:,} lines, {size_text(reading.size)}; "
        + ", ".join(f"{n:,} {text(role)}" for role, n in reading.role_counts())
        + (f"; {reading.live_len():,} messages sent to the model next" if reading.replayed else "")
        + "</p>",
    ]
    said_tokens = tokens_summary(tokens)
    if said_tokens:
        rows.append(f"<p class=tokens>{text(said_tokens)}</p>")
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
    rows.extend(_unpaired(reading, go))
    grants, line = reading.grants()
    if line is not None:
        rows.append(f'<p>grants at the end: <a class=lref href="{text(go("L" + str(line), line) if go else "#L" + str(line))}">line {line}</a> <code>{text(json.dumps(grants, ensure_ascii=False)[:400])}</code></p>')
    return f'<section class=summary aria-label="summary">{"".join(rows)}</section>\n'


def _unpaired(reading: Reading, go: Callable[[str, int], str] | None) -> list[str]:
    """The summary's lists of the unanswered tool calls and of the tool
    messages that answer no call (what a chat API refuses), linked to their lines."""
    pairing = reading.pairing()
    if pairing is None:
        return []

    def at(line: int) -> str:
        return text(go("L" + str(line), line) if go else "#L" + str(line))

    out = []
    if pairing.unanswered:
        n = len(pairing.unanswered)
        items = "".join(f'<li><a href="{at(c.line)}">{text(c.tool or "?")} <code>{text(c.call_id)}</code></a> '
                        f'<span class="chip bad">line {c.line}</span></li>' for c in pairing.unanswered[:200])
        out.append(f'<div class="pending-list unanswered"><b>{n} tool call{"s" if n != 1 else ""} unanswered</b>'
                   f' (no tool message answers it: a chat API refuses the conversation)<ul>{items}</ul></div>')
    if pairing.orphans:
        n = len(pairing.orphans)
        items = "".join(f'<li><a href="{at(o.line)}">answers <code>{text(str(o.tool_call_id))}</code></a></li>'
                        for o in pairing.orphans[:200])
        out.append(f'<div class="pending-list orphans"><b>{n} tool message{"s" if n != 1 else ""} answering no call</b><ul>{items}</ul></div>')
    return out


def unpaired_lines(reading: Reading) -> list[list[str]]:
    """The unanswered tool calls and the tool messages answering no call, as
    ``[class, text]`` summary lines (serve's live summary)."""
    pairing = reading.pairing()
    if pairing is None:
        return []
    out = []
    if pairing.unanswered:
        n = len(pairing.unanswered)
        calls = ", ".join(f"{c.tool or '?'} {c.call_id} (line {c.line})" for c in pairing.unanswered[:50])
        out.append(["warning unanswered", f"{n} tool call{'s' if n != 1 else ''} unanswered: {calls}"])
    if pairing.orphans:
        n = len(pairing.orphans)
        lines = ", ".join(str(o.line) for o in pairing.orphans[:50])
        out.append(["warning orphans", f"{n} tool message{'s' if n != 1 else ''} answering no call: line {lines}"])
    return out


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
    pairing = reading.pairing()
    unanswered = pairing.unanswered if pairing is not None else []
    if not pending and not unanswered and reading.tail.kind != "torn":
        return ""
    bits = []
    if reading.tail.kind == "torn":
        bits.append(f"line {reading.tail.line} was cut mid-write ({reading.tail.removed:,} bytes; load removes it)")
    if pending:
        links = ", ".join(f'<a href="{text(to(op.op_id))}">{text(op.tool)} ({text(op.state)})</a>' for op in pending[:50])
        bits.append(f"{len(pending)} tool call{'s' if len(pending) != 1 else ''} never settled: {links}")
    if unanswered:
        links = ", ".join(f'<a href="{text(go("L" + str(c.line), c.line) if go else "#L" + str(c.line))}">'
                          f'{text(c.tool or "?")} {text(c.call_id)}</a>' for c in unanswered[:50])
        bits.append(f"{len(unanswered)} tool call{'s' if len(unanswered) != 1 else ''} unanswered: {links}")
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
    transcript is at most ``SINGLE_LIMIT`` bytes), else a folder of pages
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


def write_page_json(reading: Reading, out: str) -> None:
    """The data of ``reading``'s page as one JSON object in ``out`` (``html --json``):
    ``path``, ``title``, ``verdict`` and ``check`` (what ``check`` says), ``warnings``,
    ``tokens`` (``stats --json``'s), ``pending`` (the calls never settled) and
    ``records``: every envelope (``line``, ``id``, ``type``, ``ts``, ``payload``) with
    ``notes`` where the page has some (what replay says of it: ``elided``,
    ``compacted``, ``rewound``: the line that took a message out; ``settled`` or
    ``pending``: a dispatch's settle line or state; ``op``: a settle's dispatch line;
    ``unanswered``, ``orphan``; ``tokens``: a message's ``[input, output, cache read,
    cache write]``). Records are written a page at a time: memory does not grow with
    the file.

    Raises:
        OSError: ``out`` cannot be written.
    """
    tokens = token_totals(read_usage(reading.path))
    notes = Annotator(reading, tokens=tokens)
    status, said = verdict(reading)
    head = {"path": reading.path, "title": _title(reading), "verdict": status, "check": said,
            "warnings": list(reading.warnings), "tokens": tokens.to_json(),
            "pending": [{"op_id": op.op_id, "tool": op.tool, "call_id": op.call_id, "state": op.state}
                        for op in reading.pending() or []]}
    opening = json.dumps({**head, "records": []}, ensure_ascii=True)
    n = len(reading)
    with _replacing(out) as f:
        f.write(opening[: -len("]}")].encode("ascii"))
        for start in range(0, n, _JSON_PAGE):
            items: list[tuple[int, int, str, bytes | None]] = [
                (i, reading.line_number(i), reading.type_name(i), None) for i in range(start, min(n, start + _JSON_PAGE))]
            page = notes.page(items)
            for i, line, _, _ in items:
                e = reading.event(i)
                record: dict[str, Any] = {"line": line, "id": e.id, "type": e.type, "ts": e.ts, "payload": e.payload}
                if str(line) in page:
                    record["notes"] = page[str(line)]
                f.write((", " if i else "").encode("ascii") + json.dumps(record, ensure_ascii=True).encode("ascii"))
        f.write(b"]}\n")


#: Records per page of ``write_page_json``.
_JSON_PAGE = 2000


@contextmanager
def _replacing(path: str) -> Iterator[IO[bytes]]:
    """A file to write ``path``'s content into, renamed over ``path`` when the
    block ends (``inspect.paths.open_replacement``), removed if it raises.

    A name longer than its folder allows is refused here, before anything is
    written, in its own words: else the page would be written to the cut
    temporary name and only the rename would fail, naming that.
    """
    where = Path(path)
    if len(os.fsencode(where.name)) > name_max(where.parent):
        raise OSError(errno.ENAMETOOLONG, "the page's name is longer than its folder allows", path)
    fd, tmp = open_replacement(where)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        replace_with(tmp, where)
    except BaseException:
        _unlink(str(tmp))
        raise


def _b(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _keep(reading: Reading) -> int:
    """How much of the file the pages show: the good prefix (a torn last line is said, not shown)."""
    return reading.tail.keep if reading.replayed else reading.size


#: How much of each record's start the walk hands over (enough for its id).
HEAD = 160
#: No limit: a page of every record to the end.
_ALL = 1 << 62


def _index_of(reading: Reading) -> Any:
    """The core's index of the envelopes (the read model's ``index``)."""
    if reading.index is None:
        raise ValueError(f"{reading.path}: nothing to read ({reading.error})")
    return reading.index


class PageData:
    """The lines a page carries: a byte range of the file, as it is, but for the
    few lines that cannot go as they are (too big: shortened; not an envelope:
    as a JSON string), spliced in."""

    def __init__(self, start: int, first_line: int) -> None:
        self.start = start
        self.first_line = first_line
        self.subs: list[tuple[int, int, bytes]] = []
        self.cut: dict[str, int] = {}

    def replace(self, start: int, stop: int, data: bytes) -> None:
        self.subs.append((start, stop, data))

    def build(self, fd: int, stop: int, chunk: bool = False) -> bytes:
        """The page's lines up to offset ``stop``, made safe for a data element
        (``island_bytes``) or a chunk script (``chunk_bytes``)."""
        data = _pread(fd, self.start, stop - self.start)
        if self.subs:
            pieces, at = [], 0
            for a, b, sub in self.subs:
                pieces.append(data[at : a - self.start])
                pieces.append(sub)
                at = b - self.start
            pieces.append(data[at:])
            data = b"".join(pieces)
        return chunk_bytes(data) if chunk else island_bytes(data)


def _pread(fd: int, offset: int, length: int) -> bytes:
    chunks = []
    while length > 0:
        chunk = os.pread(fd, min(length, 64 << 20), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(chunks)


def one_page(reading: Reading, fd: int, end: int, first: int = 0, records: int = _ALL,
             ) -> tuple[PageData, list[tuple[int, int, str, bytes]], int]:
    """The page of the lines of ``fd`` up to offset ``end``, from envelope
    ``first``'s line (the file's start for 0), of at most ``records`` records:
    its lines to splice in (``take_line``), its records ``(index, line, type,
    head)`` and the offset it stops at. The walk is the core's (``PageWalk``)."""
    walk = PageWalk(_index_of(reading), end, records, records, _ALL, _ALL, BIG_LINE, HEAD, first)
    got = walk.next_page()
    if got is None:
        return PageData(0, 1), [], end
    start, stop, first_line, items, odd, _ = got
    page = PageData(start, first_line)
    for line, i, a, b in odd:
        take_line(reading, fd, page, i, line, a, b)
    return page, items, stop


def take_line(reading: Reading, fd: int, page: PageData, i: int | None, line: int, a: int, b: int) -> None:
    """What cannot go in the page as it is (the walk's odd lines): a record
    too big, shortened; a run of lines that are no envelope (blank lines among
    them kept as they are), each said to be damaged."""
    if i is None:
        if b - a > BIG_LINE:  # one line, alone in its run
            sub = damaged_line(_pread(fd, a, MAX_BLOCK))
        else:
            sub = b"\n".join(damaged_line(raw) if raw.strip(b" \t\r") else raw
                             for raw in _pread(fd, a, b - a).split(b"\n"))
        page.replace(a, b, sub)
    elif b - a > BIG_LINE:
        page.replace(a, b, short_line(reading, i))
        page.cut[str(line)] = b - a


def _json(value: Any) -> bytes:
    """``value`` as compact JSON (the core's canonical writer: a third of ``json.dumps``'s
    time on a page's notes; its keys sorted), or ``json.dumps``'s for what that refuses
    (a value nested past its 512 levels)."""
    try:
        return canonical_json(value).encode("utf-8", "backslashreplace")
    except (ValueError, TypeError):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def notes_island(notes: dict[str, Any], start: dict[str, Any], cut: dict[str, int]) -> list[bytes]:
    """A page's notes (what replay says of its records), as a data element."""
    for line, size in cut.items():
        notes.setdefault(line, {})["cut"] = size
    return [b'<script type="application/json" id=at-notes>', island_bytes(_json({"notes": notes, **start})), b"</script>\n"]


def data_islands(first_line: int, data: bytes, notes: dict[str, Any], start: dict[str, Any],
                 cut: dict[str, int]) -> list[bytes]:
    """The two data elements of a page, in pieces to write: its lines (``data``,
    already safe) and their notes."""
    for line, size in cut.items():
        notes.setdefault(line, {})["cut"] = size
    meta = _json({"notes": notes, **start})
    return [b'<script type="application/json" id=at-data data-first="' + str(first_line).encode() + b'">\n',
            data, b"\n</script>\n<script type=\"application/json\" id=at-notes>", island_bytes(meta), b"</script>\n"]


def chunk_bytes(data: bytes) -> bytes:
    """A page's lines as the body of a JavaScript ``String.raw`` template: every
    backquote and ``$`` (only ever inside a JSON string) as a ``\\u`` escape, a raw
    CR as a space; everything else, backslashes included, as it is in the file."""
    if b"`" in data:
        data = data.replace(b"`", b"\\u0060")
    if b"$" in data:
        data = data.replace(b"$", b"\\u0024")
    if b"\r" in data:
        data = data.replace(b"\r", b" ")
    return data


def script_tag() -> bytes:
    """The viewer's script element (the same bytes on every page)."""
    global _SCRIPT
    if _SCRIPT is None:
        _SCRIPT = f"<script>{assets().js}</script>\n</body></html>\n".encode()
    return _SCRIPT


_SCRIPT: bytes | None = None


def _open(reading: Reading) -> int:
    return open_file(reading.path)  # an archive's lines, decompressed


def _write_single(reading: Reading, out: str) -> None:
    title = _title(reading)
    out_dir = os.path.dirname(os.path.abspath(out))
    used = token_totals(read_usage(reading.path))
    notes = Annotator(reading, artifact_href=_artifact_href(out_dir), tokens=used)
    fd = _open(reading)
    try:
        keep = _keep(reading)
        page, items, stop = one_page(reading, fd, keep)
        data = page.build(fd, stop)
    finally:
        os.close(fd)
    page_notes = notes.page(list(items))
    with _replacing(out) as f:
        f.write(_b(head(title, csp())))
        f.write(b"<div class=layout><main id=records>\n")
        f.write(_b(summary_panel(reading, title, tokens=used)))
        f.write(b"<div id=at-end></div>\n")
        f.write(_b(ended_banner(reading)))
        f.write(b"</main>\n")
        f.write(_b(outline_nav(notes.outline)))
        f.write(b"</div>\n")
        f.writelines(data_islands(1, data, page_notes, {}, page.cut))
        f.write(script_tag())


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _js_call(fn: str, *args: Any) -> str:
    body = ",".join(json.dumps(a, ensure_ascii=False) for a in args)
    body = body.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"window.AT&&AT.{fn}({body});\n"


def _write_folder(reading: Reading, out: str) -> int:
    make_folders(Path(out, "p"))
    make_folders(Path(out, "c"))
    title = _title(reading)
    used = token_totals(read_usage(reading.path))
    notes = Annotator(reading, artifact_href=_artifact_href(os.path.join(out, "p")), tokens=used)
    policy = csp(self_scripts=True)
    ranges: list[tuple[int, int]] = []
    index = _index_of(reading)
    keep = _keep(reading)
    fd = _open(reading)

    # The pages' files have short names of their own (p/NNNNNN.html, c/NNNNNN.js):
    # the writer's <name>.tmp always fits beside them.
    writer = PageWriter(WRITE_DEPTH)

    def write_page(page: PageData, data: PageBytes, items: list[tuple[int, int, str, bytes | None]],
                   start: dict[str, Any], last: bool) -> None:
        number = len(ranges) + 1
        name = f"{number:06d}"
        page_notes = notes.page(items)
        # The chunk: the page's lines, escaped and written on the writer's thread.
        writer.chunk(os.path.join(out, "c", name + ".js"),
                     b"window.AT_CHUNK=[" + str(page.first_line).encode() + b",String.raw`\n",
                     data, page.subs, b"\n`];\n")
        prev = f' · <a href="{number - 1:06d}.html" rel=prev>previous</a>' if number > 1 else ""
        nxt = "" if last else f' · <a href="{number + 1:06d}.html" rel=next>next</a>'
        html = [
            _b(head(f"{title} — page {number}", policy, body_data={"page": str(number), "base": "../"})),
            b"<div class=layout><main id=records>\n",
            _b(f'<nav class=pager><a href="../index.html">index</a>{prev} · page {number}</nav>\n'),
            b"<div id=at-end></div>\n",
            _b(ended_banner(reading)) if last else b"",
            _b(f'<nav class=pager><a href="../index.html">index</a> · page {number}{nxt}</nav>\n'),
            b"</main></div>\n",
            *notes_island(page_notes, start, page.cut),
            _b(f'<script src="../pages.js"></script>\n<script src="../c/{name}.js"></script>\n'
               '<script src="../viewer.js"></script>\n</body></html>\n'),
        ]
        writer.file(os.path.join(out, "p", name + ".html"), html)
        ranges.append((page.first_line, items[-1][1] if items else page.first_line))

    # The walk over the records is the core's, from the index (each page's bytes
    # read at once, without the GIL); they are escaped and written to the page's
    # chunk on the writer's thread while the next page's notes are made here.
    walk = PageWalk(index, keep, PAGE_RECORDS * 3 // 4, PAGE_RECORDS * 2, PAGE_BYTES * 3 // 4,
                          PAGE_BYTES * 2, BIG_LINE, HEAD)
    try:
        got = walk.next_page()
        while got is not None:
            start_at, _, first_line, items, odd, data = got
            page = PageData(start_at, first_line)
            for line, i, a, b in odd:
                take_line(reading, fd, page, i, line, a, b)
            start = notes.start()
            got = walk.next_page()
            write_page(page, data, list(items), start, got is None)
        writer.finish()  # raises the OSError of a file that could not be written
    except BaseException:
        try:
            writer.finish()
        except OSError:
            pass  # the first error is the one raised
        raise
    finally:
        os.close(fd)
    _write_whole(os.path.join(out, "pages.js"), _b(_js_call("setPages", ranges)))
    _write_whole(os.path.join(out, "viewer.js"), _b(assets().js))  # once, not in every page
    index_path = os.path.join(out, "index.html")
    with _replacing(index_path) as f:
        f.write(_b(head(title, policy, body_data={"index": "1", "pages": str(len(ranges)), "base": ""})))
        f.write(b"<div class=layout><main id=records>\n")

        def go(a: str, line: int) -> str:
            return f"p/{_page_of(ranges, line):06d}.html#{a}"
        f.write(_b(summary_panel(reading, title, go, used)))
        f.write(_b(ended_banner(reading, go)))
        f.write(b'<section class=pages><h3>pages</h3><p><button id=search-all type=button>search every page</button> <span id=search-status></span></p><ol id=search-hits></ol><ol class=page-list>')
        for k, (a, b) in enumerate(ranges, 1):
            f.write(_b(f'<li><a href="p/{k:06d}.html">page {k}</a>: lines {a:,}–{b:,}</li>'))
        f.write(b"</ol></section></main>\n")
        f.write(_b(outline_nav(notes.outline, go)))
        f.write(b'</div>\n<script src="pages.js"></script>\n<script src="viewer.js"></script>\n</body></html>\n')
    return len(ranges)


def _write_whole(path: str, data: bytes) -> None:
    """``data`` as the file ``path``, written beside it and renamed over it."""
    with _replacing(path) as f:
        f.write(data)


def _page_of(ranges: list[tuple[int, int]], line: int) -> int:
    lo, hi = 0, len(ranges) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ranges[mid][0] <= line:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1
