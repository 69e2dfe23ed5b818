"""Fleet bench (issue 17), side by side in one run. Not a test: run it by hand.

    python benches/bench_fleet.py [--files 10000] [--kib 1024] [--mb 1024] [--dir /tmp/bench-fleet]

* ``ls``: ``agent_transcript.fleet.list_transcripts`` over ``--files``
  transcripts of ``--kib`` KiB each (page cache warm: each timing is the best
  of three), against a loop of ``Session.peek`` reading what a row shows (meta,
  the first user message, the last envelope) over the same files (issue 17's
  goal: under 1 s for 10,000 files of 1 MiB, and 50 times the peek loop); and
  the command, ``agent-transcript ls DIR`` and ``--json`` to a pipe, a process
  each (its interpreter's start and imports included).
* ``fork``: ``Session.fork`` of a ``--mb`` MiB transcript, whole, in MB/s.
* ``archive``: ``Session.archive --keep`` of the same file: ratio and MB/s;
  then ``Session.peek`` of the archive against ``Session.peek`` of the original.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from agent_transcript import Session
from agent_transcript.fleet import list_transcripts

MIB = 1024 * 1024
TS = "2026-08-09T13:10:08.542283Z"


def _line(n: int, type_: str, payload: Any) -> bytes:
    return (json.dumps({"id": f"{n:032x}", "payload": payload, "ts": TS, "type": type_, "v": 1},
                       sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def transcript_bytes(size: int, seed: int = 0) -> bytes:
    """A transcript of about ``size`` bytes: a meta, a user task, then turns of
    assistant text, tool dispatches, tool results and settles."""
    out = [_line(0, "session-meta", {"agent": "bench", "model": f"model-{seed % 3}"}),
           _line(1, "message", {"role": "user", "content": f"task {seed}: fix the failing test in parser.py"})]
    n, total = 2, sum(map(len, out))
    while total < size:
        for piece in (
            _line(n, "message", {"role": "assistant", "content": "Looking at the parser. " * 8,
                                 "tool_calls": [{"id": f"c{n}", "type": "function",
                                                 "function": {"name": "read_file", "arguments": "{\"path\":\"parser.py\"}"}}]}),
            _line(n + 1, "tool-dispatched", {"call-id": f"c{n}", "tool": "read_file", "arguments": {"path": "parser.py"},
                                             "arguments-digest": "sha256:" + "0" * 64, "idempotency": "read-only",
                                             "round": None, "run-id": None}),
            _line(n + 2, "message", {"role": "tool", "tool_call_id": f"c{n}", "content": "def parse(s):\n    ...\n" * 30}),
            _line(n + 3, "tool-settled", {"op-id": f"{n + 1:032x}", "outcome": "completed", "duration": 0.01}),
        ):
            out.append(piece)
            total += len(piece)
        n += 4
    return b"".join(out)


def best(f: Callable[[], Any], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def command(*args: str) -> None:
    """``agent-transcript ARGS`` in a process of its own, its output to a pipe."""
    subprocess.run([sys.executable, "-m", "agent_transcript", *args], stdout=subprocess.DEVNULL, check=True)


def peek_loop(folder: Path) -> int:
    n = 0
    for path in sorted(folder.rglob("*.jsonl")):
        p = Session.peek(path)
        if p.error is None:
            _ = p.meta, p.envelopes[-1].type, next((m for m in p.messages if m.role == "user"), None)
        n += 1
    return n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--kib", type=int, default=1024)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--dir", default="/tmp/bench-fleet")
    args = ap.parse_args(argv)
    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    folder = root / "fleet"
    per = 1000
    body = transcript_bytes(args.kib * 1024)
    for i in range(args.files):
        d = folder / f"day{i // per:03}"
        if i % per == 0:
            d.mkdir(parents=True)
        (d / f"run{i:06}.jsonl").write_bytes(body)
    total = args.files * len(body)
    print(f"ls: {args.files:,} transcripts, {total / MIB:,.0f} MiB in all")
    ls_s = best(lambda: sum(1 for _ in list_transcripts(folder)))
    peek_s = best(lambda: peek_loop(folder), runs=1 if args.files * args.kib > 64 * 1024 else 3)
    text_s = best(lambda: command("ls", str(folder)))
    json_s = best(lambda: command("ls", str(folder), "--json"))
    start_s = best(lambda: command("--version"))
    print(f"  list_transcripts   {ls_s:8.3f} s   ({args.files / ls_s:,.0f} files/s; goal < 1 s for 10,000 of 1 MiB)")
    print(f"  Session.peek loop  {peek_s:8.3f} s   ({args.files / peek_s:,.0f} files/s)")
    print(f"  ratio              {peek_s / ls_s:8.1f}x  (goal >= 50x)")
    print(f"  agent-transcript ls        {text_s:8.3f} s   (a process; --version alone takes {start_s:.3f} s)")
    print(f"  agent-transcript ls --json {json_s:8.3f} s")
    shutil.rmtree(folder)

    big = root / "big.jsonl"
    big.write_bytes(transcript_bytes(args.mb * MIB))
    size = big.stat().st_size
    print(f"fork and archive: one transcript of {size / MIB:,.0f} MiB")
    t = time.perf_counter()
    Session.fork(big, root / "fork.jsonl").close()
    fork_s = time.perf_counter() - t
    print(f"  fork (whole)       {fork_s:8.3f} s   ({size / MIB / fork_s:,.0f} MiB/s)")
    os.unlink(root / "fork.jsonl")
    t = time.perf_counter()
    packed = Session.archive(big, keep=True)
    arch_s = time.perf_counter() - t
    psize = packed.stat().st_size
    print(f"  archive            {arch_s:8.3f} s   ({size / MIB / arch_s:,.0f} MiB/s, ratio {size / psize:.1f}x,"
          f" {psize / MIB:,.1f} MiB; compress, fsync, read back and compare)")
    plain_s = best(lambda: len(Session.peek(big).envelopes))
    zst_s = best(lambda: len(Session.peek(packed).envelopes))
    print(f"  peek original      {plain_s:8.3f} s")
    print(f"  peek archive       {zst_s:8.3f} s   ({zst_s / plain_s:.1f}x the original's)")
    shutil.rmtree(root)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
