"""One response's usage, whatever its provider writes, in the four counts apart: input
neither read from nor written to the cache, output with the thinking, cache read,
cache written. Differential: the oracles are genai-prices (pydantic-ai's own price
library, which reads each provider's raw usage), pydantic-ai's ``RequestUsage`` and
Strands' own rule for its usage; each skips only where its framework is absent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.inspect.tokens import TokenCount, count_of, read_usage, token_totals

n = st.integers(0, 2_000_000)


def raw_usage(provider: str, fresh: int, read: int, written: int, out: int, thinking: int) -> tuple[str, dict[str, Any]]:
    """(genai-prices' api flavor, a response body) as ``provider``'s API writes it for a
    response of those counts: ``fresh`` input not cached, ``read`` from the cache,
    ``written`` to it, ``out`` of answer and ``thinking`` of thinking."""
    if provider == "anthropic":  # input leaves the cache out; thinking is in output
        return "default", {"model": "claude-sonnet-4-5", "usage": {
            "input_tokens": fresh, "cache_read_input_tokens": read, "cache_creation_input_tokens": written,
            "output_tokens": out + thinking, "service_tier": "standard"}}
    if provider == "openai-chat":  # prompt_tokens includes the cached part
        return "chat", {"model": "gpt-4.1", "usage": {
            "prompt_tokens": fresh + read, "completion_tokens": out + thinking,
            "total_tokens": fresh + read + out + thinking,
            "prompt_tokens_details": {"cached_tokens": read},
            "completion_tokens_details": {"reasoning_tokens": thinking}}}
    if provider == "openai-responses":
        return "responses", {"model": "gpt-5", "usage": {
            "input_tokens": fresh + read, "output_tokens": out + thinking, "total_tokens": fresh + read + out + thinking,
            "input_tokens_details": {"cached_tokens": read}, "output_tokens_details": {"reasoning_tokens": thinking}}}
    if provider == "google":  # prompt includes the cached part; thinking is apart from candidates
        return "default", {"modelVersion": "gemini-2.5-pro", "usageMetadata": {
            "promptTokenCount": fresh + read, "cachedContentTokenCount": read, "candidatesTokenCount": out,
            "thoughtsTokenCount": thinking, "totalTokenCount": fresh + read + out + thinking}}
    assert provider == "aws"  # Bedrock's Converse: input leaves the cache out, the total holds it
    return "default", {"modelId": "anthropic.claude", "usage": {
        "inputTokens": fresh, "outputTokens": out + thinking, "cacheReadInputTokens": read,
        "cacheWriteInputTokens": written, "totalTokens": fresh + read + written + out + thinking}}


PROVIDERS = ["anthropic", "openai-chat", "openai-responses", "google", "aws"]
#: Where the provider has no count of input written to the cache.
NO_CACHE_WRITE = {"openai-chat", "openai-responses", "google"}


@given(st.sampled_from(PROVIDERS), n, n, n, n, n)
@settings(max_examples=300, deadline=None)
def test_each_providers_usage_is_counted_as_genai_prices_reads_it(provider: str, fresh: int, read: int, written: int,
                                                                  out: int, thinking: int) -> None:
    genai_prices = pytest.importorskip("genai_prices")
    if provider in NO_CACHE_WRITE:
        written = 0
    flavor, body = raw_usage(provider, fresh, read, written, out, thinking)
    oracle = genai_prices.extract_usage(body, provider_id=provider.split("-")[0], api_flavor=flavor).usage
    usage = body.get("usage") or body["usageMetadata"]
    count = count_of(usage)
    assert count is not None
    # genai-prices' input includes the cache (as OpenTelemetry's gen_ai.usage.input_tokens does)
    assert count.input + count.cache_read + count.cache_creation == oracle.input_tokens
    assert (count.cache_read, count.cache_creation, count.output) == (
        oracle.cache_read_tokens, oracle.cache_write_tokens, oracle.output_tokens)
    assert count == TokenCount(fresh, out + thinking, read, written)


@given(n, n, n, n)
@settings(max_examples=100, deadline=None)
def test_pydantic_ai_usage_includes_its_cache_in_its_input(fresh: int, read: int, written: int, out: int) -> None:
    usage_module = pytest.importorskip("pydantic_ai.usage")
    from pydantic_core import to_jsonable_python
    usage = usage_module.RequestUsage(input_tokens=fresh + read + written, cache_read_tokens=read,
                                      cache_write_tokens=written, output_tokens=out)
    assert count_of(to_jsonable_python(usage)) == TokenCount(fresh, out, read, written)


@given(n, n, n, n, st.booleans())
@settings(max_examples=200, deadline=None)
def test_strands_usage_is_read_by_strands_own_rule(fresh: int, read: int, written: int, out: int,
                                                   included: bool) -> None:
    metrics = pytest.importorskip("strands.telemetry.metrics")
    # Strands carries a provider's counts: Bedrock's leave the cache out of the input
    # (the total holds it), OpenAI's, through Strands, put it in (the total does not).
    inputs = fresh + read + written if included else fresh
    usage = {"inputTokens": inputs, "outputTokens": out, "totalTokens": inputs + out + (0 if included else read + written),
             "cacheReadInputTokens": read, "cacheWriteInputTokens": written}
    count = count_of(usage)
    assert count is not None
    assert count.input + count.cache_read + count.cache_creation == metrics._total_prompt_tokens(usage)
    if inputs + out != usage["totalTokens"] or not (read or written):
        assert count == TokenCount(fresh, out, read, written)


def test_litellm_usage_names_anthropics_cache_beside_an_openai_prompt_count() -> None:
    # LiteLLM's OpenAI-shaped usage for a Claude model: prompt_tokens holds the cache.
    usage = {"prompt_tokens": 130, "completion_tokens": 7, "total_tokens": 137, "cache_read_input_tokens": 100,
             "cache_creation_input_tokens": 20, "prompt_tokens_details": {"cached_tokens": 100}}
    assert count_of(usage) == TokenCount(10, 7, 100, 20)


def test_openais_cache_writes_are_counted_apart_too() -> None:
    # the input written to the cache, named beside the part read from it: both inside prompt_tokens
    usage = {"prompt_tokens": 1000, "completion_tokens": 9,
             "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300}}
    assert count_of(usage) == TokenCount(100, 9, 600, 300)


def test_a_cache_larger_than_its_input_counts_no_input_below_zero() -> None:
    assert count_of({"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 9}}) \
        == TokenCount(0, 1, 9, 0)


def test_what_is_not_a_number_of_tokens_is_not_counted() -> None:
    assert count_of({"prompt_tokens": True, "completion_tokens": 1.5}) is None
    assert count_of({"prompt_tokens": -4, "completion_tokens": 3}) == TokenCount(0, 3, 0, 0)


def test_a_cached_openai_run_costs_each_token_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The end to end: a transcript of OpenAI responses, mostly cached, priced by ``stats``."""
    from agent_transcript.cli.app import main
    path, prices = tmp_path / "run.jsonl", tmp_path / "prices.json"
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        for k in range(3):
            s.append_message(Message.assistant(f"step {k}"), {"openai": {"model": "gpt-5", "id": f"resp_{k}", "usage": {
                "input_tokens": 10_000, "output_tokens": 100, "input_tokens_details": {"cached_tokens": 9_000}}}})
    totals = token_totals(read_usage(str(path)))
    assert totals.total == TokenCount(3_000, 300, 27_000, 0)
    prices.write_text(json.dumps({"gpt-5": {"input": 1.25, "output": 10, "cache_read": 0.125}}))
    assert main(["stats", str(path), "--json", "--prices", str(prices)]) == 0
    cost = json.loads(capsys.readouterr().out)["tokens"]["cost"]["total"]
    # 3,000 fresh, 27,000 cached and 300 out, each at its own price
    assert cost == pytest.approx((3_000 * 1.25 + 27_000 * 0.125 + 300 * 10) / 1e6)
