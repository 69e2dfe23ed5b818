"""The command line on a big transcript reads what it shows, not the whole file.

Not timed (a shared machine has no fixed speed). Each read command's
``Reading`` counts the envelopes it decoded, and the output is held to what a
full read of the file says: a ~20 MB generated transcript, torn at the end as
a crash leaves it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session, cli
from agent_transcript.bench.generator import write_transcript
from agent_transcript.inspect import reader as _inspect


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scale") / "big.jsonl"
    write_transcript(path, 20, seed=7, torn=True)
    return path


@pytest.fixture(scope="module")
def lines(big: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, envelope)`` of every line that parses: the oracle."""
    out = []
    for number, raw in enumerate(big.read_bytes().split(b"\n"), 1):
        try:
            out.append((number, json.loads(raw)))
        except ValueError:
            continue
    return out


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, _inspect.Reading]:
    """Runs the command line in this process; returns its status, its output and the file's reading."""
    readings: list[_inspect.Reading] = []
    real = _inspect.read

    def spy(path: str, *, lenient: bool) -> _inspect.Reading:
        reading = real(path, lenient=lenient)
        readings.append(reading)
        return reading

    monkeypatch.setattr(_inspect, "read", spy)
    monkeypatch.setenv("COLUMNS", "100")
    status = cli.main(list(args))
    (reading,) = readings
    return status, capsys.readouterr().out, reading


def heads(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:5].strip().isdigit() and line[5:6] == " "]


@pytest.mark.parametrize("n", [1, 5, 20])
def test_show_tail_decodes_only_the_envelopes_it_shows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], big: Path, lines: list[tuple[int, dict[str, Any]]], n: int
) -> None:
    status, out, reading = run(monkeypatch, capsys, "show", "--tail", str(n), str(big))
    assert status == 0
    assert len(reading) == len(lines) > 4000
    # The header (meta, first and last times, grants) and what each block
    # names (a settle's dispatch, the call a tool message answers).
    assert reading.decoded <= 2 * n + 8
    shown = heads(out)
    assert [int(h.split()[0]) for h in shown] == [number for number, _ in lines[-n:]]
    assert [h.split()[2] for h in shown] == [env["type"] for _, env in lines[-n:]]
    assert f"warning   line {lines[-1][0] + 1}: skipped" in out  # the torn tail


def test_show_type_and_tail_find_the_envelopes_in_the_index(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], big: Path, lines: list[tuple[int, dict[str, Any]]]
) -> None:
    status, out, reading = run(monkeypatch, capsys, "show", "--type", "compaction,elision", "--tail", "4", str(big))
    assert status == 0
    wanted = [number for number, env in lines if env["type"] in ("compaction", "elision")][-4:]
    assert [int(h.split()[0]) for h in heads(out)] == wanted
    assert reading.decoded <= 40  # an elision's messages are read to say what they held


def test_check_decodes_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], big: Path,
                               tmp_path: Path) -> None:
    status, out, reading = run(monkeypatch, capsys, "check", str(big))
    assert status == 1 and ": torn tail" in out
    assert reading.decoded == 0
    # Only the call fields of the live assistant and tool messages, for the
    # unanswered calls and the tool messages that answer none.
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(big, copy)
    with Session.load(copy) as session:
        assert reading.call_fields == sum(m.role in ("assistant", "tool") for m in session.messages) > 0


def test_replayed_tail_is_the_end_of_what_load_hands_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], big: Path, tmp_path: Path
) -> None:
    status, out, reading = run(monkeypatch, capsys, "show", "--replayed", "--json", "--tail", "5", str(big))
    assert status == 0
    assert reading.decoded <= 2 * 5 + 2
    doc = json.loads(out)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(big, copy)
    with Session.load(copy) as session:
        assert [m["id"] for m in doc["messages"]] == session.message_ids[-5:]
        assert [Message.from_dict(m) for m in doc["messages"]] == session.messages[-5:]
        assert doc["torn_tail"]["line"] == len(big.read_bytes().split(b"\n"))


def test_stats_agree_with_a_full_read_and_with_load(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], big: Path, lines: list[tuple[int, dict[str, Any]]], tmp_path: Path
) -> None:
    status, out, reading = run(monkeypatch, capsys, "stats", "--json", str(big))
    assert status == 0
    doc = json.loads(out)
    types: dict[str, dict[str, int]] = {}
    roles: dict[str, int] = {}
    calls: dict[str, int] = {}
    raw = big.read_bytes().split(b"\n")
    for number, env in lines:
        t = types.setdefault(env["type"], {"count": 0, "bytes": 0})
        t["count"] += 1
        t["bytes"] += len(raw[number - 1]) + 1
        if env["type"] == "message":
            roles[env["payload"]["role"]] = roles.get(env["payload"]["role"], 0) + 1
        if env["type"] == "tool-dispatched":
            calls[env["payload"]["tool"]] = calls.get(env["payload"]["tool"], 0) + 1
    assert doc["types"] == types
    assert doc["messages"]["by_role"] == roles
    assert {name: row["calls"] for name, row in doc["tools"].items()} == calls
    assert doc["elisions"]["count"] == types["elision"]["count"]
    assert doc["elisions"]["elided_bytes"] > doc["elisions"]["stub_bytes"] > 0
    # The messages are not decoded: their roles are in the index.
    assert reading.decoded < len(lines) - types["message"]["count"]
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(big, copy)
    with Session.load(copy) as session:
        assert doc["messages"]["live"] == len(session.messages)
        assert [p["op_id"] for p in doc["pending"]] == [op.op_id for op in session.pending_tool_operations()]
        assert doc["grants"] == session.grants


def _peak_rss(args: list[str], out: Path) -> int:
    """The peak RSS (bytes) of the command line run in a fresh process, stdout to ``out``."""
    import os
    import subprocess
    import sys

    with open(out, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "agent_transcript", *args], stdout=f)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    assert os.waitstatus_to_exitcode(status) == 0
    return usage.ru_maxrss * 1024


def test_show_json_streams_in_bounded_memory(tmp_path: Path) -> None:
    # Not timed: the whole document of a 48 MB transcript is written one
    # envelope at a time, so its peak memory is the one-envelope run's plus a
    # little, not the file's decoded size (what building the document costs).
    path = tmp_path / "big.jsonl"
    write_transcript(path, 48, seed=11)
    size = path.stat().st_size
    one = _peak_rss(["show", "--json", "--tail", "1", str(path)], tmp_path / "one.json")
    whole = _peak_rss(["show", "--json", str(path)], tmp_path / "whole.json")
    assert whole - one < 32 << 20, (whole - one, size)
    doc = json.loads((tmp_path / "whole.json").read_text(encoding="utf-8"))
    raw = path.read_bytes().splitlines()
    assert len(doc["envelopes"]) == len(raw)
    assert doc["envelopes"][-1]["id"] == json.loads(raw[-1])["id"]
    assert [e["line"] for e in doc["envelopes"][:3]] == [1, 2, 3]
    assert doc["size"] == size and doc["warnings"] == []
