"""Load of a transcript whose ids were chosen to collide in an unseeded id hash,
against the same transcript with ordinary ids, in the same run (a ratio, not a
time). Not a test: run it by hand.

    python benches/bench_colliding_ids.py [--lines 160000] [--dir /tmp]

The colliding ids are 32 hex digits (the form the writer's own ids take) whose
hash under the id table's former function, splitmix64's finaliser without a
seed, has the same high half: every one of them probes the same slot, and a
load goes quadratic. With a per-process seed the same ids spread as any others
do, and the ratio is about 1.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from agent_transcript import Session

M64 = (1 << 64) - 1
TS = "2026-08-09T13:10:08.542283Z"


def _unmix(z: int) -> int:
    """The inverse of splitmix64's finaliser."""
    z ^= (z >> 31) ^ (z >> 62)
    z = (z * pow(0x94D049BB133111EB, -1, 1 << 64)) & M64
    z ^= (z >> 27) ^ (z >> 54)
    z = (z * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & M64
    z ^= (z >> 30) ^ (z >> 60)
    return z


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def colliding_ids(n: int) -> list[str]:
    """``n`` ids whose unseeded hash (``mix(a ^ mix(b ^ form))``, form 0 for 32
    hex digits, ``b`` = 0) has one high half."""
    inner = _mix(0 ^ 0)
    ids = []
    for i in range(n):
        a = _unmix((0x5EED << 32) | (i + 1)) ^ inner
        assert _mix(a ^ inner) >> 32 == 0x5EED
        ids.append(a.to_bytes(8, "little").hex() + "00" * 8)
    return ids


def write(path: Path, ids: list[str]) -> None:
    with open(path, "w") as f:
        f.write(json.dumps({"id": "0" * 31 + "f", "payload": {}, "ts": TS, "type": "session-meta", "v": 1}) + "\n")
        for i, id_ in enumerate(ids):
            f.write(json.dumps({"id": id_, "payload": {"content": f"line {i}", "role": "user"},
                                "ts": TS, "type": "message", "v": 1}, sort_keys=True) + "\n")


def best_load(path: Path, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        with Session.load(path):
            pass
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=160_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp"))
    args = ap.parse_args()
    hostile, ordinary = args.dir / "colliding-ids.jsonl", args.dir / "ordinary-ids.jsonl"
    write(hostile, colliding_ids(args.lines))
    write(ordinary, [os.urandom(16).hex() for _ in range(args.lines)])
    h, o = best_load(hostile), best_load(ordinary)
    print(f"{args.lines} lines: colliding ids {h * 1000:.0f} ms, ordinary ids {o * 1000:.0f} ms, ratio {h / o:.2f}")
    hostile.unlink()
    ordinary.unlink()


if __name__ == "__main__":
    main()
