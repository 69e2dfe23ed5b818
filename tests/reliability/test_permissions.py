"""Scenario 5: permissions, checked for real.

Root ignores permission bits, so each check runs in a child process that drops
to ``nobody`` (``setgroups([])``, ``setgid``, ``setuid``) after importing the
package, on files chowned to it. A transcript with a torn tail that cannot be
repaired — the file is read-only, or its directory is — makes ``load`` raise
``PermissionError`` and change nothing (not a byte of the file, not a name in
the folder); ``peek`` still reads it. ``load`` always needs write permission
(it opens for appending), so a clean read-only transcript is refused too:
``peek`` is the reader for files one may not write.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from rkit import figure, run_python

NOBODY = pwd.getpwnam("nobody")

CHILD = r"""
import json, os, sys
import agent_transcript.peek, agent_transcript.follow  # imported while still root
from agent_transcript import Session, Message
os.setgroups([])
os.setgid(%(gid)d)
os.setuid(%(uid)d)
assert os.geteuid() == %(uid)d
try:
    open("/etc/shadow", "rb")
    sys.exit("still privileged")
except PermissionError:
    pass
path, what = sys.argv[1], sys.argv[2]
out = {}
try:
    if what == "load":
        with Session.load(path) as s:
            out["load"] = ["ok", s.warnings]
    else:
        with Session.create(path) as s:
            out["create"] = "ok"
except Exception as e:
    out[what] = [type(e).__name__, getattr(e, "errno", None)]
p = Session.peek(path)
out["peek"] = {"error": p.error, "envelopes": len(p.envelopes), "messages": len(p.messages),
               "warnings": p.warnings}
print(json.dumps(out))
""" % {"uid": NOBODY.pw_uid, "gid": NOBODY.pw_gid}


@pytest.fixture
def home() -> Iterator[Path]:
    """A folder ``nobody`` owns, outside pytest's root-only temporary tree."""
    base = Path(tempfile.mkdtemp(prefix="at-perm-"))
    os.chown(base, NOBODY.pw_uid, NOBODY.pw_gid)
    try:
        yield base
    finally:
        for p in [base, *base.rglob("*")]:
            if not p.is_symlink():
                os.chmod(p, 0o700)
        shutil.rmtree(base)


def torn(folder: Path, *, file_mode: int, dir_mode: int, owner: int = NOBODY.pw_uid,
         tail: bytes = b'{"id":"t","pay') -> tuple[Path, bytes]:
    folder.mkdir()
    path = folder / "run.jsonl"
    with Session.create(path, {"perm": True}) as s:
        for i in range(5):
            s.append_message(Message.user(f"m{i} ✓"))
    path.write_bytes(path.read_bytes() + tail)
    for p in (folder, path):
        os.chown(p, owner, NOBODY.pw_gid)
    os.chmod(path, file_mode)
    os.chmod(folder, dir_mode)
    return path, path.read_bytes()


def run(path: Path, what: str = "load") -> dict:
    return json.loads(run_python(CHILD, str(path), what).stdout)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: (p.read_bytes() if p.is_file() and not p.is_symlink() else b"<other>")
            for p in folder.iterdir()}


CASES = [
    # (name, file mode, directory mode, torn tail, planted leftover .repair)
    ("read-only transcript, torn tail", 0o400, 0o700, True, False),
    ("read-only directory, torn tail", 0o600, 0o500, True, False),
    ("read-only directory, leftover .repair", 0o600, 0o500, False, True),
    ("read-only transcript, clean", 0o400, 0o700, False, False),
]


@pytest.mark.parametrize(("name", "file_mode", "dir_mode", "is_torn", "leftover"), CASES,
                         ids=[c[0] for c in CASES])
def test_load_refuses_and_changes_nothing(home: Path, name: str, file_mode: int, dir_mode: int,
                                          is_torn: bool, leftover: bool) -> None:
    folder = home / "d"
    path, before = torn(folder, file_mode=file_mode, dir_mode=0o700,
                        tail=b'{"id":"t","pay' if is_torn else b"")
    if leftover:
        (folder / "run.jsonl.repair").write_bytes(b"left by a crash")
    os.chmod(folder, dir_mode)
    names = snapshot(folder)
    out = run(path)
    assert out["load"] == ["PermissionError", 13], out
    assert snapshot(folder) == names and path.read_bytes() == before
    assert out["peek"]["error"] is None
    assert out["peek"]["envelopes"] == 6 and out["peek"]["messages"] == 5
    assert len(out["peek"]["warnings"]) == (1 if is_torn else 0)
    figure(f"5. permissions: {name}", load="PermissionError", changed=0, peek="ok")


def test_someone_elses_transcript(home: Path) -> None:
    path, before = torn(home / "d", file_mode=0o600, dir_mode=0o755, owner=0)
    out = run(path)
    assert out["load"] == ["PermissionError", 13]
    assert path.read_bytes() == before
    # Nothing to read: peek says so instead of raising.
    assert out["peek"]["error"] and "Permission denied" in out["peek"]["error"]
    assert out["peek"]["envelopes"] == 0


def test_create_in_a_read_only_directory(home: Path) -> None:
    folder = home / "ro"
    folder.mkdir(mode=0o500)
    os.chown(folder, NOBODY.pw_uid, NOBODY.pw_gid)
    out = run(folder / "new.jsonl", "create")
    assert out["create"] == ["PermissionError", 13]
    assert list(folder.iterdir()) == []
    out = run(folder / "sub" / "new.jsonl", "create")
    assert out["create"] == ["PermissionError", 13]
    assert list(folder.iterdir()) == []
