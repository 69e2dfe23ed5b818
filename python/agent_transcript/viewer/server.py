"""``serve``: a local viewer of a folder of transcripts, on 127.0.0.1 only.

``GET /`` is the resume picker: one row per transcript (title from the first
user message, status, started, last activity, size), from each file's first
and last few KiB only. ``GET /t/<name>`` opens a transcript at its tail (the
last records, rendered from the read model like ``html``'s pages, with a link
to the earlier ones), and its script follows the run over server-sent events
(``GET /e/<name>``): each event is one whole line, rendered, with the byte
offset after it as its id, so a reconnection (``Last-Event-ID``) goes on where
it stopped; a half-written line is held until its ``\\n`` comes; a repair that
swaps the file is followed. ``GET /a/<name>?file=F`` is an artifact, as text.

Every request's Host header must name this server (127.0.0.1 or localhost
and its port: a page of another site cannot rebind a name to it); there is no
write endpoint (anything but GET and HEAD is 405); a name is resolved inside
the folder or refused.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .. import Envelope
from ..inspect import Reading, content_text, read
from .markup import text
from .page import assets, csp, ended_banner, head, outline_nav, summary_panel
from .render import Renderer, size_text

__all__ = ["ViewerServer", "make_server", "picker_row", "PickerRow"]

HEAD_FIRST = 16 * 1024
HEAD_BYTES = 64 * 1024
TAIL_BYTES = 16 * 1024
TAIL_RECORDS = 300
POLL = 0.2
HEARTBEAT = 10.0
READINGS_KEPT = 4


@dataclass(frozen=True)
class PickerRow:
    """One transcript in the picker, from its first and last lines."""

    name: str
    title: str
    status: str  # clean, torn tail, pending N, not a transcript, unreadable
    started: str
    last: str
    size: int
    mtime: float


_CANON_ID = re.compile(rb'\{"id":"([^"\\]*)","payload":')
_CANON_OP = re.compile(rb'"op-id":"([^"\\]*)"')


def _lines(data: bytes) -> list[bytes]:
    return [ln for ln in data.split(b"\n") if ln.strip()]


def _obj(line: bytes) -> dict[str, Any] | None:
    try:
        v = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return v if isinstance(v, dict) else None


def picker_row(root: str, name: str) -> PickerRow:
    """The picker's row of ``root/name``, read from its head and tail only
    (the first 16 KiB, or 64 KiB when no user message is in them; the last 16 KiB).

    What is decoded is what the row shows: the first line, the first user
    message, and in the tail the last line and the tool lines (a call
    dispatched there and not settled after it is pending)."""
    path = os.path.join(root, name)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            head_ = f.read(HEAD_FIRST)
            if b'"user"' not in head_ and size > HEAD_FIRST:
                head_ += f.read(HEAD_BYTES - HEAD_FIRST)
            if size <= len(head_):
                tail_ = head_
            else:
                f.seek(max(0, size - TAIL_BYTES))
                tail_ = f.read(TAIL_BYTES)
    except OSError as exc:
        return PickerRow(name, name, f"unreadable: {exc.strerror or exc}", "", "", 0, 0.0)
    whole_head = len(head_) >= size
    first_nl = head_.find(b"\n")
    first = _obj(head_[: first_nl if first_nl >= 0 else len(head_)])
    if first is None or first.get("type") != "session-meta":
        return PickerRow(name, name, "not a transcript", "", "", size, st.st_mtime)
    title = ""
    cut = head_ if whole_head else head_[: head_.rfind(b"\n") + 1]
    at = cut.find(b'"user"')
    while at >= 0 and not title:
        ls = cut.rfind(b"\n", 0, at) + 1
        le = cut.find(b"\n", at)
        env = _obj(cut[ls : le if le >= 0 else len(cut)])
        p = env.get("payload") if env else None
        if env and env.get("type") == "message" and isinstance(p, dict) and p.get("role") == "user":
            title = (content_text(p.get("content")) or "").strip().split("\n", 1)[0][:120]
        at = cut.find(b'"user"', le if le >= 0 else len(cut))
    meta = first.get("payload")
    if not title and isinstance(meta, dict):
        title = str(meta.get("title") or meta.get("task") or "")
    body = tail_ if len(tail_) >= size else tail_.split(b"\n", 1)[-1]
    torn = False
    if not tail_.endswith(b"\n"):
        last_part = tail_.rsplit(b"\n", 1)[-1]
        if last_part.strip() and _obj(last_part) is None:
            torn = True
            body = body[: len(body) - len(last_part)]
    lines = _lines(body)
    last = _obj(lines[-1]) if lines else None
    last_ts = str(last.get("ts", "")) if last else ""
    dispatched: dict[str, None] = {}
    for ln in lines:
        # A canonical line is read without decoding it (its id first, its type last); any other is decoded.
        if ln.endswith(b'"type":"tool-dispatched","v":1}') and (m := _CANON_ID.match(ln)):
            dispatched[m.group(1).decode("utf-8", "replace")] = None
        elif ln.endswith(b'"type":"tool-settled","v":1}') and (m := _CANON_OP.search(ln)) and b'\\' not in m.group(1):
            dispatched.pop(m.group(1).decode("utf-8", "replace"), None)
        elif b'"tool-dispatched"' in ln or b'"tool-settled"' in ln:
            env = _obj(ln)
            p = env.get("payload") if env else None
            if env and env.get("type") == "tool-dispatched":
                dispatched[str(env.get("id"))] = None
            elif env and env.get("type") == "tool-settled" and isinstance(p, dict):
                dispatched.pop(str(p.get("op-id")), None)
    status = "torn tail" if torn else ("clean" if not dispatched else f"{len(dispatched)} pending")
    if torn and dispatched:
        status += f", {len(dispatched)} pending"
    return PickerRow(name, title or name, status, str(first.get("ts", "")), last_ts, size, st.st_mtime)


class ViewerServer(ThreadingHTTPServer):
    """The viewer's HTTP server over the folder ``root``."""

    daemon_threads = True

    def __init__(self, root: str, port: int) -> None:
        self.root = os.path.realpath(root)
        self.stopping = threading.Event()
        self._rows: dict[str, tuple[tuple[int, int], PickerRow]] = {}
        self._readings: OrderedDict[str, tuple[tuple[int, int, int], Reading]] = OrderedDict()
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def resolve(self, name: str) -> str | None:
        """The path of transcript ``name`` inside the folder, or None."""
        if not name or "\x00" in name:
            return None
        path = os.path.realpath(os.path.join(self.root, name))
        if not path.startswith(self.root + os.sep) or not os.path.isfile(path):
            return None
        return path

    def transcripts(self) -> list[PickerRow]:
        """Every ``*.jsonl`` under the folder, newest activity first (rows cached by size and mtime)."""
        rows = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.endswith(".artifacts") and not d.startswith("."))
            for fn in filenames:
                if not fn.endswith(".jsonl"):
                    continue
                full = os.path.join(dirpath, fn)
                if os.path.islink(full) and not os.path.realpath(full).startswith(self.root + os.sep):
                    continue  # a link out of the folder is not served, so not listed
                name = os.path.relpath(full, self.root)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                key = (st.st_size, st.st_mtime_ns)
                got = self._rows.get(name)
                if got is None or got[0] != key:
                    got = (key, picker_row(self.root, name))
                    self._rows[name] = got
                rows.append(got[1])
        rows.sort(key=lambda r: r.mtime, reverse=True)
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

    def shutdown(self) -> None:
        self.stopping.set()
        super().shutdown()


def make_server(root: str, port: int = 0) -> ViewerServer:
    """A viewer of ``root`` on 127.0.0.1:``port`` (0: a free port), not yet serving.

    Raises:
        NotADirectoryError: ``root`` is not a directory.
        OSError: the port cannot be bound.
    """
    if not os.path.isdir(root):
        raise NotADirectoryError(20, "Not a directory", root)
    return ViewerServer(root, port)


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"
    server_version = "agent-transcript"
    sys_version = ""

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
        self.end_headers()

    def _send(self, status: int, body: str | bytes, ctype: str = "text/html; charset=utf-8", policy: str | None = None) -> None:
        data = body.encode("utf-8", "surrogateescape") if isinstance(body, str) else body
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
        if self.headers.get("Host", "") not in self.server.hosts():
            self._error(HTTPStatus.FORBIDDEN, "this viewer answers only to 127.0.0.1 and localhost on its port")
            return
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        route = urllib.parse.unquote(url.path)
        try:
            if route == "/":
                self._picker()
            elif route.startswith("/t/"):
                self._transcript(route[3:], query)
            elif route.startswith("/e/"):
                self._events(route[3:], query)
            elif route.startswith("/a/"):
                self._artifact(route[3:], query)
            else:
                self._error(HTTPStatus.NOT_FOUND, "no such page")
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- pages

    def _picker(self) -> None:
        rows = self.server.transcripts()
        out = [head(f"transcripts in {self.server.root}", csp(), tools=False),
               f'<div class=layout><main id=records><section class=summary><b>{len(rows):,} transcript{"s" if len(rows) != 1 else ""}</b> in <code>{text(self.server.root)}</code>, newest activity first</section>'
               "<table class=picker><thead><tr><th>title</th><th>status</th><th>started</th><th>last activity</th><th>size</th><th>file</th></tr></thead><tbody>"]
        for r in rows:
            st = "clean" if r.status == "clean" else ("torn" if r.status.startswith("torn") else ("pending" if "pending" in r.status else "unreadable"))
            href = "/t/" + urllib.parse.quote(r.name)
            out.append(
                f'<tr class=row data-status="{text(st)}"><td><a href="{text(href)}">{text(r.title)}</a></td><td class="st-{st}">{text(r.status)}</td>'
                f"<td>{text(r.started)}</td><td>{text(r.last)}</td><td class=num>{size_text(r.size)}</td><td><code>{text(r.name)}</code></td></tr>"
            )
        out.append(f"</tbody></table></main></div>\n<script>{assets().js}</script></body></html>\n")
        self._send(HTTPStatus.OK, "".join(out), policy=csp())

    def _transcript(self, name: str, query: dict[str, list[str]]) -> None:
        path = self.server.resolve(name)
        if path is None:
            self._error(HTTPStatus.NOT_FOUND, "no such transcript in this folder")
            return
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
            start = max(0, min(n, int(query.get("from", [""])[0])))
        except ValueError:
            start = max(0, n - TAIL_RECORDS)
        end = min(n, start + TAIL_RECORDS) if "from" in query else n
        quoted = urllib.parse.quote(name)

        def href(file: str, found: str | None) -> str:
            return f"/a/{quoted}?file={urllib.parse.quote(file)}"

        r = Renderer(reading, transcript_path=path, artifact_href=href)
        grants_at = [i for i in reading.indices_of_type("grants") if i < start]
        if grants_at:
            g = reading.payload(grants_at[-1])
            r.grants, r.grants_line = (g.get("grants") if isinstance(g, dict) else None), reading.line_number(grants_at[-1])
        t = reading.tail
        follow_from = t.keep
        next_line = (t.line or reading.lines + 1) if t.kind == "torn" else reading.lines + 1
        live = end == n and reading.refusal is None
        data = {"tail": "1"} if "from" not in query else {}
        if live:
            data["events"] = f"/e/{quoted}?offset={follow_from}&line={next_line}"
        title = os.path.basename(path)
        out = [head(title, csp(connect=True), body_data=data), "<div class=layout><main id=records>\n",
               '<nav class=pager><a href="/">all transcripts</a>' + (' · <span id=live class=live-badge>live</span>' if live else "") + "</nav>\n",
               summary_panel(reading, title)]
        if start > 0:
            out.append(f'<nav class=pager><a href="?from={max(0, start - TAIL_RECORDS)}">earlier records</a> (records {max(0, start - TAIL_RECORDS) + 1:,}–{start:,} of {n:,})</nav>\n')
        for i in range(start, end):
            out.append(r.fragment_at(i))
        if end < n:
            out.append(f'<nav class=pager><a href="?from={end}">later records</a></nav>\n')
        else:
            out.append(ended_banner(reading))
        out.append("<div id=live-end></div></main>\n")
        out.append(outline_nav(r.outline))
        out.append(f"</div>\n<script>{assets().js}</script>\n</body></html>\n")
        self._send(HTTPStatus.OK, "".join(out), policy=csp(connect=True))

    def _artifact(self, name: str, query: dict[str, list[str]]) -> None:
        path = self.server.resolve(name)
        file = query.get("file", [""])[0]
        if path is None or not file or file in (".", "..") or any(c in file for c in "/\\\x00"):
            self._error(HTTPStatus.NOT_FOUND, "no such artifact")
            return
        base = path[: -len(".jsonl")] if path.endswith(".jsonl") else os.path.splitext(path)[0]
        try:
            with open(os.path.join(base + ".artifacts", file), "rb") as f:
                data = f.read()
        except OSError:
            self._error(HTTPStatus.NOT_FOUND, "no such artifact")
            return
        self._send(HTTPStatus.OK, data, "text/plain; charset=utf-8")

    # -- live follow

    def _events(self, name: str, query: dict[str, list[str]]) -> None:
        path = self.server.resolve(name)
        if path is None:
            self._error(HTTPStatus.NOT_FOUND, "no such transcript in this folder")
            return
        try:
            pos = int(query.get("offset", ["0"])[0])
            line = int(query.get("line", ["1"])[0])
            last = self.headers.get("Last-Event-ID")
            if last:
                a, b = last.split(".", 1)
                pos, line = int(a), int(b)
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "offset and line are numbers")
            return
        self._headers(HTTPStatus.OK, "text/event-stream; charset=utf-8", None, "default-src 'none'")
        if self.command == "HEAD":
            return
        self.close_connection = True
        renderer = Renderer(None, transcript_path=path)
        f = open(path, "rb")
        try:
            ino = os.fstat(f.fileno()).st_ino
            held = b""
            beat = time.monotonic()
            self.wfile.write(b"retry: 1000\n\n")
            self.wfile.flush()
            while not self.server.stopping.is_set():
                try:
                    st = os.stat(path)
                except OSError:
                    st = None
                if st is not None and st.st_ino != ino:  # a repair swapped the file: follow it
                    f.close()
                    f = open(path, "rb")
                    ino = os.fstat(f.fileno()).st_ino
                    held = b""  # the held half line is read again from the new file
                size = os.fstat(f.fileno()).st_size
                if size < pos:  # cut below what was shown: the page must start again
                    self.wfile.write(b"event: reset\ndata: {}\n\n")
                    self.wfile.flush()
                    return
                if size < pos + len(held):  # the held half line went (a repair removed it)
                    held = b""
                if size > pos + len(held):
                    f.seek(pos + len(held))
                    held += f.read(min(size - pos - len(held), 8 << 20))
                    sent = False
                    while b"\n" in held:
                        raw, held = held.split(b"\n", 1)
                        pos += len(raw) + 1
                        if raw.strip():
                            self._send_line(renderer, raw, line, pos)
                            sent = True
                        line += 1
                    if sent:
                        self.wfile.flush()
                        beat = time.monotonic()
                if time.monotonic() - beat > HEARTBEAT:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    beat = time.monotonic()
                self.server.stopping.wait(POLL)
        finally:
            f.close()

    def _send_line(self, renderer: Renderer, raw: bytes, line: int, pos: int) -> None:
        env = _obj(raw)
        if env is None or not isinstance(env.get("id"), str) or not isinstance(env.get("type"), str):
            html = (f'<article class="rec k-unknown" data-line="{line}" data-type="damaged"><header><a class=ln id="L{line}">{line}</a>'
                    f'<span class=kind>not an envelope</span></header><div class=body><p class=refusal>line {line} is not a whole envelope</p></div></article>')
        else:
            v = env.get("v")
            e = Envelope(env["id"], env["type"], str(env.get("ts", "")), v if isinstance(v, int) else 0, env.get("payload"), line)
            html = renderer.fragment(e)
        data = json.dumps({"line": line, "html": html}, ensure_ascii=True)
        self.wfile.write(f"id: {pos}.{line}\nevent: rec\ndata: {data}\n\n".encode())
