"""A synthetic but realistic agent transcript, for the ``bench`` command and the benches.

This is the project's benchmark generator (``gen_transcript.py`` in the shared
bench folder) carried inside the package, so that ``agent-transcript bench``
works for anyone who pip-installed the wheel. It must stay byte-for-byte
equivalent to that script: for the same ``mb``, ``seed`` and ``torn`` it writes
the same file (``benches/test_baselines.py`` pins the digests). Standard library
only, and no import from this package, so the benches can load it by path
without the native module.

The file follows SPEC.md: a session-meta line, then runs of an agent loop
(run-context, user turn, assistant turns with tool calls, tool-dispatched, tool
message, tool-settled), with grants, elisions and compactions sprinkled in at
realistic rates. Content mixes ASCII code, prose, escapes and multi-byte UTF-8.
``torn`` appends half of one more line, cut inside a multi-byte character, as a
crash mid-write would leave it.

Because the generator is deterministic and only ever appends whole runs, the
file for a smaller ``mb`` (same seed) is a prefix of the file for a larger one;
``write_transcript`` reports where those prefixes end (``marks``), so one
pass can produce both the 1 GiB and the 100 MiB file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

__all__ = ["Gen", "Generated", "SmallGen", "write_small_transcript", "write_transcript", "main"]

MIB = 1024 * 1024

WORDS = ("the loop writes every message it is handed that this does not already have "
         "agent transcript resume crash compaction elision tool result summary grant "
         "def return self path bytes json line offset digest 日本語 données naïve 🚀 Ω").split()


def canonical(value: Any) -> str:
    """The canonical JSON text of ``value`` (the stdlib oracle from SPEC)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(text: str) -> str:
    """``"sha256:" + hexdigest`` of ``text`` encoded as UTF-8."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class Gen:
    """The generator's state: a seeded RNG, a clock, and the live ids it may target."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = datetime(2026, 8, 9, 13, 10, 8, 542283, tzinfo=timezone.utc)
        self.counter = 0
        self.live: list[str] = []        # live message ids, for elision/compaction targets
        self.tool_ids: list[str] = []    # live tool-message ids
        self.sections: dict[str, str] = {}  # digest -> carrying envelope id

    def new_id(self) -> str:
        self.counter += 1
        return "%032x" % (self.rng.getrandbits(96) << 32 | self.counter)

    def ts(self) -> str:
        self.clock += timedelta(microseconds=self.rng.randint(1000, 9_000_000))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def env(self, type_: str, payload: Any, id_: str | None = None) -> tuple[str, str]:
        id_ = id_ or self.new_id()
        line = canonical({"id": id_, "payload": payload, "ts": self.ts(), "type": type_, "v": 1})
        return id_, line + "\n"

    def text(self, n_words: int) -> str:
        r = self.rng
        return " ".join(r.choice(WORDS) for _ in range(n_words))

    def code(self, n_lines: int) -> str:
        r = self.rng
        out = []
        for i in range(n_lines):
            ind = "    " * r.randint(0, 3)
            out.append(f'{ind}x_{i} = "{r.choice(WORDS)}"\t# {self.text(r.randint(2, 8))}')
        return "\n".join(out)

    def run(self, out: list[str]) -> None:
        """Append the lines of one agent run to ``out``."""
        r = self.rng
        run_id = self.new_id()
        facts = [["date", self.clock.strftime("%Y-%m-%d")], ["branch", f"feature-{r.randint(1, 9)}"],
                 ["cwd", "/home/user/project"]]
        payload_sections: list[dict[str, str]] = []
        rc_id = self.new_id()
        for name, body in (("identity", "You are sadna, a careful coding agent. " * 20),
                           ("AGENTS.md", "Run the tests before you commit.\n" * 40),
                           ("date", f"Today is {facts[0][1]}.")):
            d = digest(body)
            if d in self.sections:
                payload_sections.append({"digest": d, "name": name, "rendered-in": self.sections[d]})
            else:
                self.sections[d] = rc_id
                payload_sections.append({"digest": d, "name": name, "text": body})
        _, line = self.env("run-context", {"facts": facts, "sections": payload_sections}, rc_id)
        out.append(line)
        mid, line = self.env("message", {"role": "user", "content": self.text(r.randint(5, 60))})
        self.live.append(mid)
        out.append(line)
        for round_ in range(r.randint(1, 6)):
            calls = []
            for _ in range(r.choice((0, 1, 1, 1, 2, 3))):
                cid = "call_" + self.new_id()[:24]
                args = {"path": f"src/{r.choice(WORDS)}.py", "limit": r.randint(1, 500)}
                calls.append((cid, r.choice(("read_file", "grep", "bash", "edit")), args))
            payload: dict[str, Any] = {"role": "assistant", "content": self.text(r.randint(0, 120)),
                                       "finish-reason": "tool_calls" if calls else "stop"}
            if calls:
                payload["tool_calls"] = [{"function": {"arguments": canonical(a), "name": t},
                                          "id": c, "type": "function"} for c, t, a in calls]
            mid, line = self.env("message", payload)
            self.live.append(mid)
            out.append(line)
            for cid, tool, args in calls:
                op, line = self.env("tool-dispatched", {
                    "arguments": args, "arguments-digest": digest(canonical(args)), "call-id": cid,
                    "idempotency": "idempotent" if tool != "bash" else "unknown",
                    "round": round_, "run-id": run_id, "tool": tool})
                out.append(line)
                size = r.choice((3, 10, 40, 40, 120, 400, 1500))
                result = self.code(size)
                tid, line = self.env("message", {"content": result, "role": "tool", "tool_call_id": cid})
                self.live.append(tid)
                self.tool_ids.append(tid)
                out.append(line)
                _, line = self.env("tool-settled", {
                    "duration": round(r.random() * 3, 6), "op-id": op, "outcome": "completed",
                    "result-digest": digest(result)})
                out.append(line)
            if not calls:
                break
        if r.random() < 0.05:
            _, line = self.env("grants", {"grants": {"bash": "ask", "read_file": "always",
                                                      "edit": r.choice(("always", "ask"))}})
            out.append(line)
        if len(self.tool_ids) > 8 and r.random() < 0.3:
            old = self.tool_ids[:4]
            del self.tool_ids[:4]
            _, line = self.env("elision", {"items": [{"id": i, "stub": "[elided: old tool result]"} for i in old]})
            out.append(line)
        if len(self.live) > 200 and r.random() < 0.05:
            cut = self.live[len(self.live) * 3 // 4]
            cid, line = self.env("compaction", {
                "fallback": False, "replaces-through-id": cut, "summary": self.text(300),
                "tokens-after": r.randint(2000, 9000), "tokens-before": r.randint(90000, 150000)})
            keep_from = self.live.index(cut) + 1
            self.live = [cid] + self.live[keep_from:]
            self.tool_ids = [t for t in self.tool_ids if t in set(self.live)]
            out.append(line)

    def torn_tail(self) -> bytes:
        """Half of one more message line, cut inside a 4-byte character."""
        _, line = self.env("message", {"role": "assistant", "content": "半分だけ書かれた行 🚀🚀🚀"})
        raw = line.encode()
        cut = raw.index("🚀".encode()) + 2          # inside the 4-byte emoji
        return raw[:cut]


class SmallGen(Gen):
    """The ``small`` profile: lines shaped like imported Claude Code / Codex
    transcripts (and adapter-written ones, one framework item per line).

    Their median line is 250-450 bytes: short user turns, assistant turns of a
    sentence or two, one tool call per turn, tool results of a few lines;
    elisions and compactions at the yardstick's rates. No run-context (an
    importer has none to write).
    """

    def run(self, out: list[str]) -> None:
        r = self.rng
        run_id = self.new_id()
        mid, line = self.env("message", {"role": "user", "content": self.text(r.randint(3, 40))})
        self.live.append(mid)
        out.append(line)
        for round_ in range(r.randint(1, 12)):
            call = r.random() < 0.7
            payload: dict[str, Any] = {"role": "assistant", "content": self.text(r.randint(0, 30))}
            cid = "call_" + self.new_id()[:24]
            tool = r.choice(("Read", "Grep", "Bash", "Edit"))
            args = {"path": f"src/{r.choice(WORDS)}.py"}
            if call:
                payload["tool_calls"] = [{"function": {"arguments": canonical(args), "name": tool},
                                          "id": cid, "type": "function"}]
            mid, line = self.env("message", payload)
            self.live.append(mid)
            out.append(line)
            if not call:
                break
            op, line = self.env("tool-dispatched", {
                "arguments": args, "arguments-digest": digest(canonical(args)), "call-id": cid,
                "idempotency": "unknown", "round": round_, "run-id": run_id, "tool": tool})
            out.append(line)
            result = self.code(r.choice((1, 1, 2, 3, 5)))
            tid, line = self.env("message", {"content": result, "role": "tool", "tool_call_id": cid})
            self.live.append(tid)
            self.tool_ids.append(tid)
            out.append(line)
            _, line = self.env("tool-settled", {"op-id": op, "outcome": "completed"})
            out.append(line)
        if len(self.tool_ids) > 8 and r.random() < 0.1:
            old = self.tool_ids[:2]
            del self.tool_ids[:2]
            _, line = self.env("elision", {"items": [{"id": i, "stub": "[elided]"} for i in old]})
            out.append(line)
        if len(self.live) > 200 and r.random() < 0.02:
            cut = self.live[len(self.live) * 3 // 4]
            cid, line = self.env("compaction", {
                "fallback": False, "replaces-through-id": cut, "summary": self.text(60),
                "tokens-after": r.randint(2000, 9000), "tokens-before": r.randint(90000, 150000)})
            keep_from = self.live.index(cut) + 1
            self.live = [cid] + self.live[keep_from:]
            keep = set(self.live)
            self.tool_ids = [t for t in self.tool_ids if t in keep]
            out.append(line)


@dataclass(frozen=True)
class Generated:
    """What ``write_transcript`` wrote.

    Attributes:
        size: bytes of whole lines written (the torn tail not included).
        torn_tail: the bytes ``torn=True`` appends (computed either way).
        marks: for each requested ``mb`` mark, the length of the prefix that is
            exactly the file this generator writes for that ``mb`` (same seed).
    """

    size: int
    torn_tail: bytes
    marks: dict[float, int] = field(default_factory=dict)


def write_transcript(out: str | os.PathLike[str], mb: float, seed: int = 1, torn: bool = False,
                     *, marks: Sequence[float] = (), profile: str = "yardstick") -> Generated:
    """Write the transcript for ``mb`` MiB and ``seed`` to ``out`` (truncating it).

    ``profile`` is ``"yardstick"`` (the shared generator's lines, 4.5 KB on
    average) or ``"small"`` (``SmallGen``'s, a median of 250-450 bytes).
    """
    if profile not in ("yardstick", "small"):
        raise ValueError(f"profile must be 'yardstick' or 'small', not {profile!r}")
    g = Gen(seed) if profile == "yardstick" else SmallGen(seed)
    target = int(mb * MIB)
    pending = sorted((int(m * MIB), m) for m in marks)
    found: dict[float, int] = {}
    written = 0
    with open(out, "wb") as f:
        _, line = g.env("session-meta", {"agent": "sadna", "cwd": "/home/user/project", "model": "kimi-k2"})
        data = line.encode()
        f.write(data)
        written += len(data)
        while True:
            while pending and written >= pending[0][0]:
                found[pending.pop(0)[1]] = written
            if written >= target:
                break
            chunk: list[str] = []
            g.run(chunk)
            data = "".join(chunk).encode()
            f.write(data)
            written += len(data)
        tail = g.torn_tail()
        if torn:
            f.write(tail)
    for _, m in pending:               # marks beyond the target: not a prefix of this file
        found.pop(m, None)
    return Generated(size=written, torn_tail=tail, marks=found)


def main(argv: list[str] | None = None) -> int:
    """``python -m agent_transcript.bench.generator OUT --mb 200 [--seed 1] [--torn] [--profile small]``."""
    ap = argparse.ArgumentParser(description="Write a synthetic agent transcript, for benchmarks.")
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--torn", action="store_true")
    ap.add_argument("--profile", choices=("yardstick", "small"), default="yardstick")
    a = ap.parse_args(argv)
    gen = write_transcript(a.out, a.mb, a.seed, a.torn, profile=a.profile)
    print(f"wrote {a.out}: {gen.size / MIB:.1f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
