"""Scenario 16: the core's coverage-guided fuzz targets (rust/core/fuzz), a short run each.

Long suite only (``AT_LONG=1``, as ``run_long.py`` runs it): each target runs
for 60 s (``run_cargo_fuzz.py --seconds 60``, under ``nice``) from the
committed corpus, and none may find a crash, a leak or a timeout. Skipped,
saying why, where the nightly toolchain or cargo-fuzz is absent (it is not in
``.ci/run``). The hour-long figures are in the README's reliability table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import run_cargo_fuzz
from rkit import LONG, figure

FUZZ = Path(__file__).resolve().parents[2] / "rust" / "core" / "fuzz"


@pytest.mark.skipif(not LONG, reason="the long suite only (AT_LONG=1): 60 s of fuzzing a target")
@pytest.mark.parametrize("target", run_cargo_fuzz.TARGETS)
def test_a_minute_of_fuzzing_finds_nothing(tmp_path: Path, target: str) -> None:
    if not (FUZZ / "Cargo.toml").exists():
        pytest.skip("rust/core/fuzz is not in this tree")
    why = run_cargo_fuzz.available()
    if why is not None:
        pytest.skip(why)
    rows = tmp_path / "rows.jsonl"
    code = run_cargo_fuzz.main(["--seconds", "60", "-t", target, "--json", str(rows)])
    (row,) = [json.loads(line) for line in rows.read_text().splitlines()]
    figure(f"16. cargo fuzz {target}, 60 s", executions=row["executions"], cov=row["cov"], ft=row["ft"],
           cpu_s=row["cpu_s"], crashes=len(row["crashes"]))
    assert row["crashes"] == [], open(row["log"]).read()[-4000:]
    assert code == 0 and row["executions"] > 0
