"""TranscriptSessionService against ADK's SqliteSessionService, in one run.

    python benches/bench_google_adk.py [--events 10000] [--reads 5]

The SqliteSessionService is where ``adk web`` and ``adk run`` keep sessions by
default (``.adk/session.db``): ADK's own durable store. The same events (a run's
usual mix: the user's message, the model's function call, its response, the
model's answer; about 400 bytes each as JSON) go through both services, each
into fresh files:

* ``append_event``, one call per event, awaited, as the Runner appends each
  event it yields. SQLite commits each one to the disk (its default
  ``synchronous=FULL``): it is set against ours with ``durability="fsync"``
  (on the disk when it returns), and ours with the default ``"flush"`` (in the
  kernel when it returns: survives a killed process, not a power cut) is
  shown against it too.
* ``get_session``: the whole history, as the Runner asks for it before every
  run; the best of ``--reads`` calls (the machine may be shared: the best is
  the one least disturbed), each from a service that has the session open.

Prints one row per measurement: the seconds each service took, and the
SqliteSessionService's time over ours (above 1: the transcript is faster). Not
a test: the smoke test ``test_bench_google_adk.py`` runs it once on a few events.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_openai_agents import timed  # imports no framework until it runs


def events(n: int) -> list[Any]:
    """``n`` ADK events in the shapes a run with tools appends, each different."""
    from google.adk.events.event import Event
    from google.genai import types

    out: list[Any] = []
    for i in range(n):
        k = i % 4
        if k == 0:
            content = types.Content(role="user", parts=[types.Part.from_text(
                text=f"turn {i}: read src/agent/loop.py and tell me why the resume "
                     "path sends the tool result twice; cite line numbers.")])
        elif k == 1:
            content = types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                id=f"adk-call-{i}", name="read_file", args={"path": "src/agent/loop.py", "start": i, "end": i + 40}))])
        elif k == 2:
            content = types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                id=f"adk-call-{i - 1}", name="read_file",
                response={"result": f"{i}: def resume(state):\n    send(state.result)  # line {i}\n" * 3}))])
        else:
            content = types.Content(role="model", parts=[types.Part.from_text(
                text=f"Line {i - 2} sends it once, and line {i} again on resume.")])
        out.append(Event(invocation_id=f"e-{i // 4}", author="user" if k == 0 else "helper", content=content,
                         timestamp=1_800_000_000.0 + i))
    return out


async def measure(service: Any, data: list[Any], reads: int) -> dict[str, float]:
    session = await service.create_session(app_name="bench", user_id="ann", session_id="s")
    t0 = time.perf_counter()
    for event in data:
        await service.append_event(session, event)
    out = {"append": time.perf_counter() - t0}

    async def get() -> Any:
        return await service.get_session(app_name="bench", user_id="ann", session_id="s")

    out["get"] = min([await timed(get) for _ in range(reads)])
    got = await get()
    assert got.events == data, "the service lost or changed events"
    return out


def run(n: int, reads: int, folder: Path) -> list[tuple[str, float, float, int]]:
    """Rows: (what, SqliteSessionService s, transcript s, calls timed)."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from agent_transcript.integrations.google_adk import TranscriptSessionService

    data = events(n)
    theirs = asyncio.run(measure(SqliteSessionService(str(folder / "session.db")), data, reads))
    with TranscriptSessionService(folder / "fsync", durability="fsync") as service:
        synced = asyncio.run(measure(service, data, reads))
    with TranscriptSessionService(folder / "flush") as service:
        ours = asyncio.run(measure(service, data, reads))
    return [
        (f"append_event x{n}, on the disk", theirs["append"], synced["append"], n),
        (f"append_event x{n}, ours in the kernel", theirs["append"], ours["append"], n),
        (f"get_session() of {n}, best of {reads}", theirs["get"], ours["get"], 1),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temporary folder)")
    args = ap.parse_args()
    from importlib.metadata import version

    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        rows = run(args.events, args.reads, Path(d))
    print(f"google-adk {version('google-adk')}; files in {args.dir or tempfile.gettempdir()}")
    print(f"{'':38} {'Sqlite':>11} {'transcript':>11} {'ratio':>8}")
    for what, theirs_s, ours_s, count in rows:
        print(f"{what:38} {theirs_s:10.3f}s {ours_s:10.3f}s {theirs_s / ours_s:7.1f}x   ({count} calls)")


if __name__ == "__main__":
    main()
