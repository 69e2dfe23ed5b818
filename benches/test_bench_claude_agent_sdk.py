"""Smoke test of bench_claude_agent_sdk.py: it runs, and every store gives back the entries.

The figures come from running the script itself (see its docstring); nothing
here depends on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk", reason="the claude-agent-sdk extra is not installed")

import bench_claude_agent_sdk  # noqa: E402  (benches/ is on sys.path, as for baselines)


def test_the_bench_runs(tmp_path: Path) -> None:
    rows = bench_claude_agent_sdk.run(60, 7, 2, tmp_path)
    assert [r[0] for r in rows] == ["append 60 in batches of 7", "load 60, best of 2"]
    assert all(seconds > 0 for row in rows for seconds in row[1:])
    (tmp_path / "turns").mkdir()
    turns = bench_claude_agent_sdk.run(300, 0, 1, tmp_path / "turns")[0][0]
    assert turns.startswith("append 300 in ") and turns.endswith(" turns"), turns
