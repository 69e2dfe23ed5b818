"""TranscriptHistoryProvider against the Agent Framework's FileHistoryProvider, in one run.

    python benches/bench_agent_framework.py [--messages 10000] [--file-messages 1000] [--tail 10] [--reads 5]

The same messages (a run's usual mix: user turns, function calls, their
results, assistant answers; about 300 bytes each as JSON) go through both
providers, each into fresh files:

* ``save_messages``, one call per message, awaited, as the framework saves
  after each model call; when it returns the message is in the kernel (neither
  provider fsyncs here). The FileHistoryProvider reads and parses its whole
  file on every save, so a save costs it time in proportion to the history
  (1,000 saves take about a minute, 10,000 over an hour): it saves the first
  ``--file-messages`` one at a time (ours the same, for the ratio), then both
  are timed on the last
  ``--tail`` saves onto a history of ``--messages`` (the rest written by one
  save), and ours also saves all ``--messages`` one at a time.
* ``get_messages``: the whole history of ``--messages``, as the framework asks
  for it before every run; the best of ``--reads`` calls (the machine may be
  shared: the best is the one least disturbed).

Prints one row per measurement: the seconds each provider took, and the
FileHistoryProvider's time over ours (above 1: the transcript is faster). Not a
test: the smoke test ``test_bench_agent_framework.py`` runs it once on a few messages.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from bench_openai_agents import timed  # imports no framework until it runs


def messages(n: int) -> list[Any]:
    """``n`` framework messages in the shapes a run with tools stores, each different."""
    from agent_framework import Content, Message

    out: list[Any] = []
    for i in range(n):
        k = i % 4
        if k == 0:
            out.append(Message("user", [f"turn {i}: read src/agent/loop.py and tell me why the resume "
                                        "path sends the tool result twice; cite line numbers."]))
        elif k == 1:
            out.append(Message("assistant", [Content.from_function_call(
                f"call_{i}", "read_file", arguments={"path": "src/agent/loop.py", "start": i, "end": i + 40})]))
        elif k == 2:
            out.append(Message("tool", [Content.from_function_result(
                f"call_{i - 1}", result=f"{i}: def resume(state):\n    send(state.result)  # line {i}\n" * 3)]))
        else:
            out.append(Message("assistant", [f"Line {i - 2} sends it once, and line {i} again on resume."]))
    return out


async def one_at_a_time(provider: Any, session_id: str, data: list[Any]) -> float:
    t0 = time.perf_counter()
    for message in data:
        await provider.save_messages(session_id, [message])
    seconds = time.perf_counter() - t0
    got = await provider.get_messages(session_id)
    assert [m.to_dict() for m in got] == [m.to_dict() for m in data], "the provider lost or changed messages"
    return seconds


async def measure(provider: Any, data: list[Any], first: int, tail: int, reads: int,
                  all_one_at_a_time: bool) -> dict[str, float]:
    out = {"first": await one_at_a_time(provider, "first", data[:first])}
    await provider.save_messages("tail", data[:len(data) - tail])
    t0 = time.perf_counter()
    for message in data[len(data) - tail:]:
        await provider.save_messages("tail", [message])
    out["tail"] = time.perf_counter() - t0
    out["get"] = min([await timed(lambda: provider.get_messages("tail")) for _ in range(reads)])
    assert len(await provider.get_messages("tail")) == len(data)
    if all_one_at_a_time:
        out["all"] = await one_at_a_time(provider, "all", data)
    return out


def run(n: int, first: int, tail: int, reads: int, folder: Path) -> list[tuple[str, float | None, float, int]]:
    """Rows: (what, FileHistoryProvider s or None when not run, transcript s, calls timed)."""
    from agent_framework import FileHistoryProvider

    from agent_transcript.integrations.agent_framework import TranscriptHistoryProvider

    data = messages(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the FileHistoryProvider is experimental, and says so
        theirs = asyncio.run(measure(FileHistoryProvider(folder / "file"), data, first, tail, reads, False))
    with TranscriptHistoryProvider(folder / "transcript") as provider:
        ours = asyncio.run(measure(provider, data, first, tail, reads, True))
    return [
        (f"save x{first}, 1 each, from empty", theirs["first"], ours["first"], first),
        (f"save x{tail}, 1 each, onto {n - tail}", theirs["tail"], ours["tail"], tail),
        (f"get_messages() of {n}, best of {reads}", theirs["get"], ours["get"], 1),
        (f"save x{n}, 1 each, from empty", None, ours["all"], n),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--file-messages", type=int, default=1_000,
                    help="how many saves from empty both providers make one at a time")
    ap.add_argument("--tail", type=int, default=10, help="saves timed onto the full history")
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary folder)")
    args = ap.parse_args()
    from importlib.metadata import version

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        rows = run(args.messages, args.file_messages, args.tail, args.reads, Path(d))
    print(f"agent-framework-core {version('agent-framework-core')}; files in {args.dir or tempfile.gettempdir()}")
    print(f"{'':34} {'FileHistory':>12} {'transcript':>11} {'ratio':>8}")
    for what, file_s, ours_s, count in rows:
        theirs = f"{file_s:11.3f}s" if file_s is not None else f"{'(not run)':>12}"
        ratio = f"{file_s / ours_s:7.1f}x" if file_s is not None else f"{'':>8}"
        print(f"{what:34} {theirs} {ours_s:10.3f}s {ratio}   ({count} calls)")


if __name__ == "__main__":
    main()
