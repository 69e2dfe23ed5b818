"""Scenario 9: memory and time stay bounded on hostile input.

A file of 64 MiB (1 GiB under ``AT_LONG=1``) that is one line without ``\\n``
(an unterminated string, a torn last line after a good session-meta, nesting
``[[[…``, random bytes with no newline) or random garbage: ``load`` and
``peek`` each run in a fresh process, finish in bounded time, fail cleanly
(``CorruptTranscript``, or a repair) and peak at no more than twice the file's
size above an interpreter's baseline. Peak RSS is the child's own, from
``wait4``, measured from a small helper process so the fork of a big parent
is not counted. An address-space limit keeps a runaway child from taking the
machine down with it.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from rkit import LONG, figure, run_python, scale

MiB = 1 << 20

# Runs the operation in a grandchild and reports its peak RSS (KiB), exit and time.
HELPER = r"""
import json, os, resource, subprocess, sys, time
op, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
code = '''
import json, resource, sys
from agent_transcript import Session
op, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    if op == "peek":
        p = Session.peek(path)
        out = ["peek", p.error, len(p.envelopes), len(p.warnings)]
    else:
        with Session.load(path) as s:
            out = ["loaded", len(s.events), s.warnings]
except Exception as e:
    out = [type(e).__name__, str(e)[:200]]
print(json.dumps(out))
'''
started = time.monotonic()
p = subprocess.Popen([sys.executable, "-c", code, op, path, str(limit)], stdout=subprocess.PIPE)
stdout = p.stdout.read()
_, status, usage = os.wait4(p.pid, 0)
print(json.dumps({"rss_kib": usage.ru_maxrss, "status": status, "seconds": time.monotonic() - started,
                  "out": stdout.decode(errors="replace")}))
"""


def measure(op: str, path: Path, limit: int) -> dict:
    return json.loads(run_python(HELPER, op, str(path), str(limit), timeout=3600).stdout)


def write(path: Path, head: bytes, body: bytes, size: int) -> None:
    """``head`` then ``body`` repeated up to ``size`` bytes, written in pieces."""
    with open(path, "wb") as f:
        f.write(head)
        left = size - len(head)
        while left > 0:
            piece = body[: min(len(body), left)]
            f.write(piece)
            left -= len(piece)


META = b'{"id":"m","payload":{},"ts":"2026-08-09T13:10:08.542283Z","type":"session-meta","v":1}\n'
rng = random.Random(9)
NOISE = bytes(rng.randrange(256) for _ in range(MiB))

CASES = {
    # name: (head, repeated body, what load must do)
    "unterminated string": (b'{"id":"', b"a" * MiB, "CorruptTranscript"),
    "torn huge last line": (META + b'{"id":"x","payload":{"content":"', "é日🚀".encode() * 30_000,
                            "repaired"),
    "deep nesting": (b"", b"[" * MiB, "CorruptTranscript"),
    "noise without newline": (b"", NOISE.replace(b"\n", b" "), "CorruptTranscript"),
    "noise": (b"", NOISE, "CorruptTranscript"),
}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> int:
    small = tmp_path_factory.mktemp("base") / "small.jsonl"
    small.write_bytes(META)
    return max(measure(op, small, 8 << 30)["rss_kib"] for op in ("peek", "load")) * 1024


@pytest.mark.parametrize("name", list(CASES))
def test_bounded_memory_and_time(tmp_path: Path, baseline: int, name: str) -> None:
    size = scale(64, 1024) * MiB
    head, body, expected = CASES[name]
    path = tmp_path / "hostile.jsonl"
    limit = baseline + 3 * size + 1024 * MiB
    results = {}
    for op in ("peek", "load"):  # peek first: load may repair the file
        write(path, head, body, size)
        started = time.monotonic()
        r = measure(op, path, limit)
        r["seconds"] = round(time.monotonic() - started, 1)
        results[op] = r
        assert r["status"] == 0, (op, r)
        out = json.loads(r["out"])
        if op == "peek":
            assert out[0] == "peek", out
        elif expected == "repaired":
            assert out[0] == "loaded" and out[1] == 1 and len(out[2]) == 1, out
        else:
            assert out[0] == expected, out
        grown = r["rss_kib"] * 1024 - baseline
        assert grown <= 2 * size + 64 * MiB, f"{op} grew {grown / MiB:.0f} MiB on a {size / MiB:.0f} MiB file"
    figure(f"9. hostile {name}", file_mib=size // MiB,
           peek_peak_mib=round(results["peek"]["rss_kib"] / 1024),
           load_peak_mib=round(results["load"]["rss_kib"] / 1024),
           baseline_mib=round(baseline / MiB), peek_seconds=results["peek"]["seconds"],
           load_seconds=results["load"]["seconds"], long=LONG)


def test_many_tiny_malformed_lines(tmp_path: Path, baseline: int) -> None:
    size = scale(16, 64) * MiB
    path = tmp_path / "lines.jsonl"
    write(path, b"", b"1\n" * (MiB // 2), size)
    r = measure("peek", path, baseline + 3 * size + 512 * MiB)
    assert r["status"] == 0 and json.loads(r["out"])[0] == "peek", r
    assert r["rss_kib"] * 1024 - baseline <= 2 * size
    assert os.path.getsize(path) == size
