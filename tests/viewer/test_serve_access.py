"""``serve``: who may read what. Every request carries the server's token (in
the URL it prints, then a cookie); only transcripts and their artifacts are
served, whoever asks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_transcript import Message, Session

from .serving import connect, cookie_of, get, port_of, served, token_of

SECRET = "the-owner's-secret-7f3a"

# What a second local user runs: each request's status, Set-Cookie and body.
CLIENT = r"""
import http.client, json, sys
port, cookie = int(sys.argv[1]), sys.argv[2]
out = []
for path, with_cookie in json.loads(sys.argv[3]):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers = {"Host": "127.0.0.1:%d" % port}
    if with_cookie:
        headers["Cookie"] = cookie
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    # An event stream has no length and no end: its first bytes say enough.
    body = r.read() if r.getheader("Content-Length") is not None else r.read(16)
    out.append([r.status, r.getheader("Set-Cookie"), body.decode("utf-8", "replace")])
    c.close()
print(json.dumps(out))
"""


def _private_folder(root: Path) -> Path:
    """A folder as a user's home holds it: a transcript with an artifact, and what is
    not a transcript (a dot-file, an ssh key, a private JSONL, a transcript in a
    hidden folder, links to them under transcript names)."""
    runs = root / "home"
    runs.mkdir()
    with Session.create(runs / "run.jsonl") as s:
        s.append_message(Message.user("hello"))
        art = s.write_artifact("full output", excerpt="full")
        op = s.append_tool_dispatched("c1", "run", "{}")
        s.append_tool_settled(op, "completed", artifact=art)
    (runs / ".env").write_text(f"API_KEY={SECRET}\n")
    (runs / ".ssh").mkdir()
    (runs / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (runs / ".env.jsonl").write_text(f'{{"key":"{SECRET}"}}\n')
    (runs / "notes.txt").write_text(SECRET + "\n")
    (runs / "private.jsonl").write_text("".join(f'{{"n":{k},"key":"{SECRET}"}}\n' for k in range(300)))
    _compress(runs / "private.jsonl", runs / "private.jsonl.zst")
    (runs / ".hidden").mkdir()
    shutil.copy(runs / "run.jsonl", runs / ".hidden" / "run.jsonl")
    (runs / ".hidden" / "run.jsonl").write_bytes((runs / "run.jsonl").read_bytes().replace(b"hello", SECRET.encode()))
    (runs / "env.jsonl").symlink_to(runs / ".env")
    (runs / "key.jsonl").symlink_to(runs / ".ssh" / "id_ed25519")
    (runs / "run.artifacts" / ".env").write_text(SECRET)
    for p in [runs, *runs.rglob("*")]:
        if not p.is_symlink():
            os.chmod(p, 0o700 if p.is_dir() else 0o600)
    return runs


def _compress(src: Path, dest: Path) -> None:
    """``dest``: ``src`` compressed as an archive is (what is compressed is no transcript here)."""
    from agent_transcript import _core

    with open(src, "rb") as f, open(dest, "wb") as out:
        _core.zstd_compress(f.fileno(), os.fstat(f.fileno()).st_size, out.fileno(), _core.ZSTD_LEVEL)


#: Every way in to what is not a transcript; each is a 404 whoever asks.
NOT_TRANSCRIPTS = [
    "/t/.env", "/e/.env?offset=0", "/t/.ssh/id_ed25519", "/e/.ssh/id_ed25519?offset=0", "/e/.ssh%2Fid_ed25519?offset=0",
    "/e/.env.jsonl?offset=0", "/t/notes.txt", "/e/notes.txt?offset=0", "/t/private.jsonl", "/e/private.jsonl?offset=0",
    "/e/private.jsonl?offset=0&from=0&n=300", "/t/.hidden/run.jsonl", "/e/.hidden/run.jsonl?offset=0",
    "/t/env.jsonl", "/e/env.jsonl?offset=0", "/e/key.jsonl?offset=0", "/e/./.env?offset=0", "/e/x/..%2F.env?offset=0",
    "/e/%2E%2Fprivate.jsonl?offset=0", "/e/private.jsonl.zst?offset=0", "/a/run.jsonl?file=.env",
    "/a/.hidden/run.jsonl?file=.env",
]


AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _python_nobody_runs() -> str:
    """An interpreter ``nobody`` can start: the client needs only the standard
    library, and this one may live where another user cannot read (a shared
    libpython under ``/root``, a venv in a private temporary folder)."""
    for python in (sys.executable, "/usr/bin/python3", shutil.which("python3") or ""):
        if python and subprocess.run([*AS_NOBODY, python, "-I", "-c", "import http.client, json"],
                                     capture_output=True, timeout=60, cwd="/").returncode == 0:
            return python
    pytest.skip("no Python interpreter here that the user nobody can start")


def test_a_second_local_user_needs_the_token_and_never_reads_what_is_not_a_transcript(tmp_path: Path) -> None:
    """``nobody`` (another local user) reaches the server: without the token, a 403
    for every page; with it, the picker and the transcript, and then the cookie
    alone; a dot-file, an ssh key, a private JSONL, a link to one: 404, even with
    the token."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("switching to a second local user needs root and setpriv (util-linux)")
    python = _python_nobody_runs()
    runs = _private_folder(tmp_path)
    art = next((runs / "run.artifacts").glob("sha256-*")).name
    with served(runs) as url:
        token = token_of(url)
        assert token and len(token) >= 32 and token in url
        cookie = cookie_of(url)["Cookie"]
        asks = ([[p, False] for p in ("/", "/?token=", "/?token=" + "x" * len(token), "/?token=" + token[:-1],
                                      "/t/run.jsonl", "/e/run.jsonl?offset=0", f"/a/run.jsonl?file={art}",
                                      *NOT_TRANSCRIPTS)]
                + [["/?token=" + token, False], ["/t/run.jsonl", True], [f"/a/run.jsonl?file={art}", True],
                   ["/e/run.jsonl?offset=0", True], ["/t/private.jsonl.zst", True]]
                + [[p, True] for p in NOT_TRANSCRIPTS])
        run = subprocess.run([*AS_NOBODY, python, "-I", "-c", CLIENT, str(port_of(url)), cookie, json.dumps(asks)],
                             capture_output=True, text=True, timeout=120, cwd="/")
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout)
    assert all(SECRET not in body for _, _, body in got)
    n = 7 + len(NOT_TRANSCRIPTS)
    without = got[:n]
    assert [s for s, _, _ in without] == [403] * n, without
    assert all(c is None and "token" in b for _, c, b in without)
    (first, set_cookie, page), opened, artifact, stream, archive = got[n:n + 5]
    listed = re.findall(r"<code>([^<]*)</code></td></tr>", page)
    assert first == 200 and sorted(listed) == ["private.jsonl", "private.jsonl.zst", "run.jsonl"]
    assert set_cookie is not None
    assert set_cookie.split(";")[0] == cookie and {p.strip() for p in set_cookie.split(";")[1:]} == {"HttpOnly", "SameSite=Strict", "Path=/"}
    assert opened[0] == 200 and "hello" in opened[2]
    assert artifact[:1] == [200] and artifact[2] == "full output"
    assert stream[0] == 200 and stream[2].startswith("retry: 1000")
    assert archive[0] == 422 and "not a transcript" in archive[2]  # read whole to tell; none of it shown
    refused = got[n + 5:]
    assert [s for s, _, _ in refused] == [404] * len(NOT_TRANSCRIPTS), list(zip(NOT_TRANSCRIPTS, refused))


def test_no_token_is_asked_with_no_token(tmp_path: Path) -> None:
    """``--no-token``: the URL has none and every page opens without one; ``--help``
    says what it costs."""
    runs = _private_folder(tmp_path)
    with served(runs, "--no-token") as url:
        assert token_of(url) is None and url == f"http://127.0.0.1:{port_of(url)}/"
        assert get(url, "/", token=False)[0] == 200
        assert get(url, "/t/run.jsonl", token=False)[0] == 200
        assert get(url, "/e/.env?offset=0", token=False)[0] == 404
    shown = subprocess.run([sys.executable, "-m", "agent_transcript", "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--no-token" in shown.stdout and "token" in shown.stdout.split("--no-token", 1)[1]


def test_each_server_has_its_own_token_and_the_page_never_carries_it(tmp_path: Path) -> None:
    """Two servers: two tokens, two cookies (a browser keeps cookies per host, not
    per port), neither taken by the other; no page or link carries the token."""
    runs = _private_folder(tmp_path)
    with served(runs) as one, served(runs) as two:
        assert token_of(one) != token_of(two)
        assert get(one, "/")[0] == 200 and get(two, "/")[0] == 200
        c, r = connect(two, "/", host=None, token=False)
        c.close()
        assert r.status == 403
        status, headers, body = get(one, "/t/run.jsonl")
        assert status == 200 and str(token_of(one)).encode() not in body
        assert str(token_of(one)).encode() not in get(one, "/")[2]
