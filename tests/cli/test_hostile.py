"""The command line against hostile-but-valid input (issue 16, items 9, 17 and 18).

Each test reproduces a bug found on the command line as it was: a traceback, an
output that is not what it says it is, a hang, or a file name that drives the
terminal. The contract everywhere: a valid transcript is shown; bad input is
one line on stderr and exit status 2; nothing raw reaches the terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session
from cli.helpers import DATA, env, one_error_line, run

DEPTH = 510  # the deepest value an append stores (the reader's limit is 512, envelope included)


def nested(depth: int, leaf: Any = "deep") -> Any:
    """A value ``depth`` containers deep, dicts and lists in turn."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    """A valid transcript whose every kind of value is nested as deep as an append allows:
    meta, a message's extra and content parts, a tool call whose arguments string is
    5,000 ``[``, a dispatch's arguments, a settle's error, grants and a run-context fact."""
    path = tmp_path / "deep.jsonl"
    with Session.create(path, meta={"deep": nested(DEPTH - 1)}) as s:
        s.append_message(Message.user("hello"), extra={"deep": nested(DEPTH - 1)})
        s.append_message(Message(role="user", content=[{"type": "text", "text": "hi"}, nested(DEPTH - 2)]))
        call = {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "[" * 5000}}
        s.append_message(Message.assistant("looking", tool_calls=[call]))
        op = s.append_tool_dispatched("call_1", "grep", nested(DEPTH - 1))
        s.append_message(Message.tool("call_1", "found"))
        s.append_tool_settled(op, "failed", error=nested(DEPTH - 1))
        s.append_grants(nested(DEPTH))
        s.append_run_context([("AGENTS.md", "be careful")], [("depth", nested(DEPTH - 3))])
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("show",),
        ("show", "--full"),
        ("show", "--json"),
        ("show", "--replayed"),
        ("show", "--replayed", "--full"),
        ("show", "--replayed", "--json"),
        ("stats",),
        ("stats", "--json"),
        ("check",),
        ("follow", "--idle-timeout", "0"),
        ("follow", "--idle-timeout", "0", "--full"),
        ("follow", "--idle-timeout", "0", "--json"),
    ],
)
def test_deeply_nested_values_are_shown_without_a_traceback(deep: Path, args: tuple[str, ...]) -> None:
    """Item 9: ``RecursionError`` on a 5,000-``[`` arguments string or a value nested 497+ deep."""
    r = run(*args, deep)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr[-2000:]
    assert "Traceback" not in r.stdout
    if "--json" in args and args[0] != "follow":
        json.loads(r.stdout)


def test_the_unparsable_arguments_string_is_shown_as_it_is(deep: Path) -> None:
    r = run("show", "--full", deep)
    assert r.returncode == 0
    assert "-> grep " + "[" * 100 in r.stdout


@pytest.mark.parametrize("command", [("show", "--json"), ("show", "--replayed", "--json"), ("stats", "--json"), ("check", "--json")])
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_json_is_json_when_stdout_is_not_utf8(tmp_path: Path, command: tuple[str, ...], encoding: str) -> None:
    """Item 17: ``backslashreplace`` wrote ``\\U0001f600``, which is not a JSON escape."""
    path = tmp_path / "émoji-😀.jsonl"
    text = "smile 😀, café, \u2028 and a lone \udc80 surrogate"
    with Session.create(path, meta={"title": text}) as s:
        s.append_message(Message.user(text))
        s.append_grants({"note": text})
    r = subprocess.run(
        [sys.executable, "-m", "agent_transcript", *command, str(path)],
        capture_output=True,
        env=env(PYTHONIOENCODING=encoding, PYTHONUTF8="0", LC_ALL="C"),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    value = json.loads(r.stdout.decode(encoding))
    flat = json.dumps(value, ensure_ascii=False)
    if command[0] == "check":
        # The name is what the C locale made of the bytes: surrogate escapes, written as JSON escapes.
        assert value[0]["status"] == "clean"
        assert value[0]["path"].encode("utf-8", "surrogateescape") == os.fsencode(path)
    else:
        assert "smile 😀, café" in flat and "\udc80" in flat


def test_follow_json_is_json_when_stdout_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("smile 😀"))
    r = subprocess.run(
        [sys.executable, "-m", "agent_transcript", "follow", "--json", "--idle-timeout", "0", str(path)],
        capture_output=True,
        env=env(PYTHONIOENCODING="ascii", PYTHONUTF8="0", LC_ALL="C"),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.decode("ascii").splitlines()]
    assert lines[-1]["payload"]["content"] == "smile 😀"


def _closed_early(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``agent-transcript ARGS | head -c 1``: the reader goes away after one byte."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_transcript", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    return subprocess.CompletedProcess(args, proc.wait(timeout=60), b"", err)


def test_follow_into_a_closed_pipe_exits_quietly_like_show(tmp_path: Path) -> None:
    """Item 18: ``follow … | head`` said "Broken pipe" about the transcript and exited 2."""
    path = tmp_path / "big.jsonl"
    with Session.create(path) as s:
        for i in range(3000):
            s.append_message(Message.user(f"message {i} " + "x" * 200))
    show = _closed_early(["show", "--full", str(path)])
    follow = _closed_early(["follow", "--full", "--idle-timeout", "0", str(path)])
    follow_json = _closed_early(["follow", "--json", "--idle-timeout", "0", str(path)])
    assert show.stderr == b""
    assert (follow.returncode, follow.stderr) == (show.returncode, b"")
    assert (follow_json.returncode, follow_json.stderr) == (show.returncode, b"")


@pytest.mark.parametrize(
    "args, option",
    [
        (["--poll", "-1"], "--poll"),
        (["--poll", "nan"], "--poll"),
        (["--poll", "inf"], "--poll"),
        (["--poll", "0"], "--poll"),
        (["--idle-timeout", "nan"], "--idle-timeout"),
        (["--idle-timeout", "-1"], "--idle-timeout"),
        (["--idle-timeout", "inf"], "--idle-timeout"),
    ],
)
def test_follow_refuses_a_poll_or_timeout_that_is_not_a_duration(args: list[str], option: str) -> None:
    """Item 18: ``--poll -1``/``nan``/``inf`` gave a traceback or never ended."""
    line = one_error_line(run("follow", *args, DATA / "clean.jsonl", timeout=30))
    assert option in line


@pytest.mark.parametrize("mb", ["nan", "inf", "-inf", "0", "-1"])
def test_bench_refuses_a_size_that_is_not_a_positive_number(mb: str) -> None:
    """Item 18: ``bench --mb nan`` ran forever."""
    line = one_error_line(run("bench", f"--mb={mb}", timeout=30))
    assert "--mb" in line


NASTY = "evil\x1b[2J\x1b]0;owned\x07\nagent-transcript: forged.jsonl: clean\r\t.jsonl"


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text and "\t" not in text


def test_check_escapes_the_file_name(tmp_path: Path) -> None:
    """Item 18: an escape sequence in a name reached the terminal; a newline forged a line."""
    clean = tmp_path / NASTY
    clean.write_bytes((DATA / "clean.jsonl").read_bytes())
    torn = tmp_path / ("torn" + NASTY)
    torn.write_bytes((DATA / "torn.jsonl").read_bytes())
    corrupt = tmp_path / ("corrupt" + NASTY)
    corrupt.write_bytes((DATA / "corrupt_mid.jsonl").read_bytes())
    missing = tmp_path / ("missing" + NASTY)
    r = run("check", clean, torn, corrupt, missing)
    assert r.returncode == 2
    out = r.stdout.splitlines()
    err = r.stderr.splitlines()
    assert len(out) == 2 and len(err) == 2, (out, err)
    for line in out + err:
        _no_raw_controls(line)
        assert "\\x1b[2J" in line and "\\n" in line
    assert out[0].endswith(": clean (19 envelopes, 19 lines, 6.2 KiB)") and "forged.jsonl: clean\\r" in out[0]


def test_repair_escapes_the_file_name(tmp_path: Path) -> None:
    torn = tmp_path / NASTY
    torn.write_bytes((DATA / "torn.jsonl").read_bytes())
    r = run("repair", torn)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2
    _no_raw_controls(r.stdout.replace("\n", ""))
    assert "\\x1b[2J" in r.stdout
    again = run("repair", torn)
    assert len(again.stdout.splitlines()) == 1 and "nothing to repair" in again.stdout
    _no_raw_controls(again.stdout)
    corrupt = tmp_path / ("corrupt" + NASTY)
    corrupt.write_bytes((DATA / "corrupt_mid.jsonl").read_bytes())
    line = one_error_line(run("repair", corrupt))
    _no_raw_controls(line)
    assert "\\x1b[2J" in line


@pytest.mark.parametrize("command", ["show", "stats", "follow"])
def test_errors_about_a_nasty_name_are_one_escaped_line(tmp_path: Path, command: str) -> None:
    line = one_error_line(run(command, tmp_path / NASTY))
    _no_raw_controls(line)
    assert line.endswith(": no such file")


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_demo_into_something_that_is_not_a_directory(tmp_path: Path) -> None:
    """Item 18: ``demo /dev/null`` said "File exists"."""
    line = one_error_line(run("demo", "/dev/null"))
    assert line == "agent-transcript: /dev/null: not a directory; give an empty or new directory"
    plain = tmp_path / "notes.txt"
    plain.write_text("mine\n")
    line = one_error_line(run("demo", plain))
    assert line == f"agent-transcript: {plain}: not a directory; give an empty or new directory"
    assert plain.read_text() == "mine\n"
    line = one_error_line(run("demo", plain / "sub"))
    assert line == f"agent-transcript: {plain / 'sub'}: a parent of this path is not a directory"


INTERRUPTED_WHILE_LOADING = r"""
import sys
from agent_transcript import cli

class Interrupt:  # a Ctrl-C that lands while the commands are being imported
    def find_spec(self, name, path=None, target=None):
        if name == "agent_transcript.cli.app":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
sys.exit(cli.main(["stats", "nothing.jsonl"]))
"""


def test_ctrl_c_while_the_commands_load_is_exit_130_not_a_traceback() -> None:
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_LOADING], capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (130, "")
