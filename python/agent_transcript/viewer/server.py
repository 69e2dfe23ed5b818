"""``serve``: a local viewer of a folder of transcripts, on 127.0.0.1 only.

``GET /`` is the resume picker: one row per transcript (title from the first
user message, status, started, last activity, size), ``agent_transcript.fleet``'s
listing of the folder (from each file's first and last lines only). ``GET /t/<name>`` opens a transcript at its tail (the
last records, rendered from the read model like ``html``'s pages, with a link
to the earlier ones), and its script follows the run over server-sent events
(``GET /e/<name>``): each event is one whole line, rendered, with the byte
offset after it and the next line's number as its id, so a reconnection (``Last-Event-ID``) goes on where
it stopped; a half-written line is held until its ``\\n`` comes; a repair that
swaps the file is followed. ``GET /a/<name>?file=F`` is an artifact, as text.

Every request's Host header must name this server (127.0.0.1 or localhost
and its port: a page of another site cannot rebind a name to it), and every
request carries the server's secret token, as Jupyter's do: ``?token=`` in the
URL ``serve`` prints, then the cookie the first answer sets (``HttpOnly``,
``SameSite=Strict``), compared in constant time; without it, a 403 (another
local user reaches 127.0.0.1 too). There is no write endpoint (anything but
GET and HEAD is 405). Only transcripts are served, and their artifacts: a
``*.jsonl`` or ``*.jsonl.zst`` inside the folder whose first line is a
session-meta, no part of its name hidden (``.ssh/``, ``.env.jsonl``), not a
link out of the folder or to a file named otherwise; anything else is a 404.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import stat
import threading
import time
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .. import fleet
from ..inspect.paths import open_regular, open_stored_artifact
from ..inspect import GrowingFile, Reading, open_file, read
from .markup import text
from . import picker
from .picker import TokenCache, time_cell, title_cell, tokens_cell, tokens_summary
from .page import (PageData, assets, csp, data_islands, ended_banner, head, one_page, script_tag, summary_panel,
                   unpaired_lines, verdict)
from .render import BIG_LINE, Annotator, anchor, island_bytes, shorten, size_text
from .search import HITS_SHOWN, first_record, search_form, search_page

__all__ = ["ViewerServer", "make_server", "picker_row", "PickerRow"]

#: serve opens a transcript at its last TAIL_RECORDS lines (read back from the end,
#: no more than TAIL_MAX bytes once one whole line is in).
TAIL_RECORDS = 200
TAIL_MAX = 8 << 20
#: One mark (line number, offset) every MARK_EVERY bytes, for the pages of earlier records.
MARK_EVERY = 4 << 20
POLL = 0.2
HEARTBEAT = 10.0
READINGS_KEPT = 4


@dataclass(frozen=True)
class PickerRow:
    """One transcript in the picker: ``agent_transcript.fleet``'s row of it, from its
    first and last lines only."""

    name: str
    title: str
    status: str  # fleet's status (ls's): "pending" when the last line is a call never answered or settled
    started: str
    last: str
    size: int
    mtime: float
    held: bool | None = None

    @property
    def activity(self) -> float:
        """When the run last did something, in seconds since the epoch: its last
        envelope's ``ts``, or the file's mtime when there is none to read."""
        when = _epoch(self.last)
        return self.mtime if when is None else when


def _epoch(ts: str) -> float | None:
    """``ts`` (``%Y-%m-%dT%H:%M:%S.%fZ``, or another ISO 8601 time; without a zone,
    UTC) in seconds since the epoch, or None when it is no such time."""
    try:
        when = datetime.fromisoformat(ts[:-1] if ts.endswith("Z") else ts)
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def shown_name(name: str) -> str:
    """A file name as a page shows it: a byte that is not UTF-8 as ``\\xNN``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _quoted(name: str) -> str:
    """A file name in a URL: its bytes, percent-encoded (whether UTF-8 or not)."""
    return urllib.parse.quote(os.fsencode(name))


def _name_in(root: str, path: str) -> str | None:
    """``path``'s name under the folder ``root`` (a real path, ``/`` too), or None
    when it is not inside it."""
    inside = root.rstrip(os.sep) + os.sep
    return path[len(inside):] if path.startswith(inside) else None


def _served(name: str) -> bool:
    """Whether ``name``, a path under the folder, is one the viewer serves: a
    transcript's (``*.jsonl``, ``*.jsonl.zst``), no part of it hidden (``.ssh/``,
    ``.env.jsonl``), empty, ``.`` or ``..``, and not in an artifacts folder."""
    parts = name.split("/")
    return (name.endswith(fleet.TRANSCRIPT_SUFFIXES) and "\x00" not in name
            and all(part and not part.startswith(".") for part in parts)
            and not (len(parts) > 1 and parts[-2].endswith(".artifacts")))


#: fleet's statuses of a file the viewer opens: its first line is a session-meta.
_OPENED = ("clean", "pending", "torn tail", "corrupt")


def _obj(line: bytes) -> dict[str, Any] | None:
    try:
        v = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return v if isinstance(v, dict) else None


def picker_row(root: str, name: str) -> PickerRow:
    """The picker's row of ``root/name`` (fleet's row of that file)."""
    return _row(root, fleet.read_row(Path(root) / name))


def _row(root: str, r: fleet.TranscriptRow) -> PickerRow:
    path = str(r.path)
    name = _name_in(root, path) or os.path.relpath(path, root)
    status = r.status
    if status == "unreadable" and r.reason:
        status = f"unreadable: {r.reason}"
    return PickerRow(name, r.title or name, status, r.started or "", r.last_activity or "", r.size, r.mtime, r.held)


class ViewerServer(ThreadingHTTPServer):
    """The viewer's HTTP server over the folder ``root``; ``token`` is the secret every
    request must carry (None: none is asked)."""

    daemon_threads = True

    def __init__(self, root: str, port: int, token: str | None = None) -> None:
        self.root = os.path.realpath(root)
        self.token = token
        self.stopping = threading.Event()
        self._readings: OrderedDict[str, tuple[tuple[int, int, int], Reading]] = OrderedDict()
        self._marks: OrderedDict[str, tuple[tuple[int, int, int], int, list[tuple[int, int]]]] = OrderedDict()
        self._lock = threading.Lock()
        self.tokens = TokenCache()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The address to open: the picker, with ``?token=`` when one is asked."""
        url = f"http://127.0.0.1:{self.port}/"
        return f"{url}?token={self.token}" if self.token else url

    @property
    def cookie(self) -> str:
        """The name of the cookie that carries the token, one a port (a browser keeps
        cookies by host, not by port)."""
        return f"agent-transcript-{self.port}"

    def admits(self, token: str | None) -> bool:
        """Whether ``token`` is this server's (compared in constant time), or none is asked."""
        if self.token is None:
            return True
        return token is not None and hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self.token.encode())

    def hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def resolve(self, name: str) -> str | None:
        """The path of transcript ``name`` inside the folder, or None: a name the
        picker does not list, a link out of the folder or to another name, anything
        but a regular file, a file whose first line is not a session-meta (an
        archive's is read when it is shown: it is read whole)."""
        if not _served(name):
            return None
        path = os.path.realpath(os.path.join(self.root, name))
        real = _name_in(self.root, path)
        if real is None or not _served(real):
            return None
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return None
        except OSError:
            return None
        if path.endswith(".zst") or fleet.read_row(Path(path)).status in _OPENED:
            return path
        return None

    def transcripts(self) -> list[PickerRow]:
        """Every transcript under the folder that the viewer serves
        (``agent_transcript.fleet.list_transcripts``, without hidden names and links
        out of the folder), newest activity first: by the last envelope's ``ts``."""
        rows = []
        for r in fleet.list_transcripts(self.root):
            name = _name_in(self.root, str(r.path))
            if name is None or not _served(name):
                continue
            # fleet walks no linked folder: only the file itself can be a link out of the folder
            if os.path.islink(r.path) and not _served(_name_in(self.root, os.path.realpath(r.path)) or ""):
                continue
            rows.append(_row(self.root, r))
        rows.sort(key=lambda r: r.activity, reverse=True)
        return rows

    def reading(self, path: str) -> Reading:
        """``path`` read (the core's replay), kept for the next request while the
        file's inode, size and mtime stay the same (the last few files only)."""
        st = os.stat(path)
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            got = self._readings.get(path)
            if got is not None and got[0] == key:
                self._readings.move_to_end(path)
                return got[1]
        reading = read(path, lenient=True)
        with self._lock:
            self._readings[path] = (key, reading)
            while len(self._readings) > READINGS_KEPT:
                self._readings.popitem(last=False)
        return reading

    def marks(self, path: str, upto: int) -> tuple[int, list[tuple[int, int]]]:
        """How many lines start before offset ``upto`` of ``path`` (a count of its
        newlines), and a mark ``(line, offset)`` of a line start every few MiB; kept
        while the file's inode, size and mtime stay the same, extended when it grows."""
        with os.fdopen(open_regular(Path(path), os.O_RDONLY), "rb") as f:  # never a FIFO swapped in
            st = os.fstat(f.fileno())
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            with self._lock:
                got = self._marks.get(path)
            count, marks, at = 0, [(1, 0)], 0
            if got is not None and got[0][0] == st.st_ino and got[2] and got[2][-1][1] <= upto:
                _, count, marks = got
                marks = list(marks)
                count, at = marks[-1][0] - 1, marks[-1][1]
            fd = f.fileno()
            while at < upto:
                block = os.pread(fd, min(MARK_EVERY, upto - at), at)
                if not block:
                    break
                count += block.count(b"\n")
                at += len(block)
                last = block.rfind(b"\n")
                if last >= 0 and at - len(block) + last + 1 - marks[-1][1] >= MARK_EVERY // 2:
                    marks.append((count + 1, at - len(block) + last + 1))
        with self._lock:
            self._marks[path] = (key, count, marks)
            while len(self._marks) > READINGS_KEPT:
                self._marks.popitem(last=False)
        return count, marks

    def shutdown(self) -> None:
        self.stopping.set()
        super().shutdown()


def make_server(root: str, port: int = 0, *, token: bool = True) -> ViewerServer:
    """A viewer of ``root`` on 127.0.0.1:``port`` (0: a free port), not yet serving.

    With ``token`` (the default) every request must carry a new random secret:
    open ``ViewerServer.url``, which holds it (the first answer sets a cookie
    that holds it after). With ``token=False`` any local user can read every
    transcript in the folder.

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        OSError: the port cannot be bound.
    """
    if not os.path.isdir(root):
        raise NotADirectoryError(20, "Not a directory", root)
    return ViewerServer(root, port, secrets.token_urlsafe(32) if token else None)


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"
    server_version = "agent-transcript"
    sys_version = ""

    #: The Set-Cookie of this request's answer: the token's, when it came in the URL.
    set_cookie: str | None = None

    def log_message(self, format: str, *args: Any) -> None:  # quiet: no request log
        pass

    # -- plumbing

    def _headers(self, status: int, ctype: str, length: int | None, policy: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Content-Security-Policy", (policy or "default-src 'none'; sandbox") + "; frame-ancestors 'none'")
        if self.set_cookie:
            self.send_header("Set-Cookie", self.set_cookie)
        self.end_headers()

    def _send(self, status: int, body: str | bytes, ctype: str = "text/html; charset=utf-8", policy: str | None = None) -> None:
        data = body.encode("utf-8", "backslashreplace") if isinstance(body, str) else body
        self._headers(status, ctype, len(data), policy)
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: HTTPStatus, why: str) -> None:
        self._send(status, f"{status.value} {status.phrase}: {why}\n", "text/plain; charset=utf-8")

    def _refuse_write(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_write  # noqa: N815

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        self.set_cookie = None  # a connection's handler answers each of its requests
        if self.headers.get("Host", "") not in self.server.hosts():
            self._error(HTTPStatus.FORBIDDEN, "this viewer answers only to 127.0.0.1 and localhost on its port")
            return
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if not self._admitted(query):
            self._error(HTTPStatus.FORBIDDEN, "this viewer needs its token: open the URL serve printed (with ?token=)")
            return
        route = os.fsdecode(urllib.parse.unquote_to_bytes(url.path))  # a name's bytes, UTF-8 or not
        try:
            if route == "/":
                self._picker()
            elif route.startswith("/t/"):
                self._transcript(route[3:], query)
            elif route.startswith("/e/"):
                self._events(route[3:], query)
            elif route.startswith("/a/"):
                self._artifact(route[3:], query)
            elif route == "/search":
                self._search(query)
            else:
                self._error(HTTPStatus.NOT_FOUND, "no such page")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _admitted(self, query: dict[str, list[str]]) -> bool:
        """Whether the request carries the server's token: in the URL (``?token=``; the
        answer then sets the cookie that carries it after) or in that cookie."""
        server = self.server
        if server.token is None:
            return True
        if server.admits(query.get("token", [None])[-1]):
            self.set_cookie = f"{server.cookie}={server.token}; HttpOnly; SameSite=Strict; Path=/"
            return True
        given = [value.strip() for header in self.headers.get_all("Cookie", [])
                 for key, _, value in (c.partition("=") for c in header.split(";")) if key.strip() == server.cookie]
        return any([server.admits(value) for value in given])  # every one compared: no early answer

    # -- pages

    def _picker(self) -> None:
        rows = self.server.transcripts()
        root = shown_name(self.server.root)
        out = [head(f"transcripts in {root}", csp(forms=True), tools=False),
               f'<div class=layout><main id=records>{search_form()}<section class=summary><b>{len(rows):,} transcript{"s" if len(rows) != 1 else ""}</b> in <code>{text(root)}</code>, newest activity first</section>'
               "<table class=picker><thead><tr><th>title</th><th>status</th><th>started</th><th>last activity</th><th>size</th><th>tokens</th><th>file</th></tr></thead><tbody>"]
        budget = picker.PICKER_TOKEN_BYTES
        for r in rows:
            path = os.path.join(self.server.root, r.name)
            known, totals = self.server.tokens.kept(path)
            if not known and budget > 0:
                budget -= r.size
                known, totals = True, self.server.tokens.totals(path)
            st = {"clean": "clean", "torn tail": "torn", "pending": "pending"}.get(r.status, "other")
            live = " <span class=live-badge>live</span>" if r.held else ""
            href = "/t/" + _quoted(r.name)
            out.append(
                f'<tr class=row data-status="{text(st)}">{title_cell(r.title, href)}<td class="st-{st}">{text(r.status)}{live}</td>'
                f"{time_cell(r.started)}{time_cell(r.last)}<td class=num>{size_text(r.size)}</td>"
                f"{tokens_cell(totals) if known else picker.UNCOUNTED_CELL}"
                f"<td><code>{text(shown_name(r.name))}</code></td></tr>"
            )
        out.append(f"</tbody></table></main></div>\n<script>{assets().js}</script></body></html>\n")
        self._send(HTTPStatus.OK, "".join(out), policy=csp(forms=True))

    def _search(self, query: dict[str, list[str]]) -> None:
        hits, total = search_page(self.server.transcripts(), self.server.root, query)
        q = query.get("q", [""])[-1]
        out = [head(f"search: {q}", csp(forms=True), tools=False),
               '<div class=layout><main id=records><nav class=pager><a href="/">all transcripts</a></nav>',
               search_form(query), f"<section class=summary><b>{total:,} hit{'s' if total != 1 else ''}</b>",
               f" (the first {HITS_SHOWN:,} listed)" if total > HITS_SHOWN else "", "</section>", *hits,
               f"</main></div>\n<script>{assets().js}</script></body></html>\n"]
        self._send(HTTPStatus.OK, "".join(out), policy=csp(forms=True))

    def _transcript(self, name: str, query: dict[str, list[str]]) -> None:
        path = self.server.resolve(name)
        if path is None:
            self._error(HTTPStatus.NOT_FOUND, "no such transcript in this folder")
            return
        archive = path.endswith(".zst")
        if "line" in query and "from" not in query:  # a search hit: the page that holds the line
            try:
                query["from"] = [str(first_record(self.server.reading(path), int(query["line"][-1])))]
            except (ValueError, OSError):
                query["from"] = ["0"]
        if "from" in query or archive:  # an archive (a closed run) is read whole, decompressed
            self._records(path, name, query)
            return
        # Tail first: the last lines, read back from the end; nothing is replayed or
        # indexed before the page is sent (the line numbers and what replay says of
        # these records follow on the event stream).
        try:
            with os.fdopen(open_regular(Path(path), os.O_RDONLY), "rb") as f:  # never a FIFO swapped in
                size = os.fstat(f.fileno()).st_size
                start, end, lines = read_tail(f.fileno(), size, TAIL_RECORDS)
        except OSError as exc:
            self._error(HTTPStatus.NOT_FOUND, exc.strerror or str(exc))
            return
        quoted = _quoted(name)
        data = {"tail": "1", "events": f"/e/{quoted}?offset={end}&from={start}&n={len(lines)}"}
        title = shown_name(os.path.basename(path))
        earlier = ('<nav class=pager><a href="?from=0">the first records</a> · the last '
                   f'{len(lines):,} lines of {size_text(size)} are shown here</nav>\n') if start > 0 else ""
        out = [head(title, csp(connect=True), body_data=data), "<div class=layout><main id=records>\n",
               '<nav class=pager><a href="/">all transcripts</a> · <span id=live class=live-badge>live</span></nav>\n',
               '<section class=summary aria-label="summary"><p id=summary-wait>reading the whole file for the check and what replay says…</p></section>\n',
               earlier, "<div id=at-end></div></main></div>\n"]
        shown = island_bytes(b"\n".join(ln if len(ln) <= BIG_LINE else _short(ln) for ln in lines))
        body = "".join(out).encode("utf-8", "backslashreplace") + b"".join(data_islands(1 if start == 0 else 0, shown, {}, {}, {}))
        body += script_tag()
        self._send(HTTPStatus.OK, body, policy=csp(connect=True))

    def _records(self, path: str, name: str, query: dict[str, list[str]]) -> None:
        """A page of earlier records (``?from=K``: records K to K + TAIL_RECORDS; an
        archive's last ones without it), with the replay's notes."""
        try:
            reading = self.server.reading(path)
        except OSError as exc:
            self._error(HTTPStatus.NOT_FOUND, exc.strerror or str(exc))
            return
        if reading.error is not None:
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, f"not a transcript: {reading.error}")
            return
        n = len(reading)
        try:
            start = max(0, min(n, int(query["from"][0]))) if "from" in query else max(0, n - TAIL_RECORDS)
        except ValueError:
            start = 0
        end = min(n, start + TAIL_RECORDS)
        quoted = _quoted(name)

        def href(file: str, found: str | None) -> str:
            return f"/a/{quoted}?file={urllib.parse.quote(file)}"

        notes = Annotator(reading, transcript_path=path, artifact_href=href, tokens=self.server.tokens.totals(path))
        grants_at = [i for i in reading.indices_of_type("grants") if i < start]
        if grants_at:
            notes.seen_grants(grants_at[-1])
        state = notes.start()
        items: list[tuple[int, int, str, bytes | None]] = []
        page = PageData(0, reading.line_number(start) if start < n else 1)
        data = b""
        if start < n:
            keep = reading.tail.keep if reading.replayed else reading.size
            fd = open_file(path)
            try:
                page, found, stop = one_page(reading, fd, keep, start, end - start)
                items = [(i, line, type_, None) for i, line, type_, _ in found]
                data = page.build(fd, stop)
            finally:
                os.close(fd)
        page_notes = notes.page(items)
        title = shown_name(os.path.basename(path))
        out = [head(title, csp(connect=True)), "<div class=layout><main id=records>\n",
               '<nav class=pager><a href="/">all transcripts</a> · <a href="/t/' + text(quoted) + '">the tail</a></nav>\n',
               summary_panel(reading, title, tokens=self.server.tokens.totals(path))]
        if start > 0:
            out.append(f'<nav class=pager><a href="?from={max(0, start - TAIL_RECORDS)}">earlier records</a> (records {max(0, start - TAIL_RECORDS) + 1:,}–{start:,} of {n:,})</nav>\n')
        out.append("<div id=at-end></div>\n")
        if end < n:
            out.append(f'<nav class=pager><a href="?from={end}">later records</a></nav>\n')
        else:
            out.append(ended_banner(reading))
        out.append("</main></div>\n")
        body = "".join(out).encode("utf-8", "backslashreplace") + b"".join(data_islands(page.first_line, data, page_notes, state, page.cut))
        body += script_tag()
        self._send(HTTPStatus.OK, body, policy=csp(connect=True))

    def _artifact(self, name: str, query: dict[str, list[str]]) -> None:
        path = self.server.resolve(name)
        file = query.get("file", [""])[0]
        if path is None or not file or file.startswith(".") or any(c in file for c in "/\\\x00"):
            self._error(HTTPStatus.NOT_FOUND, "no such artifact")
            return
        # Never through a link (out of the folder, to /dev/zero), never a FIFO
        # (its open waits for a writer): what the library itself would read.
        fd = open_stored_artifact(path, file)
        if fd is None:
            self._error(HTTPStatus.NOT_FOUND, "no such artifact")
            return
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(fd).st_size
            self._headers(HTTPStatus.OK, "text/plain; charset=utf-8", size, None)
            if self.command == "HEAD":
                return
            # A chunk at a time, and no more than the length announced (it may grow).
            while size > 0 and (chunk := f.read(min(size, 1 << 20))):
                self.wfile.write(chunk)
                size -= len(chunk)
            if size > 0:
                self.close_connection = True  # it shrank: short of its length, the reply ends here

    # -- live follow

    def _events(self, name: str, query: dict[str, list[str]]) -> None:
        path = self.server.resolve(name)
        if path is None or path.endswith(".zst"):  # an archive is a closed run: nothing to follow
            self._error(HTTPStatus.NOT_FOUND, "no such transcript in this folder")
            return
        try:
            pos = int(query.get("offset", ["0"])[0])
            tail_from = int(query["from"][0]) if "from" in query else None
            tail_n = int(query.get("n", ["0"])[0])
            line = int(query.get("line", ["1"])[0])
            last = self.headers.get("Last-Event-ID")
            if last:
                a, b = last.split(".", 1)
                pos, line = int(a), int(b)
                tail_from = None
        except (ValueError, KeyError):
            self._error(HTTPStatus.BAD_REQUEST, "offset and line are numbers")
            return
        if pos < 0 or line < 1 or tail_n < 0 or (tail_from is not None and tail_from < 0):
            # A page only asks from where it stopped; a seek before the file's
            # start would fail mid-stream, after the 200 went out.
            self._error(HTTPStatus.BAD_REQUEST, "offset, from and n are 0 or more, line 1 or more")
            return
        self._headers(HTTPStatus.OK, "text/event-stream; charset=utf-8", None, "default-src 'none'")
        if self.command == "HEAD":
            return
        self.close_connection = True
        at = GrowingFile()  # the reader Session.follow reads with
        try:
            # Never blocking: the path may have become a FIFO since it was resolved.
            at.file.fd = open_regular(Path(path), os.O_RDONLY)
        except OSError:
            self.wfile.write(b"event: reset\ndata: {}\n\n")
            self.wfile.flush()
            return
        try:
            at.restart(pos, line - 1)  # from what the page shows, to tell a rewrite in place
            self.wfile.write(b"retry: 1000\n\n")
            self.wfile.flush()
            if tail_from is not None:
                # After the page: the tail's line numbers (a count of the newlines before
                # it), then what replay says of its records.
                first = self.server.marks(path, tail_from)[0] + 1
                at.number = first + tail_n - 1
                self._send_event("notes", self._tail_notes(path, name, first, at.number), f"{pos}.{at.number + 1}")
            beat = time.monotonic()
            while not self.server.stopping.is_set():
                try:
                    # A repair that swapped the file is followed; any other new file
                    # (a rotation, a new run) is not what the page shows the start of.
                    swapped = at.swap(Path(path), at.offset, at.number)
                except OSError:
                    swapped = None  # not a regular file, or unreadable: not followed
                if swapped == "replaced" or at.rewritten(os.fstat(at.fd).st_size):
                    # Another file, cut below what was shown, or written again in place
                    # past it: the page must start again.
                    self.wfile.write(b"event: reset\ndata: {}\n\n")
                    self.wfile.flush()
                    return
                size = os.fstat(at.fd).st_size
                sent = False
                for raw in at.lines(size, 8 << 20) if at.behind(size) else ():
                    at.advance(raw)
                    if raw.strip():
                        # The id is where the next line starts and its number, as the query's.
                        self._send_event("rec", {"line": at.number, "raw": _text(raw)}, f"{at.offset}.{at.number + 1}")
                        sent = True
                if sent:
                    self.wfile.flush()
                    beat = time.monotonic()
                if time.monotonic() - beat > HEARTBEAT:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    beat = time.monotonic()
                self.server.stopping.wait(POLL)
        finally:
            at.file.close()

    def _send_event(self, event: str, data: Any, event_id: str) -> None:
        body = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
        self.wfile.write(f"id: {event_id}\nevent: {event}\ndata: {body}\n\n".encode())
        self.wfile.flush()

    def _tail_notes(self, path: str, name: str, first: int, last: int) -> dict[str, Any]:
        """What the tail page learns once the file is read: its first line's number,
        the check verdict and counts, the calls never settled, and each record's notes."""
        out: dict[str, Any] = {"first": first}
        try:
            reading = self.server.reading(path)
        except OSError as exc:
            out["summary"] = [["warning", f"cannot read the file: {exc.strerror or exc}"]]
            return out
        if reading.error is not None:
            out["summary"] = [["warning", f"not a transcript: {reading.error}"]]
            return out
        quoted = _quoted(name)

        def href(file: str, found: str | None) -> str:
            return f"/a/{quoted}?file={urllib.parse.quote(file)}"

        n = len(reading)
        lo, hi = 0, n
        while lo < hi:  # the first record at or after line `first`
            mid = (lo + hi) // 2
            if reading.line_number(mid) < first:
                lo = mid + 1
            else:
                hi = mid
        notes = Annotator(reading, transcript_path=path, artifact_href=href, tokens=self.server.tokens.totals(path))
        grants_at = [i for i in reading.indices_of_type("grants") if i < lo]
        if grants_at:
            notes.seen_grants(grants_at[-1])
        out.update(notes.start())
        items: list[tuple[int, int, str, bytes | None]] = []
        i = lo
        while i < n and reading.line_number(i) <= last:
            items.append((i, reading.line_number(i), reading.type_name(i), None))
            i += 1
        out["notes"] = notes.page(items)
        status, text_ = verdict(reading)
        out["summary"] = [[f"verdict v-{status}", "check " + text_]] + [["warning", w] for w in reading.warnings[:5]]
        out["summary"] += unpaired_lines(reading)
        said_tokens = tokens_summary(self.server.tokens.totals(path))
        if said_tokens:
            out["summary"].append(["tokens", said_tokens])
        pending = reading.pending() or []
        out["pending"] = [[anchor(op.op_id), op.tool, op.call_id, op.state] for op in pending[:200]]
        out["torn"] = (f"line {reading.tail.line} was cut mid-write ({reading.tail.removed:,} bytes; load removes it)"
                       if reading.tail.kind == "torn" else None)
        return out


def _text(raw: bytes) -> str:
    """A line for the page's script: as it is, or shortened when too big."""
    if len(raw) > BIG_LINE:
        raw = _short(raw)
    return raw.decode("utf-8", "replace")


def _short(raw: bytes) -> bytes:
    """A line too big for a page, its long strings cut (see render.short_line)."""
    v = _obj(raw)
    if v is None:
        return json.dumps(raw[:BIG_LINE].decode("utf-8", "replace"), ensure_ascii=True).encode()
    return json.dumps(shorten(v), ensure_ascii=True, separators=(",", ":")).encode()


def read_tail(fd: int, size: int, records: int) -> tuple[int, int, list[bytes]]:
    """The last ``records`` whole lines of ``fd`` (up to its last ``\n``: a line still
    being written is never in them), read back from the end: ``(offset of the first,
    offset after the last, the lines without their \n)``.

    Each block read is kept as it is and the blocks are joined once: a long last
    line is copied a fixed number of times, not once for each block read before it."""
    pos = size
    blocks: list[bytes] = []  # from the end back
    newlines = 0
    block = 64 * 1024
    while pos > 0:
        n = min(block, pos)
        pos -= n
        got = os.pread(fd, n, pos)
        blocks.append(got)
        newlines += got.count(b"\n")
        # Enough: `records` lines after a \n, or one whole line and TAIL_MAX read.
        if newlines > records or (newlines > 1 and size - pos >= TAIL_MAX):
            break
        block = min(block * 2, 4 << 20)
    blocks.reverse()
    buf = b"".join(blocks)
    del blocks  # no more than two copies alive at once: the blocks and the whole, then the whole and its lines
    pieces = buf.split(b"\n")
    del buf
    if len(pieces) == 1:  # no \n: not one whole line
        return pos, pos, []
    start = pos
    lines = pieces[:-1]  # the last piece is what follows the last \n
    if pos > 0:  # the first piece is the end of a line that starts earlier
        start += len(lines[0]) + 1
        lines = lines[1:]
    drop = max(0, len(lines) - records)
    start += sum(len(line) + 1 for line in lines[:drop])
    lines = lines[drop:]
    return start, start + sum(len(line) + 1 for line in lines), lines

