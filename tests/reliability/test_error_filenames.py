"""An ``OSError`` the native writer raises names the transcript.

Real faults (a full tmpfs, the ``LD_PRELOAD`` shim failing a ``write``, an
or an ``fdatasync``) on every way a line is written:
``create``'s session-meta, ``append_message``, ``append_messages``, a record,
``fsync`` durability. The error keeps its errno, and its ``filename`` is the
path the session was opened with, as ``open()`` would give.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from rkit import fault_env, run_python, tmpfs


def test_a_full_disk_names_the_transcript() -> None:
    with tmpfs("256k") as fs:
        path = fs / "run.jsonl"
        with Session.create(path) as s:
            (fs / "filler").write_bytes(b"\0" * (os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize))
            attempts = [
                lambda: s.append_message(Message.user("x" * 20_000)),
                lambda: s.append_messages([Message.user("y" * 20_000)] * 3),
                lambda: s.append_grants({"all": "z" * 20_000}),
            ]
            for attempt in attempts:
                with pytest.raises(OSError) as e:
                    attempt()
                assert e.value.errno == errno.ENOSPC, e.value
                assert e.value.filename == str(path), e.value
                assert str(path) in str(e.value)
        (fs / "filler").unlink()


def test_create_on_a_full_disk_names_the_transcript() -> None:
    with tmpfs("256k") as fs:
        (fs / "filler").write_bytes(b"\0" * (os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize))
        path = fs / "new.jsonl"
        with pytest.raises(OSError) as e:
            Session.create(path, {"big": "m" * 50_000})
        assert e.value.errno == errno.ENOSPC and e.value.filename == str(path), e.value


CHILD = r"""
import json, sys
from agent_transcript import Message, Session
path, durability = sys.argv[1], sys.argv[2]
s = Session.create(path, durability=durability)
try:
    s.append_message(Message.user("the line that fails"))
except OSError as e:
    print(json.dumps({"errno": e.errno, "filename": e.filename}))
else:
    print(json.dumps(None))
"""


@pytest.mark.parametrize(("op", "durability"), [("write", "flush"), ("fdatasync", "fsync")])
def test_a_failing_disk_names_the_transcript(tmp_path: Path, op: str, durability: str) -> None:
    # The meta line is the first write (and fdatasync): the append's is the second.
    path = tmp_path / "run.jsonl"
    env = fault_env(op, "run.jsonl", nth=2, errno_=errno.EIO)
    out = run_python(CHILD, str(path), durability, env=env).stdout.strip().splitlines()[-1]
    assert json.loads(out) == {"errno": errno.EIO, "filename": str(path)}
