"""The OpenTelemetry export bench, run once on tiny sizes as a smoke test (untimed; the figures are
benches/bench_otlp.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench_otlp


def test_the_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_otlp.main(["--files", "12", "--kib", "4", "--runs", "1", "--dir", str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert "12 transcripts" in out and out.count("ratio (baseline/ours)") == 3
    assert "otlp_protobuf" in out
