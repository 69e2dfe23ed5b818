"""``html --json``: the page's data (every record with what replay says of it, the tokens) as JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent_transcript import Message, Session
from agent_transcript.cli.app import main


def test_the_json_holds_every_record_with_the_pages_notes(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    call = {"id": "c1", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(Message.user("go"))
        answer = s.append_message(Message.assistant(tool_calls=[call]), {"openai": {
            "model": "gpt-4.1", "usage": {"prompt_tokens": 20, "completion_tokens": 5,
                                          "prompt_tokens_details": {"cached_tokens": 4}}}})
        op = s.append_tool_dispatched("c1", "run_tests", {})
        result = s.append_message(Message.tool("c1", "ok"))
        settle = s.append_tool_settled(op, "completed")
        dropped = s.append_message(Message.user("oops"))
        rewind = s.append_rewind(result)
        pending = s.append_tool_dispatched("c2", "deploy", {})  # never settled
    out = tmp_path / "page.json"
    assert main(["html", str(path), "--json", "-o", str(out)]) == 0
    assert os.stat(out).st_mode & 0o777 == 0o600
    data = json.loads(out.read_text())
    envelopes = Session.peek(path).envelopes
    assert [(r["line"], r["id"], r["type"], r["payload"]) for r in data["records"]] == \
        [(k, e.id, e.type, e.payload) for k, e in enumerate(envelopes, 1)]
    by_id = {r["id"]: r for r in data["records"]}
    line = {r["id"]: r["line"] for r in data["records"]}
    assert by_id[answer]["notes"]["tokens"] == [16, 5, 4, 0]  # the cached 4 apart from the 20 in
    assert by_id[op]["notes"] == {"settled": line[settle]}
    assert by_id[settle]["notes"] == {"op": line[op]}
    assert by_id[dropped]["notes"] == {"rewound": line[rewind]}
    assert by_id[pending]["notes"] == {"pending": "dispatched"}
    assert "notes" not in by_id[result]
    assert [p["call_id"] for p in data["pending"]] == ["c2"]
    assert data["verdict"] == "clean" and data["tokens"]["input"] == 16


def test_redact_applies_to_the_json(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    key = "sk-proj-" + "a1B2" * 12
    with Session.create(path) as s:
        s.append_message(Message.user(f"my key is {key}"))
    out = tmp_path / "page.json"
    assert main(["html", str(path), "--json", "--redact", "-o", str(out)]) == 0
    text = out.read_text()
    assert key not in text and "[redacted:openai-key]" in text
    assert key in path.read_text()


def test_an_imported_codex_rollout_has_each_responses_tokens_on_its_message(tmp_path: Path) -> None:
    from agent_transcript.formats import import_transcript

    def rl(n: int, kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"timestamp": f"2026-02-01T09:00:{n:02d}.000Z", "type": kind, "payload": payload}) + "\n"

    def count(i: int, c: int, o: int) -> dict[str, object]:
        return {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "total_tokens": i + o}}}

    src = tmp_path / "rollout-2026-02-01T09-00-00-0199aa00-0000-7000-8000-000000000002.jsonl"
    src.write_text(
        rl(0, "session_meta", {"id": "0199aa00-0000-7000-8000-000000000002", "cwd": "/w", "originator": "codex_cli_rs",
                               "cli_version": "0.98.0"})
        + rl(1, "turn_context", {"turn_id": "t0", "cwd": "/w", "model": "gpt-5-codex"})
        + rl(2, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]})
        + rl(3, "response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"})
        + rl(4, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"})
        + rl(5, "event_msg", count(100, 10, 5))
        + rl(6, "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]})
        + rl(7, "event_msg", count(300, 110, 25)))
    run = tmp_path / "run.jsonl"
    import_transcript(src, run, source_format="codex")
    out = tmp_path / "page.json"
    assert main(["html", str(run), "--json", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    shown = [(r["payload"]["role"], r.get("notes", {}).get("tokens")) for r in data["records"] if r["type"] == "message"]
    # the second count is a running total: the response after the call used 200 in (100 cached), 20 out;
    # the cached input is counted apart from the rest
    assert shown == [("user", None), ("assistant", [90, 5, 10, 0]), ("tool", None), ("assistant", [100, 20, 100, 0])]
