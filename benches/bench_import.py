"""Import throughput and peak memory, against a plain-Python ``json.loads`` pass over
the same file in the same run (issue 13's bench). Not a test: run it by hand.

    python benches/bench_import.py [--mb 1024] [--dir /tmp/bench-import] [--reuse]

Writes a Claude Code session and a Codex rollout of ``--mb`` MiB with
``import_gen.py``, then for each runs, each in a fresh child process (so that
its peak RSS is its own): the baseline (read every line, ``json.loads`` it,
drop it) and ``agent_transcript.formats.import_transcript``. Prints MB/s (of
wall time, and of the child's CPU time: on a shared machine the wall time
says as much about the neighbours) and peak RSS for both, and the peak as a
fraction of the file. Beside them, the write floor: the imported file's bytes
copied into a new file and fsynced, nothing converted (no import can be
faster than writing what it writes), with the import's MB/s as a fraction of
the floor's. ``--reuse`` keeps the generated sources in ``--dir``
(``claude-code-<mb>.jsonl``, ``codex-<mb>.jsonl``) and uses them again when
they are there (generating 1 GiB takes minutes of CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1024 * 1024

_BASELINE = """
import json, resource, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    for line in f:
        try:
            json.loads(line)
        except ValueError:
            pass
u = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, u.ru_maxrss * 1024, u.ru_utime + u.ru_stime)
"""

_IMPORT = """
import resource, sys, time
from agent_transcript.formats import import_transcript
t = time.perf_counter()
import_transcript(sys.argv[1], sys.argv[2], force=True)
u = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, u.ru_maxrss * 1024, u.ru_utime + u.ru_stime)
"""

# The import's output written again to a new file, as the import writes it (a
# MiB at a time, then fsync): what the machine's page cache and disk allow.
_WRITE_FLOOR = """
import os, resource, sys, time
src, dest = sys.argv[1], sys.argv[2]
t = time.perf_counter()
with open(src, "rb") as f, open(dest, "wb") as out:
    while chunk := f.read(1 << 20):
        out.write(chunk)
    out.flush()
    os.fsync(out.fileno())
u = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, u.ru_maxrss * 1024, u.ru_utime + u.ru_stime)
"""


def _child(code: str, *args: str) -> tuple[float, int, float]:
    """Wall seconds, peak RSS and CPU seconds (user + system: the machine may be shared) of ``code``."""
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True).stdout
    seconds, rss, cpu = out.split()
    return float(seconds), int(rss), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=1024.0)
    parser.add_argument("--dir", default="/tmp/bench-import")
    parser.add_argument("--reuse", action="store_true", help="keep the sources and use them again")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import import_gen

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for kind, write in (("claude-code", import_gen.write_claude_code), ("codex", import_gen.write_codex)):
        src = folder / (f"{kind}-{args.mb:g}.jsonl" if args.reuse else f"{kind}.jsonl")
        if args.reuse and src.is_file():
            size = src.stat().st_size
        else:
            size = write(str(src), int(args.mb * MIB))
        base_s, base_rss, base_cpu = _child(_BASELINE, str(src))
        imp_s, imp_rss, imp_cpu = _child(_IMPORT, str(src), str(folder / f"{kind}.imported.jsonl"))
        out_size = os.path.getsize(folder / f"{kind}.imported.jsonl")
        floor_s, _, _ = _child(_WRITE_FLOOR, str(folder / f"{kind}.imported.jsonl"), str(folder / f"{kind}.floor"))
        os.unlink(folder / f"{kind}.floor")
        rows.append({
            "format": kind, "source-bytes": size, "imported-bytes": out_size,
            "json.loads MB/s": round(size / MIB / base_s, 1), "json.loads peak RSS MiB": round(base_rss / MIB, 1),
            "json.loads MB/s of CPU": round(size / MIB / base_cpu, 1),
            "import MB/s": round(size / MIB / imp_s, 1), "import peak RSS MiB": round(imp_rss / MIB, 1),
            "import MB/s of CPU": round(size / MIB / imp_cpu, 1),
            "import peak / file": round(imp_rss / size, 2),
            "write floor MB/s": round(size / MIB / floor_s, 1),
            "import / write floor": round(floor_s / imp_s, 2),
        })
        os.unlink(folder / f"{kind}.imported.jsonl")
        if not args.reuse:
            os.unlink(src)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - start:.0f}s", file=sys.stderr)
