"""Smoke test of bench_google_adk.py: it runs, and both services give back the events.

The figures come from running the script itself (see its docstring); nothing
here depends on time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("google-adk needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("google.adk", reason="the google-adk extra is not installed")

import bench_google_adk  # noqa: E402  (benches/ is on sys.path, as for baselines)


def test_the_bench_runs(tmp_path: Path) -> None:
    rows = bench_google_adk.run(24, 2, tmp_path)
    assert [r[3] for r in rows] == [24, 24, 1]
    assert all(r[1] > 0 and r[2] > 0 for r in rows)
