"""The token columns of an export (issue 34), read back with real DuckDB: each session's totals are
``stats``', each message's add up to them, and an imported session's are its source's own numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.cli.app import main
from agent_transcript.fleet import export_transcripts
from agent_transcript.fleet.tokens import runs_tokens
from agent_transcript.formats import import_transcript
from agent_transcript.inspect.tokens import TokenCount, read_usage, token_totals

from share.test_tokens import _rl, claude_session, oracle, response, write_lines

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

COUNTS = "input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens"


def query(out: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    for t in ("sessions", "messages"):
        con.execute(f"create view {t} as select * from read_parquet('{out / t}/**/*.parquet', hive_partitioning=true)")
    return con.execute(sql).fetchall()


def codex_rollout(path: Path, steps: list[tuple[int, int, int]]) -> TokenCount:
    """A Codex rollout whose responses used ``steps`` (fresh input, cached input, output), each a call
    whose output Codex writes before the response's cumulative token_count; returns the last total."""
    records = [_rl(0, "session_meta", {"id": "0199aa00-0000-7000-8000-0000000000c1", "timestamp": "2026-02-01T09:00:00Z",
                                       "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.98.0"}),
               _rl(1, "turn_context", {"turn_id": "t0", "cwd": "/w", "model": "gpt-5-codex"}),
               _rl(1, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]})]
    total = TokenCount()
    for n, (fresh, cached, out) in enumerate(steps, 2):
        total += TokenCount(fresh, out, cached, 0)
        # Codex's input holds its cached part
        usage = {"input_tokens": total.input + total.cache_read, "cached_input_tokens": total.cache_read,
                 "output_tokens": total.output, "reasoning_output_tokens": 0, "total_tokens": total.total}
        records += [_rl(n, "response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{n}"}),
                    _rl(n, "response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}),
                    _rl(n, "event_msg", {"type": "token_count", "info": {"total_token_usage": usage}})]
    write_lines(path, records)
    return total


def _row(count: TokenCount) -> tuple[int, int, int, int]:
    return (count.input, count.output, count.cache_read, count.cache_creation)


@given(st.lists(response, min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(0, 30_000), st.integers(0, 20_000), st.integers(1, 3000)), min_size=1, max_size=5))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_each_sessions_totals_are_its_sources_and_its_messages_add_up_to_them(
        tmp_path: Path, responses: list[dict[str, Any]], steps: list[tuple[int, int, int]]) -> None:
    case = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
    runs = case / "runs"
    runs.mkdir(parents=True)
    write_lines(case / "claude.src", claude_session(responses))
    import_transcript(case / "claude.src", runs / "claude.jsonl")
    Session.fork(runs / "claude.jsonl", runs / "fork.jsonl").close()
    codex_total = codex_rollout(case / "rollout-2026-02-01T09-00-00-0199aa00-0000-7000-8000-0000000000c1.jsonl", steps)
    import_transcript(case / "rollout-2026-02-01T09-00-00-0199aa00-0000-7000-8000-0000000000c1.jsonl",
                      runs / "codex.jsonl", source_format="codex")
    with Session.create(runs / "plain.jsonl") as s:  # no usage recorded: null, not 0
        s.append_message(Message.user("hi"))
    export_transcripts(runs, out=case / "out")
    sessions = {Path(r[0]).name: r[1:] for r in query(case / "out", f"select session, {COUNTS} from sessions")}
    summed = {Path(r[0]).name: r[1:] for r in query(case / "out", f"""
        select session, sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_creation_tokens)
        from messages group by session""")}
    claude_total = oracle(case / "claude.src")[0]
    assert sessions["claude.jsonl"] == sessions["fork.jsonl"] == _row(claude_total)
    assert sessions["codex.jsonl"] == _row(codex_total)
    assert sessions["plain.jsonl"] == (None,) * 4 == summed["plain.jsonl"]
    for name, row in sessions.items():
        own = token_totals(read_usage(str(runs / name)))
        assert row == (_row(own.total) if own.responses else (None,) * 4)
        # each message's add up to them (a response the import made no message of, a Claude Code
        # response of thinking only, is the run's but no message's)
        on_messages = sum(own.by_message.values(), TokenCount())
        assert summed[name] == (_row(on_messages) if own.by_message else (None,) * 4)
        if name != "claude.jsonl" and name != "fork.jsonl":
            assert summed[name] == row
    # a message without usage has none; one with usage has all four
    assert query(case / "out", f"""select count(*) from messages where role <> 'assistant'
                                   and coalesce({COUNTS}) is not null""") == [(0,)]
    # the folder's total, each message once (a fork shares its source's ids), is ls --tokens' total
    [folder] = query(case / "out", """select sum(i), sum(o), sum(r), sum(w) from (select distinct id, input_tokens i,
                                      output_tokens o, cache_read_tokens r, cache_creation_tokens w from messages)""")
    claude_on_messages = sum(token_totals(read_usage(str(runs / "claude.jsonl"))).by_message.values(), TokenCount())
    assert folder == _row(claude_on_messages + codex_total)
    # which is ls --tokens' total when every response has its message
    news = [r.new.total for r in runs_tokens(str(p) for p in sorted(runs.iterdir())) if r.new is not None]
    assert sum(news, TokenCount()) == claude_total + codex_total


def test_the_columns_equal_what_the_stats_command_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rs = [{"model": "claude-sonnet-4-5", "blocks": ["thinking", "text", "tool_use"], "input": 10 + k, "cache_read": 1000 * k,
           "cache_creation": 7, "outputs": [1, 2, 3, 40 + k]} for k in range(4)]
    write_lines(tmp_path / "s.src", claude_session(rs))
    import_transcript(tmp_path / "s.src", tmp_path / "run.jsonl")
    assert main(["stats", str(tmp_path / "run.jsonl"), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["tokens"]
    assert main(["export", str(tmp_path / "run.jsonl"), "-o", str(tmp_path / "out")]) == 0
    [row] = query(tmp_path / "out", f"select {COUNTS} from sessions")
    assert row == (said["input"], said["output"], said["cache_read"], said["cache_creation"])
    per_message = query(tmp_path / "out", f"select {COUNTS} from messages where input_tokens is not null order by line")
    assert len(per_message) == len(rs) == said["responses"]
    assert tuple(sum(col) for col in zip(*per_message)) == row


def test_an_export_folder_of_the_schema_before_the_token_columns_is_refused(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        s.append_message(Message.user("hi"))
    out = tmp_path / "out"
    export_transcripts(tmp_path / "run.jsonl", out=out)
    manifest = json.loads((out / "_export.json").read_text())
    (out / "_export.json").write_text(json.dumps({**manifest, "version": 1}))
    before = sorted(p.name for p in out.rglob("*"))
    assert main(["export", str(tmp_path / "run.jsonl"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "without the token columns" in err and "new folder" in err
    assert sorted(p.name for p in out.rglob("*")) == before
