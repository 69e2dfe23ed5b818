"""Smoke test of bench_strands.py: it runs, and both stores give back the messages.

The figures come from running the script itself (see its docstring); nothing
here depends on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("strands", reason="the strands extra is not installed")

import bench_strands  # noqa: E402  (benches/ is on sys.path, as for baselines)


def test_the_bench_runs(tmp_path: Path) -> None:
    rows = bench_strands.run(24, 2, tmp_path)
    assert [r[3] for r in rows] == [24, 1]
    assert all(r[1] > 0 and r[2] > 0 for r in rows)
