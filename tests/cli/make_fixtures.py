"""Writes the command line's fixtures into tests/data/cli/ (run it to regenerate them).

Every line is built with the library's own canonical writer, so the bytes are
what ``Session`` writes; ids and timestamps are fixed so that the output of
``show`` and ``stats`` is the same on every run. The damaged variants are made
from the clean one by editing bytes, the way damage happens.

    python tests/cli/make_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_transcript import Message, canonical_json, digest

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data" / "cli"

# 2026-08-09T13:10:08.542283Z, then a little later for every line.
BASE_SECONDS = 8


class Writer:
    """Builds canonical envelope lines with fixed ids and times."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.n = 0

    def add(self, type_: str, payload: Any, env_id: str | None = None) -> str:
        self.n += 1
        env_id = env_id or f"0198a1b2c3d4700080000000000000{self.n:02x}"
        micro = 542283 + self.n * 1500
        ts = f"2026-08-09T13:10:{BASE_SECONDS + micro // 1_000_000:02d}.{micro % 1_000_000:06d}Z"
        line = canonical_json({"id": env_id, "payload": payload, "ts": ts, "type": type_, "v": 1})
        self.lines.append(line.encode("utf-8") + b"\n")
        return env_id

    def message(self, m: Message, extra: dict[str, Any] | None = None) -> str:
        return self.add("message", {**(extra or {}), **m.to_dict()})

    def data(self) -> bytes:
        return b"".join(self.lines)


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


LONG_TOOL_OUTPUT = "".join(f"line {i:02d} of a long tool result — ünïcödé ✓\n" for i in range(1, 31))


def clean() -> tuple[bytes, dict[str, bytes]]:
    """A transcript with every envelope type; returns its bytes and its artifacts."""
    w = Writer()
    w.add("session-meta", {"agent": "fixture-agent", "model": "none", "cwd": "/work/project"})
    w.add(
        "run-context",
        {
            "facts": [["date", "2026-08-09"], ["branch", "main"]],
            "sections": [{"name": "AGENTS.md", "digest": digest("Be careful."), "text": "Be careful."}],
        },
    )
    w.message(Message.system("You are a careful agent."))
    w.message(Message.user("Summarise the log, then count the errors."))
    w.add("grants", {"grants": {"read_file": "always"}})
    w.message(
        Message.assistant("Reading it.", tool_calls=[call("call_1", "read_file", {"path": "app.log"})]),
        extra={"finish-reason": "tool_calls"},
    )
    op1 = w.add(
        "tool-dispatched",
        {
            "call-id": "call_1",
            "tool": "read_file",
            "arguments": {"path": "app.log"},
            "arguments-digest": digest(canonical_json({"path": "app.log"})),
            "idempotency": "read-only",
            "run-id": "run-1",
            "round": 1,
        },
    )
    result1 = w.message(Message.tool("call_1", LONG_TOOL_OUTPUT))
    w.add("tool-settled", {"op-id": op1, "outcome": "completed", "duration": 0.25, "result-digest": digest(LONG_TOOL_OUTPUT)})
    w.message(
        Message.assistant("Counting.", tool_calls=[call("call_2", "grep", {"pattern": "ERROR"})]),
        extra={"finish-reason": "tool_calls"},
    )
    op2 = w.add(
        "tool-dispatched",
        {
            "call-id": "call_2",
            "tool": "grep",
            "arguments": {"pattern": "ERROR"},
            "arguments-digest": digest(canonical_json({"pattern": "ERROR"})),
            "idempotency": "read-only",
            "run-id": "run-1",
            "round": 2,
        },
    )
    full = "ERROR disk full\n" * 200
    excerpt = "ERROR disk full\n[199 more lines in the artifact]"
    artifact: dict[str, Any] = {
        "file": digest(full).split(":")[1] + ".txt",
        "digest": digest(full),
        "bytes": len(full.encode()),
        "chars": len(full),
        "elided-chars": len(full) - len(excerpt),
    }
    result2 = w.message(Message.tool("call_2", excerpt))
    w.add(
        "tool-settled",
        {"op-id": op2, "outcome": "completed", "duration": 0.75, "result-digest": digest(excerpt), "artifact": artifact},
    )
    w.add("elision", {"items": [{"id": result1, "stub": "[elided: app.log, 30 lines]"}]})
    w.add(
        "compaction",
        {
            "summary": "The user asked for a log summary and an error count; the log has 200 'disk full' errors.",
            "replaces-through-id": result2,
            "tokens-before": 5000,
            "tokens-after": 400,
            "fallback": False,
        },
    )
    w.add("grants", {"grants": {"read_file": "always", "grep": "always"}})
    w.add(
        "run-context",
        {
            "facts": [["date", "2026-08-10"], ["branch", "main"]],
            "sections": [{"name": "AGENTS.md", "digest": digest("Be careful."), "rendered-in": "0198a1b2c3d470008000000000000002"}],
        },
    )
    w.message(Message.assistant("There are 200 errors, all 'disk full'."), extra={"finish-reason": "stop"})
    w.add("future-thing", {"note": "a type this version does not know"})
    return w.data(), {artifact["file"]: full.encode()}


def pending() -> bytes:
    """A run killed mid-round: one result-persisted operation, one dispatched."""
    w = Writer()
    w.add("session-meta", {"agent": "fixture-agent"})
    w.message(Message.system("You are a careful agent."))
    w.message(Message.user("Write the file and run the tests."))
    w.message(
        Message.assistant(
            None,
            tool_calls=[call("call_a", "write_file", {"path": "x.py"}), call("call_b", "run_tests", {})],
        )
    )
    for call_id, tool, idem in (("call_a", "write_file", "idempotent"), ("call_b", "run_tests", "unknown")):
        w.add(
            "tool-dispatched",
            {
                "call-id": call_id,
                "tool": tool,
                "arguments": {},
                "arguments-digest": digest("{}"),
                "idempotency": idem,
                "run-id": "run-1",
                "round": 1,
            },
        )
    w.message(Message.tool("call_a", "wrote x.py"))
    return w.data()


def records() -> tuple[bytes, dict[str, str]]:
    """Undo and replace: a user undoes a turn (a rewind), a compaction keeps the
    user's turns and a summary (a replacement, Codex's ``replacement_history``),
    an elision and a later rewind name its messages. Returns the bytes and the
    ids the damaged variants need."""
    w = Writer()
    w.add("session-meta", {"agent": "fixture-agent", "task": "undo and compact"})
    w.message(Message.system("You are a careful agent."))
    w.message(Message.user("Rename the helper to parse_ts."))
    a1 = w.message(Message.assistant("Renamed it in utils.py."), extra={"finish-reason": "stop"})
    w.message(Message.user("Now delete the old tests."))
    a2 = w.message(Message.assistant("Deleted tests/test_old.py."), extra={"finish-reason": "stop"})
    w.add("rewind", {"through-id": a1})  # the user undid the last turn
    item = {"type": "message", "id": "msg_u3", "role": "user"}
    w.message(Message.user("Keep the old tests; update them to parse_ts instead."), extra={"item": item})
    a3 = w.message(Message.assistant("Updated tests/test_old.py."), extra={"finish-reason": "stop"})
    summary = "Renamed the helper to parse_ts and updated the old tests to use it."
    replacement = [
        Message.user("Rename the helper to parse_ts.").to_dict(),
        {"item": item, **Message.user("Keep the old tests; update them to parse_ts instead.").to_dict()},
        Message.user(summary).to_dict(),
    ]
    comp = w.add(
        "compaction",
        {"summary": summary, "replaces-through-id": a3, "tokens-before": 3000, "tokens-after": 250,
         "fallback": False, "replacement": replacement},
    )
    w.add("elision", {"items": [{"id": f"{comp}:0", "stub": "[the first request]"}]})
    w.message(Message.user("Run the tests."))
    w.message(Message.assistant("All 12 tests pass."), extra={"finish-reason": "stop"})
    w.add("rewind", {"through-id": f"{comp}:2"})  # and undid that too
    w.message(Message.user("Thanks."))
    return w.data(), {"dropped": a2, "compaction": comp}


def main() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    data, artifacts = clean()
    lines = data.splitlines(keepends=True)
    (DATA / "clean.jsonl").write_bytes(data)
    art_dir = DATA / "clean.artifacts"
    art_dir.mkdir(exist_ok=True)
    for name, content in artifacts.items():
        (art_dir / name).write_bytes(content)

    # A torn tail, cut in the middle of a multi-byte character.
    extra = '{"id":"0198a1b2c3d47000800000000000ffff","payload":{"content":"ünïcödé'.encode()
    cut = extra.index("ï".encode()) + 1
    (DATA / "torn.jsonl").write_bytes(data + extra[:cut])
    # A torn tail after a whole line that lacks nothing: plain ASCII cut.
    (DATA / "torn_ascii.jsonl").write_bytes(data + lines[3][:40])
    # Damage no crash produces: a bad line in the middle.
    (DATA / "corrupt_mid.jsonl").write_bytes(b"".join(lines[:6] + [b'{"id": "zz", oops\n'] + lines[6:]))
    # The last two lines are both bad: load refuses rather than eat backwards.
    (DATA / "two_bad_tails.jsonl").write_bytes(data + lines[4][:30] + b"\n" + lines[5][:30])
    # A transcript from the future, from its first line and from the middle.
    (DATA / "future.jsonl").write_bytes(data.replace(b'"v":1}', b'"v":2}'))
    (DATA / "future_mid.jsonl").write_bytes(b"".join(lines[:9] + [lines[9].replace(b'"v":1}', b'"v":2}')] + lines[10:]))
    # A whole last line without its newline: clean.
    (DATA / "missing_newline.jsonl").write_bytes(data[:-1])
    # Two lines with one id; an elision naming a message that is not there.
    (DATA / "duplicate_id.jsonl").write_bytes(b"".join(lines[:4] + [lines[3]] + lines[4:]))
    (DATA / "unknown_id.jsonl").write_bytes(
        b"".join(lines[:5] + [lines[13].replace(b"0198a1b2c3d470008000000000000008", b"0198a1b2c3d4700080000000000000aa")])
    )
    (DATA / "not_meta_first.jsonl").write_bytes(b"".join(lines[2:6]))
    (DATA / "empty.jsonl").write_bytes(b"")
    (DATA / "blank_lines.jsonl").write_bytes(b"\n  \n\t\r\n")
    (DATA / "garbage.bin").write_bytes(bytes((i * 151 + 7) % 256 for i in range(600)))
    (DATA / "text.txt").write_bytes(b"hello, this is not a transcript\nsecond line\n")
    (DATA / "pending.jsonl").write_bytes(pending())

    data, ids = records()
    (DATA / "records.jsonl").write_bytes(data)
    # A rewind naming a message an earlier rewind dropped; a line whose id is a
    # replacement message's.
    for name, type_, payload, env_id in (
        ("rewind_unknown.jsonl", "rewind", {"through-id": ids["dropped"]}, None),
        ("replacement_clash.jsonl", "message", Message.user("x").to_dict(), f"{ids['compaction']}:1"),
    ):
        w = Writer()
        w.n = data.count(b"\n")
        w.add(type_, payload, env_id)
        (DATA / name).write_bytes(data + w.data())


if __name__ == "__main__":
    main()
