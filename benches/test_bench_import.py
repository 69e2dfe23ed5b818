"""The import bench's generator, as a smoke test (untimed): its files import, load
clean, replay, and give their source back (the timing is benches/bench_import.py's)."""

from __future__ import annotations

from pathlib import Path

import import_gen
import pytest

from agent_transcript import Session
from agent_transcript.formats import import_transcript, source_lines


@pytest.mark.parametrize("kind", ["claude-code", "codex"])
def test_generated_sources_import(tmp_path: Path, kind: str) -> None:
    src = tmp_path / "src.jsonl"
    write = import_gen.write_claude_code if kind == "claude-code" else import_gen.write_codex
    write(str(src), 1_500_000)
    [result] = import_transcript(src, tmp_path / "out.jsonl")
    assert result.source_format == kind and result.warnings == []
    with Session.load(tmp_path / "out.jsonl") as s:
        assert s.warnings == [] and s.messages
        assert any(e.type == "compaction" for e in s.events)
        assert s.pending_tool_operations() == []
    assert b"\n".join(source_lines(tmp_path / "out.jsonl")) + b"\n" == src.read_bytes()
