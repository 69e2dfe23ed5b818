"""``serve``'s picker: any folder (``/`` too)."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Iterator

import pytest

from agent_transcript import Message, Session
from agent_transcript.viewer import make_server

from .serving import get


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
