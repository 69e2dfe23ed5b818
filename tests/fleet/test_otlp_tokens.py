"""A model turn's span carries its tokens as the GenAI conventions count them: the
input with the cached input in it, checked against each source's own numbers (an
imported Claude Code session's ``message.usage``, an OpenAI response's usage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.fleet import otlp_protobuf, to_otlp
from agent_transcript.formats import import_transcript
from share.test_tokens import claude_session, response, write_lines

from .test_otlp import Request, attrs, parse_strict, spans_of

USAGE = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens",
         "gen_ai.usage.cache_creation.input_tokens", "gen_ai.response.model")


def _chat_usage(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each chat span's usage attributes, by the message id it is of."""
    out = {}
    for span in spans_of(request):
        a = attrs(span)
        if a.get("gen_ai.operation.name") == "chat":
            out[a["agent_transcript.message.id"]] = {k: a[k] for k in USAGE if k in a}
    return out


@given(st.lists(response, min_size=1, max_size=8))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_imported_claude_code_sessions_turns_carry_what_its_source_says(tmp_path: Path,
                                                                          responses: list[dict[str, Any]]) -> None:
    case = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
    case.mkdir()
    src, run = case / "session.jsonl", case / "run.jsonl"
    records = claude_session(responses)
    write_lines(src, records)
    import_transcript(src, run)
    # the oracle: each response's last line (its final count), as Claude Code wrote it
    final = {r["message"]["id"]: r["message"] for r in records if r["type"] == "assistant"}
    request = to_otlp(run)
    assert Request.FromString(otlp_protobuf(request)) == parse_strict(request)
    shown = _chat_usage(request)
    first_of: dict[str, str] = {}  # a response's first message: the one its tokens are on
    for e in Session.peek(run).envelopes:
        mid = e.payload.get("claude-code", {}).get("message-id") if e.type == "message" else None
        if mid is not None and e.payload["role"] == "assistant":
            first_of.setdefault(mid, e.id)
    for mid, m in final.items():
        if mid not in first_of:
            continue  # a response of thinking only: the import makes no message of it
        u = m["usage"]
        want = {"gen_ai.usage.input_tokens": u["input_tokens"] + u["cache_read_input_tokens"]
                + u["cache_creation_input_tokens"],
                "gen_ai.usage.output_tokens": u["output_tokens"], "gen_ai.response.model": m["model"]}
        if u["cache_read_input_tokens"]:
            want["gen_ai.usage.cache_read.input_tokens"] = u["cache_read_input_tokens"]
        if u["cache_creation_input_tokens"]:
            want["gen_ai.usage.cache_creation.input_tokens"] = u["cache_creation_input_tokens"]
        assert shown[first_of[mid]] == want
    # a response is counted on one span only
    assert sum(1 for s in shown.values() if s) == len(first_of)


def test_a_frameworks_turns_carry_the_providers_own_input_count(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"agent": "a", "model": "gpt-4.1", "provider": "openai"}) as s:
        s.append_message(Message.user("go"))
        cached = s.append_message(Message.assistant("one"), {"openai": {"model": "gpt-4.1-2025-04-14", "usage": {
            "prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1024}}}})
        s.append_message(Message.user("and"))
        bare = s.append_message(Message.assistant("two"))
        plain = s.append_message(Message.assistant("three"), {"openai": {"usage": {
            "prompt_tokens": 40, "completion_tokens": 2}}})
    shown = _chat_usage(to_otlp(path))
    assert shown[cached] == {"gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 30,
                             "gen_ai.usage.cache_read.input_tokens": 1024,
                             "gen_ai.response.model": "gpt-4.1-2025-04-14"}
    assert shown[bare] == {}  # nothing recorded: nothing said, not zero
    assert shown[plain] == {"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 2}
    # the same numbers whatever the encoding
    out = tmp_path / "trace.jsonl"
    from agent_transcript.cli.app import main
    assert main(["export", str(path), "-o", str(out), "--format", "otlp-json"]) == 0
    assert _chat_usage(json.loads(out.read_text().splitlines()[0])) == shown


def test_the_usage_of_an_archived_run_is_exported_too(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        a = s.append_message(Message.assistant("x"), {"openai": {"usage": {"prompt_tokens": 9, "completion_tokens": 1}}})
    archived = Session.archive(path)
    assert _chat_usage(to_otlp(archived))[a] == {"gen_ai.usage.input_tokens": 9, "gen_ai.usage.output_tokens": 1}
