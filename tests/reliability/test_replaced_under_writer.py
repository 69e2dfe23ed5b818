"""Scenario 10: the transcript is renamed, deleted or replaced while a session has it open.

SPEC is silent; the behaviour users need follows from the promise "nothing a
method returned is ever lost":

* **Renamed** (``mv run.jsonl old.jsonl``): the session writes to the file, not
  the name, so appends go on into ``old.jsonl``, nothing is lost, and the lock
  goes with the file (loading ``old.jsonl`` meanwhile is ``SessionLocked``).
  This is what happens today.
* **Deleted**, or **replaced** (another file renamed over the path): the session's
  file has no name any more, so anything appended to it is gone when the session
  closes. The next append raises ``SessionBroken`` instead of returning an id
  for a line no one will ever read, and every append after it too:
  each append asks ``statx`` for the link count and the length after its
  ``write(2)``.
* Either way the reading side keeps working: ``messages``/``events`` read
  through the session's own descriptor, and ``close()`` is clean.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent_transcript import Message, Session, SessionBroken, SessionClosed, SessionLocked
from rkit import figure


def started(path: Path) -> tuple[Session, list[str]]:
    s = Session.create(path, {"x": 1})
    return s, [s.append_message(Message.user(f"before {i}")) for i in range(3)]


def test_renamed_while_open(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    moved = tmp_path / "old.jsonl"
    s, ids = started(path)
    os.rename(path, moved)
    ids.append(s.append_message(Message.user("after the rename")))
    with pytest.raises(SessionLocked):
        Session.load(moved)
    assert [m.content for m in s.messages][-1] == "after the rename"
    s.close()
    # A closed session holds no descriptor: a read opens its path again, which
    # now names no file; it says so rather than read another.
    with pytest.raises(SessionClosed, match="moved, replaced or deleted"):
        s.message_ids
    assert not path.exists()
    # close() let go of the lock although the path no longer names the file.
    with Session.load(moved) as again:
        assert again.message_ids == ids
    figure("10. renamed under a writer", appends_after_rename=1, lost=0)


def test_deleted_while_open(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    s, ids = started(path)
    os.unlink(path)
    with pytest.raises(SessionBroken):
        s.append_message(Message.user("into the void"))
    with pytest.raises(SessionBroken):
        s.append_message(Message.user("still refused"))
    assert s.message_ids == ids  # reading still works, through the open file
    s.close()


def test_replaced_while_open(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    s, ids = started(path)
    other = tmp_path / "other.jsonl"
    Session.create(other, {"replacement": True}).close()
    os.rename(other, path)
    with pytest.raises(SessionBroken):
        s.append_message(Message.user("into the replaced file"))
    # The replacement is a different file, unlocked: it can be opened and appended to.
    with Session.load(path) as new:
        assert new.meta == {"replacement": True}
    s.close()



@pytest.mark.parametrize("keep", [0, 40], ids=["to-zero", "part-way"])
def test_truncated_in_place_while_open(tmp_path: Path, keep: int) -> None:
    # logrotate's copytruncate, by another process: copy the file, then cut it in
    # place. The session's descriptor still names the file, so appends would go
    # on into a file load refuses (no session-meta, or a line cut in half).
    path = tmp_path / "run.jsonl"
    rotated = tmp_path / "run.jsonl.1"
    s, ids = started(path)
    subprocess.run(["sh", "-c", f'cp "$1" "$2" && truncate -s {keep} "$1"', "sh", path, rotated],
                   check=True)
    with pytest.raises(SessionBroken, match="truncated"):
        s.append_message(Message.user("into the truncated file"))
    with pytest.raises(SessionBroken):
        s.append_message(Message.user("still refused"))
    s.close()
    with Session.load(rotated) as copy:  # every acknowledged line is in the copy
        assert copy.message_ids == ids
    figure("10. truncated in place under a writer", keep=keep, acknowledged_after=0)


def test_written_to_by_another_program_while_open(tmp_path: Path) -> None:
    # Someone appends without the lock (a shell's >>): the session's index no
    # longer says where its lines are, so it stops rather than guess.
    path = tmp_path / "run.jsonl"
    s, ids = started(path)
    subprocess.run(["sh", "-c", 'printf "%s\\n" "{}" >> "$1"', "sh", path], check=True)
    with pytest.raises(SessionBroken, match="another program"):
        s.append_message(Message.user("after the foreign line"))
    assert s.message_ids == ids
    s.close()
