"""TranscriptSessionStore against the Claude Agent SDK's own store, in one run.

    python benches/bench_claude_agent_sdk.py [--entries 10000] [--batch 0] [--reads 5]

The SDK ships no durable store: its reference is ``InMemorySessionStore`` (a
dict of lists), the floor any store is measured against. Beside it, the file
the Claude Code CLI itself writes, as a plain JSONL append (one ``write`` per
batch, no lock, no fsync): what a store that keeps nothing but the lines costs.

The same entries (a generated Claude Code session, ``import_gen.py``: streamed
assistant fragments, tool calls and results, file-history snapshots,
compactions) go through each:

* ``append``: ``--entries`` entries in batches, awaited one after the other,
  as the SDK's mirror sends them by default (``session_store_flush="batched"``:
  a batch per turn, at most 500 entries); ``--batch N`` sends N at a time
  instead (1: about what ``"eager"`` sends). The transcript writes each batch's
  lines and the conversation they change; when ``append`` returns they are in
  the kernel (nobody fsyncs here).
* ``load``: the whole session back, as a resume asks for it; the best of
  ``--reads`` calls, by a store that did not write it (a new process's).

Prints one row per measurement: the seconds each took, and the others' time
over ours (below 1: the transcript is slower, by the factor's inverse). Not a
test: the smoke test ``test_bench_claude_agent_sdk.py`` runs it once on a few entries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from import_gen import write_claude_code

KEY = {"project_key": "-home-me-proj", "session_id": "0b9f3c2e-1111-4222-8333-444455556666"}


def entries(n: int, folder: Path) -> list[dict[str, Any]]:
    """The first ``n`` lines of a generated Claude Code session, parsed."""
    path = folder / "session.jsonl"
    size = 2_000 * n
    while True:
        write_claude_code(str(path), size)
        lines = [line for line in path.read_bytes().split(b"\n") if line]
        if len(lines) >= n:
            return [json.loads(line) for line in lines[:n]]
        size *= 2


class JsonlFile:
    """The lines appended to one file per key, as the CLI writes its own: the floor of a file store."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def append(self, key: Any, batch: list[dict[str, Any]]) -> None:
        with open(self.folder / f"{key['session_id']}.jsonl", "ab") as f:
            f.write(b"".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
                             for e in batch))

    async def load(self, key: Any) -> list[dict[str, Any]]:
        with open(self.folder / f"{key['session_id']}.jsonl", "rb") as f:
            return [json.loads(line) for line in f]


def batches(data: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """``data`` in batches of ``size``; with 0, a turn each (a batch ends before each
    prompt a person typed), at most 500 entries, as the SDK's mirror batches them."""
    if size > 0:
        return [data[at:at + size] for at in range(0, len(data), size)]
    out: list[list[dict[str, Any]]] = [[]]
    for entry in data:
        content = entry["message"].get("content") if isinstance(entry.get("message"), dict) else None
        prompt = entry.get("type") == "user" and not (
            isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content))
        if out[-1] and (prompt or len(out[-1]) >= 500):
            out.append([])
        out[-1].append(entry)
    return out


async def measure(store: Any, reader: Any, data: list[dict[str, Any]], batch: int, reads: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    for one in batches(data, batch):
        await store.append(KEY, one)
    appended = time.perf_counter() - t0
    best = float("inf")
    for _ in range(reads):
        t0 = time.perf_counter()
        got = await reader.load(KEY)
        best = min(best, time.perf_counter() - t0)
    assert got == data, "the store lost or changed entries"
    return appended, best


def run(n: int, batch: int, reads: int, folder: Path) -> list[tuple[str, float, float, float]]:
    """Rows: (what, in-memory s, JSONL file s, transcript s)."""
    from claude_agent_sdk import InMemorySessionStore

    from agent_transcript.integrations.claude_agent_sdk import TranscriptSessionStore

    data = entries(n, folder)
    memory = InMemorySessionStore()
    in_memory = asyncio.run(measure(memory, memory, data, batch, reads))
    (folder / "jsonl").mkdir()
    jsonl = asyncio.run(measure(JsonlFile(folder / "jsonl"), JsonlFile(folder / "jsonl"), data, batch, reads))
    with TranscriptSessionStore(folder / "transcript") as store:
        ours = asyncio.run(measure(store, TranscriptSessionStore(folder / "transcript"), data, batch, reads))
    how = f"batches of {batch}" if batch else f"{len(batches(data, 0))} turns"
    return [
        (f"append {n} in {how}", in_memory[0], jsonl[0], ours[0]),
        (f"load {n}, best of {reads}", in_memory[1], jsonl[1], ours[1]),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=0, help="entries a batch (default 0: a turn each)")
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary folder)")
    args = ap.parse_args()
    from importlib.metadata import version

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        rows = run(args.entries, args.batch, args.reads, Path(d))
    print(f"claude-agent-sdk {version('claude-agent-sdk')}; files in {args.dir or tempfile.gettempdir()}")
    print(f"{'':32} {'in-memory':>10} {'JSONL file':>11} {'transcript':>11} {'mem/ours':>9} {'file/ours':>10}")
    for what, memory_s, file_s, ours_s in rows:
        print(f"{what:32} {memory_s:9.3f}s {file_s:10.3f}s {ours_s:10.3f}s "
              f"{memory_s / ours_s:8.3f}x {file_s / ours_s:9.3f}x")


if __name__ == "__main__":
    main()
