"""The token totals of an imported Claude Code session in its real format (the import bench's
generator: many blocks a response, tool results, compactions), as ``agent-transcript stats
--json`` gives them, against the source's own numbers summed independently: each
``message.id`` once, each count the largest its lines give."""

from __future__ import annotations

import json
from pathlib import Path

import import_gen
import pytest

from agent_transcript.cli.app import main
from agent_transcript.formats import import_transcript

KINDS = {"input": "input_tokens", "output": "output_tokens", "cache_read": "cache_read_input_tokens",
         "cache_creation": "cache_creation_input_tokens"}


def source_totals(path: Path) -> tuple[dict[str, int], int]:
    per_id: dict[str, dict[str, int]] = {}
    with open(path, "rb") as f:
        for raw in f:
            r = json.loads(raw)
            m = r.get("message") if r.get("type") == "assistant" else None
            if isinstance(m, dict) and isinstance(m.get("usage"), dict):
                seen = per_id.setdefault(m["id"], {})
                for name, key in KINDS.items():
                    seen[name] = max(seen.get(name, 0), m["usage"].get(key, 0))
    return {name: sum(v[name] for v in per_id.values()) for name in KINDS}, len(per_id)


def test_stats_of_an_imported_claude_code_session_are_its_sources(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    src, run = tmp_path / "session.jsonl", tmp_path / "run.jsonl"
    import_gen.write_claude_code(str(src), 1 << 20, seed=3)
    import_transcript(src, run)
    assert main(["stats", str(run), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["tokens"]
    totals, responses = source_totals(src)
    assert responses > 50 and totals["input"] > 0
    assert {name: said[name] for name in KINDS} == totals
    assert said["responses"] == responses
