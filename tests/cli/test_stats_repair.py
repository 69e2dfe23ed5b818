"""``agent-transcript stats`` and ``agent-transcript repair``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session
from cli.helpers import ANSI, DATA, fixture, one_error_line, run

CLEAN = DATA / "clean.jsonl"
STATS_KEYS = {
    "path",
    "size",
    "lines",
    "envelopes",
    "types",
    "messages",
    "replay_error",
    "compactions",
    "elisions",
    "rewinds",
    "tools",
    "pending",
    "unanswered_tool_calls",
    "orphan_tool_messages",
    "artifacts",
    "grants",
    "warnings",
    "tokens",
}


def stats(path: Path) -> dict[str, Any]:
    r = run("stats", "--json", path)
    assert r.returncode == 0, r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_stats_json_has_the_documented_keys_and_true_counts(tmp_path: Path) -> None:
    doc = stats(fixture("clean.jsonl", tmp_path))
    assert set(doc) == STATS_KEYS
    raw = CLEAN.read_bytes().splitlines(keepends=True)
    by_type: dict[str, dict[str, int]] = {}
    for line in raw:
        t = by_type.setdefault(json.loads(line)["type"], {"count": 0, "bytes": 0})
        t["count"] += 1
        t["bytes"] += len(line)
    assert doc["types"] == by_type
    assert sum(t["bytes"] for t in by_type.values()) == doc["size"] == CLEAN.stat().st_size
    assert (doc["lines"], doc["envelopes"]) == (19, 19)
    assert doc["tokens"] == {"input": 0, "output": 0, "cache_read": 0, "cache_creation": 0, "responses": 0, "by_model": {}}
    assert doc["messages"] == {"written": 7, "live": 3, "by_role": {"system": 1, "user": 1, "assistant": 3, "tool": 2}}
    (compaction,) = doc["compactions"]
    assert compaction["line"] == 15 and compaction["tokens_before"] == 5000 and compaction["tokens_after"] == 400
    assert compaction["messages_replaced"] == 5 and compaction["fallback"] is False
    assert compaction["replacement"] is None
    assert doc["elisions"] == {"count": 1, "items": 1, "elided_bytes": 1500, "stub_bytes": 27}
    assert doc["rewinds"] == {"count": 0, "messages_dropped": 0}
    assert doc["tools"] == {
        "read_file": {"calls": 1, "completed": 1, "failed": 0, "outcome_unknown": 0, "p50_s": 0.25, "p95_s": 0.25},
        "grep": {"calls": 1, "completed": 1, "failed": 0, "outcome_unknown": 0, "p50_s": 0.75, "p95_s": 0.75},
    }
    assert doc["pending"] == []
    assert doc["artifacts"] == {"count": 1, "files": 1, "bytes": 3200, "missing": 0}
    assert doc["grants"] == {"grep": "always", "read_file": "always"}


def test_stats_counts_a_missing_artifact(tmp_path: Path) -> None:
    path = fixture("clean.jsonl", tmp_path)
    shutil.rmtree(tmp_path / "clean.artifacts")
    assert stats(path)["artifacts"] == {"count": 1, "files": 1, "bytes": 3200, "missing": 1}
    assert "1 missing" in run("stats", path).stdout


def test_stats_percentiles_and_outcomes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        for i in range(1, 21):
            op = s.append_tool_dispatched(f"c{i}", "sleep", {"s": i})
            outcome = "failed" if i == 20 else "completed"
            s.append_tool_settled(op, outcome, duration=i / 10)
        s.append_tool_dispatched("c21", "sleep", {})
        s.append_tool_settled(s.append_tool_dispatched("c22", "other", {}), "outcome-unknown")
    doc = stats(path)
    assert doc["tools"] == {
        "sleep": {"calls": 21, "completed": 19, "failed": 1, "outcome_unknown": 0, "p50_s": 1.0, "p95_s": 1.9},
        "other": {"calls": 1, "completed": 0, "failed": 0, "outcome_unknown": 1, "p50_s": None, "p95_s": None},
    }
    assert [(p["tool"], p["state"]) for p in doc["pending"]] == [("sleep", "dispatched")]
    out = run("stats", path).stdout
    assert "sleep               21   19      1       0    1.00 s    1.90 s" in out


def test_stats_names_pending_operations_with_their_state(tmp_path: Path) -> None:
    doc = stats(DATA / "pending.jsonl")
    pending = doc["pending"]
    assert [(p["tool"], p["call_id"], p["state"], p["line"]) for p in pending] == [
        ("write_file", "call_a", "result-persisted", 5),
        ("run_tests", "call_b", "dispatched", 6),
    ]
    with Session.load(fixture("pending.jsonl", tmp_path)) as s:
        real = s.pending_tool_operations()
        assert [(p.op_id, p.state, p.result_message_id) for p in real] == [
            (p["op_id"], p["state"], p["result_message_id"]) for p in pending
        ]
    out = run("stats", DATA / "pending.jsonl").stdout
    assert "  pending      write_file call_a result-persisted (line 5," in out


def test_stats_text_is_plain_when_not_a_terminal() -> None:
    r = run("stats", CLEAN)
    assert r.returncode == 0 and ANSI not in r.stdout
    assert "  compactions  line 15: tokens 5,000 -> 400, 5 messages replaced" in r.stdout
    assert "  elisions     1 (1 message: 1,500 bytes of content stubbed to 27)" in r.stdout
    assert "  total                   19         6,341" in r.stdout


def test_stats_on_a_damaged_file_still_counts_and_warns() -> None:
    r = run("stats", DATA / "torn.jsonl")
    assert r.returncode == 0
    assert "warning      line 20: skipped" in r.stdout
    doc = stats(DATA / "unknown_id.jsonl")
    assert doc["messages"]["live"] is None
    assert "line 6" in str(doc["replay_error"])


@pytest.mark.parametrize("name", ["empty.jsonl", "garbage.bin", "future.jsonl", "text.txt"])
def test_stats_refuses_what_is_not_a_transcript(name: str) -> None:
    assert str(DATA / name) in one_error_line(run("stats", DATA / name))
    assert str(DATA / name) in one_error_line(run("stats", "--json", DATA / name))


# ---------------------------------------------------------------- repair


def test_repair_removes_the_torn_tail_and_says_what_it_removed(tmp_path: Path) -> None:
    path = fixture("torn.jsonl", tmp_path)
    removed = path.stat().st_size - CLEAN.stat().st_size
    r = run("repair", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"{path}: repaired: removed a torn last line: line 20, {removed} bytes",
        f"{path}: 19 envelopes kept; the file loads cleanly now",
    ]
    assert path.read_bytes() == CLEAN.read_bytes()
    assert not Path(str(path) + ".repair").exists()
    assert run("check", path).returncode == 0
    again = run("repair", path)
    assert again.returncode == 0
    assert again.stdout == f"{path}: nothing to repair (19 envelopes, clean)\n"


def test_repair_json(tmp_path: Path) -> None:
    path = fixture("torn_ascii.jsonl", tmp_path)
    doc = json.loads(run("repair", "--json", path).stdout)
    assert doc == {
        "path": str(path),
        "repaired": True,
        "removed": {"line": 20, "bytes": 40},
        "warnings": ["removed a torn last line: line 20, 40 bytes"],
        "envelopes": 19,
    }


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("corrupt_mid.jsonl", ":7: corrupt: not JSON"),
        ("two_bad_tails.jsonl", ":20: corrupt:"),
        ("future.jsonl", ":1: unsupported envelope version v=2"),
        ("empty.jsonl", "not a transcript: the file is empty"),
        ("garbage.bin", "not a transcript"),
    ],
)
def test_repair_refuses_damage_and_leaves_it_as_it_was(tmp_path: Path, name: str, needle: str) -> None:
    path = fixture(name, tmp_path)
    before = path.read_bytes()
    line = one_error_line(run("repair", path))
    assert needle in line and "not repaired" in line
    assert path.read_bytes() == before


def test_repair_refuses_a_file_with_a_torn_tail_and_damage_before_it(tmp_path: Path) -> None:
    """Load would cut the tail and then refuse the file: repair cuts nothing."""
    path = tmp_path / "both.jsonl"
    path.write_bytes((DATA / "corrupt_mid.jsonl").read_bytes() + b'{"id":"half')
    before = path.read_bytes()
    assert ":7: corrupt" in one_error_line(run("repair", path))
    assert path.read_bytes() == before


def test_repair_of_a_missing_file_or_a_directory(tmp_path: Path) -> None:
    assert one_error_line(run("repair", tmp_path / "nope.jsonl")).endswith("no such file")
    assert one_error_line(run("repair", tmp_path)).endswith("is a directory, not a transcript")


def test_repair_refuses_a_file_a_writer_holds(tmp_path: Path) -> None:
    path = tmp_path / "held.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hi"))
        line = one_error_line(run("repair", path))
        assert "a writer holds this transcript (SessionLocked); not repaired" in line
