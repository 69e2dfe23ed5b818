"""The README stays what a newcomer reads in two minutes, and its quickstart does what it says."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent_transcript import Message, Session

from .test_examples import ROOT, examples, run

README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")


def test_the_two_commands_come_first() -> None:
    """.ci/run runs the second command as the README says it: it must stay as it is, on top."""
    head = TEXT.split("\n```\n", 1)[0]
    assert head == ("# agent-transcript\n\n```sh\n"
                    "pip install . && agent-transcript demo\n"
                    'pip install ".[test,openai-agents,pydantic-ai,agent-framework,google-adk,strands,claude-agent-sdk]" && python -m pytest')
    assert 'pip install ".[test,openai-agents,pydantic-ai,agent-framework,google-adk,strands,claude-agent-sdk]" && python -m pytest' in (
        ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_it_is_short_and_points_at_nothing_missing() -> None:
    assert len(TEXT.splitlines()) <= 250
    assert "SPEC.md" not in TEXT
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), target


def test_the_quickstart_leaves_a_resumed_transcript(tmp_path: Path) -> None:
    [quickstart] = [e for e in examples(README) if "answer_unanswered_tool_calls" in e.code]
    assert run(quickstart, tmp_path) is None
    path = tmp_path / "run.jsonl"
    assert os.stat(path).st_mode & 0o777 == 0o600
    with Session.load(path) as s:
        assert s.warnings == []
        assert s.pending_tool_operations() == [] and s.unanswered_tool_calls() == []
        assert s.messages[-1] == Message.user("Run them again.")
        chat = s.chat_messages()
        assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "user"]
        assert chat[3]["tool_call_id"] == chat[2]["tool_calls"][0]["id"]
        settled = [e.payload for e in s.events if e.type == "tool-settled"]
        assert [p["outcome"] for p in settled] == ["outcome-unknown"]
