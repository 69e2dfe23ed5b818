"""``serve``'s picker: any name the folder holds, any folder (``/`` too), in
the order it says."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Iterator

import pytest

from agent_transcript import Message, Session, canonical_json
from agent_transcript.viewer import make_server

from .serving import connect, get, served


def _odd_names(folder: Path) -> Path:
    odd = folder / os.fsdecode(b"odd-\xff\xfe.jsonl")
    with Session.create(odd) as s:
        s.append_message(Message.user("the odd one"))
    with Session.create(folder / "lone.jsonl") as s:
        s.append_message(Message.user("a lone \ud800 surrogate"))
    with Session.create(folder / "plain.jsonl") as s:
        s.append_message(Message.user("plain"))
    return odd


def test_the_picker_lists_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """A file name that is not UTF-8, and a title with a lone surrogate: the picker
    answered nothing (UnicodeEncodeError, the connection closed). Now it lists every
    one, the odd name escaped, and its link opens it."""
    _odd_names(tmp_path)
    with served(tmp_path) as url:
        status, _, body = get(url, "/")
        assert status == 200
        page = body.decode("utf-8")  # strict: the page is UTF-8
        assert page.count("<tr class=row") == 3
        assert "<code>odd-\\xff\\xfe.jsonl</code>" in page and "a lone \\ud800 surrogate" in page
        href = re.search(r'href="(/t/odd-[^"]*)"', page)
        assert href and href.group(1) == "/t/odd-%FF%FE.jsonl"
        status, _, body = get(url, href.group(1))
        assert status == 200 and b"the odd one" in body
        events = body.split(b'data-events="', 1)[1].split(b'"', 1)[0].decode().replace("&amp;", "&")
        c, r = connect(url, events)
        assert r.status == 200 and r.readline() == b"retry: 1000\n"
        c.close()


@pytest.fixture
def root_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A viewer of ``/`` whose listing is limited to ``tmp_path`` (the listing of the
    whole disk is fleet's; the names it maps to links are the server's)."""
    from agent_transcript import fleet

    whole = fleet.list_transcripts
    monkeypatch.setattr(fleet, "list_transcripts", lambda root: whole(tmp_path) if root == "/" else whole(root))
    server = make_server("/", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_serve_of_the_root_folder_opens_what_it_lists(tmp_path: Path, root_server: str) -> None:
    """``serve /``: every transcript listed was a 404 (the names were made with a
    second ``/`` in front). Each link of the picker opens its transcript."""
    (tmp_path / "sub").mkdir()
    for where in (tmp_path / "a.jsonl", tmp_path / "sub" / "b.jsonl"):
        with Session.create(where) as s:
            s.append_message(Message.user(f"in {where.name}"))
    status, _, body = get(root_server, "/")
    assert status == 200
    hrefs = re.findall(r'href="(/t/[^"]*)"', body.decode())
    assert sorted(hrefs) == sorted("/t" + str(p) for p in (tmp_path / "a.jsonl", tmp_path / "sub" / "b.jsonl"))
    for href in hrefs:
        status, _, page = get(root_server, href)
        assert status == 200 and b"in " + href.rsplit("/", 1)[1].encode() in page, href


def test_the_picker_is_newest_activity_first_by_the_last_line(tmp_path: Path) -> None:
    """The picker says newest activity first: the order of the last envelopes'
    times, whatever the files' modification times say."""
    def run(name: str, last_ts: str, mtime: int) -> None:
        path = tmp_path / name
        with Session.create(path) as s:
            s.append_message(Message.user(name))
        env = {"id": name.replace(".", "-"), "payload": {"role": "assistant", "content": "ok"}, "ts": last_ts, "type": "message", "v": 1}
        with open(path, "ab") as f:
            f.write(canonical_json(env).encode() + b"\n")
        os.utime(path, (mtime, mtime))

    run("oldest.jsonl", "2026-01-01T00:00:00.000000Z", 1_900_000_000)
    run("newest.jsonl", "2026-03-01T00:00:00.000000Z", 1_700_000_000)
    run("middle.jsonl", "2026-02-01T00:00:00.000000Z", 1_800_000_000)
    (tmp_path / "no-ts.jsonl").write_text("not a transcript\n")
    os.utime(tmp_path / "no-ts.jsonl", (1_770_000_000, 1_770_000_000))  # 2026-02-02: between newest and middle
    with served(tmp_path) as url:
        page = get(url, "/")[2].decode()
    assert re.findall(r"<code>([^<]*)</code></td></tr>", page) == ["newest.jsonl", "no-ts.jsonl", "middle.jsonl", "oldest.jsonl"]


def test_a_pending_run_is_listed_and_opens(tmp_path: Path) -> None:
    """A run that stopped mid-call is "pending", as ls says, and opens like any
    transcript, its unanswered call named."""
    with Session.create(tmp_path / "stopped.jsonl") as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.assistant(None, [
            {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]))
    with served(tmp_path) as url:
        status, _, body = get(url, "/")
        assert status == 200 and 'data-status="pending"' in body.decode()
        href = re.search(r'href="(/t/[^"]*stopped[^"]*)"', body.decode())
        assert href is not None
        status, _, page = get(url, href.group(1))
        assert status == 200 and b"go" in page


def test_the_picker_counts_tokens_newest_first_within_its_budget_and_a_reload_counts_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting a run's tokens reads its whole file: a picker page reads at most
    PICKER_TOKEN_BYTES of files not counted yet (the newest first), shows the rest as
    not counted, and the next page counts on from there."""
    from agent_transcript.viewer import picker

    sizes = {}
    for k in range(4):
        path = tmp_path / f"run{k}.jsonl"
        with Session.create(path) as s:
            s.append_message(Message.user(f"run {k}"))
            s.append_message(Message.assistant("ok"), {"usage": {"input_tokens": 100 + k, "output_tokens": 1}})
        os.utime(path, (1_700_000_000 + k, 1_700_000_000 + k))
        sizes[k] = path.stat().st_size
    monkeypatch.setattr(picker, "PICKER_TOKEN_BYTES", sizes[3] + 1)  # two files: the budget is left after one
    server = make_server(str(tmp_path), 0, token=False)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        def cells() -> list[str]:
            page = get(server.url, "/")[2].decode()
            return re.findall(r"<td class=num(?: title=\"[^\"]*\")?>([^<]*)</td><td><code>", page)
        assert cells() == ["103 in · 1 out", "102 in · 1 out", "…", "…"]  # newest first
        assert cells() == ["103 in · 1 out", "102 in · 1 out", "101 in · 1 out", "100 in · 1 out"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
