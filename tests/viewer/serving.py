"""``agent-transcript serve`` in a child process, and requests to it, for the tests."""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Iterator
from contextlib import contextmanager


@contextmanager
def served(folder: Path, *options: str) -> Iterator[str]:
    """The URL ``serve FOLDER --port 0`` prints (with its ``?token=``), stopped on exit."""
    child = subprocess.Popen([sys.executable, "-m", "agent_transcript", "serve", str(folder), "--port", "0", *options],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        m = re.search(r" at (http://127\.0\.0\.1:\d+/\S*) ", first)
        assert m, (first, child.stderr.read() if child.poll() is not None and child.stderr else "")
        yield m.group(1)
    finally:
        child.terminate()
        child.wait(timeout=10)
        for stream in (child.stdout, child.stderr):
            if stream:
                stream.close()


def port_of(url: str) -> int:
    """The port of a URL ``serve`` printed."""
    port = urllib.parse.urlsplit(url).port
    assert port is not None, url
    return port


def token_of(url: str) -> str | None:
    """The token in a URL ``serve`` printed (None: it printed none)."""
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("token", [None])[0]


def cookie_of(url: str) -> dict[str, str]:
    """The Cookie header a browser sends after its first visit to ``url`` (none without a token)."""
    token = token_of(url)
    return {"Cookie": f"agent-transcript-{port_of(url)}={token}"} if token else {}


def connect(url: str, path: str, *, method: str = "GET", host: str | None = None,
            token: bool = True, headers: dict[str, str] | None = None,
            ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """A request for ``path`` to the server at ``url``, its Host ``host`` (the server's
    own by default), with the token's cookie (``token``) and ``headers``; the caller
    closes the connection."""
    port = port_of(url)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.putrequest(method, path, skip_host=True)
    c.putheader("Host", host or f"127.0.0.1:{port}")
    for key, value in {**(cookie_of(url) if token else {}), **(headers or {})}.items():
        c.putheader(key, value)
    c.endheaders()
    return c, c.getresponse()


def get(url: str, path: str, *, method: str = "GET", host: str | None = None,
        token: bool = True) -> tuple[int, dict[str, str], bytes]:
    """``(status, headers, body)`` of :func:`connect`'s request."""
    c, r = connect(url, path, method=method, host=host, token=token)
    try:
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def append_line(path: Path, data: bytes) -> None:
    """Append ``data`` from another process, as a writer would."""
    subprocess.run([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'ab'); f.write(sys.stdin.buffer.read()); f.close()", str(path)],
                   input=data, check=True, timeout=30)
