"""``agent-transcript check``: what load would do, said without writing a byte."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Session, UnsupportedVersion
from cli.helpers import DATA, ANSI, fixture, one_error_line, run

CHECK_KEYS = {
    "path",
    "status",
    "exit",
    "size",
    "lines",
    "envelopes",
    "messages",
    "live_messages",
    "torn_tail",
    "line",
    "reason",
    "missing_newline",
    "unanswered_tool_calls",
    "orphan_tool_messages",
}

# fixture -> (exit status, status, line named)
VERDICTS = {
    "clean.jsonl": (0, "clean", None),
    "missing_newline.jsonl": (0, "clean", None),
    "pending.jsonl": (0, "clean", None),
    "torn.jsonl": (1, "repairable", None),
    "torn_ascii.jsonl": (1, "repairable", None),
    "corrupt_mid.jsonl": (2, "corrupt", 7),
    "two_bad_tails.jsonl": (2, "corrupt", 20),
    "duplicate_id.jsonl": (2, "corrupt", 5),
    "unknown_id.jsonl": (2, "corrupt", 6),
    "not_meta_first.jsonl": (2, "corrupt", 1),
    "future.jsonl": (2, "unsupported", 1),
    "future_mid.jsonl": (2, "unsupported", 10),
    "empty.jsonl": (2, "corrupt", None),
    "blank_lines.jsonl": (2, "corrupt", None),
    "garbage.bin": (2, "corrupt", 1),
    "text.txt": (2, "corrupt", 1),
}


def test_clean_exits_0_on_stdout() -> None:
    r = run("check", DATA / "clean.jsonl")
    assert r.returncode == 0
    assert r.stderr == ""
    assert r.stdout == f"{DATA / 'clean.jsonl'}: clean (19 envelopes, 19 lines, 6.2 KiB)\n"


def test_a_torn_tail_exits_1_and_names_its_line_and_bytes() -> None:
    path = DATA / "torn.jsonl"
    torn_bytes = path.stat().st_size - (DATA / "clean.jsonl").stat().st_size
    r = run("check", path)
    assert r.returncode == 1
    assert r.stdout.startswith(f"{path}:20: torn tail: the last line ({torn_bytes} bytes) is not whole")
    assert "UTF-8" in r.stdout  # it was cut in the middle of a character
    assert "load would remove it and keep 19 envelopes" in r.stdout


def test_a_whole_last_line_without_its_newline_is_clean_and_said() -> None:
    r = run("check", DATA / "missing_newline.jsonl")
    assert r.returncode == 0
    assert "lacks its newline" in r.stdout


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("corrupt_mid.jsonl", ":7: corrupt: not JSON"),
        ("two_bad_tails.jsonl", ":20: corrupt: "),
        ("duplicate_id.jsonl", ":5: corrupt: duplicate envelope id"),
        ("unknown_id.jsonl", ":6: corrupt: elision names"),
        ("not_meta_first.jsonl", ":1: not a transcript: the first line is not a session-meta"),
        ("future.jsonl", ":1: unsupported envelope version v=2"),
        ("future_mid.jsonl", ":10: unsupported envelope version v=2"),
        ("empty.jsonl", ": not a transcript: the file is empty"),
        ("garbage.bin", ":1: not a transcript: the first line is not JSON"),
        ("text.txt", ":1: not a transcript: the first line is not JSON"),
    ],
)
def test_what_load_refuses_is_one_line_on_stderr_and_exit_2(name: str, needle: str) -> None:
    line = one_error_line(run("check", DATA / name))
    assert f"{DATA / name}{needle}" in line
    assert line.endswith("load would refuse it")


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_what_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path, what: str) -> None:
    path = tmp_path / "nope.jsonl" if what == "missing" else tmp_path
    line = one_error_line(run("check", path))
    assert line == f"agent-transcript: {path}: " + ("no such file" if what == "missing" else "is a directory, not a transcript")


def test_the_exit_status_is_the_worst_of_all_files() -> None:
    assert run("check", DATA / "clean.jsonl", DATA / "torn.jsonl").returncode == 1
    r = run("check", DATA / "clean.jsonl", DATA / "torn.jsonl", DATA / "corrupt_mid.jsonl")
    assert r.returncode == 2
    assert len(r.stdout.splitlines()) == 2 and len(r.stderr.splitlines()) == 1


def test_json_is_one_array_with_the_documented_keys() -> None:
    names = list(VERDICTS)
    r = run("check", "--json", *(DATA / n for n in names))
    assert r.returncode == 2
    reports = json.loads(r.stdout)
    assert [Path(x["path"]).name for x in reports] == names
    for report, name in zip(reports, names):
        assert set(report) == CHECK_KEYS
        code, status, line = VERDICTS[name]
        assert (report["exit"], report["status"]) == (code, status), name
        if line is not None:
            assert report["line"] == line, name
    torn = reports[names.index("torn.jsonl")]
    assert torn["torn_tail"]["line"] == 20
    assert torn["torn_tail"]["bytes"] == (DATA / "torn.jsonl").stat().st_size - (DATA / "clean.jsonl").stat().st_size
    assert torn["envelopes"] == 19 and torn["live_messages"] == 3
    assert reports[names.index("missing_newline.jsonl")]["missing_newline"] is True


def test_json_reports_an_unreadable_file_too(tmp_path: Path) -> None:
    r = run("check", "--json", tmp_path / "missing.jsonl")
    assert r.returncode == 2
    (report,) = json.loads(r.stdout)
    assert report["status"] == "unreadable" and report["reason"] == "no such file"


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_check_agrees_with_load_and_writes_nothing(tmp_path: Path, name: str) -> None:
    path = fixture(name, tmp_path)
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    r = run("check", "--json", path)
    (report,) = json.loads(r.stdout)
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
    assert sorted(os.listdir(tmp_path)) == sorted([name] + (["clean.artifacts"] if name == "clean.jsonl" else []))
    try:
        session = Session.load(path)
    except UnsupportedVersion as exc:
        assert report["status"] == "unsupported"
        assert report["line"] == exc.line
        return
    except CorruptTranscript as exc:
        assert report["status"] == "corrupt"
        if not report["reason"].startswith("not a transcript"):
            assert report["line"] == exc.line
        return
    with session:
        if report["status"] == "repairable":
            assert len(session.warnings) == 1
            assert f"line {report['torn_tail']['line']}" in session.warnings[0]
            assert str(report["torn_tail"]["bytes"]) in session.warnings[0]
        else:
            assert report["status"] == "clean"
            assert session.warnings == []
        assert len(session.events) == report["envelopes"]
        assert len(session.messages) == report["live_messages"]


def test_check_is_quiet_in_colour_when_not_a_terminal() -> None:
    r = run("check", DATA / "torn.jsonl", DATA / "corrupt_mid.jsonl")
    assert ANSI not in r.stdout + r.stderr
    r = run("check", "--color", "always", DATA / "torn.jsonl")
    assert ANSI in r.stdout


def test_a_file_a_writer_holds_is_checked_without_disturbing_it(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    with Session.create(path, {"agent": "t"}) as session:
        from agent_transcript import Message

        session.append_message(Message.user("hello"))
        with open(path, "ab") as f:  # the writer is half-way through its next line
            f.write(b'{"id":"x","payl')
        r = run("check", path)
        assert r.returncode == 1
        assert f"{path}:3: torn tail" in r.stdout
        assert path.read_bytes().endswith(b'{"id":"x","payl')


def test_shutil_which_finds_the_console_script() -> None:
    """``agent-transcript`` is installed as a console script beside the interpreter."""
    import sys

    script = Path(sys.executable).parent / "agent-transcript"
    assert shutil.which(str(script)) is not None


def _line(env_id: str, env_type: str, payload: object, v: object = 1) -> dict[str, object]:
    return {"id": env_id, "payload": payload, "ts": "2026-08-09T13:10:08.542283Z", "type": env_type, "v": v}


SHAPES = {
    "settle without op-id": _line("s", "tool-settled", {"outcome": "completed"}),
    "dispatch payload null": _line("d", "tool-dispatched", None),
    "elision item without stub": _line("e", "elision", {"items": [{"id": "u1"}]}),
    "elision items not a list": _line("e", "elision", {"items": "u1"}),
    "run-context sections not a list": _line("r", "run-context", {"sections": "x"}),
    "compaction through an int": _line("c", "compaction", {"replaces-through-id": 5}),
    "message without role": _line("m", "message", {"content": "hi"}),
    "a second session-meta": _line("m2", "session-meta", {}),
    "v true": _line("t", "message", {"role": "user"}, v=True),
    "v 1.0": _line("t", "message", {"role": "user"}, v=1.0),
    "v 2": _line("t", "message", {"role": "user"}, v=2),
    "grants of a string": _line("g", "grants", "all"),
    "unknown type, payload null": _line("z", "later-thing", None),
    "settle of an unknown op": _line("s", "tool-settled", {"op-id": "nope", "outcome": "completed"}),
    "compaction of the user turn": _line("c", "compaction", {"replaces-through-id": "u1", "summary": "s"}),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_payload_shapes_agree_with_load(tmp_path: Path, case: str) -> None:
    from agent_transcript import inspect as _inspect

    path = tmp_path / "t.jsonl"
    lines = [_line("m0", "session-meta", {}), _line("u1", "message", {"role": "user", "content": "x"}), SHAPES[case]]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = _inspect.check_report(_inspect.read(str(path), lenient=False))
    try:
        Session.load(path).close()
    except UnsupportedVersion as exc:
        assert (report.status, report.line) == ("unsupported", exc.line)
    except CorruptTranscript as exc:
        assert (report.status, report.line) == ("corrupt", exc.line)
    else:
        assert report.status == "clean"
