"""Synthetic Claude Code sessions and Codex rollouts, one per format generation and hard
case, each with the messages the tool's own resume rebuilds (in OpenAI chat shape, as
``(role, content, tool call ids, tool_call_id)``). Written here by hand, from the
formats' public descriptions; no real user's file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Expected = tuple[str, Any, tuple[str, ...], "str | None"]


@dataclass
class Source:
    name: str
    format: str
    data: bytes
    messages: list[Expected]
    pending: list[str] = field(default_factory=list)  # call ids left dispatched
    settled: dict[str, str] = field(default_factory=dict)  # call id -> outcome
    warnings: int = 0  # at least this many warnings
    types: dict[str, int] = field(default_factory=dict)  # at least this many envelopes of a type
    suffix: str = ".jsonl"


def lines(*records: Any, end: bytes = b"\n") -> bytes:
    out = []
    for r in records:
        out.append(r if isinstance(r, bytes) else json.dumps(r, separators=(",", ":")).encode())
    return b"\n".join(out) + end


# -- Claude Code ---------------------------------------------------------------

def _cc(kind: str, uid: str, parent: str | None, ts: str, **fields: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w/demo",
                         "sessionId": "s1", "version": "2.1.40", "type": kind, "uuid": uid,
                         "timestamp": f"2026-03-01T10:{ts}.000Z"}
    r.update(fields)
    return r


def user(uid: str, parent: str | None, ts: str, content: Any, **f: Any) -> dict[str, Any]:
    return _cc("user", uid, parent, ts, message={"role": "user", "content": content}, **f)


def asst(uid: str, parent: str | None, ts: str, mid: str, *blocks: dict[str, Any], **f: Any) -> dict[str, Any]:
    return _cc("assistant", uid, parent, ts, message={"id": mid, "type": "message", "role": "assistant",
                                                      "model": "claude-sonnet-4-5", "content": list(blocks),
                                                      "stop_reason": None, "usage": {"input_tokens": 1}}, **f)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def use(cid: str, name: str = "Bash", **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def result(cid: str, content: Any, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": content, "is_error": error}


def call(cid: str, name: str = "Bash", **inp: Any) -> str:
    return cid


BASIC = [
    user("u1", None, "00:00", "List the files", promptId="p1", permissionMode="default"),
    asst("a1", "u1", "00:01", "msg_A", {"type": "thinking", "thinking": "need ls", "signature": "s"}),
    asst("a2", "a1", "00:02", "msg_A", text("Checking.")),
    asst("a3", "a2", "00:03", "msg_A", use("toolu_1", command="ls")),
    user("u2", "a3", "00:04", [result("toolu_1", "a.txt\nb.txt")], toolUseResult={"stdout": "a.txt", "durationMs": 250}),
    {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"messageId": "u1", "trackedFileBackups": {}},
     "isSnapshotUpdate": False},
    {"type": "permission-mode", "permissionMode": "acceptEdits", "sessionId": "s1"},
    {"type": "summary", "summary": "Listing demo files", "leafUuid": "u2"},
]
BASIC_M: list[Expected] = [
    ("user", "List the files", (), None),
    ("assistant", "Checking.", ("toolu_1",), None),
    ("tool", "a.txt\nb.txt", (), "toolu_1"),
]

TITLES = BASIC + [  # a later summary names a leaf not on this branch (another session's): it loses
    {"type": "summary", "summary": "Some other session", "leafUuid": "elsewhere-9"},
]

REWIND = [
    user("u1", None, "00:00", "hello"),
    asst("a1", "u1", "00:01", "m1", text("hi")),
    user("u2", "a1", "00:02", "write a poem"),
    asst("a2", "u2", "00:03", "m2", text("roses")),
    user("u2b", "a1", "00:04", "write a haiku"),  # the prompt edited: a new branch from a1
    asst("a2b", "u2b", "00:05", "m3", text("old pond")),
]
REWIND_M: list[Expected] = [("user", "hello", (), None), ("assistant", "hi", (), None),
                            ("user", "write a haiku", (), None), ("assistant", "old pond", (), None)]

REWIND_AFTER_A_CALL = [  # the branch left had a call with no result: not a pending operation of the run
    user("u1", None, "00:00", "hello"),
    asst("a1", "u1", "00:01", "m1", text("hi")),
    user("u2", "a1", "00:02", "run it"),
    asst("a2", "u2", "00:03", "m2", use("toolu_x", command="rm -rf /")),
    user("u2b", "a1", "00:04", "do something else"),
    asst("a2b", "u2b", "00:05", "m3", text("ok")),
]
REWIND_AFTER_A_CALL_M: list[Expected] = [("user", "hello", (), None), ("assistant", "hi", (), None),
                                         ("user", "do something else", (), None), ("assistant", "ok", (), None)]

COMPACT_AFTER_REWIND = REWIND + [
    _cc("system", "b1", None, "10:00", subtype="compact_boundary", content="Conversation compacted",
        logicalParentUuid="a2b", compactMetadata={"trigger": "auto", "preTokens": 1500}),
    user("u10", "b1", "10:01", "This session is being continued. Summary: haiku written.",
         isCompactSummary=True, isVisibleInTranscriptOnly=True),
    user("u11", "u10", "10:02", "another"),
    asst("a11", "u11", "10:03", "m11", text("furu ike ya")),
]
COMPACT_AFTER_REWIND_M: list[Expected] = [
    ("user", "This session is being continued. Summary: haiku written.", (), None),
    ("user", "another", (), None), ("assistant", "furu ike ya", (), None)]

# A compaction that kept the last exchange (compactMetadata.preservedSegment): the
# kept records were written before the boundary, and what came after is linked to
# the tail. Resume relinks the head after the summary (the anchor) and prunes the
# rest before the boundary: summary, then the kept exchange, then the new turn.
_BEFORE_COMPACTION = [
    user("u1", None, "00:00", "first task"),
    asst("a1", "u1", "00:01", "m1", text("done first")),
    user("u2", "a1", "00:02", "second task"),
    asst("a2", "u2", "00:03", "m2", text("done second")),
    user("u3", "a2", "00:04", "keep this question"),
    asst("a3", "u3", "00:05", "m3", text("keep this answer")),
]


def _preserving(anchor: str, head: str = "u3") -> dict[str, Any]:
    return _cc("system", "b1", None, "10:00", subtype="compact_boundary", content="Conversation compacted",
               logicalParentUuid="a3", compactMetadata={
                   "trigger": "auto", "preTokens": 5000,
                   "preservedSegment": {"headUuid": head, "anchorUuid": anchor, "tailUuid": "a3"}})


_SUMMARY = "This session is being continued. Summary: two tasks done."
PRESERVED = _BEFORE_COMPACTION + [
    _preserving("u10"),
    user("u10", "b1", "10:01", _SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True),
    user("u11", "a3", "10:02", "after compaction"),
    asst("a11", "u11", "10:03", "m11", text("ok after")),
]
PRESERVED_M: list[Expected] = [
    ("user", _SUMMARY, (), None), ("user", "keep this question", (), None),
    ("assistant", "keep this answer", (), None), ("user", "after compaction", (), None),
    ("assistant", "ok after", (), None)]
# The boundary itself as the anchor: the head follows the boundary, the summary
# (the boundary's other child) the tail.
PRESERVED_BOUNDARY_ANCHOR = _BEFORE_COMPACTION + [
    _preserving("b1"),
    user("u10", "b1", "10:01", _SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True),
    user("u11", "u10", "10:02", "after compaction"),
    asst("a11", "u11", "10:03", "m11", text("ok after")),
]
PRESERVED_BOUNDARY_ANCHOR_M: list[Expected] = [
    ("user", "keep this question", (), None), ("assistant", "keep this answer", (), None),
    ("user", _SUMMARY, (), None), ("user", "after compaction", (), None), ("assistant", "ok after", (), None)]
# A tail that does not lead back to the head: resume relinks and prunes nothing,
# and the chain from the leaf runs through the records as written.
PRESERVED_BROKEN = _BEFORE_COMPACTION + [
    _preserving("u10", head="nowhere"),
    user("u10", "b1", "10:01", _SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True),
    user("u11", "a3", "10:02", "after compaction"),
    asst("a11", "u11", "10:03", "m11", text("ok after")),
]
PRESERVED_BROKEN_M: list[Expected] = [
    ("user", "first task", (), None), ("assistant", "done first", (), None),
    ("user", "second task", (), None), ("assistant", "done second", (), None),
    ("user", "keep this question", (), None), ("assistant", "keep this answer", (), None),
    ("user", "after compaction", (), None), ("assistant", "ok after", (), None)]

SIDECHAIN = [
    user("u1", None, "00:00", "delegate"),
    asst("a1", "u1", "00:01", "m1", use("toolu_t", "Task", prompt="look")),
    {**user("s1", None, "00:02", "look"), "isSidechain": True, "agentId": "ag1"},
    {**asst("s2", "s1", "00:03", "ms", text("found it")), "isSidechain": True, "agentId": "ag1"},
    user("u2", "a1", "00:04", [result("toolu_t", [text("found it")])], toolUseResult={"totalDurationMs": 3000}),
    {**asst("s3", "s2", "00:09", "ms2", text("late sidechain line")), "isSidechain": True},
]
SIDECHAIN_M: list[Expected] = [("user", "delegate", (), None), ("assistant", None, ("toolu_t",), None),
                               ("tool", [{"type": "text", "text": "found it"}], (), "toolu_t")]

MILLISECOND = [  # two prompts 1 ms apart: the later one is the leaf (Claude Code compares to the ms)
    user("u1", None, "00:00", "hello"),
    asst("a1", "u1", "00:01", "m1", text("hi")),
    {**user("u2", "a1", "00:02", "first"), "timestamp": "2026-03-01T10:00:02.600Z"},
    {**user("u2b", "a1", "00:02", "second"), "timestamp": "2026-03-01T10:00:02.601Z"},
]
MILLISECOND_M: list[Expected] = [("user", "hello", (), None), ("assistant", "hi", (), None),
                                 ("user", "second", (), None)]

PARALLEL = [
    user("u1", None, "00:00", "two at once"),
    asst("a1", "u1", "00:01", "mX", use("t1", command="a")),
    asst("a2", "a1", "00:02", "mX", use("t2", command="b")),
    user("r1", "a1", "00:03", [result("t1", "A")]),
    user("r2", "a2", "00:04", [result("t2", "B", error=True)]),
    asst("a3", "r2", "00:05", "mY", text("done")),
]
PARALLEL_M: list[Expected] = [("user", "two at once", (), None), ("assistant", None, ("t1", "t2"), None),
                              ("tool", "A", (), "t1"), ("tool", "B", (), "t2"), ("assistant", "done", (), None)]

KILLED = [
    user("u1", None, "00:00", "run it"),
    asst("a1", "u1", "00:01", "m1", text("Running."), use("toolu_k", command="sleep 100")),
]
KILLED_M: list[Expected] = [("user", "run it", (), None), ("assistant", "Running.", ("toolu_k",), None)]

TORN = lines(*BASIC[:4]) + json.dumps(BASIC[4]).encode()[:70]
TORN_M = BASIC_M[:2]

NUL_LINE = lines(BASIC[0], b"\x00" * 64, *BASIC[1:5])
GLUED = lines(BASIC[0], BASIC[1], json.dumps({"type": "pr-link", "prNumber": 12}).encode()[:-4]
              + json.dumps(BASIC[2], separators=(",", ":")).encode(), *BASIC[3:5])
SURROGATE = lines(BASIC[0], asst("a1", "u1", "00:01", "m1", text("half an emoji: \ud83d")), end=b"")
SURROGATE_M: list[Expected] = [("user", "List the files", (), None), ("assistant", "half an emoji: \ud83d", (), None)]

# -- Codex -----------------------------------------------------------------------

def rl(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-02-01T09:{ts}.000Z", "type": kind, "payload": payload}


def umsg(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}


def amsg(t: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}


def fcall(cid: str, cmd: str) -> dict[str, Any]:
    return {"type": "function_call", "name": "shell_command", "arguments": json.dumps({"command": cmd}), "call_id": cid}


def fout(cid: str, out: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": out}


def T(t: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t}]


META = rl("00:00", "session_meta", {"id": "0199aa00-0000-7000-8000-000000000001", "timestamp": "2026-02-01T09:00:00Z",
                                    "cwd": "/w/demo", "originator": "codex_cli_rs", "cli_version": "0.98.0",
                                    "source": "cli", "model_provider": "openai"})
ENV = umsg("<environment_context>\n  <cwd>/w/demo</cwd>\n</environment_context>")
TURN = rl("00:01", "turn_context", {"turn_id": "t1", "cwd": "/w/demo", "approval_policy": "on-request",
                                    "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5-codex"})
G2 = [
    META, rl("00:00", "response_item", ENV), TURN,
    rl("00:01", "response_item", umsg("count lines in a.txt")),
    rl("00:01", "event_msg", {"type": "user_message", "message": "count lines in a.txt"}),
    rl("00:02", "response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Use wc."}],
                                  "encrypted_content": "gAAAA"}),
    rl("00:02", "response_item", fcall("call_1", "wc -l a.txt")),
    rl("00:03", "response_item", fout("call_1", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n3 a.txt\n")),
    rl("00:04", "response_item", amsg("a.txt has 3 lines.")),
    rl("00:04", "event_msg", {"type": "token_count", "info": {"last_token_usage": {"total_tokens": 940}}}),
    rl("00:05", "event_msg", {"type": "turn_complete", "turn_id": "t1"}),
]
G2_M: list[Expected] = [("user", T(ENV["content"][0]["text"]), (), None), ("user", T("count lines in a.txt"), (), None),
                        ("assistant", None, ("call_1",), None),
                        ("tool", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n3 a.txt\n", (), "call_1"),
                        ("assistant", T("a.txt has 3 lines."), (), None)]

REPLACEMENT = G2 + [
    rl("01:00", "compacted", {"message": "", "replacement_history": [
        umsg("count lines in a.txt"), umsg("SUMMARY: counted a.txt")]}),
    rl("01:01", "event_msg", {"type": "token_count", "info": {"last_token_usage": {"total_tokens": 120}}}),
    rl("01:02", "response_item", umsg("now b.txt")),
    rl("01:03", "response_item", amsg("b.txt has 1 line.")),
]
REPLACEMENT_M: list[Expected] = [("user", T("count lines in a.txt"), (), None), ("user", T("SUMMARY: counted a.txt"), (), None),
                                 ("user", T("now b.txt"), (), None), ("assistant", T("b.txt has 1 line."), (), None)]

ROLLBACK = G2 + [
    rl("02:00", "response_item", umsg("delete everything")),
    rl("02:01", "response_item", amsg("Sure.")),
    rl("02:02", "event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
    rl("02:03", "response_item", umsg("never mind")),
]
ROLLBACK_M: list[Expected] = G2_M + [("user", T("never mind"), (), None)]

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking "
    "process. You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
    "summary produced by the other language model, use the information in this summary to  assist with "
    "your own analysis:"
)
LEGACY_COMPACT = G2 + [
    rl("03:00", "compacted", {"message": SUMMARY_PREFIX + "\nUser wants line counts."}),
    rl("03:01", "response_item", umsg("thanks")),
]
LEGACY_COMPACT_M: list[Expected] = [("user", T("count lines in a.txt"), (), None),
                                    ("user", T(SUMMARY_PREFIX + "\nUser wants line counts."), (), None),
                                    ("user", T("thanks"), (), None)]

LONG = "y" * 90_000  # 22,500 approximate tokens: past the 20,000 a legacy compaction keeps
LEGACY_COMPACT_LONG = [
    META, TURN, rl("00:01", "response_item", umsg("first ask")), rl("00:02", "response_item", amsg("ok")),
    rl("00:03", "response_item", umsg(LONG)), rl("00:04", "response_item", amsg("done")),
    rl("03:00", "compacted", {"message": SUMMARY_PREFIX + "\nLong input."}),
]
# Codex's truncate_text: 80,000 bytes kept, half each side, the 10,000 over as 2,500 tokens;
# "first ask" does not fit any more.
LEGACY_COMPACT_LONG_M: list[Expected] = [
    ("user", T("y" * 40_000 + "…2500 tokens truncated…" + "y" * 40_000), (), None),
    ("user", T(SUMMARY_PREFIX + "\nLong input."), (), None)]

ABORTED = [
    META, TURN, rl("00:01", "response_item", umsg("build")),
    rl("00:02", "response_item", fcall("c1", "make")),
    rl("00:02", "response_item", fcall("c2", "make test")),
    rl("00:03", "response_item", fout("c1", "aborted")),
    rl("00:04", "event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
    rl("00:05", "response_item", umsg("again")),
    rl("00:06", "response_item", fcall("c3", "make")),
]
ABORTED_M: list[Expected] = [("user", T("build"), (), None), ("assistant", None, ("c1", "c2"), None),
                             ("tool", "aborted", (), "c1"), ("user", T("again"), (), None),
                             ("assistant", None, ("c3",), None)]

G1 = [
    {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-07-01T12:00:00Z", "instructions": None,
     "git": {"branch": "main"}},
    {"record_type": "state"},
    umsg("hi"),
    {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_9"},
    fout("call_9", "{\"output\":\"a.txt\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.5}}"),
]
G1_M: list[Expected] = [("user", T("hi"), (), None), ("assistant", None, ("call_9",), None),
                        ("tool", "{\"output\":\"a.txt\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.5}}", (), "call_9")]

G0 = json.dumps({"session": {"timestamp": "2025-04-20T08:00:00.000Z", "id": "ab12", "instructions": ""},
                 "items": [umsg("hi"), amsg("hello")]}, indent=2).encode() + b"\n"
G0_M: list[Expected] = [("user", T("hi"), (), None), ("assistant", T("hello"), (), None)]


SOURCES = [
    Source("cc-basic-streamed-fragments", "claude-code", lines(*BASIC), BASIC_M, settled={"toolu_1": "completed"},
           types={"grants": 2, "run-context": 1}),
    Source("cc-rewind-branches", "claude-code", lines(*REWIND), REWIND_M, types={"rewind": 1}),
    Source("cc-rewind-after-a-call", "claude-code", lines(*REWIND_AFTER_A_CALL), REWIND_AFTER_A_CALL_M,
           types={"rewind": 1}),
    Source("cc-compaction-after-rewind", "claude-code", lines(*COMPACT_AFTER_REWIND), COMPACT_AFTER_REWIND_M,
           types={"compaction": 1, "rewind": 1}),
    Source("cc-compaction-preserving-a-segment", "claude-code", lines(*PRESERVED), PRESERVED_M,
           types={"compaction": 1}),
    Source("cc-compaction-preserving-a-segment-boundary-anchor", "claude-code", lines(*PRESERVED_BOUNDARY_ANCHOR),
           PRESERVED_BOUNDARY_ANCHOR_M, types={"rewind": 1}),
    Source("cc-compaction-preserving-a-broken-segment", "claude-code", lines(*PRESERVED_BROKEN), PRESERVED_BROKEN_M),
    Source("cc-leaf-by-the-millisecond", "claude-code", lines(*MILLISECOND), MILLISECOND_M, types={"rewind": 1}),
    Source("cc-sidechain", "claude-code", lines(*SIDECHAIN), SIDECHAIN_M, settled={"toolu_t": "completed"}),
    Source("cc-parallel-tool-results", "claude-code", lines(*PARALLEL), PARALLEL_M,
           settled={"t1": "completed", "t2": "failed"}),
    Source("cc-killed-mid-tool", "claude-code", lines(*KILLED), KILLED_M, pending=["toolu_k"]),
    Source("cc-torn-tail", "claude-code", TORN, TORN_M, pending=["toolu_1"], warnings=1),
    Source("cc-nul-line", "claude-code", NUL_LINE, BASIC_M, warnings=1, settled={"toolu_1": "completed"}),
    Source("cc-glued-records", "claude-code", GLUED, BASIC_M, warnings=1, settled={"toolu_1": "completed"}),
    Source("cc-lone-surrogate", "claude-code", SURROGATE, SURROGATE_M),
    Source("codex-g2", "codex", lines(*G2), G2_M, settled={"call_1": "completed"}),
    Source("codex-replacement-history", "codex", lines(*REPLACEMENT), REPLACEMENT_M, settled={"call_1": "completed"}, types={"compaction": 1}),
    Source("codex-rollback", "codex", lines(*ROLLBACK), ROLLBACK_M, settled={"call_1": "completed"}, types={"rewind": 1}),
    Source("codex-legacy-compaction", "codex", lines(*LEGACY_COMPACT), LEGACY_COMPACT_M, settled={"call_1": "completed"}, types={"compaction": 1}),
    Source("codex-legacy-compaction-truncates-a-long-message", "codex", lines(*LEGACY_COMPACT_LONG),
           LEGACY_COMPACT_LONG_M, types={"compaction": 1}),
    Source("codex-turn-aborted-and-killed", "codex", lines(*ABORTED), ABORTED_M,
           settled={"c1": "outcome-unknown", "c2": "outcome-unknown"}, pending=["c3"]),
    Source("codex-g1", "codex", lines(*G1), G1_M, settled={"call_9": "completed"}),
    Source("codex-g0", "codex", G0, G0_M, suffix=".json"),
]
