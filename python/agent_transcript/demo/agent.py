"""The scripted agent of ``agent-transcript demo``: no model, no network.

Run as ``python -m agent_transcript.demo.agent PATH``. It writes a transcript the
way an agent loop does (meta, run context, messages, tool calls and their
settles, grants, an artifact, an elision, a compaction), then, in the middle of
its fourth round, with two tool calls in flight, starts writing a line, gets
half of it into the file, prints ``ready`` and waits to be killed: the parent
sends it SIGKILL. That is what a crash mid-write leaves behind: a torn last
line, one tool call whose result is in the file but whose settle line is not,
and one that may or may not have run.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from datetime import datetime, timezone
from typing import Any

from .. import Message, Session, digest

RUN_ID = "run-1"

SYSTEM = (
    "You are a careful coding agent working in a git checkout. Read before you "
    "write, keep changes small, and run the tests before you say you are done."
)
IDENTITY = "agent: demo-agent 1.0 (scripted; no model is called)"
AGENTS_MD = (
    "# AGENTS.md\n\n* Python 3.10+, stdlib only.\n* Tests: `python -m pytest -q`.\n"
    "* Never push; the human reviews every commit."
)
SOURCE = '''"""Parsing the timestamps our logs carry."""
from datetime import datetime

FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"


def parse(text: str) -> datetime:
    """A log timestamp, e.g. 2026-08-09T13:10:08.542283+00:00."""
    return datetime.strptime(text, FORMAT)
'''
PATCHED = SOURCE.replace(
    "    return datetime.strptime(text, FORMAT)",
    '    if "." not in text:\n        text = text.replace("Z", ".0Z")\n    return datetime.strptime(text, FORMAT)',
)


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-shaped tool call."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _search_output() -> str:
    hits = []
    for i in range(1, 400):
        hits.append(f"src/module_{i:03d}.py:{10 + i % 37}:    stamp = dates.parse(record[{i % 5}])  # strptime")
    return "\n".join(hits) + "\n"


def run(path: str) -> None:
    """Writes the first run's transcript to ``path``, then tears a line and waits to be killed."""
    session = Session.create(
        path,
        meta={"agent": "demo-agent", "model": "scripted (no model)", "cwd": "/home/you/src/logtools", "task": "fix-date-parser"},
    )
    session.append_run_context(
        sections=[("identity", IDENTITY), ("AGENTS.md", AGENTS_MD)],
        facts=[("date", "2026-08-09"), ("branch", "fix/date-parser"), ("os", "linux")],
    )
    session.append_message(Message.system(SYSTEM))
    session.append_message(
        Message.user("parse() rejects '2026-08-09T13:10:08Z' (no fraction). Fix it and run the tests.")
    )
    session.append_grants({"read_file": "always", "search": "always"})

    # Round 1: read the file.
    call = tool_call("call_1", "read_file", {"path": "src/logtools/dates.py"})
    session.append_message(
        Message.assistant("Reading the parser first.", tool_calls=[call]), extra={"finish-reason": "tool_calls"}
    )
    op = session.append_tool_dispatched(
        "call_1", "read_file", call["function"]["arguments"], idempotency="read-only", run_id=RUN_ID, round=1
    )
    read_result_id = session.append_message(Message.tool("call_1", SOURCE))
    session.append_tool_settled(op, "completed", duration=0.004, result_digest=digest(SOURCE))

    # Round 2: a search whose output is too big for the conversation: an artifact.
    call = tool_call("call_2", "search", {"pattern": "dates.parse", "path": "src"})
    session.append_message(
        Message.assistant("Who calls it?", tool_calls=[call]), extra={"finish-reason": "tool_calls"}
    )
    op = session.append_tool_dispatched(
        "call_2", "search", call["function"]["arguments"], idempotency="read-only", run_id=RUN_ID, round=2
    )
    full = _search_output()
    excerpt = "".join(full.splitlines(keepends=True)[:5]) + f"[... {full.count(chr(10)) - 5} more matches in the artifact]"
    artifact = session.write_artifact(full, excerpt=excerpt)
    search_result_id = session.append_message(Message.tool("call_2", excerpt))
    session.append_tool_settled(op, "completed", duration=0.213, result_digest=digest(excerpt), artifact=artifact)

    # The human allows writes and tests for the rest of the session.
    session.append_grants({"read_file": "always", "search": "always", "write_file": "always", "run_tests": "always"})

    # Observation aging: the file's old content is no longer worth its tokens.
    session.append_elision([(read_result_id, "[elided: src/logtools/dates.py as read in round 1; read it again if needed]")])

    # The context is getting long: compact everything through the search result.
    session.append_compaction(
        "The user wants parse() to accept timestamps without a fraction, like "
        "'2026-08-09T13:10:08Z'. dates.py parses with FORMAT '%Y-%m-%dT%H:%M:%S.%f%z', "
        "which requires '.%f'. 399 call sites use dates.parse (see the search artifact). "
        "Plan: accept both forms in parse(), then run the tests.",
        replaces_through_id=search_result_id,
        tokens_before=18250,
        tokens_after=2140,
    )

    # Round 3: two calls in flight at once — the kill comes here.
    write = tool_call("call_3", "write_file", {"path": "src/logtools/dates.py", "content": PATCHED})
    tests = tool_call("call_4", "run_tests", {"args": ["-q", "tests/test_dates.py"]})
    session.append_message(
        Message.assistant("Patching parse() and running the tests.", tool_calls=[write, tests]),
        extra={"finish-reason": "tool_calls"},
    )
    write_op = session.append_tool_dispatched(
        "call_3", "write_file", write["function"]["arguments"], idempotency="idempotent", run_id=RUN_ID, round=3
    )
    session.append_tool_dispatched(
        "call_4", "run_tests", tests["function"]["arguments"], idempotency="unknown", run_id=RUN_ID, round=3
    )
    result = "wrote src/logtools/dates.py (1 hunk, +2 lines)"
    session.append_message(Message.tool("call_3", result))

    # The settle line for write_file starts to go out... and only half of it
    # reaches the file. (A real crash tears a line the same way: a process
    # killed, or a disk filled, in the middle of the write.)
    settle = {
        "id": uuid.uuid4().hex,
        "payload": {"duration": 0.031, "op-id": write_op, "outcome": "completed", "result-digest": digest(result)},
        "ts": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "type": "tool-settled",
        "v": 1,
    }
    line = json.dumps(settle, sort_keys=True, separators=(",", ":")).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line[: len(line) // 2])
    finally:
        os.close(fd)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    time.sleep(60)  # the parent's SIGKILL ends this
    session.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m agent_transcript.demo.agent PATH``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m agent_transcript.demo.agent PATH\n")
        return 2
    run(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
