"""Scenario 6: hostile files around a transcript.

* An artifact whose ``file`` (read from a transcript someone else wrote) is a
  path — ``../../etc/passwd``, absolute, with a NUL, a backslash, empty, not a
  string — is refused with ``ValueError`` before the filesystem is touched
  (checked with an audit hook, in a child process). An artifact file replaced by
  a symlink is not followed (``OSError``, ``ELOOP``); a changed one fails its
  digest (``ValueError``); a missing one reads as None.
* A planted ``<path>.repair`` — a symlink to a victim, a dangling symlink, a
  hard link to a victim, or a symlink planted in the instant between the
  leftover's removal and the repair's exclusive create — is never followed or
  written through: the victim is unchanged.
* A transcript path that is a symlink (``latest.jsonl -> runs/…jsonl``) names the
  file it points to: load, repair and append all act on that file, and the
  link stays a link.
* Files are created ``0600`` and folders ``0700`` whatever the umask.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from rkit import fault_env, figure, run_python

HOSTILE_NAMES: list[object] = [
    "../../etc/passwd", "/etc/passwd", "..", ".", "", "a/b", "a\0b", "\0", "..\\..\\boot.ini",
    "x/../../etc/shadow", "sha256-00..", 12, None, ["a"], {"f": 1},
]


def transcript_with_artifacts(path: Path) -> None:
    with Session.create(path) as s:
        for i, name in enumerate(HOSTILE_NAMES):
            op = s.append_tool_dispatched(f"call{i}", "read", {})
            s.append_tool_settled(op, "completed", artifact={"file": name, "digest": "sha256:00"})


AUDIT_CHILD = r"""
import json, sys
from agent_transcript import Session
path = sys.argv[1]
s = Session.load(path)
artifacts = [e.payload["artifact"] for e in s.events if e.type == "tool-settled"]
seen = []
def hook(event, args):
    if event == "open" or event.startswith(("os.", "shutil.", "pathlib.")):
        seen.append([event, repr(args)[:200]])
sys.addaudithook(hook)
out = []
for a in artifacts:
    for call in (s.read_artifact, lambda a: s.artifact_path(a["file"])):
        try:
            call(a)
            out.append([repr(a["file"]), "accepted"])
        except ValueError:
            out.append([repr(a["file"]), "ValueError"])
        except Exception as e:
            out.append([repr(a["file"]), type(e).__name__])
print(json.dumps({"results": out, "touched": seen}))
"""


def test_hostile_artifact_names_are_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    transcript_with_artifacts(path)
    out = json.loads(run_python(AUDIT_CHILD, str(path)).stdout)
    assert len(out["results"]) == 2 * len(HOSTILE_NAMES)
    assert {r[1] for r in out["results"]} == {"ValueError"}, out["results"]
    assert out["touched"] == []
    # Peek reads the same transcript without complaint.
    assert Session.peek(path).error is None
    figure("6. hostile artifact names", names=len(HOSTILE_NAMES), refused=len(HOSTILE_NAMES),
           filesystem_calls=0)


def test_artifact_files_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    victim = tmp_path / "secret"
    victim.write_bytes(b"secret")
    with Session.create(path) as s:
        art = s.write_artifact("the full result ✓" * 100, excerpt="the full")
        assert s.read_artifact(art) == ("the full result ✓" * 100).encode()
        file = s.artifact_path(art["file"])
        file.write_bytes(b"tampered")
        with pytest.raises(ValueError):
            s.read_artifact(art)
        file.unlink()
        assert s.read_artifact(art) is None
        file.symlink_to(victim)
        with pytest.raises(ValueError, match="symbolic link"):  # refused, never followed
            s.read_artifact(art)
    assert victim.read_bytes() == b"secret"


def torn(path: Path) -> tuple[bytes, bytes]:
    with Session.create(path, {"x": 1}) as s:
        for i in range(3):
            s.append_message(Message.user(f"m{i}"))
    good = path.read_bytes()
    path.write_bytes(good + b'{"id":"torn')
    return good, path.read_bytes()


@pytest.mark.parametrize("plant", ["symlink", "dangling symlink", "hard link"])
def test_a_planted_repair_file_is_not_followed(tmp_path: Path, plant: str) -> None:
    path = tmp_path / "run.jsonl"
    good, _ = torn(path)
    victim = tmp_path / "victim"
    repair = tmp_path / "run.jsonl.repair"
    if plant == "symlink":
        victim.write_bytes(b"victim")
        repair.symlink_to(victim)
    elif plant == "dangling symlink":
        repair.symlink_to(victim)
    else:
        victim.write_bytes(b"victim")
        os.link(victim, repair)
    with Session.load(path) as s:
        assert len(s.events) == 4 and len(s.warnings) == 1
    assert path.read_bytes() == good and not path.is_symlink()
    assert not repair.exists() and not repair.is_symlink()
    if plant == "dangling symlink":
        assert not victim.exists()
    else:
        assert victim.read_bytes() == b"victim"


RACE_CHILD = r"""
import sys
from agent_transcript import Session
try:
    Session.load(sys.argv[1])
    print("loaded")
except FileExistsError:
    print("FileExistsError")
"""


def test_a_symlink_planted_during_the_repair_is_not_followed(tmp_path: Path) -> None:
    # The shim plants the link in the instant before the repair's exclusive create.
    path = tmp_path / "run.jsonl"
    good, original = torn(path)
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim")
    log = tmp_path / "faults.log"
    env = fault_env("symlink-on-open", ".repair", target=str(victim), log=log)
    out = run_python(RACE_CHILD, str(path), env=env).stdout.split()
    assert log.exists(), "the link was never planted"
    assert out == ["FileExistsError"]
    assert victim.read_bytes() == b"victim"
    assert path.read_bytes() == original
    with Session.load(path) as s:  # the leftover is removed, the repair done
        assert len(s.events) == 4
    assert path.read_bytes() == good and victim.read_bytes() == b"victim"


def test_a_repair_path_that_is_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _, original = torn(path)
    (tmp_path / "run.jsonl.repair").mkdir()
    with pytest.raises(OSError):
        Session.load(path)
    assert path.read_bytes() == original
    assert Session.peek(path).error is None


def test_a_transcript_path_that_is_a_symlink(tmp_path: Path) -> None:
    """The link names its target: load, repair and append act on the target,
    and the link stays a link."""
    runs = tmp_path / "runs"
    target = runs / "2026-08-09.jsonl"
    link = tmp_path / "latest.jsonl"
    good, _ = torn(target)
    link.symlink_to(target)
    with Session.load(link) as s:
        assert len(s.warnings) == 1
        new = s.append_message(Message.user("through the link"))
        # The lock is the target's: opening either name is refused.
        with pytest.raises(Exception) as locked:
            Session.load(target)
        assert type(locked.value).__name__ == "SessionLocked"
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes().startswith(good)
    assert sorted(p.name for p in runs.iterdir()) == ["2026-08-09.jsonl"]
    with Session.load(target) as s:
        assert s.message_ids[-1] == new and s.warnings == []


@pytest.fixture(params=[0o000, 0o022, 0o077])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_modes_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    path = tmp_path / "a" / "b" / "run.jsonl"
    with Session.create(path) as s:
        art = s.write_artifact(b"\x00full bytes", excerpt="")
        s.append_message(Message.user("x"))
    assert mode(path) == 0o600
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700
    folder = path.with_name("run.artifacts")
    assert mode(folder) == 0o700 and mode(folder / art["file"]) == 0o600
    # A repair keeps the original's mode: 0600 here, and a user's 0644 stays 0644.
    for wanted in (0o600, 0o644):
        os.chmod(path, wanted)
        path.write_bytes(path.read_bytes() + b'{"torn')
        with Session.load(path) as s:
            assert len(s.warnings) == 1
        assert mode(path) == wanted
    # Session.open creating a new file, and an empty file taken as new.
    other = tmp_path / "c" / "new.jsonl"
    Session.open(other).close()
    assert mode(other) == 0o600 and mode(other.parent) == 0o700
