"""The export bench, run once on tiny sizes as a smoke test (untimed; the figures are benches/bench_export.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

import bench_export  # noqa: E402


def test_the_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_export.main(["--mb", "0.5", "--files", "12", "--kib", "8", "--runs", "1", "--dir", str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert out.count("export_transcripts") == 2 and out.count("ratio (duckdb/ours)") == 2
    assert "(12 skipped)" in out and "(1 skipped)" in out
