"""Paths that are not regular files: a FIFO, a pipe, a character device, a
directory; and a dangling symlink.

Every entry point refuses what is not a regular file at once, saying what it
is, and never blocks opening it (opening a FIFO to read waits for a writer):
``load``, ``create`` and ``open`` raise ``OSError`` (``IsADirectoryError`` for a
directory), ``peek`` reports it in ``error``, ``follow`` raises. ``create``
through a dangling symlink creates the file the link names, as ``open(2)``
with ``O_CREAT`` does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session


def at_once(call: Callable[[], Any]) -> Any:
    """``call()``'s result or exception; a call that blocks fails the test
    (after a minute: a guard against a hang, not a measure of speed)."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(("ok", call()))
        except BaseException as e:
            out.append(("raised", e))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        # Unblock it: a writer lets a blocked open of a FIFO go on.
        for p in FIFOS:
            try:
                os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        pytest.fail(f"{call} blocked")
    return out[0]


FIFOS: list[Path] = []


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    p = tmp_path / "run.jsonl"
    os.mkfifo(p)
    FIFOS.append(p)
    return p


def refused(outcome: Any, kind: str) -> OSError:
    how, e = outcome
    assert how == "raised", outcome
    assert isinstance(e, OSError) and not isinstance(e, IsADirectoryError), repr(e)
    assert f"not a regular file ({kind})" in str(e), str(e)
    return e


@pytest.mark.parametrize("opening", ["load", "open", "create"])
def test_a_fifo_is_refused_at_once_by_load_open_and_create(fifo: Path, opening: str) -> None:
    e = refused(at_once(lambda: getattr(Session, opening)(fifo)), "a FIFO")
    assert e.filename == str(fifo)


@pytest.mark.parametrize("opening", ["load", "open", "create"])
def test_a_character_device_is_refused_by_load_open_and_create(opening: str) -> None:
    refused(at_once(lambda: getattr(Session, opening)("/dev/null")), "a character device")


def test_a_directory_is_a_directory(tmp_path: Path) -> None:
    how, e = at_once(lambda: Session.load(tmp_path))
    assert how == "raised" and isinstance(e, IsADirectoryError), repr(e)


def test_peek_says_what_is_not_a_regular_file_without_blocking(fifo: Path, tmp_path: Path) -> None:
    how, p = at_once(lambda: Session.peek(fifo))
    assert how == "ok" and p.error == f"cannot read {fifo}: not a regular file (a FIFO)"
    assert (p.envelopes, p.messages, p.size) == ([], [], 0)
    how, p = at_once(lambda: Session.peek("/dev/null"))
    assert p.error == "cannot read /dev/null: not a regular file (a character device)"
    how, p = at_once(lambda: Session.peek(tmp_path))
    assert p.error == f"cannot read {tmp_path}: not a regular file (a directory)"


def test_peek_of_a_pipe_is_not_an_empty_file() -> None:
    r, w = os.pipe()
    try:
        os.write(w, b'{"id":"x"}\n')
        how, p = at_once(lambda: Session.peek(f"/proc/self/fd/{r}"))
        assert how == "ok" and p.error is not None and p.error.endswith("not a regular file (a FIFO)")
    finally:
        os.close(r)
        os.close(w)


def test_follow_refuses_a_fifo_without_blocking(fifo: Path) -> None:
    refused(at_once(lambda: next(iter(Session.follow(fifo, idle_timeout=0)))), "a FIFO")


def test_create_through_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "run.jsonl"
    link.symlink_to("real.jsonl")
    with Session.create(link, {"a": 1}) as s:
        s.append_message(Message.user("hi"))
    assert link.is_symlink() and (tmp_path / "real.jsonl").is_file()
    with Session.load(link) as again:
        assert again.meta == {"a": 1} and [m.content for m in again.messages] == ["hi"]
    # A link into a folder that does not exist yet: the folder is made, as for any path.
    deep = tmp_path / "deep.jsonl"
    deep.symlink_to(tmp_path / "new" / "run.jsonl")
    Session.create(deep).close()
    assert (tmp_path / "new" / "run.jsonl").is_file()
