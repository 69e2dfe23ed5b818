"""Scenario 3: real write faults — a full disk, a file size limit, a failing disk.

Whatever the fault, the append raises the ``OSError``, no later line is ever
glued onto a partial one (the session cuts the file back to its last good length,
or, when it cannot, refuses every later append with ``SessionBroken``), and a
reload gives every acknowledged line, unchanged, in order.

* ENOSPC: a private tmpfs of 512 KiB, mounted here (we run as root).
* EFBIG: ``RLIMIT_FSIZE`` in a child process that ignores ``SIGXFSZ``.
* EIO: an ``LD_PRELOAD`` shim (``faultshim.c``, built with gcc) that fails the
  Nth ``write``/``fdatasync`` of the transcript, after a partial write or not,
  with ``ftruncate`` failing too or not.
"""

from __future__ import annotations

import errno
import json
import os
import random
from pathlib import Path

import pytest

from agent_transcript import Message, Session, SessionBroken
from rkit import figure, fault_env, run_python, scale, tmpfs


def text(i: int, size: int) -> str:
    unit = f"[{i}]Ω日🚀"
    return (unit * (size // len(unit.encode()) + 1))[: max(1, size // 2)]


def reload_equals(path: Path, acked: list[tuple[str, str]]) -> list[str]:
    """Reload ``path``; every acknowledged line is there and nothing else. Returns warnings."""
    with Session.load(path) as s:
        got = [(mid, m.content) for mid, m in zip(s.message_ids, s.messages)]
        assert got == acked
        return s.warnings


@pytest.mark.parametrize("durability", ["flush", "fsync"])
def test_enospc_on_a_full_tmpfs(durability: str) -> None:
    rng = random.Random(3)
    rounds = scale(3, 40)
    failures = partial_room = 0
    appends = 0
    with tmpfs("512k" if rounds < 10 else "16m") as fs:
        path = fs / "run.jsonl"
        acked: list[tuple[str, str]] = []
        s = Session.create(path, {"disk": "small"}, durability=durability)  # type: ignore[arg-type]
        for r in range(rounds):
            filler = fs / f"filler{r}"
            # Leave a little room, so the next lines fill it part way.
            free = os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize
            filler.write_bytes(b"\0" * max(0, free - rng.randrange(8_000, 40_000)))
            in_a_row = 0
            for i in range(200):
                if in_a_row == 6:
                    break
                body = text(appends, rng.choice([40, 900, 5_000, 20_000, 70_000]))
                appends += 1
                before = path.stat().st_size
                try:
                    mid = s.append_message(Message.user(body))
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    failures += 1
                    # Back at the last good length: nothing partial stays behind.
                    assert path.stat().st_size == before
                    if os.statvfs(fs).f_bavail > 0:
                        partial_room += 1
                    in_a_row += 1
                    continue
                in_a_row = 0
                acked.append((mid, body))
            filler.unlink()
            mid = s.append_message(Message.user(f"room again {r}"))  # the session is still usable
            acked.append((mid, f"room again {r}"))
        s.close()
        assert reload_equals(path, acked) == []
        with Session.load(path) as again:
            assert again.meta == {"disk": "small"}
    assert failures >= rounds
    figure(f"3. ENOSPC ({durability})", appends=appends, enospc=failures,
           enospc_with_some_room_left=partial_room, acknowledged=len(acked), lost=0)


def test_enospc_while_creating_leaves_no_file() -> None:
    with tmpfs("64k") as fs:
        free = os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize
        (fs / "filler").write_bytes(b"\0" * free)
        path = fs / "run.jsonl"
        with pytest.raises(OSError) as e:
            Session.create(path, {"big": "x" * 10_000})
        assert e.value.errno == errno.ENOSPC
        assert not path.exists()
        (fs / "filler").unlink()
        with Session.create(path, {"big": "x" * 10_000}) as s:
            s.append_message(Message.user("fits now"))
        assert reload_equals(path, [(s.message_ids[0], "fits now")]) == []


EFBIG_CHILD = r"""
import json, os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from agent_transcript import Message, Session
path, limit, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = Session.load(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
acked, errors = [], []
for i in range(n):
    body = ("efbig %d " % i) + "ü" * (i * 397 % 3000)
    before = os.path.getsize(path)
    try:
        acked.append([s.append_message(Message.user(body)), body])
    except OSError as e:
        errors.append([e.errno, before, os.path.getsize(path)])
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
acked.append([s.append_message(Message.user("no limit")), "no limit"])
s.close()
print(json.dumps({"acked": acked, "errors": errors}))
"""


def test_efbig_from_rlimit_fsize(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        first = s.append_message(Message.user("before the limit"))
    limit = path.stat().st_size + 40_000
    n = scale(120, 2000)
    out = json.loads(run_python(EFBIG_CHILD, str(path), str(limit), str(n)).stdout)
    errors = out["errors"]
    assert errors, "the limit was never reached"
    for code, before, after in errors:
        assert code == errno.EFBIG
        assert after == before  # cut back: nothing partial stays behind
    assert reload_equals(path, [(first, "before the limit")] + [tuple(a) for a in out["acked"]]) == []
    figure("3. EFBIG (RLIMIT_FSIZE)", appends=n + 1, efbig=len(errors),
           acknowledged=len(out["acked"]) + 1, lost=0)


EIO_CHILD = r"""
import json, os, sys
from agent_transcript import Message, Session, SessionBroken
path, n, durability = sys.argv[1], int(sys.argv[2]), sys.argv[3]
acked, events = [], []
s = Session.create(path, {"eio": True}, durability=durability)
for i in range(n):
    body = ("eio %d " % i) + "日本" * (i * 131 % 5000)
    before = os.path.getsize(path)
    try:
        acked.append([s.append_message(Message.user(body)), body])
    except SessionBroken as e:
        events.append(["broken", before, os.path.getsize(path)])
    except OSError as e:
        events.append(["oserror", e.errno, before, os.path.getsize(path)])
print(json.dumps({"acked": acked, "events": events}))
"""

# (name, shim settings, durability, whether the session must end up broken)
EIO_CASES = [
    ("write fails", dict(op="write", nth=5), "flush", False),
    ("three writes fail", dict(op="write", nth=5, count=3), "flush", False),
    ("partial write then EIO", dict(op="write", nth=7, partial=100), "flush", False),
    ("partial write, EIO, cut fails", dict(op="write", nth=7, partial=100, also="ftruncate"),
     "flush", True),
    ("fdatasync fails", dict(op="fdatasync", nth=4), "fsync", False),
    ("fdatasync fails, cut fails", dict(op="fdatasync", nth=4, also="ftruncate"), "fsync", True),
    ("ENOSPC from write", dict(op="write", nth=6, errno_=errno.ENOSPC, partial=4096), "flush", False),
    # The write went through, the fstat that checks it did not: the line is in the
    # file, so the session must not go on as if it were not.
    ("fstat after the write fails", dict(op="statx", nth=6), "flush", True),
]


@pytest.mark.parametrize(("name", "fault", "durability", "broken"), EIO_CASES,
                         ids=[c[0] for c in EIO_CASES])
def test_eio_from_the_fault_shim(tmp_path: Path, name: str, fault: dict, durability: str,
                                 broken: bool) -> None:
    path = tmp_path / "run.jsonl"
    log = tmp_path / "faults.log"
    n = scale(20, 200)
    env = fault_env(match="run.jsonl", log=log, **fault)
    out = json.loads(run_python(EIO_CHILD, str(path), str(n), durability, env=env).stdout)
    assert log.exists(), "the fault never fired"
    events = out["events"]
    oserrors = [e for e in events if e[0] == "oserror"]
    refused = [e for e in events if e[0] == "broken"]
    assert oserrors, events
    expected_errno = fault.get("errno_", errno.EIO)
    for _, code, before, after in oserrors:
        assert code == expected_errno
        if not broken:
            assert after == before  # cut back to the last good length
    if broken:
        # The partial line could not be cut: every later append is refused, unwritten.
        assert len(oserrors) == 1 and len(refused) == n - len(out["acked"]) - 1
        assert all(before == after for _, before, after in refused)
    else:
        assert not refused
    acked = [tuple(a) for a in out["acked"]]
    with Session.load(path) as s:
        got = [(mid, m.content) for mid, m in zip(s.message_ids, s.messages)]
        warnings = s.warnings
    if broken and fault["op"] in ("fdatasync", "statx"):
        # The whole line was written, its fdatasync failed and it could not be cut
        # (or the fstat after it failed): it stays, unacknowledged, like a line a
        # kill -9 stopped before the return.
        assert got[:-1] == acked and got[-1][1].startswith("eio ")
        assert warnings == []
    else:
        assert got == acked
        # A partial line left behind is a torn tail: load removes it, and says so.
        assert len(warnings) == (1 if broken else 0), warnings
    figure(f"3. EIO: {name}", appends=n, oserrors=len(oserrors), refused_broken=len(refused),
           acknowledged=len(out["acked"]), lost=0)
