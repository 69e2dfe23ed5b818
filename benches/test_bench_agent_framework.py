"""Smoke test of bench_agent_framework.py: it runs, and both providers give back the messages.

The figures come from running the script itself (see its docstring); nothing
here depends on time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("agent-framework-core needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("agent_framework", reason="the agent-framework extra is not installed")

import bench_agent_framework  # noqa: E402  (benches/ is on sys.path, as for baselines)


def test_the_bench_runs(tmp_path: Path) -> None:
    rows = bench_agent_framework.run(24, 8, 4, 2, tmp_path)
    assert [r[3] for r in rows] == [8, 4, 1, 24]
    assert [r[1] is None for r in rows] == [False, False, False, True]
