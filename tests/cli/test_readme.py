"""The README's usage example runs as written, and does what its comments say."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from agent_transcript import Message, Session

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_usage_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    path = tmp_path / "2026-08-09-refactor.jsonl"
    assert path.is_file() and os.stat(path).st_mode & 0o777 == 0o600
    with Session.load(path) as s:
        assert s.warnings == []
        assert s.pending_tool_operations() == []
        assert s.grants == {"read_file": "always"}
        assert s.messages[-1] == Message.user("and now the tests")
        assert [e.type for e in s.events][:4] == ["session-meta", "message", "message", "grants"]


def test_the_rewind_and_replacement_lines_are_the_fixtures() -> None:
    text = README.read_text(encoding="utf-8")
    fixture = (README.parent / "tests" / "data" / "cli" / "records.jsonl").read_text(encoding="utf-8").splitlines()
    shown = [line for line in text.splitlines() if '"type":"rewind"' in line or '"replacement":[' in line]
    assert len(shown) == 2 and all(line in fixture for line in shown)


KILLED_MID_TOOL = r"""
import sys, time
from agent_transcript import Message, Session
s = Session.create(sys.argv[1])
s.append_message(Message.system("You are a careful coding agent."))
s.append_message(Message.user("Make parse() accept '2026-08-09T13:10:08Z'."))
s.append_grants({"read_file": "always"})
call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "dates.py"}'}}
s.append_message(Message.assistant("Reading it first.", tool_calls=[call]))
s.append_tool_dispatched("call_1", "read_file", call["function"]["arguments"], idempotency="read-only")
print("reading", flush=True)
time.sleep(60)
"""


def test_the_resume_part_resumes_a_run_killed_mid_tool(tmp_path: Path) -> None:
    """The README's resume, run on a transcript whose writer was killed with
    SIGKILL while its tool ran: what it sends a model is a conversation a strict
    chat API accepts (every call answered right after it, no library flags)."""
    import signal
    import subprocess
    import sys

    path = tmp_path / "2026-08-09-refactor.jsonl"
    child = subprocess.Popen([sys.executable, "-c", KILLED_MID_TOOL, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "reading\n"
        child.send_signal(signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        if child.stdout is not None:
            child.stdout.close()
    block = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    resume = block.split("# ... a day later, in a new process:\n", 1)[1]
    namespace: dict[str, object] = {"path": str(path)}
    exec(compile("from agent_transcript import Message, Session\n" + resume, "README.md", "exec"), namespace)
    chat = namespace["chat"]
    assert isinstance(chat, list)
    assert [(m["role"], m.get("tool_call_id")) for m in chat] == [
        ("system", None), ("user", None), ("assistant", None), ("tool", "call_1"), ("user", None)]
    assert "interrupted" in chat[3]["content"] and "sysprompt" not in chat[0]
    with Session.load(path) as s:
        assert s.unanswered_tool_calls() == [] and s.pending_tool_operations() == []
