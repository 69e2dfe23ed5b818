"""An artifact write killed midway, then the same process id again.

A container's agent has the same pid after every restart. The temporary file a
``kill -9`` leaves in ``<stem>.artifacts/`` must not make that content
unstorable for good (its name used to be per process id, created exclusively).
Real kill (the fault shim's ``kill`` on the temporary file's second ``write``),
the same pid (the first child in a new PID namespace, ``unshare --pid``, each run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_transcript import Session
from rkit import fault_env, figure

# The namespace's pid 1 ignores even SIGKILL from itself, so the writer is its
# first child: pid 2 in every fresh namespace.
STORE = r"""
import os, sys
assert os.getpid() == 1
child = os.fork()
if child == 0:
    from agent_transcript import Session
    assert os.getpid() == 2
    s = Session.open(sys.argv[1])
    art = s.write_artifact("the tool's output\n" * 100_000, excerpt="the tool's output")
    s.append_tool_settled(s.append_tool_dispatched("c1", "run", {}), "completed", artifact=art)
    print("stored", flush=True)
    os._exit(0)
_, status = os.waitpid(child, 0)
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""

CONTENT = b"the tool's output\n" * 100_000


def test_a_write_killed_midway_never_blocks_the_same_pid(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    same_pid = ["unshare", "--pid", "--fork", sys.executable, "-c", STORE, str(path)]
    env = fault_env("write", ".tmp", nth=1, action="kill")
    killed = subprocess.run(same_pid, env=env, capture_output=True, text=True, check=False)
    assert "stored" not in killed.stdout, killed.stdout
    leftovers = [n for n in os.listdir(tmp_path / "run.artifacts") if n.endswith(".tmp")]
    assert leftovers, (killed.returncode, killed.stderr, "no temporary file left behind")
    again = subprocess.run(same_pid, capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    assert "stored" in again.stdout
    with Session.load(path) as s:
        (settled,) = [e for e in s.events if e.type == "tool-settled"]
        assert s.read_artifact(settled.payload["artifact"]) == CONTENT
    figure("artifact write killed, same pid again", leftovers=len(leftovers), stored=1)
