"""Scenario 4: faults and crashes inside load's repair.

A transcript with a torn last line is loaded in a child process whose
``open`` of the ``.repair`` file, its ``copy_file_range`` (and the ``pwrite``
fallback), its ``fsync``, the ``rename`` over the original or the directory's
``fsync`` fails for real (the ``LD_PRELOAD`` shim), or in which the process is
SIGKILLed at that step. Then:

* a failure before the rename leaves the original untouched byte for byte, the
  load raises the ``OSError``, and a second load in the same process (the lock
  and the descriptors released) succeeds;
* a kill at any step leaves either the untouched original or the repaired file,
  never anything else, and the next load succeeds, with no ``.repair`` left.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from rkit import figure, fault_env, run_python

CHILD = r"""
import hashlib, json, sys
from agent_transcript import Session
path = sys.argv[1]
out = {}
try:
    with Session.load(path) as s:
        out["first"] = ["loaded", s.warnings]
except OSError as e:
    out["first"] = ["oserror", e.errno]
out["after_first"] = hashlib.sha256(open(path, "rb").read()).hexdigest()
with Session.load(path) as s:  # the fault fired once: this one must work
    out["second"] = [len(s.events), s.warnings]
print(json.dumps(out))
"""

FAILURES = [
    # (name, shim settings, whether the rename has happened when it fires)
    ("open .repair EIO", dict(op="open", match=".repair"), False),
    ("open .repair EACCES", dict(op="open", match=".repair", errno_=errno.EACCES), False),
    ("copy_file_range EIO", dict(op="copy_file_range", match=".repair"), False),
    ("copy_file_range ENOSPC", dict(op="copy_file_range", match=".repair", errno_=errno.ENOSPC),
     False),
    ("fallback pwrite EIO", dict(op="copy_file_range", match=".repair", errno_=errno.EXDEV,
                                 also="pwrite", also_errno=errno.EIO), False),
    ("fsync .repair EIO", dict(op="fsync", match=".repair"), False),
    ("rename EIO", dict(op="rename", match=".repair"), False),
    ("rename EXDEV", dict(op="rename", match=".repair", errno_=errno.EXDEV), False),
    ("fsync directory EIO", dict(op="fsync", match="/d"), True),
]

KILLS = [
    ("kill at open .repair", dict(op="open", match=".repair", action="kill")),
    ("kill at copy", dict(op="copy_file_range", match=".repair", action="kill")),
    ("kill after copy", dict(op="copy_file_range", match=".repair", action="kill-after")),
    ("kill at fsync .repair", dict(op="fsync", match=".repair", action="kill")),
    ("kill at rename", dict(op="rename", match=".repair", action="kill")),
    ("kill after rename", dict(op="rename", match=".repair", action="kill-after")),
    ("kill at fsync directory", dict(op="fsync", match="/d", action="kill")),
]


def torn_transcript(folder: Path) -> tuple[Path, bytes, bytes, int]:
    """A transcript in ``folder/d/`` with a torn last line; returns (path, original, good prefix, lines)."""
    d = folder / "d"
    path = d / "run.jsonl"
    with Session.create(path, {"m": "ü"}) as s:
        for i in range(20):
            s.append_message(Message.user(f"line {i} 日本語 🚀 " * (i * 40 + 1)))
    good = path.read_bytes()
    torn = good + '{"id":"x","payload":{"content":"🚀'.encode()[:-2]
    path.write_bytes(torn)
    return path, torn, good, 21


def sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(("name", "fault", "after_rename"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_failure_inside_the_repair(tmp_path: Path, name: str, fault: dict,
                                     after_rename: bool) -> None:
    path, torn, good, lines = torn_transcript(tmp_path)
    log = tmp_path / "faults.log"
    proc = run_python(CHILD, str(path), env=fault_env(log=log, **fault), check=False)
    assert proc.returncode == 0, proc.stderr
    assert log.exists(), "the fault never fired"
    out = json.loads(proc.stdout)
    assert out["first"][0] == "oserror", out
    assert out["first"][1] == (fault.get("also_errno") or fault.get("errno_", errno.EIO)), out
    if after_rename:
        assert out["after_first"] in (sha(torn), sha(good))
    else:
        assert out["after_first"] == sha(torn), "the original was changed"
    # The second load, in the same process: no lock or descriptor was left behind.
    assert out["second"][0] == lines
    assert path.read_bytes() == good
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.jsonl"]
    figure(f"4. repair fault: {name}", original_untouched=not after_rename, next_load="ok")


@pytest.mark.parametrize(("name", "fault"), KILLS, ids=[k[0] for k in KILLS])
def test_a_crash_inside_the_repair(tmp_path: Path, name: str, fault: dict) -> None:
    path, torn, good, lines = torn_transcript(tmp_path)
    log = tmp_path / "faults.log"
    proc = run_python(CHILD, str(path), env=fault_env(log=log, **fault), check=False)
    assert proc.returncode == -9, (proc.returncode, proc.stderr)
    assert log.exists(), "the fault never fired"
    assert path.read_bytes() in (torn, good)
    with Session.load(path) as s:
        assert len(s.events) == lines
        assert len(s.warnings) == (1 if path.stat().st_size != len(good) or s.warnings else 0)
    assert path.read_bytes() == good
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.jsonl"]
    figure(f"4. repair crash: {name}", next_load="ok")
