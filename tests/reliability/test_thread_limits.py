"""A process that cannot start another thread (at its memory or thread limit):
the core's work meant for every core is done on the calling thread instead of
panicking into Python (``PanicException`` is not an ``Exception``).

The child gets room for the work (64 MiB more address space than it has
mapped) but asks for thread stacks of 1 GiB (``RUST_MIN_STACK``, which the core's
threads take as their size), so every thread start fails while the work itself
never runs out of memory: an allocation that fails in Rust aborts the process,
and the room left must not depend on how the heap happens to lie."""

from __future__ import annotations

import os
from pathlib import Path

from rkit import run_python

CHILD = r"""
import os, resource, sys
assert os.environ["RUST_MIN_STACK"] == str(1 << 30)
from agent_transcript import Message, Session, _core

path = sys.argv[1]
with Session.create(path) as s:
    for i in range(2000):
        s.append_message(Message.user(f"m{i}"))
fd = os.open(path, os.O_RDONLY)
t = _core.Transcript.read_only(fd, os.fstat(fd).st_size)
everything = list(range(len(t)))
t.payload_fields(everything[:10], ["content"])  # one thread: nothing is started

def mapped():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024

# Room for the work, not for a new thread's stack (1 GiB).
limit = mapped() + 64 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
import mmap
try:
    mmap.mmap(-1, 1 << 30)
except OSError:
    pass
else:
    raise SystemExit("a thread's stack could still be mapped")
try:
    found = t.payload_fields(everything, ["content"])
except BaseException as e:
    print("raised", type(e).__name__, isinstance(e, Exception))
else:
    print("ok", [d.get("content") for d in found[1:4]], len(found))
"""


def test_work_for_every_core_is_done_here_when_no_thread_can_start(tmp_path: Path) -> None:
    env = {**os.environ, "RUST_MIN_STACK": str(1 << 30)}
    out = run_python(CHILD, str(tmp_path / "run.jsonl"), env=env).stdout.strip().splitlines()
    assert out[-1] == "ok ['m0', 'm1', 'm2'] 2001"
