"""The grep bench, run once on a tiny transcript as a smoke test (untimed; the figures are benches/bench_grep.py's)."""

from __future__ import annotations

import re
from pathlib import Path

import bench_grep
import pytest


def test_the_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_grep.main(["--mb", "0.3", "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    rows = {tuple(line.split()[:2]): line for line in out.splitlines()[2:]}
    assert ("absent", "agent-transcript") in rows and ("phrase", "rg") in rows and ("common", "rg") in rows
    counts = {cmd: int(line.split()[-2]) for (needle, cmd), line in rows.items() if needle == "phrase"}
    phrase_rows = [line for (needle, _), line in rows.items() if needle == "phrase"]
    assert all(re.search(r"\d+\.\d\dx$", line) for line in phrase_rows)
    assert counts["rg"] > 0  # the phrase is in the file: the row measures decoding too
