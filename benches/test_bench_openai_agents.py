"""Smoke test of bench_openai_agents.py: it runs, and both stores give back the items.

The figures come from running the script itself (see its docstring); nothing
here depends on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import bench_openai_agents  # noqa: E402  (benches/ is on sys.path, as for baselines)


def test_the_bench_runs(tmp_path: Path) -> None:
    rows = bench_openai_agents.run(40, 2, tmp_path)
    assert [r[0] for r in rows] == ["add_items", "get_items()", "get_items(100)"]
