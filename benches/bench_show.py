"""``show`` bench (issue 18): text and ``--json`` over a generated transcript. Not a test.

    python benches/bench_show.py [--mb 1024] [--dir /tmp/bench-show]

The transcript is the package generator's (``agent_transcript.bench.generator``,
the shape of the 1 GiB yardstick). Each command runs in a fresh process with
its output to /dev/null; the rows give the CPU time it took (user + system,
from ``wait4``: on a shared machine the wall clock says more about the other
processes), MB of transcript per CPU second, the wall time and the peak RSS.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from agent_transcript.bench.generator import write_transcript


def run(args: list[str]) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and peak RSS (bytes) of ``agent-transcript ARGS``."""
    started = time.monotonic()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen([sys.executable, "-m", "agent_transcript", *args], stdout=null)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"agent-transcript {' '.join(args)}: exit {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, time.monotonic() - started, usage.ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1024.0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench-show"))
    args = ap.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"yardstick-{args.mb:g}.jsonl"
    if not path.exists():
        write_transcript(path, args.mb, seed=1)
    mb = path.stat().st_size / 1e6
    print(f"show over {path} ({mb:,.1f} MB)")
    print(f"  {'command':28s} {'cpu s':>8s} {'MB/s (cpu)':>11s} {'wall s':>8s} {'peak RSS':>10s}")
    for label, extra in [("show", []), ("show --json", ["--json"]), ("show --tail 20", ["--tail", "20"]),
                         ("show --json --tail 1", ["--json", "--tail", "1"])]:
        cpu, wall, rss = run(["show", *extra, str(path)])
        print(f"  {label:28s} {cpu:8.2f} {mb / cpu:11.1f} {wall:8.2f} {rss / 2**20:8.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
