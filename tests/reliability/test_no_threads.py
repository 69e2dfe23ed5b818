"""A process that may start no thread (at its user's thread limit) still lists,
loads and writes pages: the core does on the calling thread what it would have
fanned out, and no Rust panic (a ``PanicException``) reaches Python.

Root ignores ``RLIMIT_NPROC``, so the child drops to ``nobody`` first, then
lowers the limit to the one task it is."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agent_transcript import Message, Session

CHILD = r"""
import json, os, resource, sys, threading
from pathlib import Path
from agent_transcript import Session
from agent_transcript.cli.app import main
from agent_transcript.fleet import list_transcripts
base = Path(sys.argv[1])
# Once as root first: every module the work imports is then imported (the
# interpreter's own files may be where nobody cannot read them).
list_transcripts(base / "runs")
with Session.load(base / "big.jsonl") as s:
    s.messages
assert main(["html", str(base / "big.jsonl"), "-o", str(base / "warm.html")]) == 0
os.setgroups([])
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[3]))
resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
try:
    threading.Thread(target=lambda: None).start()
    sys.exit("the test's premise: no thread can start")
except RuntimeError:
    pass
rows = list_transcripts(base / "runs")
with Session.load(base / "big.jsonl") as s:
    n = len(s.messages)
status = main(["html", str(base / "big.jsonl"), "-o", str(base / "out" / "big.html")])
print(json.dumps({"rows": sorted((r.path.name, r.status) for r in rows), "messages": n, "html": status}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to nobody (root ignores RLIMIT_NPROC)")
def test_no_thread_can_start_and_ls_load_and_html_still_work() -> None:
    nobody = pwd.getpwnam("nobody")
    base = Path(tempfile.mkdtemp(prefix="at-nothreads-"))
    try:
        os.chmod(base, 0o755)
        (base / "runs").mkdir(mode=0o755)
        for i in range(40):  # more than one thread's share of `ls`
            with Session.create(base / "runs" / f"r{i}.jsonl") as s:
                s.append_message(Message.user(f"run {i}"))
        with Session.create(base / "big.jsonl") as s:  # enough lines for the load to fan out
            s.append_messages(Message.user("x" * 200) for _ in range(20_000))
        for p in (base / "runs").iterdir():
            os.chmod(p, 0o644)
        os.chown(base / "big.jsonl", nobody.pw_uid, nobody.pw_gid)  # load opens it to append
        (base / "out").mkdir()
        os.chown(base / "out", nobody.pw_uid, nobody.pw_gid)
        r = subprocess.run([sys.executable, "-c", CHILD, str(base), str(nobody.pw_gid), str(nobody.pw_uid)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout.splitlines()[-1])
        assert got["rows"] == sorted([f"r{i}.jsonl", "clean"] for i in range(40))
        assert got["messages"] == 20_000
        assert got["html"] == 0 and (base / "out" / "big.html").stat().st_size > 0
    finally:
        shutil.rmtree(base)
