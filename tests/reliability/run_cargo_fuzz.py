#!/usr/bin/env python3
"""Run the core's cargo-fuzz targets (rust/core/fuzz) for a given time each and
print executions, coverage and crashes.

    python tests/reliability/run_cargo_fuzz.py --seconds 3600          # the long run
    python tests/reliability/run_cargo_fuzz.py --seconds 60 -t replay  # one target
    python tests/reliability/run_cargo_fuzz.py --cmin                  # re-minimise the corpus
    python tests/reliability/run_cargo_fuzz.py --cpu-seconds 3600 --jobs 2 --keep DIR  # on a shared machine

Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The
targets run one at a time (one libFuzzer process, one job), under `nice`, on a
scratch copy of the committed corpus (rust/core/fuzz/corpus/<target>), which
they grow; `--keep DIR` keeps those grown corpora, and `--cmin` minimises the
seeds (seeds.py) plus any kept corpora back into the committed one. The figures
per target: executions (libFuzzer's count), `cov` (edges) and `ft` (features)
from its last status line, the CPU time the process really got (user + system,
from wait4), and the crash, leak or timeout inputs it wrote. `--json FILE`
writes them as one JSON object per line.

On a machine others share, `nice -n 19` leaves a target far less CPU than its
wall time: `--cpu-seconds S` gives each target S seconds of CPU instead (the
process is interrupted, as by Ctrl-C, once user + system time reach S; libFuzzer
then prints its final figures), and `--jobs N` runs N targets at once.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "rust" / "core" / "fuzz"
TARGETS = ["json_reader", "envelope", "tail_check", "lines", "canonical_roundtrip", "replay"]
# The longest input each target is given: lines hold whole transcript lines;
# files, a few of them.
MAX_LEN = {"json_reader": 16384, "envelope": 16384, "tail_check": 65536, "lines": 65536,
           "canonical_roundtrip": 4096, "replay": 65536}
STATUS = re.compile(r"^#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+)")
EXECUTED = re.compile(r"stat::number_of_executed_units: (\d+)")


def available() -> str | None:
    """None when nightly cargo and cargo-fuzz are there, else why not."""
    try:
        proc = subprocess.run(["cargo", "+nightly", "fuzz", "--version"], capture_output=True, text=True)
    except FileNotFoundError:
        return "cargo is not installed"
    if proc.returncode != 0:
        return "no nightly toolchain or no cargo-fuzz: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    return None


def build(targets: list[str]) -> Path:
    """Build the targets (release, debug assertions on, ASan); returns the binaries' folder."""
    for target in targets:
        subprocess.run(["cargo", "+nightly", "fuzz", "build", "-O", "--debug-assertions", target],
                       cwd=FUZZ.parent, check=True)
    triple = subprocess.run(["rustc", "+nightly", "-vV"], capture_output=True, text=True,
                            check=True).stdout
    host = re.search(r"^host: (\S+)", triple, re.M)
    return FUZZ / "target" / (host.group(1) if host else "x86_64-unknown-linux-gnu") / "release"


def cpu_seconds(pid: int) -> float:
    """User + system time of a running process so far (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def interrupt_at_cpu(pid: int, budget: float) -> None:
    """SIGINT `pid` once it has had `budget` seconds of CPU (returns when it ends)."""
    while True:
        try:
            used = cpu_seconds(pid)
        except (OSError, IndexError, ValueError):
            return
        if used >= budget:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            return
        time.sleep(min(10.0, max(0.5, (budget - used) / 2)))


def run_target(binary: Path, target: str, seconds: int, nice: int, work: Path,
               artifacts: Path, cpu_budget: int | None = None) -> dict[str, object]:
    """One libFuzzer run of `seconds` (or of `cpu_budget` CPU seconds) on corpus
    `work` (grown in place)."""
    artifacts.mkdir(parents=True, exist_ok=True)
    wall_limit = 0 if cpu_budget else seconds  # 0: libFuzzer's "no limit"
    # libFuzzer is exec'd by nice, so the pid is libFuzzer's own.
    cmd = ["nice", "-n", str(nice), str(binary / target), f"-max_total_time={wall_limit}",
           f"-max_len={MAX_LEN[target]}", "-timeout=20", "-rss_limit_mb=2048", "-print_final_stats=1",
           f"-artifact_prefix={artifacts}/", str(work)]
    log = artifacts / "libfuzzer.log"
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        if cpu_budget:
            watch = ThreadPoolExecutor(1)
            watch.submit(interrupt_at_cpu, proc.pid, cpu_budget)
        _, status, usage = os.wait4(proc.pid, 0)
        if cpu_budget:
            watch.shutdown()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    wall = time.monotonic() - started
    text = log.read_text(errors="replace")
    last = [m for m in map(STATUS.match, text.splitlines()) if m]
    executed = EXECUTED.search(text)
    found = sorted(p.name for p in artifacts.iterdir()
                   if p.name.startswith(("crash-", "leak-", "timeout-", "oom-")))
    # A unit over 10 s of wall time: on a loaded machine, often only waiting.
    slow = sorted(p.name for p in artifacts.iterdir() if p.name.startswith("slow-unit-"))
    return {
        "target": target,
        "seconds": seconds,
        "cpu_budget_s": cpu_budget,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "executions": int(executed.group(1)) if executed else (int(last[-1].group(1)) if last else 0),
        "cov": int(last[-1].group(2)) if last else 0,
        "ft": int(last[-1].group(3)) if last else 0,
        "corpus": len(list(work.iterdir())),
        "exit": proc.returncode,
        "crashes": found,
        "slow_units": slow,
        "log": str(log),
    }


def cmin(binary: Path, targets: list[str], extra: list[Path]) -> None:
    """Minimise seeds/<t> plus `extra`/<t> into corpus/<t> (replacing it)."""
    subprocess.run([sys.executable, str(FUZZ / "seeds.py")], check=True)
    for target in targets:
        dest = FUZZ / "corpus" / target
        old = Path(tempfile.mkdtemp(prefix=f"cmin-{target}-"))
        if dest.exists():
            shutil.copytree(dest, old, dirs_exist_ok=True)
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        sources = [FUZZ / "seeds" / target, old] + [e / target for e in extra if (e / target).exists()]
        subprocess.run(["nice", "-n", "19", str(binary / target), "-merge=1", f"-max_len={MAX_LEN[target]}",
                        "-timeout=20", "-rss_limit_mb=2048", str(dest), *map(str, sources)],
                       check=True, capture_output=True)
        print(f"{target}: {len(list(dest.iterdir()))} inputs, "
              f"{sum(p.stat().st_size for p in dest.iterdir()) / 1024:.0f} KiB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3600, help="per target (default: an hour)")
    ap.add_argument("-t", "--target", action="append", choices=TARGETS, help="default: all")
    ap.add_argument("--cpu-seconds", type=int, help="per target, CPU time instead of wall time")
    ap.add_argument("--jobs", type=int, default=1, help="targets run at once (default 1)")
    ap.add_argument("--nice", type=int, default=19)
    ap.add_argument("--keep", type=Path, help="keep the grown corpora in DIR/<target>")
    ap.add_argument("--cmin", action="store_true", help="minimise seeds (+ --keep DIR) into corpus/")
    ap.add_argument("--json", type=Path, help="append each target's figures here")
    args = ap.parse_args(argv)
    targets = args.target or TARGETS
    why = available()
    if why:
        print(f"run_cargo_fuzz: {why}", file=sys.stderr)
        return 2
    binary = build(targets)
    if args.cmin:
        cmin(binary, targets, [args.keep] if args.keep else [])
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="at-cargo-fuzz-"))

    def one(target: str) -> dict[str, object]:
        work = (args.keep / target) if args.keep else scratch / "corpus" / target
        work.mkdir(parents=True, exist_ok=True)
        shutil.copytree(FUZZ / "corpus" / target, work, dirs_exist_ok=True)
        row = run_target(binary, target, args.seconds, args.nice, work, scratch / "artifacts" / target,
                         args.cpu_seconds)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
        return row

    # Ctrl-C (to the process group) interrupts the running targets, which then
    # print and record their figures; the targets not started yet are dropped.
    pool = ThreadPoolExecutor(max(1, args.jobs))
    futures = [pool.submit(one, t) for t in targets]
    try:
        rows = [f.result() for f in futures]
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        rows = [f.result() for f in futures if f.done() and not f.cancelled() and f.exception() is None]
    pool.shutdown()
    print(f"\n{'target':20s} {'wall s':>8s} {'cpu s':>8s} {'executions':>12s} {'cov':>6s} {'ft':>7s}  crashes")
    for r in rows:
        print(f"{r['target']:20s} {r['wall_s']:8.0f} {r['cpu_s']:8.0f} {r['executions']:12,d} "
              f"{r['cov']:6d} {r['ft']:7d}  {len(r['crashes'])}")  # type: ignore[arg-type]
    return 1 if any(r["crashes"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
