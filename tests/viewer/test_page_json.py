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
    assert by_id[answer]["notes"]["tokens"] == [20, 5, 4, 0]
    assert by_id[op]["notes"] == {"settled": line[settle]}
    assert by_id[settle]["notes"] == {"op": line[op]}
    assert by_id[dropped]["notes"] == {"rewound": line[rewind]}
    assert by_id[pending]["notes"] == {"pending": "dispatched"}
    assert "notes" not in by_id[result]
    assert [p["call_id"] for p in data["pending"]] == ["c2"]
    assert data["verdict"] == "clean" and data["tokens"]["input"] == 20


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
