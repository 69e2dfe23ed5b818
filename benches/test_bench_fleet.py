"""The fleet bench, run once on tiny sizes as a smoke test (untimed; the figures are benches/bench_fleet.py's)."""

from __future__ import annotations

from pathlib import Path

import bench_fleet
import pytest

from agent_transcript import Session


def test_the_generated_transcript_loads_clean(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(bench_fleet.transcript_bytes(50_000, seed=4))
    with Session.load(path) as s:
        assert s.warnings == [] and s.pending_tool_operations() == []
        assert s.messages[0].content.startswith("task 4")


def test_the_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_fleet.main(["--files", "20", "--kib", "8", "--mb", "1", "--dir", str(tmp_path / "b")])
    out = capsys.readouterr().out
    # Every row of issue 17's fleet figures: ls against the peek loop (and the
    # command), fork, archive's ratio and speed, peek of the archive and of the original.
    for row in ("list_transcripts", "Session.peek loop", "ratio", "agent-transcript ls ", "agent-transcript ls --json",
                "fork (whole)", "archive ", "MiB/s, ratio", "peek original", "peek archive"):
        assert row in out, row
