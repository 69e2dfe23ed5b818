"""``agent-transcript export`` / ``fleet.export_transcripts`` (issue 17): Parquet read back with real DuckDB.

The tables must agree with ``stats`` (the read model, ``inspect.compute_stats``)
on every fixture and on the demo's transcripts: counts, live messages, the tool
table per tool, the pending operations.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session
from agent_transcript.fleet import MANIFEST, TABLES, ExportError, export_transcripts
from agent_transcript.inspect import compute_stats, read

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

DATA = Path(__file__).resolve().parent.parent / "data" / "cli"
FIXTURES = sorted(DATA.glob("*.jsonl"))


def query(out: Path, sql: str) -> list[tuple[Any, ...]]:
    """``sql`` over the export, each table a view reading its folder with hive partitioning."""
    con = duckdb.connect()
    for t in TABLES:
        if (out / t).is_dir():
            con.execute(f"create view {t} as select * from read_parquet('{out / t}/**/*.parquet', hive_partitioning=true)")
    return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("demo") / "d"
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "demo", str(where)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return where


def copy_of(path: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "src" / path.name
    dest.parent.mkdir(exist_ok=True)
    shutil.copy(path, dest)
    art = path.parent / (path.stem + ".artifacts")
    if art.is_dir():
        shutil.copytree(art, dest.parent / art.name)
    return dest


def check_agrees_with_stats(path: Path, out: Path) -> None:
    key = str(path.absolute())
    stats = compute_stats(read(str(path), lenient=True))
    [(envelopes, messages, live, pending, status, size, lines)] = query(
        out, f"select envelopes, messages, live_messages, pending, status, size, lines from sessions where session = '{key}'")
    assert envelopes == stats.envelopes
    assert messages == stats.messages.written
    assert live == stats.messages.live
    assert size == stats.size and lines == stats.lines
    assert pending == (None if stats.pending is None else len(stats.pending))
    assert query(out, f"select count(*) from envelopes where session = '{key}'") == [(stats.envelopes,)]
    by_type = dict(query(out, f"select type, count(*) from envelopes where session = '{key}' group by 1"))
    assert by_type == {name: t.count for name, t in stats.types.items()}
    bytes_by_type = dict(query(out, f"select type, sum(bytes) from envelopes where session = '{key}' group by 1"))
    assert bytes_by_type == {name: t.bytes for name, t in stats.types.items()}
    roles = dict(query(out, f"select role, count(*) from messages where session = '{key}' and source = 'message' group by 1"))
    assert roles == stats.messages.by_role
    if stats.messages.live is None:
        assert query(out, f"select count(*) from messages where session = '{key}' and live is not null") == [(0,)]
    else:
        positions = query(out, f"select live_position from messages where session = '{key}' and live order by live_position")
        assert [p for (p,) in positions] == list(range(stats.messages.live))
    # The tool table: calls per tool, settles per outcome.
    tools: dict[str, dict[str, int]] = {}
    for tool, dispatched, outcome, n in query(out, f"""
            select coalesce(tool, '?'), dispatch_line is not null, outcome, count(*)
            from tool_operations where session = '{key}' group by all"""):
        row = tools.setdefault(tool, {"calls": 0, "completed": 0, "failed": 0, "outcome_unknown": 0})
        if dispatched:
            row["calls"] += n
        if outcome is not None:
            name = outcome.replace("-", "_")
            row[name] = row.get(name, 0) + n
    want = {name: {"calls": t.calls, **t.outcomes} for name, t in stats.tools.items()}
    assert tools == want
    # Pending operations: there, with the state replay gives them.
    got = query(out, f"""select op_id, state, call_id, tool, dispatch_line, result_message_id from tool_operations
                         where session = '{key}' and state in ('dispatched', 'result-persisted') order by dispatch_line""")
    if stats.pending is None:
        assert got == []
    else:
        assert got == [(p.op_id, p.state, p.call_id, p.tool, p.line, p.result_message_id) for p in stats.pending]


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_every_fixture_agrees_with_stats(fixture: Path, tmp_path: Path) -> None:
    path = copy_of(fixture, tmp_path)
    result = export_transcripts(path, out=tmp_path / "out")
    assert result.exported == [path]
    check_agrees_with_stats(path, tmp_path / "out")


def test_the_demo_transcripts_agree_with_stats(demo_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = export_transcripts(demo_dir, out=out)
    names = sorted(p.name for p in result.exported)
    assert {"run.jsonl", "crashed.jsonl"} <= set(names)
    for path in result.exported:
        check_agrees_with_stats(path, out)


def test_one_folder_of_every_fixture_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = export_transcripts(DATA, out=out)
    assert sorted(result.exported) == FIXTURES
    assert query(out, "select count(*) from sessions") == [(len(FIXTURES),)]
    statuses = dict(query(out, "select status, count(*) from sessions group by 1"))
    assert set(statuses) <= {"clean", "torn tail", "corrupt", "unsupported version", "not a transcript"}
    for path in FIXTURES:
        check_agrees_with_stats(path, out)


def test_a_fifo_in_the_folder_is_a_row_not_a_wait(tmp_path: Path) -> None:
    # Opening a FIFO for reading waits for a writer. A thread stands in for
    # one after a few seconds, so an export that opens it ends, with a row
    # that says it read nothing, instead of hanging the test.
    folder = tmp_path / "src"
    folder.mkdir()
    shutil.copy(DATA / "clean.jsonl", folder / "a.jsonl")
    fifo = folder / "b.jsonl"
    os.mkfifo(fifo)
    stop = threading.Event()

    def writer() -> None:
        while not stop.wait(0.1):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: nobody reads it yet
                continue

    helper = threading.Thread(target=writer, daemon=True)
    helper.start()
    out = tmp_path / "out"
    try:
        result = export_transcripts(folder, out=out)
    finally:
        stop.set()
        helper.join()
    assert sorted(result.exported) == [folder / "a.jsonl", fifo]
    rows = query(out, "select session, status, reason from sessions order by session")
    assert rows == [(str(folder / "a.jsonl"), "clean", None), (str(fifo), "unreadable", "not a regular file (a FIFO)")]


def test_pending_operations_are_there(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.assistant(tool_calls=[{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]))
        done = s.append_tool_dispatched("c1", "ls", {})
        s.append_message(Message.tool("c1", "a b"))
        s.append_tool_settled(done, "completed", duration=0.5)
        s.append_tool_dispatched("c2", "rm", {"path": "x"}, idempotency="non-idempotent")
        s.append_tool_dispatched("c3", "cat", {"path": "y"})
        s.append_message(Message.tool("c3", "y's text"))
    out = tmp_path / "out"
    export_transcripts(path, out=out)
    rows = query(out, "select tool, state, outcome, duration, idempotency from tool_operations order by dispatch_line")
    assert rows == [("ls", "settled", "completed", 0.5, "unknown"), ("rm", "dispatched", None, None, "non-idempotent"),
                    ("cat", "result-persisted", None, None, "unknown")]
    assert query(out, "select tool_call_ids, tool_call_names from messages where role = 'assistant'") == [(["c1"], ["ls"])]
    check_agrees_with_stats(path, out)


def test_an_archive_exports_as_its_transcript(tmp_path: Path) -> None:
    plain = copy_of(DATA / "records.jsonl", tmp_path)
    packed = Session.archive(copy_of(DATA / "clean.jsonl", tmp_path), keep=True)
    out = tmp_path / "out"
    export_transcripts(plain.parent, out=out)
    check_agrees_with_stats(packed, out)
    same = query(out, f"""select a.line, a.id, a.type, a.payload = b.payload from envelopes a join envelopes b using (line)
                         where a.session = '{packed}' and b.session = '{packed.with_suffix("")}' order by line""")
    assert same and all(equal for *_, equal in same)


def test_the_payload_is_the_json_text_of_the_line(tmp_path: Path) -> None:
    path = copy_of(DATA / "records.jsonl", tmp_path)
    out = tmp_path / "out"
    export_transcripts(path, out=out)
    peeked = Session.peek(path)
    rows = query(out, "select line, id, type, payload, ts from envelopes order by line")
    assert [(line, id_, type_, json.loads(payload)) for line, id_, type_, payload, _ in rows] == [
        (e.line, e.id, e.type, e.payload) for e in peeked.envelopes]
    first_ts = rows[0][4]
    assert first_ts.isoformat().startswith(peeked.envelopes[0].ts[:19])


def test_an_unchanged_file_is_skipped(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for name in ("clean.jsonl", "pending.jsonl", "records.jsonl"):
        copy_of(DATA / name, tmp_path)
    out = tmp_path / "out"
    first = export_transcripts(src, out=out)
    assert len(first.exported) == 3 and first.skipped == []
    parts = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))
    again = export_transcripts(src, out=out)
    assert again.exported == [] and len(again.skipped) == 3 and again.parts == []
    assert sorted(p.relative_to(out) for p in out.rglob("*.parquet")) == parts
    counts = query(out, "select (select count(*) from sessions), (select count(*) from envelopes), (select count(*) from messages)")

    # One file changes: it alone is read again, and its old rows are gone.
    with Session.load(src / "records.jsonl") as s:
        s.append_message(Message.user("one more"))
    third = export_transcripts(src, out=out)
    assert [p.name for p in third.exported] == ["records.jsonl"] and len(third.skipped) == 2
    (s_, e_, m_) = counts[0]
    assert query(out, "select (select count(*) from sessions), (select count(*) from envelopes), (select count(*) from messages)") == [
        (s_, e_ + 1, m_ + 1)]
    check_agrees_with_stats(src / "records.jsonl", out)

    # A file goes: its rows go too; the others stay.
    os.unlink(src / "pending.jsonl")
    fourth = export_transcripts(src, out=out)
    assert fourth.removed == [str(src / "pending.jsonl")] and fourth.exported == []
    assert query(out, "select count(*) from sessions") == [(2,)]
    assert query(out, f"select count(*) from envelopes where session = '{src / 'pending.jsonl'}'") == [(0,)]
    for name in ("clean.jsonl", "records.jsonl"):
        check_agrees_with_stats(src / name, out)
    manifest = json.loads((out / MANIFEST).read_text())
    listed = {rel for entry in manifest["sources"].values() for rel in entry["parts"]}
    assert listed == {p.relative_to(out).as_posix() for p in out.rglob("*.parquet")}


def test_a_big_file_is_written_a_batch_at_a_time(tmp_path: Path) -> None:
    path = copy_of(DATA / "records.jsonl", tmp_path)
    out = tmp_path / "out"
    result = export_transcripts(path, out=out, batch_bytes=1)
    assert len([p for p in result.parts if p.startswith("envelopes/")]) > 3
    check_agrees_with_stats(path, out)
    rows = query(out, "select line from envelopes order by line")
    assert len(rows) == len(set(rows)) == len(Session.peek(path).envelopes)


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)], capture_output=True, text=True)


def test_the_command_line(tmp_path: Path) -> None:
    src = copy_of(DATA / "clean.jsonl", tmp_path).parent
    r = run_cli("export", src, "-o", tmp_path / "out", "--format", "parquet")
    assert r.returncode == 0, r.stderr
    assert "exported 1 file(s), skipped 0 unchanged" in r.stdout
    r = run_cli("export", src, "-o", tmp_path / "out", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["skipped"] == [str(src / "clean.jsonl")]


@pytest.mark.parametrize("case", ["missing", "out is a file", "out is not an export", "bad format", "bad manifest"])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    src = copy_of(DATA / "clean.jsonl", tmp_path).parent
    out = tmp_path / "out"
    args: list[str | Path] = ["export", src, "-o", out]
    if case == "missing":
        args[1] = tmp_path / "nowhere"
    elif case == "out is a file":
        out.write_text("mine")
    elif case == "out is not an export":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "bad format":
        args += ["--format", "csv"]
    elif case == "bad manifest":
        assert run_cli(*args).returncode == 0
        (out / MANIFEST).write_text("{")
    before = sorted((p.relative_to(tmp_path), p.read_bytes() if p.is_file() else None) for p in tmp_path.rglob("*"))
    r = run_cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    after = sorted((p.relative_to(tmp_path), p.read_bytes() if p.is_file() else None) for p in tmp_path.rglob("*"))
    if case in ("missing", "bad format", "out is a file", "out is not an export"):
        assert after == before
    else:  # a bad manifest: nothing but the lock file touched
        assert [a for a in after if a[0].name != "_export.lock"] == [b for b in before if b[0].name != "_export.lock"]


def test_without_pyarrow_the_error_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ExportError, match=r"agent-transcript\[arrow\]"):
        export_transcripts(DATA / "clean.jsonl", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_failed_export_leaves_nothing_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    for name in ("clean.jsonl", "records.jsonl"):
        copy_of(DATA / name, tmp_path)
    out = tmp_path / "out"
    export_transcripts(src / "clean.jsonl", out=out)
    before = sorted((p.relative_to(out), p.read_bytes()) for p in out.rglob("*") if p.is_file())
    real = pq.write_table
    calls = 0

    def failing(table: Any, where: Any, **kw: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            real(table, where, **kw)  # the bytes are there, under the temporary name
            raise OSError(28, "No space left on device")
        real(table, where, **kw)

    monkeypatch.setattr(pq, "write_table", failing)
    with pytest.raises(OSError):
        export_transcripts(src, out=out)
    monkeypatch.setattr(pq, "write_table", real)
    assert not [p for p in out.rglob("*") if p.name.startswith(".tmp-")]
    # The two parts renamed before the failure are not in the manifest: the next export deletes them.
    again = export_transcripts(src, out=out)
    assert [p.name for p in again.exported] == ["records.jsonl"]
    for name in ("clean.jsonl", "records.jsonl"):
        check_agrees_with_stats(src / name, out)
    assert before  # the first export's files were there to compare against


def test_importing_the_package_does_not_import_pyarrow() -> None:
    code = ("import sys, agent_transcript, agent_transcript.fleet, agent_transcript.cli, agent_transcript.inspect;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'duckdb')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_the_documented_queries_run_on_an_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import re

    page = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "fleet.md"
    text = page.read_text(encoding="utf-8")
    section = text[text.index("### Three queries"):text.index("Spark reads the same folders")]
    [block] = re.findall(r"```python\n(.*?)```", section, re.S)
    export_transcripts(DATA, out=tmp_path / "export")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(page), "exec"), {})
    out = capsys.readouterr().out
    assert "runs/pending.jsonl" not in out and "cli/pending.jsonl │ write_file │ call_a  │ result-persisted" in out
    assert "cli/records.jsonl" in out and "read_file" in out


_KILLED_BEFORE_ITS_MANIFEST = """
import os, signal, sys
from agent_transcript.fleet import export as export_module
def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
export_module._write_manifest = killed
export_module.export_transcripts(sys.argv[1], out=sys.argv[2])
"""


def test_a_first_export_killed_before_its_manifest_is_done_again_by_the_next(tmp_path: Path) -> None:
    """A first export killed (SIGKILL, for real) after its parts and before its
    manifest, the commit, left a folder of parts no manifest lists, which the
    next export refused as "not an export" until someone removed it by hand.
    The next export now takes it over: the leftovers go, and the folder holds
    that export whole. A folder with anything of the user's in it is still
    refused, its files untouched."""
    src = copy_of(DATA / "clean.jsonl", tmp_path).parent
    out = tmp_path / "out"
    child = subprocess.run([sys.executable, "-c", _KILLED_BEFORE_ITS_MANIFEST, str(src), str(out)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    leftovers = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert leftovers and not (out / MANIFEST).exists()

    mine = out / "sessions" / "day=2026-01-01" / "notes.txt"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("mine")
    with pytest.raises(ExportError, match="not an export"):
        export_transcripts(src, out=out)
    assert mine.read_text() == "mine"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == leftovers
    mine.unlink()

    result = export_transcripts(src, out=out)
    parts = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert parts == sorted(result.parts) and not set(parts) & set(leftovers)
    listed = json.loads((out / MANIFEST).read_text())["sources"]
    assert sorted(rel for entry in listed.values() for rel in entry["parts"]) == parts
    assert not [p for p in out.rglob("*") if p.name.startswith(".tmp-")]


def _listed_parts(out: Path) -> dict[str, bytes]:
    """Every part the manifest lists, and its bytes."""
    sources = json.loads((out / MANIFEST).read_text())["sources"]
    return {rel: (out / rel).read_bytes() for entry in sources.values() for rel in entry["parts"]}


def _messages_by_session(out: Path) -> list[tuple[Any, ...]]:
    return query(out, "select session, count(*) from messages group by session order by session")


def test_a_re_export_killed_before_its_manifest_leaves_every_listed_part_as_it_was(tmp_path: Path) -> None:
    """A changed file's old rows were cut out of the parts that held them in
    place, before the manifest: a re-export killed (SIGKILL, for real) or
    interrupted in between left the manifest listing parts without that
    file's rows, old or new, until the next export. Its parts are written
    again under new names now, and the old ones go once the new manifest is
    in place: killed before it, every listed part is as it was, byte for byte;
    the next export then gives what an export into a new folder gives."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a", "b"):  # one day's parts hold the rows of both
        with Session.create(src / f"{name}.jsonl", {"agent": name}) as s:
            s.append_message(Message.user(f"hi from {name}"))
            s.append_message(Message.assistant("hello"))
    out = tmp_path / "out"
    export_transcripts(src, out=out)
    before = _listed_parts(out)
    rows_before = _messages_by_session(out)
    with Session.open(src / "a.jsonl") as s:
        s.append_message(Message.user("changed"))

    child = subprocess.run([sys.executable, "-c", _KILLED_BEFORE_ITS_MANIFEST, str(src), str(out)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert _listed_parts(out) == before
    assert query(out, "select 1 from messages limit 1")  # the new parts are there too, unlisted

    again = export_transcripts(src, out=out)
    assert again.exported == [src / "a.jsonl"] and again.skipped == [src / "b.jsonl"]
    fresh = export_transcripts(src, out=tmp_path / "fresh")
    assert _messages_by_session(out) == _messages_by_session(tmp_path / "fresh") != rows_before
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == sorted(_listed_parts(out))
    assert sum(fresh.rows.values()) > 0


def test_a_process_started_meanwhile_is_not_another_export(tmp_path: Path) -> None:
    # From its fork to its exec, a child started by another thread shares the
    # open lock file of the export that just ended (and so its lock): the next
    # export was refused as if another were writing (261 of 300 here).
    src = tmp_path / "src"
    src.mkdir()
    with Session.create(src / "a.jsonl") as s:
        s.append_message(Message.user("hi"))
    stop = threading.Event()

    def spawn() -> None:
        while not stop.is_set():
            subprocess.run(["true"])

    spawner = threading.Thread(target=spawn)
    spawner.start()
    try:
        for _ in range(100):
            export_transcripts(src, out=tmp_path / "out")
    finally:
        stop.set()
        spawner.join()


def test_an_export_holding_the_folder_makes_another_wait_then_refuse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    src.mkdir()
    with Session.create(src / "a.jsonl") as s:
        s.append_message(Message.user("hi"))
    out = tmp_path / "out"
    export_transcripts(src, out=out)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
         str(out / "_export.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr("agent_transcript.fleet.export.LOCK_PATIENCE", 0.3)
        with Session.open(src / "a.jsonl") as s:
            s.append_message(Message.user("more"))  # a change the refused export must not write
        before = sorted((p, p.stat().st_mtime_ns) for p in out.rglob("*"))
        with pytest.raises(ExportError, match="another export is writing this folder"):
            export_transcripts(src, out=out)
        assert sorted((p, p.stat().st_mtime_ns) for p in out.rglob("*")) == before
    finally:
        holder.kill()
        holder.communicate()
    export_transcripts(src, out=out)  # once it is let go, the next export writes
    assert query(out, "select count(*) from messages") == [(2,)]
