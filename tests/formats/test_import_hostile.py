"""Imports of sources a careless or hostile world hands over (issue 28): a
``"type"`` that is no string, ``NaN`` in a value, a session still being written,
two sources with one destination."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Session
from agent_transcript import formats
from agent_transcript.formats import UnknownFormat, detect_format, import_transcript, source_lines

from .sources import BASIC, lines


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)],
                          capture_output=True, text=True, encoding="utf-8", timeout=120)


# -- a "type" that is a list or an object ----------------------------------------

ODD_TYPES = [["user"], {"a": 1}, [], {}]


@pytest.mark.parametrize("kind", ODD_TYPES, ids=["list", "object", "empty-list", "empty-object"])
def test_a_type_that_is_no_string_is_no_format(tmp_path: Path, kind: Any) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({"type": kind, "payload": {}, "timestamp": "2026-01-01T00:00:00Z",
                                "sessionId": "s", "parentUuid": None}) + "\n")
    assert detect_format(path) is None
    with pytest.raises(UnknownFormat):
        import_transcript(path, tmp_path / "out.jsonl")
    r = cli("import", path, "-o", tmp_path / "out.jsonl")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ODD_TYPES, ids=["list", "object", "empty-list", "empty-object"])
def test_a_line_whose_type_is_no_string_is_kept_raw(tmp_path: Path, kind: Any) -> None:
    data = lines(*BASIC[:3], {"type": kind, "uuid": "x1", "parentUuid": "a1", "sessionId": "s1"}, *BASIC[3:])
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert detect_format(path) == "claude-code"
    for source_format in (None, "claude-code", "codex"):
        dest = tmp_path / f"out-{source_format}.jsonl"
        try:
            import_transcript(path, dest, source_format=source_format)
        except UnknownFormat:
            assert source_format == "codex"  # the detected format is not the one asked for
            continue
        assert b"\n".join(source_lines(dest)) + b"\n" == data
        with Session.load(dest) as s:
            assert s.warnings == []
    r = cli("import", "--from", "codex", path, "-o", tmp_path / "cli.jsonl")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


# -- NaN and Infinity ----------------------------------------------------------

def _tool_use_with(value: str) -> bytes:
    record = json.dumps(BASIC[3]).replace('"command": "ls"', f'"command": "ls", "n": {value}')
    assert value in record
    return lines(*BASIC[:3], record.encode(), *BASIC[4:])


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_a_source_line_is_imported_with_the_line_kept_raw(tmp_path: Path, value: str) -> None:
    data = _tool_use_with(value)
    path = tmp_path / "nan.jsonl"
    path.write_bytes(data)
    dest = tmp_path / "out.jsonl"
    [result] = import_transcript(path, dest)
    assert any("line 4: damaged" in w and value.lstrip("-") in w for w in result.warnings), result.warnings
    assert b"\n".join(source_lines(dest)) + b"\n" == data
    with Session.load(dest) as s:
        line = next(e for e in s.events if e.type == "source-line" and e.payload["line"] == 4)
        assert line.payload["status"] == "damaged" and line.payload["text"].encode() == data.split(b"\n")[3]
    r = cli("import", path, "-o", tmp_path / "cli.jsonl")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert b"\n".join(source_lines(tmp_path / "cli.jsonl")) + b"\n" == data


def test_nan_in_codex_arguments_is_stored_as_their_text(tmp_path: Path) -> None:
    from .sources import G2, fcall, rl

    call = fcall("c9", "ls")
    call["arguments"] = '{"command": "ls", "n": NaN}'
    data = lines(*G2, rl("00:09", "response_item", call))
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(data)
    dest = tmp_path / "out.jsonl"
    import_transcript(path, dest)
    with Session.load(dest) as s:
        dispatched = [e for e in s.events if e.type == "tool-dispatched" and e.payload["call-id"] == "c9"]
        assert [e.payload["arguments"] for e in dispatched] == ['{"command": "ls", "n": NaN}']
    assert b"\n".join(source_lines(dest)) + b"\n" == data


# -- a source still being written ----------------------------------------------

@pytest.mark.parametrize("torn", [True, False], ids=["torn", "whole"])
def test_a_source_that_grows_during_the_import_is_one_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              torn: bool) -> None:
    """The writer appends right after the import's first read of the source:
    every later read stays within what that read."""
    whole = lines(*BASIC)
    cut = len(whole) - 40 if torn else len(lines(*BASIC[:-1]))  # torn: the writer is half way through a line
    snapshot = whole[:cut]
    path = tmp_path / "live.jsonl"
    path.write_bytes(snapshot)
    read_source = formats.read_source

    def read_then_the_writer_goes_on(*args: Any) -> Any:
        done = read_source(*args)
        with open(path, "ab") as f:
            f.write(whole[cut:] + lines(BASIC[-1]))
        return done

    monkeypatch.setattr(formats, "read_source", read_then_the_writer_goes_on)
    dest = tmp_path / "out.jsonl"
    import_transcript(path, dest)
    assert path.stat().st_size > cut  # the writer did write meanwhile
    with Session.load(dest) as s:
        source = s.meta["source"]
        damaged = [e.payload["line"] for e in s.events
                   if e.type == "source-line" and e.payload["status"] == "damaged"]
    back = list(source_lines(dest))
    assert b"\n".join(back) + (b"" if torn else b"\n") == snapshot
    assert source["sha256"] == "sha256:" + hashlib.sha256(snapshot).hexdigest()
    assert source["bytes"] == len(snapshot) and source["lines"] == len(back)
    assert damaged == ([len(back)] if torn else [])


# -- two sources, one destination --------------------------------------------------

def test_two_sources_with_one_destination_are_refused(tmp_path: Path) -> None:
    for folder, record in (("a", BASIC), ("b", BASIC[:3])):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "session.jsonl").write_bytes(lines(*record))
    out = tmp_path / "out"
    r = cli("import", tmp_path / "a" / "session.jsonl", tmp_path / "b" / "session.jsonl", "-o", out, "--force")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "session.jsonl" in r.stderr and r.stdout == ""
    assert not out.exists()
    # a .jsonl.zst and a .jsonl of one name go to one place too; different names do not
    (tmp_path / "a" / "other.jsonl").write_bytes(lines(*BASIC))
    r = cli("import", tmp_path / "a" / "session.jsonl", tmp_path / "a" / "other.jsonl", "-o", out)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["other.jsonl", "session.jsonl"]


# -- Codex lines without a timestamp -------------------------------------------------

@st.composite
def _rollout(draw: st.DrawFn) -> bytes:
    """A Codex rollout of a few turns (a prompt, calls, some of their outputs, in
    order or not), its timestamps never going back and each line's left out or not."""
    from .sources import META, amsg, fcall, fout, umsg

    items: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 3))):
        items.append(umsg(f"task {turn}"))
        if draw(st.booleans()):
            items.append(amsg(f"on it {turn}"))
        calls = [f"c{turn}-{k}" for k in range(draw(st.integers(0, 3)))]
        items += [fcall(c, "ls") for c in calls]
        answered = draw(st.permutations(calls))[: draw(st.integers(0, len(calls)))]
        items += [fout(c, "done") for c in answered]
        if draw(st.booleans()):
            items.append(amsg(f"done {turn}"))
    out: list[dict[str, Any]] = [META]
    second = 0
    for item in items:
        second += draw(st.integers(0, 2))
        record: dict[str, Any] = {"type": "response_item", "payload": item}
        if draw(st.booleans()):
            record = {"timestamp": f"2026-02-01T09:01:{second:02d}.000Z", **record}
        out.append(record)
    return lines(*out)


@settings(max_examples=60, deadline=None)
@given(_rollout())
def test_a_codex_settle_is_never_dated_before_its_dispatch(tmp_path_factory: pytest.TempPathFactory,
                                                           data: bytes) -> None:
    tmp = tmp_path_factory.mktemp("dates")
    src, dest = tmp / "rollout.jsonl", tmp / "out.jsonl"
    src.write_bytes(data)
    import_transcript(src, dest)
    with Session.load(dest) as s:
        events = [e for e in s.events if e.type not in ("source-line", "session-meta")]
    dispatched: dict[str, str] = {}  # op id -> ts
    call_ts: dict[str, str] = {}  # call id -> its dispatch's ts
    last_message = ""
    for e in events:
        if e.type == "message":
            if e.payload["role"] == "tool":
                assert e.ts >= call_ts[e.payload["tool_call_id"]], e
            last_message = e.ts
        elif e.type == "tool-dispatched":
            assert e.ts >= last_message, e
            dispatched[e.id] = call_ts[e.payload["call-id"]] = e.ts
        elif e.type == "tool-settled":
            assert e.ts >= dispatched[e.payload["op-id"]], e
    stamps = [e.ts for e in events]
    assert stamps == sorted(stamps)
