"""The macOS (and Windows) branches of ``_platform``, run on Linux by simulating
what those systems lack: ``os.copy_file_range``, ``/proc``, ``fdatasync`` (so
``F_FULLFSYNC``), and ``fcntl`` itself."""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session, SessionClosed, _platform

#: macOS's value; any number fcntl would not otherwise see will do, since the
#: simulated fcntl answers it without passing it to the kernel.
F_FULLFSYNC = 51


def torn(path: Path) -> bytes:
    """A transcript of three messages whose last line was torn by a crash;
    returns the good prefix a repair keeps."""
    with Session.create(path, {"agent": "t"}) as s:
        for text in ("one", "two", "three"):
            s.append_message(Message.user(text))
    data = path.read_bytes()
    path.write_bytes(data[:-7])
    return data[: data.rindex(b"\n", 0, len(data) - 1) + 1]


def no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behave as on macOS: no /proc to reopen a descriptor through."""
    monkeypatch.setattr(_platform, "PROC_SELF_FD", None)
    real_open = os.open

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(errno.ENOENT, "no /proc here", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


# -- copy_file_range ----------------------------------------------------------------


def test_repair_without_copy_file_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    prefix = torn(path)
    monkeypatch.delattr(os, "copy_file_range", raising=False)
    with Session.load(path) as s:
        assert len(s.warnings) == 1 and "torn" in s.warnings[0]
        assert [m.content for m in s.messages] == ["one", "two"]
        assert path.read_bytes() == prefix
        s.append_message(Message.user("after"))
    with Session.load(path) as s:
        assert [m.content for m in s.messages] == ["one", "two", "after"]
        assert s.warnings == []


def test_copy_file_range_missing_is_enosys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "copy_file_range", raising=False)
    with open(tmp_path / "a", "wb+") as a, open(tmp_path / "b", "wb+") as b:
        with pytest.raises(OSError) as e:
            _platform.copy_file_range(a.fileno(), b.fileno(), 1, 0, 0)
    assert e.value.errno == errno.ENOSYS


# -- close() and reads after it, with and without /proc ----------------------------------------------------------


@pytest.mark.parametrize("proc", ["missing", "refused", "present"])
def test_reading_after_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proc: str) -> None:
    if proc == "missing":
        no_proc(monkeypatch)
    elif proc == "refused":  # /proc is there but opening through it fails
        monkeypatch.setattr(_platform, "PROC_SELF_FD", str(tmp_path / "no-such-folder"))
    path = tmp_path / "t.jsonl"
    s = Session.create(path, {"agent": "t"})
    s.append_message(Message.user("one"))
    s.append_message(Message.assistant("two"))
    s.close()
    s.close()
    assert [m.content for m in s.messages] == ["one", "two"]
    assert s.meta == {"agent": "t"}
    # The lock is gone with close(): another session takes it at once.
    with Session.load(path) as t:
        t.append_message(Message.user("three"))
    assert [m.content for m in s.messages] == ["one", "two"]  # what it wrote, read again by its path
    # It keeps no descriptor: once the path names no file, or another, it says so.
    os.rename(path, tmp_path / "moved.jsonl")
    with pytest.raises(SessionClosed, match="moved, replaced or deleted"):
        s.messages
    path.write_bytes(b"")
    with pytest.raises(SessionClosed, match="moved, replaced or deleted"):
        s.messages
    with pytest.raises(SessionClosed, match="closed"):
        s.append_message(Message.user("refused"))


# -- F_FULLFSYNC where there is no fdatasync -------------------------------------------


def simulated_full_fsync(monkeypatch: pytest.MonkeyPatch,
                         answer: Callable[[int], None]) -> tuple[list[int], list[int]]:
    """Give fcntl an F_FULLFSYNC that ``answer``s; returns the descriptors it and
    ``os.fsync`` were called with."""
    full: list[int] = []
    plain: list[int] = []
    real_fcntl, real_fsync = fcntl.fcntl, os.fsync

    def fcntl_(fd: int, cmd: int, *args: Any) -> Any:
        if cmd == F_FULLFSYNC:
            full.append(fd)
            return answer(fd)
        return real_fcntl(fd, cmd, *args)

    def fsync_(fd: int) -> None:
        plain.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(fcntl, "F_FULLFSYNC", F_FULLFSYNC, raising=False)
    monkeypatch.setattr(fcntl, "fcntl", fcntl_)
    monkeypatch.setattr(os, "fsync", fsync_)
    monkeypatch.delattr(os, "fdatasync", raising=False)
    return full, plain


def test_repair_uses_full_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    prefix = torn(path)
    full, plain = simulated_full_fsync(monkeypatch, lambda fd: None)
    with Session.load(path, durability="fsync") as s:
        assert [m.content for m in s.messages] == ["one", "two"]
    assert path.read_bytes() == prefix
    assert len(full) == 2  # the repaired file, then its folder
    assert plain == []


def test_full_fsync_refused_falls_back_to_fsync(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(fd: int) -> None:
        raise OSError(errno.ENOTSUP, "not on this filesystem")

    full, plain = simulated_full_fsync(monkeypatch, refuse)
    with open(tmp_path / "f", "wb") as f:
        _platform.sync(f.fileno())
        assert full == plain == [f.fileno()]


def test_full_fsync_failing_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(fd: int) -> None:
        raise OSError(errno.EIO, "the disk said no")

    full, plain = simulated_full_fsync(monkeypatch, fail)
    with open(tmp_path / "f", "wb") as f, pytest.raises(OSError) as e:
        _platform.sync(f.fileno())
    assert e.value.errno == errno.EIO and plain == []


def test_sync_is_fsync_on_linux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(fcntl, "F_FULLFSYNC"):
        pytest.skip("this platform has F_FULLFSYNC")
    calls: list[int] = []
    monkeypatch.setattr(os, "fsync", calls.append)
    with open(tmp_path / "f", "wb") as f:
        _platform.sync(f.fileno())
        assert calls == [f.fileno()]


# -- Windows ------------------------------------------------------------------------


def test_windows_import_says_why() -> None:
    code = "import sys; sys.platform = 'win32'\nimport agent_transcript"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: agent_transcript does not support Windows yet"), last
    assert "file locking" in last and "append" in last and "Linux and macOS" in last
