"""diff A B: where a fork and its source part, and two retries of one task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from agent_transcript.cli.app import main
from agent_transcript.share import diff_runs


def _task(path: Path, answer: str, meta: dict[str, str] | None = None) -> None:
    with Session.create(path, meta or {"task": "count"}) as s:
        s.append_message(Message.user("count lines in a.txt"))
        s.append_message(Message.assistant(tool_calls=[{"id": "c1", "type": "function",
                                                        "function": {"name": "wc", "arguments": "{}"}}]))
        op = s.append_tool_dispatched("c1", "wc", {})
        s.append_message(Message.tool("c1", "3 a.txt"))
        s.append_tool_settled(op, "completed")
        s.append_message(Message.assistant(answer))


def test_a_fork_parts_from_its_source_where_it_was_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, fork = tmp_path / "src.jsonl", tmp_path / "fork.jsonl"
    _task(src, "3 lines")
    with Session.load(src) as s:
        through = s.message_ids[1]
        s.append_message(Message.user("and b.txt?"))
    with Session.fork(src, fork, through_id=through) as f:
        f.append_message(Message.user("and c.txt?"))
    got = diff_runs(str(src), str(fork))
    assert not got.identical and got.same == 3 and got.last_same == (3, 3)
    assert [e["type"] for e in got.a.then][:2] == ["tool-dispatched", "message"]
    assert got.b.rest == 1 and got.b.then[0]["text"] == "and c.txt?"
    assert main(["diff", str(src), str(fork), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["last_same"] == {"a": 3, "b": 3} and data["b"]["then"][0]["role"] == "user"
    assert main(["diff", str(src), str(fork)]) == 1
    out = capsys.readouterr().out
    assert "the same through line 3" in out and "B has 1 more envelope:" in out


def test_two_retries_part_at_their_answers(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _task(a, "3 lines")
    _task(b, "three lines", {"task": "count", "retry": "2"})
    got = diff_runs(str(a), str(b))
    assert got.meta_differs
    # new ids and times, the same payloads (the settle names its own op: paired through the shared lines)
    assert got.same == 6 and got.last_same == (6, 6)
    assert got.a.then[0]["text"] == "3 lines" and got.b.then[0]["text"] == "three lines"


def test_the_same_run_twice_is_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _task(a, "3")
    b.write_bytes(a.read_bytes())
    assert diff_runs(str(a), str(b)).identical
    assert main(["diff", str(a), str(b)]) == 0
    assert "the same, envelope for envelope" in capsys.readouterr().out


def test_a_settle_of_another_op_is_not_the_same(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, outcome in ((a, "completed"), (b, "failed")):
        with Session.create(path) as s:
            op = s.append_tool_dispatched("c1", "wc", {})
            s.append_tool_settled(op, outcome)
    got = diff_runs(str(a), str(b))
    assert got.same == 2 and got.a.then[0]["outcome"] == "completed" and got.b.then[0]["outcome"] == "failed"


def test_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.jsonl"
    _task(a, "3")
    (tmp_path / "junk.jsonl").write_text("not json\n")
    for other in (tmp_path / "missing.jsonl", tmp_path, tmp_path / "junk.jsonl"):
        assert main(["diff", str(a), str(other)]) == 2
        assert capsys.readouterr().err.count("\n") == 1
