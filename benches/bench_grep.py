"""``grep`` bench (issue 34): a fixed string over a generated transcript, against ``rg -F`` and
``grep -F`` on the same file in the same run. Not a test.

    python benches/bench_grep.py [--mb 1024] [--dir /tmp/bench-grep] [--python LABEL=PYTHON ...]

The transcript is the package generator's (``agent_transcript.bench.generator``,
the shape of the 1 GiB yardstick). Every command runs in a fresh process, line
numbers on (``-n``), its output to /dev/null, each after one untimed run that
brings the file into the page cache. The rows give the CPU time it took (user +
system, from ``wait4``: on a shared machine the wall clock says more about the
other processes than about the search), the wall time, the lines printed and
the ratio of CPU time to ``rg``'s. ``--python`` adds the rows of another
install's ``agent-transcript grep`` (``before=/tmp/venv-main/bin/python``), to
compare two builds in one run; each searches one file on one thread (over many
files ``agent-transcript grep`` uses two), so the CPU time is the work's and, on
a quiet machine, the wall time too. The needles go from one the file does not
hold (the pure scan) to one in the lines that hold most of its bytes (the scan
plus decoding and printing most of the file).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from agent_transcript.bench.generator import write_transcript

#: (label, fixed string): absent from the generated text; in a few lines; in 0.4% of them; in the
#: lines that hold 78% of its bytes (the lines printed are then most of the file).
NEEDLES = [("absent", "needle-that-no-line-holds"), ("rare", "tool result summary grant"),
           ("phrase", "resume crash compaction"), ("common", "resume crash")]


def measure(argv: list[str]) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and output lines of ``argv``."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with proc.stdout:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: proc.stdout.read(1 << 20), b""))  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    code = proc.returncode = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {code}")
    return usage.ru_utime + usage.ru_stime, time.monotonic() - started, lines


def commands(needle: str, path: Path, pythons: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The commands compared, those whose tool is installed; ``agent-transcript grep`` through each
    of ``pythons`` (label: interpreter)."""
    rows = [("rg -n -F", ["rg", "-n", "-F", "--no-config", "--color", "never", needle, str(path)]),
            ("grep -n -F", ["grep", "-n", "-F", needle, str(path)])]
    rows = [(label, argv) for label, argv in rows if shutil.which(argv[0])]
    for name, python in pythons.items():
        ours = [python, "-m", "agent_transcript", "grep", "-F", "--color", "never"]
        tag = f" [{name}]" if len(pythons) > 1 else ""
        rows += [(f"agent-transcript grep --all-lines{tag}", [*ours, "--all-lines", needle, str(path)]),
                 (f"agent-transcript grep (live){tag}", [*ours, needle, str(path)])]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=1024.0)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench-grep"))
    ap.add_argument("--python", action="append", default=[], metavar="LABEL=PYTHON",
                    help="also time this interpreter's agent-transcript grep (repeatable)")
    args = ap.parse_args(argv)
    pythons = dict(p.split("=", 1) for p in args.python) or {"this": sys.executable}
    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"yardstick-{args.mb:g}.jsonl"
    if not path.exists():
        write_transcript(path, args.mb, seed=1)
    mb = path.stat().st_size / 1e6
    print(f"grep over {path} ({mb:,.1f} MB)")
    print(f"  {'needle':8s} {'command':45s} {'cpu s':>7s} {'wall s':>7s} {'lines':>7s} {'cpu / rg':>9s}")
    for label, needle in NEEDLES:
        rg_cpu = None
        for name, cmd in commands(needle, path, pythons):
            measure(cmd)  # the page cache, and the interpreter's files
            cpu, wall, lines = measure(cmd)
            if name.startswith("rg "):
                rg_cpu = cpu
            ratio = f"{cpu / rg_cpu:8.2f}x" if rg_cpu else "       -"
            print(f"  {label:8s} {name:45s} {cpu:7.2f} {wall:7.2f} {lines:7d} {ratio:>9s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
