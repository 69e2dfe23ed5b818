"""The show bench, run once on a tiny transcript as a smoke test (untimed; the figures are benches/bench_show.py's)."""

from __future__ import annotations

from pathlib import Path

import bench_show
import pytest


def test_the_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_show.main(["--mb", "0.2", "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "show --json" in out and "MB/s" in out
