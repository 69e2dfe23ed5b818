"""Tokens: an imported Claude Code session and Codex rollout give the totals their sources say
(differential: the oracle reads the source file itself), each response once, across forks and resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, _core
from agent_transcript.cli.app import main
from agent_transcript.fleet.tokens import runs_tokens
from agent_transcript.formats import import_transcript
from agent_transcript.inspect.tokens import PriceTable, TokenCount, read_usage, token_totals

MODELS = ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"]


def _record(kind: str, uid: str, parent: str | None, n: int, **fields: Any) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "s1",
            "version": "2.1.40", "type": kind, "uuid": uid,
            "timestamp": f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.000Z", **fields}


response = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS),
    "blocks": st.lists(st.sampled_from(["thinking", "text", "tool_use"]), min_size=1, max_size=4),
    "input": st.integers(0, 50_000), "cache_read": st.integers(0, 200_000), "cache_creation": st.integers(0, 20_000),
    "outputs": st.lists(st.integers(1, 4000), min_size=4, max_size=4),
})


def claude_session(responses: list[dict[str, Any]], prefix: str = "") -> list[dict[str, Any]]:
    """A Claude Code session: a prompt, then each response as one line per content block, each
    line with the response's usage so far (its output count growing, as Claude Code streams it),
    each tool call answered."""
    out = [_record("user", f"{prefix}u0", None, 0, message={"role": "user", "content": "go"})]
    parent, n = f"{prefix}u0", 1
    for k, r in enumerate(responses):
        mid = f"msg_{prefix}{k:04d}"
        outputs = sorted(r["outputs"])
        for j, kind in enumerate(r["blocks"]):
            block: dict[str, Any] = {"type": "text", "text": f"answer {k}.{j}"}
            if kind == "thinking":
                block = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
            elif kind == "tool_use":
                block = {"type": "tool_use", "id": f"toolu_{prefix}{k}_{j}", "name": "Bash", "input": {"command": "ls"}}
            usage = {"input_tokens": r["input"], "cache_read_input_tokens": r["cache_read"],
                     "cache_creation_input_tokens": r["cache_creation"], "output_tokens": outputs[min(j, 3)],
                     "service_tier": "standard"}
            uid = f"{prefix}a{k}_{j}"
            out.append(_record("assistant", uid, parent, n, requestId=f"req_{prefix}{k}",
                               message={"id": mid, "type": "message", "role": "assistant", "model": r["model"],
                                        "content": [block], "stop_reason": None, "usage": usage}))
            parent, n = uid, n + 1
            if kind == "tool_use":
                rid = f"{prefix}r{k}_{j}"
                out.append(_record("user", rid, parent, n, message={"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": block["id"], "content": "ok", "is_error": False}]}))
                parent, n = rid, n + 1
    return out


def write_lines(path: Path, records: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def oracle(path: Path) -> tuple[TokenCount, dict[str, TokenCount], dict[str, TokenCount]]:
    """The source's own numbers, read as ccusage reads them: each message.id once, the usage of
    its last line (Claude Code's final count for that response). Returns the total, per model, per id."""
    last: dict[str, dict[str, Any]] = {}
    for raw in path.read_text().splitlines():
        r = json.loads(raw)
        if r.get("type") == "assistant":
            last[r["message"]["id"]] = r["message"]
    per_id = {mid: TokenCount(m["usage"]["input_tokens"], m["usage"]["output_tokens"],
                              m["usage"]["cache_read_input_tokens"], m["usage"]["cache_creation_input_tokens"])
              for mid, m in last.items()}
    per_model: dict[str, TokenCount] = {}
    for mid, m in last.items():
        per_model[m["model"]] = per_model.get(m["model"], TokenCount()) + per_id[mid]
    return sum(per_id.values(), TokenCount()), per_model, per_id


@given(st.lists(response, min_size=1, max_size=12))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_imported_claude_code_session_counts_what_its_source_says(tmp_path: Path, responses: list[dict[str, Any]]) -> None:
    case = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
    case.mkdir()
    src, dest = case / "session.jsonl", case / "run.jsonl"
    write_lines(src, claude_session(responses))
    import_transcript(src, dest)
    totals = token_totals(read_usage(str(dest)))
    total, per_model, per_id = oracle(src)
    assert totals.total == total
    assert totals.responses == len(per_id)
    assert totals.by_model == per_model
    # each response's tokens are on the message it became
    for entry in _message_entries(dest):
        mid = entry[1].get("claude-code", {}).get("message-id")
        if mid is not None:
            assert totals.by_message[entry[0]] == per_id[mid]


def _message_entries(path: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(e.id, e.payload) for e in Session.peek(path).envelopes if e.type == "message"]


def test_the_stats_command_says_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dest = tmp_path / "s.jsonl", tmp_path / "run.jsonl"
    rs = [{"model": MODELS[k % 2], "blocks": ["thinking", "text", "tool_use"], "input": 10 + k, "cache_read": 1000 * k,
           "cache_creation": 7, "outputs": [1, 2, 3, 40 + k]} for k in range(5)]
    write_lines(src, claude_session(rs))
    import_transcript(src, dest)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"claude-sonnet-4*": {"input": 3, "output": 15, "cache_read": 0.3, "cache_creation": 3.75}}))
    assert main(["stats", str(dest), "--json", "--prices", str(prices)]) == 0
    got = json.loads(capsys.readouterr().out)["tokens"]
    total, per_model, _ = oracle(src)
    assert (got["input"], got["output"], got["cache_read"], got["cache_creation"]) == \
        (total.input, total.output, total.cache_read, total.cache_creation)
    sonnet = per_model["claude-sonnet-4-5"]
    expected = (sonnet.input * 3 + sonnet.output * 15 + sonnet.cache_read * 0.3 + sonnet.cache_creation * 3.75) / 1e6
    assert got["cost"]["total"] == pytest.approx(expected)
    assert got["cost"]["unpriced_models"] == ["claude-opus-4-1"]
    assert main(["stats", str(dest)]) == 0
    assert f"{total.output:,} out" in capsys.readouterr().out


def test_bad_prices_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    Session.create(path).close()
    prices = tmp_path / "p.json"
    for bad in ('{"m": {"input": -1}}', '{"m": {"inputs": 1}}', "[1]", "{"):
        prices.write_text(bad)
        assert main(["stats", str(path), "--prices", str(prices)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--prices" in err


def test_a_resumed_session_and_a_fork_add_nothing_twice(tmp_path: Path) -> None:
    rs = [{"model": MODELS[0], "blocks": ["text", "tool_use"], "input": 100 * (k + 1), "cache_read": 5, "cache_creation": 1,
           "outputs": [3, 5, 8, 13]} for k in range(4)]
    first = claude_session(rs[:2])
    # Claude Code's resume writes a new file that repeats the history it resumes, then goes on.
    resumed = claude_session(rs)
    assert resumed[: len(first)] == first
    write_lines(tmp_path / "one.jsonl.src", first)
    write_lines(tmp_path / "two.jsonl.src", resumed)
    runs = tmp_path / "runs"
    runs.mkdir()
    import_transcript(tmp_path / "one.jsonl.src", runs / "one.jsonl")
    import_transcript(tmp_path / "two.jsonl.src", runs / "two.jsonl")
    Session.fork(runs / "two.jsonl", runs / "three.jsonl").close()
    got = list(runs_tokens(str(runs / n) for n in ("one.jsonl", "two.jsonl", "three.jsonl")))
    one, two, three = (g.own for g in got)
    assert one is not None and two is not None and three is not None
    assert three.total == two.total  # a fork's own tokens are its source's
    assert got[2].new is not None and got[2].new.responses == 0  # and add nothing to the folder
    folder = sum((g.new.total for g in got if g.new is not None), TokenCount())
    union_total, _, union_ids = oracle(tmp_path / "two.jsonl.src")
    assert folder == union_total and len(union_ids) == 4
    assert one.total + got[1].new.total == folder  # type: ignore[union-attr]


def _rl(n: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2026-02-01T09:{n // 60:02d}:{n % 60:02d}.000Z", "type": kind, "payload": payload}


turn = st.fixed_dictionaries({
    "model": st.sampled_from(["gpt-5-codex", "gpt-5"]),
    "steps": st.lists(st.tuples(st.integers(0, 30_000), st.integers(0, 20_000), st.integers(0, 3000)),
                      min_size=1, max_size=4),
    "repeat": st.booleans(),
    "calls": st.booleans(),
})


@given(st.lists(turn, min_size=1, max_size=6))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_imported_codex_rollout_counts_increments_not_totals(tmp_path: Path, turns: list[dict[str, Any]]) -> None:
    case = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
    case.mkdir()
    records = [_rl(0, "session_meta", {"id": "0199aa00-0000-7000-8000-000000000001", "timestamp": "2026-02-01T09:00:00Z",
                                       "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.98.0"})]
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0, "total_tokens": 0}
    per_model: dict[str, TokenCount] = {}
    per_response: list[TokenCount | None] = []  # each assistant message's, in order
    n = 1
    for k, t in enumerate(turns):
        records.append(_rl(n, "turn_context", {"turn_id": f"t{k}", "cwd": "/w", "model": t["model"]}))
        records.append(_rl(n, "response_item", {"type": "message", "role": "user",
                                                "content": [{"type": "input_text", "text": f"task {k}"}]}))
        for fresh, cached, out in t["steps"]:
            last = {"input_tokens": fresh + cached, "cached_input_tokens": cached, "output_tokens": out,
                    "reasoning_output_tokens": 0, "total_tokens": fresh + cached + out}
            total = {key: total[key] + last[key] for key in total}
            n += 1
            if t["calls"]:
                # Codex writes a call's output before the token_count of the response that made the call.
                records.append(_rl(n, "response_item", {"type": "function_call", "name": "shell",
                                                        "arguments": "{}", "call_id": f"call_{n}"}))
                records.append(_rl(n, "response_item", {"type": "function_call_output", "call_id": f"call_{n}",
                                                        "output": "ok"}))
            else:
                records.append(_rl(n, "response_item", {"type": "message", "role": "assistant",
                                                        "content": [{"type": "output_text", "text": f"step {n}"}]}))
            event = _rl(n, "event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total),
                                                                          "last_token_usage": last}})
            records.append(event)
            if t["repeat"]:
                records.append(event)  # Codex sends the same totals again: nothing new
            step = TokenCount(fresh, out, cached, 0)  # Codex's input holds the cached part; counted apart
            per_response.append(step if step != TokenCount() else None)
            if step != TokenCount():
                per_model[t["model"]] = per_model.get(t["model"], TokenCount()) + step
    src, dest = case / "rollout-2026-02-01T09-00-00-0199aa00-0000-7000-8000-000000000001.jsonl", case / "run.jsonl"
    write_lines(src, records)
    import_transcript(src, dest, source_format="codex")
    totals = token_totals(read_usage(str(dest)))
    # the oracle: the last cumulative total the source reports
    assert totals.total == TokenCount(total["input_tokens"] - total["cached_input_tokens"], total["output_tokens"],
                                      total["cached_input_tokens"], 0)
    assert totals.total.total == total["total_tokens"]
    assert {m: c for m, c in totals.by_model.items()} == per_model
    # each token_count is on the message of the response it counts, whatever came between
    assistants = [eid for eid, p in _message_entries(dest) if p["role"] == "assistant"]
    assert [totals.by_message.get(eid) for eid in assistants] == per_response
    assert sum(totals.by_message.values(), TokenCount()) == totals.total


def test_a_frameworks_usage_in_extras_counts_once_per_response(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hi"))
        a = s.append_message(Message.assistant("hello"), {"pydantic-ai": {
            "kind": "response", "model_name": "gpt-5", "provider_response_id": "resp_1",
            "usage": {"input_tokens": 11, "output_tokens": 7, "cache_read_tokens": 3}}})
        b = s.append_message(Message.assistant("more"), {"openai": {
            "model": "gpt-4.1", "usage": {"prompt_tokens": 20, "completion_tokens": 5,
                                          "prompt_tokens_details": {"cached_tokens": 4}}}})
        # the same response written again (a retried write): counted once
        s.append_message(Message.assistant("hello"), {"pydantic-ai": {
            "kind": "response", "model_name": "gpt-5", "provider_response_id": "resp_1",
            "usage": {"input_tokens": 11, "output_tokens": 7, "cache_read_tokens": 3}}})
    totals = token_totals(read_usage(str(path)))
    assert totals.responses == 2
    # both providers' input holds the cached part: it is counted apart
    assert totals.by_message[a] == TokenCount(8, 7, 3, 0)
    assert totals.by_message[b] == TokenCount(16, 5, 4, 0)
    assert totals.by_model == {"gpt-5": TokenCount(8, 7, 3, 0), "gpt-4.1": TokenCount(16, 5, 4, 0)}


def test_price_table_prefixes(tmp_path: Path) -> None:
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"gpt-5*": {"input": 1}, "gpt-5-codex*": {"input": 2}, "gpt-5": {"input": 3}}))
    table = PriceTable.load(p)
    assert table.price_of("gpt-5") == {"input": 3}
    assert table.price_of("gpt-5-codex-mini") == {"input": 2}
    assert table.price_of("gpt-5-mini") == {"input": 1}
    assert table.price_of("claude") is None


def test_ls_tokens_counts_a_fork_once_in_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rs = [{"model": MODELS[0], "blocks": ["text"], "input": 1000, "cache_read": 0, "cache_creation": 0,
           "outputs": [1, 2, 3, 50]} for _ in range(3)]
    write_lines(tmp_path / "s.src", claude_session(rs))
    runs = tmp_path / "runs"
    runs.mkdir()
    import_transcript(tmp_path / "s.src", runs / "a.jsonl")
    Session.fork(runs / "a.jsonl", runs / "b.jsonl").close()
    assert main(["ls", str(runs), "--tokens", "--json", "--sort", "path"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["tokens"]["input"] for r in rows] == [3000, 3000]
    assert [r["tokens_new"]["input"] for r in rows] == [3000, 0]
    assert main(["ls", str(runs), "--tokens", "--sort", "path"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].split()[:5] == ["total", "3,000", "in,", "3", "out"]  # one line a response: output 1 each


def test_each_word_a_usage_line_holds_holds_a_part_the_search_looks_for() -> None:
    """The core searches for parts of the words: a line that holds a word must hold one."""
    from agent_transcript.inspect import tokens

    assert all(any(a in w for a in tokens._ANCHORS) for w in tokens._WANTED)


def test_a_word_that_holds_no_anchor_is_refused(tmp_path: Path) -> None:
    """A word no anchor is part of would never be found: the core says so, never an empty answer."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"usage": 1}\n')
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError, match='the word "usage" holds none of the anchors'):
            _core.lines_holding(fd, ["token"], ["usage"], 1 << 20)
        assert _core.lines_holding(fd, ["sag"], ["usage"], 1 << 20) == [(1, 0, 12)]
    finally:
        os.close(fd)


@given(st.lists(st.lists(st.sampled_from([b"x", b"{}", b"usage", b"token_count", b"turn_context", b"session_meta",
                                         b"message-id", b"usa", b"ge", b"\r", b"n_c", b"n_m", b"ge-i", b"message",
                                         b"function_call", b"session", b"tokens"]), max_size=6).map(b"".join),
                max_size=30),
       st.booleans(), st.integers(1, 40))
@settings(max_examples=200, deadline=None)
def test_the_lines_read_are_those_a_line_at_a_time_reading_finds(tmp_path_factory: pytest.TempPathFactory,
                                                                 lines: list[bytes], last_newline: bool,
                                                                 block: int) -> None:
    """The core's block-at-a-time search (any block size: words and lines cut across
    blocks) finds the lines, and their numbers, that Python reading a line at a time does;
    a line holding a part the search looks for but no word is not among them."""
    import io

    from agent_transcript.inspect import tokens

    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    path = tmp_path_factory.mktemp("lines") / "t.jsonl"
    path.write_bytes(data)
    want = [(n, raw.removesuffix(b"\n")) for n, raw in enumerate(io.BytesIO(data), 1)
            if any(w.encode() in raw for w in tokens._WANTED)]
    saved = tokens._BLOCK
    tokens._BLOCK = block
    fd = os.open(path, os.O_RDONLY)
    try:
        got = list(tokens._wanted_lines(fd))
    finally:
        tokens._BLOCK = saved
        os.close(fd)
    assert got == want


@given(st.lists(response, min_size=1, max_size=6), st.lists(turn, min_size=1, max_size=3))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_usage_of_envelopes_read_already_is_what_reading_the_file_finds(
        tmp_path: Path, responses: list[dict[str, Any]], turns: list[dict[str, Any]]) -> None:
    """``usage_of`` (the OTLP export's, on envelopes it holds) against ``read_usage`` (the
    file searched for the words, each line holding one parsed): a Claude Code import, a
    Codex import and a framework's transcript, each with the other's kinds of lines."""
    from agent_transcript.inspect.tokens import usage_of

    case = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
    case.mkdir()
    write_lines(case / "claude.src", claude_session(responses))
    import_transcript(case / "claude.src", case / "claude.jsonl")
    records = [_rl(0, "session_meta", {"id": "0199aa00-0000-7000-8000-00000000000e", "timestamp": "2026-02-01T09:00:00Z",
                                       "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.98.0"})]
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    for k, t in enumerate(turns):
        records.append(_rl(k, "turn_context", {"turn_id": f"t{k}", "cwd": "/w", "model": t["model"]}))
        for fresh, cached, out in t["steps"]:
            total = {"input_tokens": total["input_tokens"] + fresh + cached,
                     "cached_input_tokens": total["cached_input_tokens"] + cached,
                     "output_tokens": total["output_tokens"] + out, "total_tokens": 0}
            records.append(_rl(k, "response_item", {"type": "message", "role": "assistant",
                                                    "content": [{"type": "output_text", "text": "step"}]}))
            records.append(_rl(k, "event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total)}}))
    codex = case / "rollout-2026-02-01T09-00-00-0199aa00-0000-7000-8000-00000000000e.jsonl"
    write_lines(codex, records)
    import_transcript(codex, case / "codex.jsonl", source_format="codex")
    with Session.create(case / "plain.jsonl") as s:
        s.append_message(Message.user("the usage of a word in a message is not a usage"))
        for r in responses:
            s.append_message(Message.assistant("x"), {"pydantic-ai": {"model_name": r["model"], "usage": {
                "input_tokens": r["input"] + r["cache_read"], "cache_read_tokens": r["cache_read"],
                "output_tokens": r["outputs"][0]}}, "note": {"usage": "none", "message-id": 3}})
    for name in ("claude.jsonl", "codex.jsonl", "plain.jsonl"):
        path = case / name
        assert usage_of(Session.peek(path).envelopes) == read_usage(str(path))
