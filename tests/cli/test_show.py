"""``agent-transcript show``: a transcript for a person, read-only."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from cli.helpers import ANSI, DATA, env, fixture, one_error_line, run

CLEAN = DATA / "clean.jsonl"


def blocks(stdout: str) -> list[str]:
    """The header line of every envelope block: ``'    7 13:10:08.552  tool-dispatched ...'``."""
    return [line for line in stdout.splitlines() if line[:5].strip().isdigit() and line[5:6] == " "]


def test_the_header_has_meta_size_counts_and_grants() -> None:
    r = run("show", CLEAN)
    assert r.returncode == 0 and r.stderr == ""
    head = r.stdout.split("\n\n")[0].splitlines()
    assert head[0] == str(CLEAN)
    assert head[1] == "  meta      agent=fixture-agent  cwd=/work/project  model=none"
    assert head[2] == f"  size      6.2 KiB ({CLEAN.stat().st_size:,} bytes), 19 lines, 19 envelopes"
    assert head[3] == "  messages  7 written, 3 live (what the model is sent next)"
    assert head[4].startswith("  time      2026-08-09 13:10:08 UTC -> 2026-08-09 13:10:08 UTC")
    assert head[5] == '  grants    {"grep": "always", "read_file": "always"}  (line 16)'


def test_every_envelope_is_a_block_with_local_time_type_and_role() -> None:
    r = run("show", CLEAN)
    heads = blocks(r.stdout)
    assert len(heads) == 19
    assert heads[0] == "    1 13:10:08.543  session-meta"
    assert heads[2] == "    3 13:10:08.546  message  system  [sysprompt]"
    assert heads[5].startswith("    6 13:10:08.551  message  assistant  +finish-reason  ")
    assert heads[18].startswith("   19 13:10:08.570  future-thing  (a type this version does not know")


def test_time_is_local() -> None:
    # A POSIX TZ string, so no tz database is needed: UTC+9.
    r = run("show", CLEAN, TZ="JST-9")
    assert blocks(r.stdout)[0] == "    1 22:10:08.543  session-meta"
    assert "── 2026-08-09 (JST) ──" in r.stdout


def test_tool_calls_settles_compaction_elision_and_run_context_are_explained() -> None:
    out = run("show", CLEAN).stdout
    assert '      -> read_file {"path": "app.log"}  call_1' in out
    assert "    7 13:10:08.552  tool-dispatched  read_file  call_1  round 1  idempotency=read-only" in out
    assert '      arguments {"path": "app.log"}' in out
    assert "      settled at line 9" in out
    assert "    9 13:10:08.555  tool-settled  read_file  completed  250 ms" in out
    assert "      dispatched at line 7 (call_1), 3 ms later" in out
    assert "3,200 bytes, 3,152 chars kept out of the conversation" in out  # the artifact
    assert "   12 13:10:08.560  message  tool  answers call_2 (grep)  (compacted away at line 15)" in out
    assert "(elided at line 14)" in out
    assert '      line 8 tool call_1: 1,500 bytes of content -> stub "[elided: app.log, 30 lines]"' in out
    assert "   15 13:10:08.564  compaction  tokens 5,000 -> 400" in out
    assert "      replaced 5 messages (lines 4, 6, 8, 10, 12), through line 12" in out
    assert "      kept 1 sticky message (line 3)" in out
    assert "      facts date=2026-08-09  branch=main" in out
    assert "      section AGENTS.md: unchanged, text at line 2" in out


def test_content_is_an_excerpt_unless_full() -> None:
    short = run("show", CLEAN).stdout
    assert "line 08 of a long tool result — ünïcödé ✓" in short
    assert "line 09 of a long tool result" not in short
    assert "… 22 more lines (1,260 chars; --full shows all)" in short
    full = run("show", "--full", CLEAN).stdout
    assert "line 30 of a long tool result — ünïcödé ✓" in full
    assert "--full shows all" not in full


def test_long_lines_are_wrapped_to_the_terminal() -> None:
    out = run("show", CLEAN, COLUMNS="60").stdout
    body = [line for line in out.splitlines() if line.startswith("      The user asked")]
    assert body and all(len(line) <= 60 for line in body)


def test_type_and_tail_select_envelopes() -> None:
    r = run("show", "--type", "tool-settled", CLEAN)
    assert [h.split()[2] for h in blocks(r.stdout)] == ["tool-settled", "tool-settled"]
    assert "showing 2 envelopes of 19" in r.stdout
    r = run("show", "--type", "grants,compaction", "--tail", "2", CLEAN)
    assert [h.split()[0] for h in blocks(r.stdout)] == ["15", "16"]
    r = run("show", "--tail", "1", CLEAN)
    assert [h.split()[0] for h in blocks(r.stdout)] == ["19"]


def test_a_filtered_settle_still_joins_its_dispatch() -> None:
    out = run("show", "--tail", "7", CLEAN).stdout
    assert "      dispatched at line 11 (call_2), 3 ms later" in out


def test_json_holds_the_documented_keys_and_every_envelope() -> None:
    r = run("show", "--json", CLEAN)
    doc = json.loads(r.stdout)
    assert set(doc) == {"path", "size", "meta", "grants", "warnings", "envelopes"}
    assert doc["size"] == CLEAN.stat().st_size
    assert doc["meta"] == {"agent": "fixture-agent", "cwd": "/work/project", "model": "none"}
    assert doc["grants"] == {"grep": "always", "read_file": "always"}
    assert len(doc["envelopes"]) == 19
    for env_, raw in zip(doc["envelopes"], CLEAN.read_bytes().splitlines()):
        assert set(env_) == {"line", "id", "type", "ts", "v", "payload"}
        line = json.loads(raw)
        assert {k: env_[k] for k in ("id", "type", "ts", "v", "payload")} == line
    only = json.loads(run("show", "--json", "--type", "message", "--tail", "1", CLEAN).stdout)
    assert [e["line"] for e in only["envelopes"]] == [18]


def test_replayed_is_what_load_hands_back(tmp_path: Path) -> None:
    doc = json.loads(run("show", "--replayed", "--json", CLEAN).stdout)
    with Session.load(fixture("clean.jsonl", tmp_path)) as session:
        assert [m["id"] for m in doc["messages"]] == session.message_ids
        got = [Message.from_dict(m) for m in doc["messages"]]
        assert got == session.messages
        assert doc["grants"] == session.grants
    assert doc["torn_tail"] is None
    out = run("show", "--replayed", CLEAN).stdout
    assert "what the model would be sent next: 3 messages (from 7 message lines)" in out
    assert "   15 13:10:08.564  message  user  (the compaction summary, line 15)" in out
    assert "finish-reason" not in out  # extras are not sent to the model


def test_replayed_leaves_out_a_torn_tail_and_writes_nothing(tmp_path: Path) -> None:
    path = fixture("torn.jsonl", tmp_path)
    before = path.read_bytes()
    r = run("show", "--replayed", path)
    assert r.returncode == 0
    assert "line 20 is a torn tail that load would remove" in r.stdout
    doc = json.loads(run("show", "--replayed", "--json", path).stdout)
    assert doc["torn_tail"] == {"line": 20, "bytes": len(before) - CLEAN.stat().st_size}
    assert len(doc["messages"]) == 3
    assert path.read_bytes() == before
    assert not Path(str(path) + ".repair").exists()


def test_replayed_elision_keeps_everything_but_content(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.system("sys"))
        s.append_message(Message.assistant(None, tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]))
        tool_id = s.append_message(Message.tool("c1", "a very long result"))
        s.append_elision([(tool_id, "[stub]")])
    doc = json.loads(run("show", "--replayed", "--json", path).stdout)
    assert doc["messages"][2] == {"id": tool_id, "line": 4, "role": "tool", "content": "[stub]", "tool_call_id": "c1"}
    out = run("show", "--replayed", path).stdout
    assert "(content elided at line 5)" in out


def test_replayed_refuses_what_load_refuses() -> None:
    line = one_error_line(run("show", "--replayed", DATA / "corrupt_mid.jsonl"))
    assert ":7: corrupt: not JSON" in line and "there is no replay to show" in line
    line = one_error_line(run("show", "--replayed", DATA / "unknown_id.jsonl"))
    assert ":6: corrupt: elision names" in line


def test_a_damaged_file_is_shown_with_its_damage_named() -> None:
    r = run("show", DATA / "corrupt_mid.jsonl")
    assert r.returncode == 0
    assert "  warning   line 7: skipped" in r.stdout
    assert len(blocks(r.stdout)) == 19
    r = run("show", DATA / "torn.jsonl")
    assert r.returncode == 0
    assert "  warning   line 20: skipped" in r.stdout
    r = run("show", DATA / "unknown_id.jsonl")
    assert r.returncode == 0
    assert "!! load refuses this: elision names" in r.stdout
    assert "replay stops: line 6" in r.stdout


def test_pending_operations_are_in_the_header_with_their_state() -> None:
    out = run("show", DATA / "pending.jsonl").stdout
    assert "  pending   2 tool operations never settled:" in out
    assert "            write_file call_a result-persisted (line 5)" in out
    assert "            run_tests call_b dispatched (line 6)" in out
    assert "never settled, but its result is in the file (result-persisted: it completed)" in out
    assert "never settled, and no result: it may or may not have run (dispatched)" in out


def test_a_file_being_written_is_shown_without_touching_it(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    with Session.create(path, {"agent": "live"}) as session:
        session.append_message(Message.user("first"))
        with open(path, "ab") as f:  # half of the writer's next line
            f.write(b'{"id":"abc","payload":{"role":"user","content":"sec')
        before = path.read_bytes()
        r = run("show", path)
        assert r.returncode == 0
        assert "      first" in r.stdout
        assert "line 3: skipped" in r.stdout
        r = run("show", "--replayed", path)
        assert r.returncode == 0 and "      first" in r.stdout
        assert path.read_bytes() == before
        r = run("repair", path)
        assert "a writer holds this transcript" in one_error_line(r)
        assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.jsonl", "not a transcript: the file is empty"),
        ("blank_lines.jsonl", "not a transcript: the file is empty"),
        ("garbage.bin", "not a transcript: no line of the file is an envelope"),
        ("text.txt", "not a transcript: no line of the file is an envelope"),
        ("not_meta_first.jsonl", "not a transcript: the first line is not a session-meta"),
        ("future.jsonl", "unsupported envelope version v=2"),
        ("future_mid.jsonl", "unsupported envelope version v=2"),
    ],
)
@pytest.mark.parametrize("flags", [(), ("--json",), ("--replayed",)])
def test_what_is_not_a_transcript_is_one_line_and_exit_2(name: str, message: str, flags: tuple[str, ...]) -> None:
    line = one_error_line(run("show", *flags, DATA / name))
    assert str(DATA / name) in line
    assert message in line


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_missing_and_directory_are_one_line_and_exit_2(tmp_path: Path, flags: tuple[str, ...]) -> None:
    assert one_error_line(run("show", *flags, tmp_path / "x.jsonl")).endswith("x.jsonl: no such file")
    assert one_error_line(run("show", *flags, tmp_path)).endswith(f"{tmp_path}: is a directory, not a transcript")


def test_no_colour_when_not_a_terminal_and_colour_when_asked() -> None:
    assert ANSI not in run("show", CLEAN).stdout
    assert ANSI in run("show", "--color", "always", CLEAN).stdout
    assert ANSI not in run("show", "--color", "never", CLEAN, NO_COLOR="").stdout


def _on_a_tty(*args: str, **extra: str) -> str:
    """Runs the command with its stdout on a pseudo-terminal; returns what it printed."""
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "agent_transcript", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env=env(**extra),
    ) as proc:
        os.close(follower)
        chunks = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
    os.close(leader)
    assert proc.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_a_terminal_unless_no_color() -> None:
    assert ANSI in _on_a_tty("show", str(CLEAN))
    assert ANSI not in _on_a_tty("show", str(CLEAN), NO_COLOR="1")
    assert ANSI not in _on_a_tty("show", str(CLEAN), TERM="dumb")


def test_a_closed_pipe_is_not_a_traceback() -> None:
    big = subprocess.run(
        f'"{sys.executable}" -m agent_transcript show --full "{CLEAN}" | head -n 1',
        shell=True,
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert big.stdout == f"{CLEAN}\n"
    assert "Traceback" not in big.stderr and "BrokenPipe" not in big.stderr


def test_escape_sequences_in_a_transcript_do_not_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "esc.jsonl"
    with Session.create(path, {"agent": "x\x1b]0;title\x07"}) as s:
        s.append_message(Message.user("clear \x1b[2J then\r\nnext\rover \x9b1m"))
        s.append_tool_dispatched("c1", "to\x1bol", {"a": 1})
    for args in (("show",), ("show", "--replayed"), ("stats",), ("show", "--color", "always")):
        out = run(*args, path).stdout
        plain = out.replace("\x1b[0m", "").replace(ANSI, "")  # our own colour codes, when asked for
        assert not any(ch in plain for ch in "\x1b\x07\x9b\r"), args
    out = run("show", path).stdout
    assert "      clear \\x1b[2J then" in out and "      next\\x0dover \\x9b1m" in out
    assert "agent=x\\x1b]0;title\\x07" in out
