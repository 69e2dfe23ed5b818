"""A real ``kill -9``: whatever a method returned from is in the file, in order,
and the file loads with at most one line the writer never got to report.

One helper process imports the package once and forks a writer per round (an
interpreter start per round would cost more than the rest of the test). Each
writer is its own process with its own descriptor and lock; it appends in a
loop and writes each returned id, unbuffered, to a file of its own; the test
sends it SIGKILL at a random moment and then loads the transcript.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from agent_transcript import Session

FORKER = textwrap.dedent(r"""
    import os, random, sys
    from agent_transcript import Message, Session

    def write(path, seed, out):
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        rng = random.Random(seed)
        s = Session.open(path, {"kill": True})
        os.write(fd, b"ready\n")
        n = 0
        while True:
            size = rng.choices([10, 300, 4000, 70000], weights=[50, 40, 8, 2])[0]
            i = s.append_message(Message.user(f"{seed}-{n}-" + "é" * size), extra={"n": n})
            os.write(fd, i.encode() + b"\n")     # the id is "printed" only once returned
            n += 1

    for line in sys.stdin:
        path, seed, out = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                write(path, int(seed), out)
            finally:
                os._exit(70)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(status, flush=True)
""")

ROUNDS = 28
FILE_ROUNDS = 7


def wait_for(path: Path, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and what in path.read_text(errors="replace"):
            return
        time.sleep(0.002)
    raise AssertionError(f"the writer never wrote {what!r}")


def test_kill_9_at_random_moments_loses_nothing_returned(tmp_path: Path) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    repaired = 0
    killed_mid_run = 0
    total = 0
    forker = subprocess.Popen([sys.executable, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, bufsize=1)
    assert forker.stdin is not None and forker.stdout is not None
    try:
        for round_no in range(ROUNDS):
            if round_no % FILE_ROUNDS == 0:   # a fresh file now and then keeps the rounds quick
                path = tmp_path / f"run-{round_no}.jsonl"
                Session.create(path, {"kill": True}).close()
                in_file: list[str] = []       # message ids in the file after the last round
            out = tmp_path / f"ids-{round_no}.txt"
            forker.stdin.write(f"{path} {round_no} {out}\n")
            pid = int(forker.stdout.readline())
            if round_no % FILE_ROUNDS != FILE_ROUNDS - 1:   # else kill it while it is still opening
                wait_for(out, "ready")
                time.sleep(rng.uniform(0, 0.05))
                killed_mid_run += 1
            os.kill(pid, signal.SIGKILL)
            status = int(forker.stdout.readline())
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status

            printed = [x for x in out.read_text().split("\n")[:-1] if x != "ready"] if out.exists() else []
            with Session.load(path) as s:     # the dead writer's lock is gone too
                repaired += len(s.warnings)
                ids = s.message_ids           # no compaction: every message line, in order
                events = s.events
                new_events = events[len(events) - (len(ids) - len(in_file)):]
                assert [e.id for e in new_events] == ids[len(in_file):]
                ns = [e.payload["n"] for e in new_events]
            context = f"seed {seed}, round {round_no}"
            assert ids[: len(in_file)] == in_file, context
            new = ids[len(in_file):]
            assert new[: len(printed)] == printed, context
            assert len(new) - len(printed) <= 1, context
            assert ns == list(range(len(new))), context
            total += len(new)
            in_file = ids
    finally:
        forker.stdin.close()
        forker.wait(timeout=30)
        err = forker.stderr.read() if forker.stderr else ""
        if forker.stderr:
            forker.stderr.close()
        forker.stdout.close()
    assert forker.returncode == 0, err
    assert "Traceback" not in err, err
    assert killed_mid_run >= 20
    assert total > ROUNDS, "the writers did append"
    print(f"seed {seed}: {total} messages, {repaired} torn tails repaired")
