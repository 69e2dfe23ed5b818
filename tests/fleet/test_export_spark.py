"""The export read by PySpark in local mode, as it is (long suite only: ``AT_LONG=1``; a JVM start
takes a minute on a busy machine). Needs pyspark and Java 17; skipped, saying why, without them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent_transcript.fleet import TABLES, export_transcripts

pytestmark = pytest.mark.skipif(os.environ.get("AT_LONG") != "1", reason="long suite only (AT_LONG=1)")

DATA = Path(__file__).resolve().parent.parent / "data" / "cli"


def test_spark_reads_the_folder_as_duckdb_does(tmp_path: Path) -> None:
    pyspark = pytest.importorskip("pyspark")
    duckdb = pytest.importorskip("duckdb")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for Spark")
    out = tmp_path / "out"
    export_transcripts(DATA, out=out)
    spark = (pyspark.sql.SparkSession.builder.master("local[2]").appName("export-test")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        con = duckdb.connect()
        for table in TABLES:
            frame = spark.read.parquet(str(out / table))
            assert "day" in frame.columns  # the partition column, from the folder names
            want = con.execute(f"select count(*) from read_parquet('{out / table}/**/*.parquet', hive_partitioning=true)").fetchone()
            assert want is not None and frame.count() == want[0]
        ops = spark.read.parquet(str(out / "tool_operations"))
        pending = sorted((r["tool"], r["state"]) for r in ops.where("state in ('dispatched', 'result-persisted')").collect())
        assert pending == [("run_tests", "dispatched"), ("write_file", "result-persisted")]
        days = {str(r["day"]) for r in spark.read.parquet(str(out / "sessions")).select("day").distinct().collect()}
        assert "2026-08-09" in days
        messages = spark.read.parquet(str(out / "messages"))
        assert dict(messages.schema["tool_call_ids"].jsonValue()["type"]) == {"type": "array", "elementType": "string",
                                                                               "containsNull": True}
    finally:
        spark.stop()
