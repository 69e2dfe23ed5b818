"""``agent-transcript follow``, ``demo``, ``bench`` and the command line as a whole."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from agent_transcript import Message, Session, cli
from agent_transcript.inspect import describe_os_error
from cli.helpers import ANSI, DATA, env, one_error_line, run


def _follow(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agent_transcript", "follow", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        # A suite run as a shell's background job (.ci/run runs one so) starts
        # with SIGINT ignored, which a child inherits and Python then leaves
        # ignored: the command is given Ctrl-C as a terminal gives it.
        preexec_fn=_interruptible,
    )


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_follow_prints_what_is_appended_and_stops_when_idle(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    with Session.create(path, {"agent": "live"}) as s:
        s.append_message(Message.user("before"))
        with _follow("--idle-timeout", "3", "--poll", "0.05", str(path)) as proc:
            time.sleep(1.0)
            s.append_message(Message.assistant("after, while following"))
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "session-meta" in out
    assert "      before" in out
    assert "      after, while following" in out
    assert ANSI not in out


def _wait_for(proc: subprocess.Popen[str], needle: str, timeout: float = 30.0) -> str:
    """Lines of ``proc``'s stdout until one holds ``needle``; all of them."""
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        seen += proc.stdout.readline()
    assert needle in seen, seen
    return seen


@pytest.mark.parametrize("how", ["truncated", "rotated"])
def test_follow_says_on_stderr_when_it_starts_the_file_again(tmp_path: Path, how: str) -> None:
    """A truncation in place (``copytruncate``) or a new file at the path: the
    envelopes that follow begin a file again, and ``follow`` says so, as
    ``tail -F`` does; stdout still holds only envelopes."""
    path = tmp_path / "live.jsonl"
    with Session.create(path, {"agent": "first"}) as s:
        s.append_message(Message.user("in the first file"))
    with _follow("--json", "--idle-timeout", "2", "--poll", "0.05", str(path)) as proc:
        _wait_for(proc, "in the first file")
        if how == "truncated":
            with open(path, "r+b") as f:
                f.truncate(0)
            time.sleep(0.5)  # seen empty, then grown again
            Session.create(path, {"agent": "second"}).close()
        else:
            path.rename(tmp_path / "live.1.jsonl")
            Session.create(path, {"agent": "second"}).close()
        _wait_for(proc, '"second"')
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    note = "was truncated" if how == "truncated" else "is another file now"
    assert err.count(note) == 1, err
    assert err.startswith(f"agent-transcript: {path}: "), err
    assert all(json.loads(line) for line in out.splitlines())


def test_follow_json_is_one_envelope_per_line(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    with Session.create(path) as s:
        ids = [s.append_message(Message.user(f"m{i}")) for i in range(3)]
    r = run("follow", "--json", "--idle-timeout", "0.5", "--type", "message", path)
    assert r.returncode == 0
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["id"] for e in lines] == ids
    assert all(set(e) == {"line", "id", "type", "ts", "v", "payload"} for e in lines)


def test_follow_exits_0_on_ctrl_c(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    Session.create(path).close()
    with _follow(str(path)) as proc:
        try:
            assert proc.stdout is not None
            seen = ""
            while "session-meta" not in seen:  # it is following once it has printed the first envelope
                line = proc.stdout.readline()
                assert line, "follow ended before printing the first envelope"
                seen += line
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


@pytest.mark.parametrize(
    ("name", "needle"),
    [("garbage.bin", "not a transcript"), ("future.jsonl", "unsupported envelope version v=2"), ("text.txt", "not a transcript")],
)
def test_follow_refuses_what_is_not_a_transcript(name: str, needle: str) -> None:
    assert needle in one_error_line(run("follow", "--idle-timeout", "0.2", DATA / name))


def test_follow_missing_or_directory(tmp_path: Path) -> None:
    assert one_error_line(run("follow", tmp_path / "x.jsonl")).endswith("no such file")
    assert one_error_line(run("follow", tmp_path)).endswith("is a directory, not a transcript")


# ---------------------------------------------------------------- demo


STORY = (
    "SIGKILL (kill -9",
    "Session.peek(path)",
    "skipped, not JSON",
    "torn tail: the last line",
    "exit status 1",
    "warning: removed a torn last line: line 21",
    "write_file  call_3  result-persisted",
    "run_tests   call_4  dispatched",
    "write_file  -> completed",
    "run_tests   -> outcome-unknown",
    "pending_tool_operations() now: []",
    "SessionLocked",
    "run.jsonl: clean (29 envelopes, 29 lines",
    "agent-transcript show --replayed",
)


def test_the_demo_tells_the_story_on_one_screen(tmp_path: Path) -> None:
    """Killed mid-tool-call, peek, load, pending operations, the answer, the
    resume: in at most 60 lines of at most 80 columns on an 80-column terminal."""
    where = tmp_path / "demo"
    r = run("demo", where, COLUMNS="80")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 60, len(lines)
    lines_without_the_folder = [x for x in lines if str(where) not in x]
    assert max(len(x) for x in lines_without_the_folder) <= 80, max(lines_without_the_folder, key=len)
    flat = " ".join(r.stdout.split())
    assert all(" ".join(needle.split()) in flat for needle in STORY), [n for n in STORY if n not in flat]
    assert [x.split(".")[0] for x in lines if x[:1].isdigit()] == ["1", "2", "3", "4", "5", "6", "7"]
    assert "demo --verbose" in r.stdout  # the rest, on request
    assert "finish-reason=stop" not in r.stdout  # the transcript is not shown


def test_the_demo_tells_the_whole_story(tmp_path: Path) -> None:
    # No timed assertion (it took 22 s under qemu on aarch64): how long the
    # demo takes is a figure for the benches, not a test's verdict.
    where = tmp_path / "demo"
    r = run("demo", "--verbose", where)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    flat = " ".join(out.split())  # the narration is wrapped to the terminal
    for needle in STORY + (
        "idempotency=idempotent  (its result is in the file, its settle line is not: it completed)",
        "SessionLocked: ",
        "renamed over the file",
    ):
        assert " ".join(needle.split()) in flat, needle
    assert ANSI not in out
    # The transcript it ends by showing.
    assert "   29 " in out and "message  assistant  +finish-reason" in out
    # The files stay, and say the same.
    assert run("check", where / "run.jsonl").returncode == 0
    crashed = run("check", where / "crashed.jsonl")
    assert crashed.returncode == 1 and ":21: torn tail" in crashed.stdout
    assert any((where / "run.artifacts").iterdir())
    with Session.load(where / "run.jsonl") as s:
        assert s.pending_tool_operations() == []
        assert s.messages[-1] == Message.assistant("Fixed: parse() now accepts timestamps without a fraction. 12 tests pass.")
        assert s.grants == {"read_file": "always", "search": "always", "write_file": "always", "run_tests": "always"}
        settles = [e.payload for e in s.events if e.type == "tool-settled"]
        assert [p["outcome"] for p in settles] == ["completed", "completed", "completed", "outcome-unknown", "completed"]
        assert sum(1 for e in s.events if e.type == "compaction") == 1
        assert sum(1 for e in s.events if e.type == "elision") == 1
        assert sum(1 for e in s.events if e.type == "run-context") == 1


def test_the_demo_in_a_new_temporary_directory_says_where() -> None:
    r = run("demo")
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[1]
    assert first.startswith("   files: ") and first.endswith("/ (kept)")
    where = Path(first[len("   files: ") : -len("/ (kept)")])
    try:
        assert (where / "run.jsonl").is_file() and (where / "crashed.jsonl").is_file()
    finally:
        import shutil

        shutil.rmtree(where)


def test_the_demo_will_not_overwrite_an_earlier_one(tmp_path: Path) -> None:
    assert run("demo", tmp_path).returncode == 0
    before = (tmp_path / "run.jsonl").read_bytes()
    line = one_error_line(run("demo", tmp_path))
    assert "exists (from an earlier demo?)" in line
    assert (tmp_path / "run.jsonl").read_bytes() == before


def test_the_demo_in_colour_on_request(tmp_path: Path) -> None:
    r = run("demo", "--color", "always", tmp_path)
    assert r.returncode == 0 and ANSI in r.stdout


# ---------------------------------------------------------------- bench, help, argv


def test_bench_is_delegated_with_its_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        seen.append(argv)
        return 7

    fake = types.ModuleType("agent_transcript.bench")
    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent_transcript.bench", fake)
    assert cli.main(["bench", "--quick", "--size", "1M"]) == 7
    assert seen == [["--quick", "--size", "1M"]]


def test_bench_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "agent_transcript.bench", None)
    assert cli.main(["bench"]) == 2
    err = capsys.readouterr().err
    assert err == "agent-transcript: bench is not available: this install has no agent_transcript.bench module\n"


def test_help_lists_every_command() -> None:
    r = run("--help")
    assert r.returncode == 0
    for command in ("show", "check", "repair", "stats", "follow", "demo", "bench"):
        assert command in r.stdout
    assert run("show", "--help").returncode == 0


def test_usage_errors_exit_2_without_a_traceback() -> None:
    for args in ((), ("frobnicate",), ("show",), ("show", "--tail", "x", str(DATA / "clean.jsonl"))):
        r = run(*args)
        assert r.returncode == 2
        assert "Traceback" not in r.stderr and "usage:" in r.stderr


def test_negative_tail_is_refused() -> None:
    assert "--tail" in one_error_line(run("show", "--tail", "-1", DATA / "clean.jsonl"))


def test_os_errors_are_described_in_one_line() -> None:
    assert describe_os_error(PermissionError(13, "Permission denied"), "x.jsonl") == "x.jsonl: permission denied"
    assert describe_os_error(FileNotFoundError(2, "No such file"), "x") == "x: no such file"
    assert describe_os_error(IsADirectoryError(21, "Is a directory"), "d") == "d: is a directory, not a transcript"
    assert describe_os_error(OSError(5, "Input/output error"), "x") == "x: Input/output error"


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    """A fifo is not a regular file: refused before anything would block on it."""
    import os

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for command in ("show", "stats", "check", "follow", "repair"):
        assert one_error_line(run(command, fifo)).endswith("pipe.jsonl: not a regular file")


def test_python_dash_m_and_the_console_script_are_the_same_program() -> None:
    script = Path(sys.executable).parent / "agent-transcript"
    a = subprocess.run([str(script), "check", str(DATA / "torn.jsonl")], capture_output=True, text=True, env=env())
    b = run("check", DATA / "torn.jsonl")
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr) == (1, b.stdout, "")
