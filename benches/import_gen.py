"""Realistic synthetic Claude Code sessions and Codex rollouts, for the import bench.

Standard library only. Deterministic for a given size and seed. The shape follows
the formats as the importers read them: Claude Code streams one line per
content block (thinking, text, tool_use sharing a ``message.id``), tool results
as user lines, file-history snapshots, a compact boundary with its summary every
so often, parallel tool calls now and then; Codex writes ``session_meta``, a
``turn_context`` per turn, user and assistant messages, reasoning, function
calls and their outputs, token counts, and a ``compacted`` line with a
``replacement_history`` now and then. Tool outputs are code-like text of a
few KiB, as real ones are.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta, timezone
from typing import IO, Any

__all__ = ["write_claude_code", "write_codex"]

MIB = 1024 * 1024
WORDS = ("the file reads each line and returns a list of records for the caller so that we can check "
         "whether tests pass after the change def class return import from self value error path json "
         "é ü 日本 ✓").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        indent = "    " * rng.randint(0, 3)
        out.append(f"{indent}{rng.choice(WORDS)}_{i} = {rng.choice(WORDS)}(\"{_text(rng, 3)}\")  # {_text(rng, 4)}")
    return "\n".join(out)


def _dump(f: IO[bytes], record: dict[str, Any]) -> int:
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    f.write(data)
    return len(data)


class _Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)

    def tick(self, rng: random.Random) -> str:
        self.t += timedelta(milliseconds=rng.randint(50, 4000))
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"


def write_claude_code(path: str, size: int, seed: int = 1) -> int:
    """Write a Claude Code session of about ``size`` bytes; returns the bytes written."""
    rng = random.Random(seed)
    clock = _Clock()
    written = 0
    parent: str | None = None
    n = 0
    turn = 0
    since_compact = 0

    def uid() -> str:
        nonlocal n
        n += 1
        return f"{n:08x}-0000-4000-8000-{seed:012x}"

    def base(kind: str, u: str) -> dict[str, Any]:
        return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/project",
                "sessionId": "5e55-bench", "version": "2.1.40", "gitBranch": "main", "type": kind, "uuid": u,
                "timestamp": clock.tick(rng)}

    with open(path, "wb") as f:
        while written < size:
            turn += 1
            u = uid()
            rec = base("user", u)
            rec.update(message={"role": "user", "content": _text(rng, rng.randint(5, 60))},
                       promptId=f"p{turn}", permissionMode="default")
            written += _dump(f, rec)
            parent = u
            written += _dump(f, {"type": "file-history-snapshot", "messageId": u,
                                 "snapshot": {"messageId": u, "trackedFileBackups": {}, "timestamp": rec["timestamp"]},
                                 "isSnapshotUpdate": False})
            for step in range(rng.randint(1, 6)):
                mid = f"msg_{turn}_{step}"
                blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": _text(rng, 30), "signature": "s" * 40},
                                                {"type": "text", "text": _text(rng, rng.randint(5, 40))}]
                calls = rng.choice((1, 1, 1, 2))
                for c in range(calls):
                    blocks.append({"type": "tool_use", "id": f"toolu_{turn}_{step}_{c}", "name": rng.choice(("Bash", "Read", "Edit")),
                                   "input": {"command": _text(rng, 6), "description": _text(rng, 4)}})
                anchors = []
                for b in blocks:
                    a = uid()
                    rec = base("assistant", a)
                    rec.update(message={"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                                        "content": [b], "stop_reason": None, "stop_sequence": None,
                                        "usage": {"input_tokens": rng.randint(100, 9000), "output_tokens": 50}},
                               requestId=f"req_{turn}_{step}")
                    written += _dump(f, rec)
                    parent = a
                    anchors.append(a)
                for c in range(calls):
                    r = uid()
                    parent = anchors[2 + c]
                    rec = base("user", r)
                    out = _code(rng, rng.randint(10, 120))
                    rec.update(message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{turn}_{step}_{c}",
                                                                     "content": out, "is_error": rng.random() < 0.05}]},
                               toolUseResult={"stdout": out, "stderr": "", "interrupted": False, "isImage": False})
                    written += _dump(f, rec)
                    parent = r
            since_compact += 1
            if since_compact >= 20:
                since_compact = 0
                b = uid()
                logical, parent = parent, None
                rec = base("system", b)
                rec.update(subtype="compact_boundary", content="Conversation compacted", level="info",
                           logicalParentUuid=logical, compactMetadata={"trigger": "auto", "preTokens": 150000})
                written += _dump(f, rec)
                parent = b
                s = uid()
                rec = base("user", s)
                rec.update(message={"role": "user", "content": "This session is being continued. " + _text(rng, 300)},
                           isCompactSummary=True, isVisibleInTranscriptOnly=True)
                written += _dump(f, rec)
                parent = s
    return written


def write_codex(path: str, size: int, seed: int = 1) -> int:
    """Write a Codex rollout (G2) of about ``size`` bytes; returns the bytes written."""
    rng = random.Random(seed)
    clock = _Clock()
    written = 0

    def line(kind: str, payload: dict[str, Any]) -> int:
        return _dump(f, {"timestamp": clock.tick(rng), "type": kind, "payload": payload})

    with open(path, "wb") as f:
        written += line("session_meta", {"id": "0199aa00-bench", "timestamp": "2026-03-01T09:00:00Z", "cwd": "/home/dev/p",
                                         "originator": "codex_cli_rs", "cli_version": "0.98.0", "source": "cli",
                                         "model_provider": "openai"})
        turn = 0
        users: list[str] = []
        while written < size:
            turn += 1
            written += line("turn_context", {"turn_id": f"t{turn}", "cwd": "/home/dev/p", "approval_policy": "on-request",
                                             "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5-codex"})
            prompt = _text(rng, rng.randint(5, 60))
            users.append(prompt)
            written += line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
            written += line("event_msg", {"type": "user_message", "message": prompt})
            for step in range(rng.randint(1, 6)):
                written += line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": _text(rng, 20)}],
                                                  "content": None, "encrypted_content": "gAAAA" + "x" * 200})
                cid = f"call_{turn}_{step}"
                written += line("response_item", {"type": "function_call", "name": "shell_command",
                                                  "arguments": json.dumps({"command": _text(rng, 6)}), "call_id": cid})
                out = f"Exit code: 0\nWall time: 0.{rng.randint(1, 9)} seconds\nOutput:\n" + _code(rng, rng.randint(10, 120))
                written += line("response_item", {"type": "function_call_output", "call_id": cid, "output": out})
            written += line("response_item", {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": _text(rng, 40)}]})
            written += line("event_msg", {"type": "token_count", "info": {"last_token_usage": {"total_tokens": rng.randint(1000, 200000)}}})
            if turn % 20 == 0:
                keep = users[-3:]
                history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]} for t in keep]
                history.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "summary " + _text(rng, 200)}]})
                written += line("compacted", {"message": "", "replacement_history": history})
    return written


if __name__ == "__main__":
    kind, out, mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    (write_claude_code if kind == "claude-code" else write_codex)(out, int(mb * MIB))
