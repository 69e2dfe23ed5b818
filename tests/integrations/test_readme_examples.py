"""The README's framework examples run as written, offline, and write files that check clean."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from ._helpers import assert_checks_and_loads

README = Path(__file__).resolve().parent.parent.parent / "README.md"


def example(module: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    [block] = [b for b in blocks if f"agent_transcript.integrations.{module} import" in b]
    return block


def test_the_openai_agents_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    monkeypatch.chdir(tmp_path)
    exec(compile(example("openai_agents"), "README.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.splitlines() == [
        "It is sunny in Paris.", "['user', 'assistant', 'tool', 'assistant']"]
    s = assert_checks_and_loads(tmp_path / "weather.jsonl")
    assert s.pending_tool_operations() == []


def test_the_pydantic_ai_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    if sys.version_info < (3, 11):
        pytest.skip("pydantic-ai-slim needs Python >= 3.11")
    pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")
    if importlib.util.find_spec("pydantic_ai.conversation_store") is None:
        pytest.skip("pydantic-ai before 2.66 has no ConversationStore")
    monkeypatch.chdir(tmp_path)
    exec(compile(example("pydantic_ai"), "README.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.splitlines() == ["Hello!"]
    assert_checks_and_loads(tmp_path / "conversations" / "chat-1.jsonl")
    assert_checks_and_loads(tmp_path / "chat.jsonl")
