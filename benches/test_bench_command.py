"""``agent-transcript bench`` runs end to end on a tiny file (its figures are not judged here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_transcript import bench

MIB = 1024 * 1024

ROWS = ["load_vs_orjson", "load_vs_stdlib", "load_vs_wc", "rss_vs_orjson", "peek_vs_orjson",
        "append_vs_user", "append_vs_write", "append_after_load", "load_scaling_time",
        "load_scaling_memory", "repair_vs_cp", "tail_scan", "gil"]
NEEDS_ORJSON = {"load_vs_orjson", "rss_vs_orjson", "peek_vs_orjson"}


def test_bench_json_then_table_reusing_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--mb", "0.5", "--seed", "3", "--dir", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["errors"] == []
    assert rc == (0 if out["ok"] else 1)
    assert [r["key"] for r in out["rows"]] == ROWS
    measured = {r["key"] for r in out["rows"] if r["ok"] is not None}
    optional = {"tail_scan"} | (set() if out["orjson"] else NEEDS_ORJSON)
    assert set(ROWS) - optional <= measured
    assert out["generated_s"] is not None
    assert Path(out["file"]).stat().st_size == out["size"]
    assert Path(out["small_file"]).stat().st_size == out["small_size"] < out["size"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("scratch")] == []

    rc = bench.main(["--mb", "0.5", "--seed", "3", "--dir", str(tmp_path)])
    text = capsys.readouterr().out
    assert "reused" in text
    for row in out["rows"]:
        assert row["what"] in text
    assert "targets met" in text


def test_bench_refuses_a_nonpositive_size(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench.main(["--mb", "0"])
    assert e.value.code == 2


def test_bench_without_arguments_is_a_quick_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It generated 1 GiB (minutes) before: the default is 16 MiB, every row
    measured and shown, the targets (set for 1 GiB) not judged."""
    rc = bench.main(["--dir", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert (out["mb"], out["judged"]) == (16, False)
    assert 16 * MIB <= out["size"] < 17 * MIB
    assert out["errors"] == [] and out["ok"] is True and rc == 0
    assert [r["key"] for r in out["rows"]] == ROWS
    rc = bench.main(["--dir", str(tmp_path)])
    text = capsys.readouterr().out
    assert "reused" in text and "not judged" in text and "--mb 1024" in text and rc == 0
    rc = bench.main(["--mb", "0.5", "--dir", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["judged"] is True and rc == (0 if out["ok"] else 1)
    assert out["ok"] == (all(r["ok"] for r in out["rows"] if r["ok"] is not None) and not out["errors"])
