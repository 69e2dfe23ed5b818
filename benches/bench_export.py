"""Export bench (issue 17), side by side in one run. Not a test: run it by hand.

    python benches/bench_export.py [--mb 1024] [--files 10000] [--kib 16] [--seed 2] [--dir /tmp/bench-export]
                                   [--runs 3] [--only big|small]

* ``export`` of the yardstick (``--mb`` MiB from the package's bench generator,
  ``gen_transcript.py``'s lines, seed ``--seed``; kept in ``--dir`` and reused)
  with ``agent_transcript.fleet.export_transcripts``, against DuckDB's own
  ``COPY (SELECT * FROM read_json_auto(...)) TO '...parquet'`` of the same file
  in the same run (which flattens lines without replay: it knows nothing of
  live messages or tool states). Each timing is the best of ``--runs``.
* The same for ``--files`` small transcripts of about ``--kib`` KiB each
  (ten generated bodies, cycled), in folders of 1,000.
* A second export into the same folder: every file unchanged, skipped.

The ratio is DuckDB's time over ours: >= 1 means ours is at least as fast. The CPU time
(every thread's, user and system) of the best run is beside each, and its ratio too: on a
machine others share, it is the steadier figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from baselines import write_transcript

MIB = 1024 * 1024


def cpu() -> float:
    """CPU seconds of this process so far, every thread's, user and system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(f: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    """The best wall time of ``runs`` calls, the CPU time of that call, and its result."""
    times, out = [], None
    for _ in range(runs):
        t, c = time.perf_counter(), cpu()
        out = f()
        times.append((time.perf_counter() - t, cpu() - c))
    wall, used = min(times)
    return wall, used, out


def ours(src: Path, out: Path) -> Any:
    from agent_transcript.fleet import export_transcripts

    shutil.rmtree(out, ignore_errors=True)
    return export_transcripts(src, out=out)


def duckdb_copy(glob: str, out: Path) -> int:
    import duckdb

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT * FROM read_json_auto('{glob}', format='newline_delimited',
                                                      maximum_object_size=1073741824))
                    TO '{out / "all.parquet"}' (FORMAT parquet)""")
    rows = con.execute(f"select count(*) from read_parquet('{out / 'all.parquet'}')").fetchone()
    return int(rows[0]) if rows else 0


def side_by_side(name: str, src: Path, glob: str, size: int, work: Path, runs: int) -> None:
    ours_s, ours_cpu, result = best(lambda: ours(src, work / "ours"), runs)
    rows = result.rows
    print(f"  export_transcripts   {ours_s:8.3f} s   (CPU {ours_cpu:6.2f} s; {size / MIB / ours_s:,.0f} MiB/s; rows: " +
          ", ".join(f"{k} {v:,}" for k, v in rows.items()) + ")")
    try:
        duck_s, duck_cpu, duck_rows = best(lambda: duckdb_copy(glob, work / "duckdb"), runs)
    except Exception as exc:  # DuckDB's own limits: said, not hidden
        print(f"  duckdb COPY          failed: {str(exc).splitlines()[0]}")
    else:
        print(f"  duckdb COPY          {duck_s:8.3f} s   (CPU {duck_cpu:6.2f} s; {size / MIB / duck_s:,.0f} MiB/s; "
              f"{duck_rows:,} rows, one table)")
        print(f"  ratio (duckdb/ours)  {duck_s / ours_s:8.2f}x  (goal >= 1; CPU time {duck_cpu / ours_cpu:.2f}x)")
    t = time.perf_counter()
    from agent_transcript.fleet import export_transcripts

    again = export_transcripts(src, out=work / "ours")
    print(f"  re-export, unchanged {time.perf_counter() - t:8.3f} s   ({len(again.skipped):,} skipped)")
    shutil.rmtree(work / "ours", ignore_errors=True)
    shutil.rmtree(work / "duckdb", ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1024)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--kib", type=int, default=16)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/bench-export")
    ap.add_argument("--only", choices=("big", "small"), help="run one of the two comparisons")
    args = ap.parse_args(argv)
    import duckdb
    import pyarrow

    root = Path(args.dir)
    print(f"python {sys.version.split()[0]}, duckdb {duckdb.__version__}, pyarrow {pyarrow.__version__}, "
          f"{os.cpu_count()} CPUs; best of {args.runs}, page cache warm")

    if args.only != "small":
        big_row(root, args)
    if args.only != "big":
        small_row(root, args)
    sys.stdout.flush()


def big_row(root: Path, args: argparse.Namespace) -> None:
    big_dir = root / f"big-{args.mb:g}mb-s{args.seed}"
    big = big_dir / "transcript.jsonl"
    if not big.exists():
        big_dir.mkdir(parents=True, exist_ok=True)
        write_transcript(big, args.mb, seed=args.seed)
    size = big.stat().st_size
    print(f"export: the yardstick, {size / MIB:,.0f} MiB ({big})")
    side_by_side("big", big_dir, str(big), size, root / "work", args.runs)


def small_corpus(root: Path, files: int, kib: int) -> Path:
    """``files`` transcripts of about ``kib`` KiB (ten generated bodies, cycled) in
    folders of 1,000 under ``root``: made once, then reused."""
    small = root / f"small-{files}x{kib}k"
    if not small.exists():
        root.mkdir(parents=True, exist_ok=True)
        bodies = []
        for seed in range(10):
            tmp = root / f"body-{seed}.jsonl"
            write_transcript(tmp, kib / 1024, seed=seed)
            bodies.append(tmp.read_bytes())
            tmp.unlink()
        staging = small.with_name(small.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        for i in range(files):
            d = staging / f"day{i // 1000:03}"
            if i % 1000 == 0:
                d.mkdir(parents=True)
            (d / f"run{i:06}.jsonl").write_bytes(bodies[i % len(bodies)])
        staging.rename(small)
    return small


def small_row(root: Path, args: argparse.Namespace) -> None:
    small = small_corpus(root, args.files, args.kib)
    total = sum(p.stat().st_size for p in small.rglob("*.jsonl"))
    print(f"export: {args.files:,} small transcripts, {total / MIB:,.0f} MiB in all")
    side_by_side("small", small, str(small / "*" / "*.jsonl"), total, root / "work", args.runs)


if __name__ == "__main__":
    main()
