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
