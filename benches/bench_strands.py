"""TranscriptSessionRepository against Strands' FileSessionManager, in one run.

    python benches/bench_strands.py [--messages 10000] [--reads 5]

The same messages (a run's usual mix: user turns, tool calls, their results,
assistant answers; about 300 bytes each as JSON) go through both stores, each
into a fresh folder:

* ``create_message``, one call per message, as Strands' session manager
  stores each message the moment the agent adds it; when it returns the
  message is in the kernel (neither store fsyncs).
* restoring the agent: a new store object, then ``read_session``,
  ``read_agent`` and ``list_messages`` of the whole history, as
  ``RepositorySessionManager`` does when an agent starts on a saved session;
  the best of ``--reads`` (the machine may be shared: the best is the one
  least disturbed).

Prints one row per measurement: the seconds each store took, and the
FileSessionManager's time over ours (above 1: the transcript is faster). Not a
test: the smoke test ``test_bench_strands.py`` runs it once on a few messages.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_fleet import best  # the best of a few runs, as the other benches take it


def messages(n: int) -> list[dict[str, Any]]:
    """``n`` Strands messages in the shapes a run with tools stores, each different."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        k = i % 4
        if k == 0:
            out.append({"role": "user", "content": [{"text": f"turn {i}: read src/agent/loop.py and tell me why "
                                                             "the resume path sends the tool result twice."}]})
        elif k == 1:
            out.append({"role": "assistant", "content": [{"toolUse": {
                "toolUseId": f"call_{i}", "name": "read_file",
                "input": {"path": "src/agent/loop.py", "start": i, "end": i + 40}}}]})
        elif k == 2:
            out.append({"role": "user", "content": [{"toolResult": {
                "toolUseId": f"call_{i - 1}", "status": "success",
                "content": [{"text": f"{i}: def resume(state):\n    send(state.result)  # line {i}\n" * 3}]}}]})
        else:
            out.append({"role": "assistant", "content": [{"text": f"Line {i - 2} sends it once, and line {i} "
                                                                  "again on resume."}]})
    return out


def measure(open_store: Callable[[], Any], data: list[dict[str, Any]], reads: int) -> dict[str, float]:
    """Write ``data`` one message at a time into a new session, then restore it ``reads`` times."""
    from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

    store = open_store()
    store.create_session(Session("bench", SessionType.AGENT))
    store.create_agent("bench", SessionAgent("main", {}, {"removed_message_count": 0}))
    records = [SessionMessage.from_message(m, i) for i, m in enumerate(data)]
    t0 = time.perf_counter()
    for record in records:
        store.create_message("bench", "main", record)
    write = time.perf_counter() - t0
    close = getattr(store, "close", None)
    if close is not None:
        close()

    def restore() -> None:
        fresh = open_store()
        assert fresh.read_session("bench") is not None and fresh.read_agent("bench", "main") is not None
        got = fresh.list_messages("bench", "main")
        assert [m.message for m in got] == data, "the store lost or changed messages"
        if close is not None:
            fresh.close()

    return {"write": write, "restore": best(restore, reads)}


def run(n: int, reads: int, folder: Path) -> list[tuple[str, float, float, int]]:
    """Rows: (what, FileSessionManager s, transcript s, calls timed)."""
    from strands.session import FileSessionManager

    from agent_transcript.integrations.strands import TranscriptSessionRepository

    data = messages(n)
    # (a FileSessionManager is its own repository; it makes a session of its own id when built)
    theirs = measure(lambda: FileSessionManager("unused", storage_dir=str(folder / "file")), data, reads)
    ours = measure(lambda: TranscriptSessionRepository(folder / "transcript"), data, reads)
    return [
        (f"create_message x{n}, 1 each", theirs["write"], ours["write"], n),
        (f"restore {n} messages, best of {reads}", theirs["restore"], ours["restore"], 1),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary folder)")
    args = ap.parse_args()
    from importlib.metadata import version

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        rows = run(args.messages, args.reads, Path(d))
    print(f"strands-agents {version('strands-agents')}; files in {args.dir or tempfile.gettempdir()}")
    print(f"{'':34} {'FileSession':>12} {'transcript':>11} {'ratio':>8}")
    for what, file_s, ours_s, count in rows:
        print(f"{what:34} {file_s:11.3f}s {ours_s:10.3f}s {file_s / ours_s:7.1f}x   ({count} calls)")


if __name__ == "__main__":
    main()
