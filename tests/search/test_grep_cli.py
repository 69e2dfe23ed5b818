"""``agent-transcript grep``: output, exit statuses, filters, and the order of many files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from agent_transcript.search import Hit, grep
from tests.cli.helpers import ANSI, env, one_error_line, run


def _run_file(path: Path) -> dict[str, str]:
    """A transcript with a compacted-away message, a summary, a tool call and its result."""
    ids = {}
    with Session.create(path, {"title": "t"}) as s:
        ids["old"] = s.append_message(Message.user("the needle before the compaction"))
        s.append_compaction("a summary with the needle", ids["old"], 10, 2)
        ids["call"] = s.append_message(Message.assistant("reading", tool_calls=[
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "needle.txt"}'}}]))
        ids["result"] = s.append_message(Message.tool("c1", 'it said "needle"'))
    return ids


def test_ripgrep_style_lines_and_exit_statuses(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _run_file(path)
    r = run("grep", "needle", path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"{path}:3:a summary with the needle",
        f'{path}:4:{{"path": "needle.txt"}}',
        f'{path}:5:it said "needle"',
    ]
    assert ANSI not in r.stdout  # not a terminal: no colour
    every = run("grep", "--all-lines", "needle", path)
    assert every.stdout.splitlines()[0] == f"{path}:2:the needle before the compaction"
    assert run("grep", "nothing-like-this", path).returncode == 1
    coloured = run("grep", "--color", "always", "needle", path)
    assert "\x1b[1;31mneedle\x1b[0m" in coloured.stdout


def test_json_hits(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ids = _run_file(path)
    r = run("grep", "--json", "-F", '"needle"', path)
    assert r.returncode == 0, r.stderr
    (hit,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert hit == {"path": str(path), "line": 5, "id": ids["result"], "type": "message", "role": "tool",
                   "field": "content", "text": 'it said "needle"', "matches": [[8, 16]]}


def test_role_type_and_case(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    _run_file(path)
    assert [h.line for h in grep("NEEDLE", path, ignore_case=True, role="tool") if isinstance(h, Hit)] == [5]
    assert [h.line for h in grep("NEEDLE", path, ignore_case=False) if isinstance(h, Hit)] == []
    assert [h.field for h in grep("needle", path, type="compaction") if isinstance(h, Hit)] == ["summary"]
    assert [h.line for h in grep("needle", path, role="user") if isinstance(h, Hit)] == [3]  # a summary is a user message


@pytest.mark.parametrize("args, says", [
    (["grep", "(", "{dir}"], "bad pattern: unclosed group"),  # the last line of the regex error
    (["grep", "needle", "{dir}/missing.jsonl"], "no such file"),
    (["grep", "--type", "grants", "needle", "{dir}"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    _run_file(tmp_path / "run.jsonl")
    r = run(*[a.format(dir=tmp_path) for a in args])
    if "invalid choice" in says:  # argparse's own usage error
        assert r.returncode == 2 and says in r.stderr
        return
    assert says in one_error_line(r)


def test_a_corrupt_file_is_named_and_the_rest_searched(tmp_path: Path) -> None:
    good = tmp_path / "a.jsonl"
    _run_file(good)
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(good.read_bytes().replace(b"\n", b"\nnot json\n", 1))
    r = run("grep", "needle", tmp_path)
    assert r.returncode == 2
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"agent-transcript: {bad}: corrupt at line 2: ")
    assert r.stdout.count(str(good)) == 3
    every = run("grep", "--all-lines", "needle", tmp_path)  # the damaged line is skipped, not an error
    assert every.returncode == 0 and every.stdout.count(str(bad)) == 4


def test_many_files_in_walk_order_whatever_the_threads(tmp_path: Path) -> None:
    names = []
    for i in range(40):
        folder = tmp_path / f"d{i % 3}" / ("deep" if i % 2 else "")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"run{i:02d}.jsonl"
        with Session.create(path) as s:
            for k in range(i % 4 + 1):
                s.append_message(Message.user(f"needle {i} {k}"))
        names.append(path)
    (tmp_path / "notes.txt").write_text("needle")

    def walk(folder: Path) -> list[Path]:  # the documented order: a folder's files by name, then its subfolders
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
        files = [p for p in entries if p.suffix == ".jsonl"]
        return files + [f for d in entries if d.is_dir() for f in walk(d)]

    def order(threads: int) -> list[tuple[Path, int]]:
        return [(h.path, h.line) for h in grep("needle", tmp_path, threads=threads) if isinstance(h, Hit)]

    one = order(1)
    assert order(2) == one == order(8)
    assert list(dict.fromkeys(p for p, _ in one)) == walk(tmp_path) and len(walk(tmp_path)) == 40
    for path in names:
        assert [line for p, line in one if p == path] == list(range(2, 2 + int(path.stem[3:]) % 4 + 1))
    r1 = run("grep", "needle", tmp_path)
    assert r1.stdout == run("grep", "needle", tmp_path).stdout
    assert r1.stdout.splitlines()[0].startswith(f"{walk(tmp_path)[0]}:2:")


def test_a_fifo_or_a_folder_named_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    r = run("grep", "needle", fifo, tmp_path / "pipe.jsonl", timeout=30)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"agent-transcript: {fifo}: not a regular file"] * 2
    found = list(grep("needle", tmp_path))  # walked into: the same
    assert [(type(f).__name__, getattr(f, "reason", None)) for f in found] == [("Unsearchable", "not a regular file")]


def test_folder_symlinks_are_not_followed(tmp_path: Path) -> None:
    _run_file(tmp_path / "run.jsonl")
    os.symlink(tmp_path, tmp_path / "loop")
    assert len([h for h in grep("needle", tmp_path) if isinstance(h, Hit)]) == 3


def test_each_line_of_a_text_with_a_match_is_one_row(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.tool("c1", "first needle\nmiddle\nlast needle, needle\n" + "x" * 1000 + "needle"))
    r = run("grep", "--color", "always", "needle", path)
    mark = "\x1b[1;31mneedle\x1b[0m"
    rows = [row.split(":", 2)[2] for row in r.stdout.splitlines()]
    assert rows[:2] == [f"first {mark}", f"last {mark}, {mark}"]
    assert rows[2].startswith("…") and rows[2].endswith(mark) and len(rows) == 3  # a long line: a window


def test_redact_prints_a_line_that_held_a_secret_redacted(tmp_path: Path) -> None:
    key = "ghp_" + "a1B2c3D4e5" * 4
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user(f"deploy with token {key}\nthen say deployed"))
        s.append_message(Message.assistant("deployed, nothing secret here"))
    plain = run("grep", "deploy", path)
    assert key in plain.stdout  # what --redact must take out is there without it
    r = run("grep", "--redact", "deploy", path)
    assert r.returncode == 0, r.stderr
    assert key not in r.stdout and "[redacted:" in r.stdout
    assert f"{path}:3:deployed, nothing secret here" in r.stdout.splitlines()  # untouched lines as they were
    hits = [json.loads(line) for line in run("grep", "--json", "--redact", "deploy", path).stdout.splitlines()]
    assert [h["matches"] is None for h in hits] == [True, False]
    assert key not in json.dumps(hits)
    assert key in path.read_text()  # the transcript is never changed


GREP_ALONE = r"""
import sys
from agent_transcript import cli

status = cli.main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith("agent_transcript.cli.") or m == "agent_transcript.formats")
print(" ".join(loaded), status)
"""


def test_grep_imports_no_other_command(tmp_path: Path) -> None:
    # The interpreter's start is most of a search's time on a small file: grep loads only its modules.
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("a needle"))
    proc = subprocess.run([sys.executable, "-c", GREP_ALONE, "grep", "-F", "needle", str(path)],
                          capture_output=True, text=True, timeout=60, env=env())
    assert proc.stdout.splitlines()[-1] == ("agent_transcript.cli.errors agent_transcript.cli.grep "
                                            "agent_transcript.cli.outcome agent_transcript.cli.redact "
                                            "agent_transcript.cli.style 0")
    assert proc.stdout.splitlines()[0] == f"{path}:2:a needle"


def test_grep_alone_parses_as_the_whole_command_line(tmp_path: Path) -> None:
    for args in (["grep", "--help"], ["grep"], ["grep", "-F", "x", str(tmp_path / "none.jsonl")]):
        alone = run(*args)
        whole = subprocess.run([sys.executable, "-c", "import sys; from agent_transcript.cli.app import main; "
                                "sys.exit(main(sys.argv[1:]))", *args], capture_output=True, text=True, timeout=60, env=env())
        assert (alone.returncode, alone.stdout, alone.stderr) == (whole.returncode, whole.stdout, whole.stderr)
