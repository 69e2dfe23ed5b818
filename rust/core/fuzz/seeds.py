#!/usr/bin/env python3
"""Write the seed inputs of every fuzz target into seeds/<target>/ (not committed).

    python3 rust/core/fuzz/seeds.py [--generator PATH]

Seeds come from the test fixtures (tests/data), small transcripts from the
benchmark generator (gen_transcript.py, if found), and hand-written samples of
the real format (every envelope type, rewinds, replacements, escapes, lone
surrogates, numbers at the edges, deep nesting). `cargo fuzz cmin` then
minimises them into corpus/<target>/, which is what is committed (run.sh
--cmin does both).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TARGETS = ["json_reader", "envelope", "tail_check", "lines", "canonical_roundtrip", "replay"]

TS = "2026-08-09T13:10:08.542283Z"


def env(i: str, type_: str, payload: object) -> str:
    return json.dumps({"id": i, "payload": payload, "ts": TS, "type": type_, "v": 1},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def samples() -> list[str]:
    """A transcript of every envelope type, as the library writes it."""
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"p\":1}"}}
    return [
        env("m", "session-meta", {"agent": "fuzz", "cwd": "/tmp/ü"}),
        env("s", "message", {"content": "You are careful.", "role": "system", "sysprompt": True}),
        env("rc", "run-context", {"facts": [["date", "2026-08-09"]],
                                  "sections": [{"digest": "sha256:aa", "name": "id", "text": "I am"},
                                               {"digest": "sha256:bb", "name": "x", "rendered-in": "rc"}]}),
        env("u1", "message", {"content": "héllo 日本語 🚀", "role": "user", "finish-reason": "stop"}),
        env("a1", "message", {"content": None, "role": "assistant", "tool_calls": [call]}),
        env("op", "tool-dispatched", {"arguments": {"p": 1}, "arguments-digest": "sha256:cc", "call-id": "c1",
                                      "idempotency": "read-only", "round": 1, "run-id": "r", "tool": "read"}),
        env("t1", "message", {"content": "x" * 40, "role": "tool", "tool_call_id": "c1"}),
        env("st", "tool-settled", {"duration": 0.25, "op-id": "op", "outcome": "completed"}),
        env("g", "grants", {"grants": {"read": "always"}}),
        env("el", "elision", {"items": [{"id": "t1", "stub": "[elided 40 chars]"}]}),
        env("k1", "compaction", {"fallback": False, "replaces-through-id": "t1", "summary": "read a file",
                                 "tokens-after": 10, "tokens-before": 100}),
        env("u2", "message", {"content": "next", "role": "user", "x-extra": [1, 2.5, None, True]}),
        env("k2", "compaction", {"fallback": False, "replaces-through-id": "u2", "summary": "kept",
                                 "tokens-after": 4, "tokens-before": 40,
                                 "replacement": [{"content": "sys", "role": "system", "sysprompt": True},
                                                 {"content": "the turn", "role": "user", "item": {"id": "x"}},
                                                 {"content": "on it", "role": "assistant", "depth": 2}]}),
        env("el2", "elision", {"items": [{"id": "k2:1", "stub": "[turn]"}]}),
        env("rw", "rewind", {"through-id": "k2:1"}),
        env("op2", "tool-dispatched", {"arguments": "not json", "call-id": "c2", "tool": "w"}),
        env("u3", "message", {"content": "after", "role": "user", "sticky": True}),
        env("rw2", "rewind", {"through-id": None}),
        env("x", "x-future-type", [1, {"a": "b"}]),
        env("u4", "message", {"content": [{"type": "text", "text": "parts"}], "role": "user"}),
    ]


JSON_SAMPLES = [
    "null", "true", "false", "0", "-0", "-0.0", "1e-7", "1E+400", "2.5e-324", "123456789012345678901234567890",
    "9" * 4301, "[1,2.5,-3e10]", '{"a":1,"a":2}', '"\\ud800"', '"\\ud83d\\ude00"', '"\\udc00\\ud800"',
    '"a\\u0000b\\n\\t\\"\\\\\\/"', '"\u2028\u2029"', ' {"k" : [ null , {} , [] ] } ', "[" * 512 + "]" * 512,
    "[" * 513 + "]" * 513, '{"a":' * 40 + "1" + "}" * 40, '"\\uD800\\uDC00"', "[1,]", "01", '"\x7f"',
]


def generated(generator: Path | None) -> list[bytes]:
    if generator is None or not generator.exists():
        return []
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed, mb, torn in [(1, 0.02, False), (2, 0.01, True), (3, 0.005, False)]:
            path = Path(tmp) / f"g{seed}.jsonl"
            cmd = [sys.executable, str(generator), str(path), "--mb", str(mb), "--seed", str(seed)]
            subprocess.run(cmd + (["--torn"] if torn else []), check=True, capture_output=True)
            out.append(path.read_bytes())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generator", type=Path, default=Path("/work/shared/bench/gen_transcript.py"))
    ap.add_argument("--out", type=Path, default=HERE / "seeds")
    args = ap.parse_args()
    files = [p.read_bytes() for p in sorted((ROOT / "tests/data").rglob("*")) if p.is_file()]
    files += generated(args.generator)
    lines_ = samples()
    real = ("\n".join(lines_) + "\n").encode()
    files += [real, real[:-7], real.replace(b"\n", b"\n \t\n", 3), b"\n".join(l.encode() for l in lines_)]
    lines = {line for f in files for line in f.split(b"\n") if line.strip()}
    lines |= {s.encode() for s in JSON_SAMPLES}
    seeds: dict[str, set[bytes]] = {t: set() for t in TARGETS}
    seeds["json_reader"] = set(lines)
    seeds["envelope"] = set(lines)
    for f in files:
        for step in (b"\x00", b"\x07", b"\x3f"):
            seeds["tail_check"].add(step + f)
            seeds["lines"].add(step + f)
        seeds["replay"].add(f if f.startswith(b"{") else b"{}\n" + f)
    # Structured replay inputs and canonical values: arbitrary bytes are a start.
    for i in range(32):
        blob = hashlib.sha256(str(i).encode()).digest() * (1 + i % 4)
        seeds["canonical_roundtrip"].add(blob)
        seeds["replay"].add(b"\x01" + blob)
    for line in list(lines)[:200]:
        seeds["canonical_roundtrip"].add(line)
    for target, items in seeds.items():
        d = args.out / target
        d.mkdir(parents=True, exist_ok=True)
        for item in items:
            (d / hashlib.sha1(item).hexdigest()).write_bytes(item)
        print(f"{target}: {len(items)} seeds in {d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
