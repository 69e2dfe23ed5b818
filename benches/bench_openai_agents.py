"""TranscriptSession against the SDK's own SQLiteSession (file-backed), in one run.

    python benches/bench_openai_agents.py [--items 10000] [--reads 20] [--rounds 3] [--dir DIR]

The same items (a run's usual mix: user turns, function calls, their outputs,
assistant messages; about 300 bytes each) go through both stores:

* ``add_items``: one call per item, awaited, as the runner adds them; when it
  returns the item is in the kernel (transcript ``flush``: one write(2)) or on
  the disk (transcript ``fsync``; SQLite's default, a WAL commit synced).
* ``get_items``: the whole history (what the runner asks for every turn), and
  the newest 100.

Prints one row per measurement, the seconds each store took and SQLite's time
over the transcript's (above 1: the transcript is faster). Not a test: the
smoke test ``test_bench_openai_agents.py`` runs it once on a few items.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def items(n: int) -> list[dict[str, Any]]:
    """``n`` items in the shapes a run with tools stores, each different."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        k = i % 4
        if k == 0:
            out.append({"role": "user", "content": f"turn {i}: read src/agent/loop.py and tell me why the "
                        "resume path sends the tool result twice; cite line numbers."})
        elif k == 1:
            out.append({"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "read_file",
                        "arguments": json.dumps({"path": "src/agent/loop.py", "start": i, "end": i + 40})})
        elif k == 2:
            out.append({"type": "function_call_output", "call_id": f"call_{i - 1}",
                        "output": f"{i}: def resume(state):\n    send(state.result)  # line {i}\n" * 3})
        else:
            out.append({"id": f"msg_{i}", "type": "message", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                                     "text": f"Line {i - 2} sends it once, and line {i} again on resume."}]})
    return out


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        await fn()
    return time.perf_counter() - t0


async def measure(store: Any, data: list[dict[str, Any]], reads: int) -> dict[str, float]:
    t0 = time.perf_counter()
    for item in data:
        await store.add_items([item])
    add = time.perf_counter() - t0
    got = await store.get_items()
    assert got == data, "the store did not give back what it was given"
    return {
        "add_items": add,
        "get_items()": await timed(store.get_items, reads),
        "get_items(100)": await timed(lambda: store.get_items(100), reads),
    }


def run(n: int, reads: int, folder: Path, rounds: int = 1) -> list[tuple[str, float, float, float, int]]:
    """Rows: (what, SQLite s, transcript flush s, transcript fsync s, calls timed).

    Each round gives every store fresh files, the stores taking turns to go
    first; each figure is the best of the rounds (the machine is shared: the
    best is the one least disturbed).
    """
    from agents import SQLiteSession

    from agent_transcript.integrations.openai_agents import TranscriptSession

    data = items(n)
    best: dict[str, dict[str, float]] = {"sqlite": {}, "flush": {}, "fsync": {}}

    def sqlite(d: Path) -> dict[str, float]:
        store = SQLiteSession("bench", d / "bench.db")
        try:
            return asyncio.run(measure(store, data, reads))
        finally:
            store.close()

    def transcript(durability: str) -> Callable[[Path], dict[str, float]]:
        def go(d: Path) -> dict[str, float]:
            with TranscriptSession(d / f"{durability}.jsonl", durability=durability) as store:  # type: ignore[arg-type]
                return asyncio.run(measure(store, data, reads))
        return go

    stores = [("sqlite", sqlite), ("flush", transcript("flush")), ("fsync", transcript("fsync"))]
    for r in range(rounds):
        d = folder / f"round-{r}"
        d.mkdir()
        for name, fn in stores[r % 3:] + stores[:r % 3]:
            for what, seconds in fn(d).items():
                best[name][what] = min(seconds, best[name].get(what, seconds))
    return [(k, best["sqlite"][k], best["flush"][k], best["fsync"][k], n if k == "add_items" else reads)
            for k in best["sqlite"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--reads", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="each figure is the best of this many")
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary folder)")
    args = ap.parse_args()
    import agents
    import sqlite3

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        rows = run(args.items, args.reads, Path(d), args.rounds)
    print(f"{args.items} items, best of {args.rounds} rounds; openai-agents {agents.__version__}, "
          f"SQLite {sqlite3.sqlite_version}; files in {args.dir or tempfile.gettempdir()}")
    print(f"{'':16} {'SQLite':>10} {'flush':>10} {'fsync':>10} {'SQLite/flush':>13} {'SQLite/fsync':>13}")
    for what, s, f, y, count in rows:
        print(f"{what:16} {s:9.3f}s {f:9.3f}s {y:9.3f}s {s / f:12.1f}x {s / y:12.1f}x"
              f"   ({count} calls)")


if __name__ == "__main__":
    main()
