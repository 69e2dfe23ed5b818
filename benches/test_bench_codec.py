"""Micro benchmarks of the codec: canonical_json and digest against the
standard library and orjson on the same input.

Disabled by default (``--benchmark-disable`` in the pytest config), when each
runs once as a smoke test; ``pytest benches --benchmark-enable`` times them.
Nothing here asserts on time: only that every contender gives the right answer.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Callable

import orjson
import pytest

from agent_transcript import canonical_json, digest

WORDS = (
    "the agent reads the file and writes a patch def return self path bytes json "
    "line offset digest 日本語 données naïve 🚀 Ω \"quoted\" back\\slash tab\t newline\n"
).split(" ")


def text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def message_payload(rng: random.Random) -> dict[str, Any]:
    """An assistant message with a tool call, about 1 KB of canonical JSON."""
    return {
        "role": "assistant",
        "content": text(rng, 90),
        "tool_calls": [
            {
                "id": "call_%016x" % rng.getrandbits(64),
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": json.dumps({"path": "src/main.rs", "offset": rng.randint(0, 10**6)}),
                },
            }
        ],
        "model": "some-model-2026",
        "usage": {"input-tokens": rng.randint(1, 10**5), "output-tokens": rng.randint(1, 4000), "cost": rng.random()},
        "sticky": False,
    }


SMALL = message_payload(random.Random(1))
LARGE = {
    "messages": [message_payload(random.Random(seed)) for seed in range(1000)],
    "grants": {"paths": ["/work/%d" % i for i in range(200)], "limits": {"tokens": 10**6, "ratio": 0.75}},
}


def stdlib(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def orjson_sorted(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def test_payload_sizes() -> None:
    assert 700 <= len(stdlib(SMALL).encode()) <= 1500
    assert 800_000 <= len(stdlib(LARGE).encode()) <= 1_500_000


CONTENDERS: dict[str, Callable[[Any], Any]] = {
    "canonical_json": canonical_json,
    "json.dumps": stdlib,
    "orjson": orjson_sorted,
}


def same_json(out: str | bytes, value: Any) -> bool:
    return bool(json.loads(out) == json.loads(stdlib(value)))


@pytest.mark.parametrize("name", CONTENDERS)
@pytest.mark.parametrize("size", ["1KB", "1MB"])
def test_bench_canonical(benchmark: Any, name: str, size: str) -> None:
    value = SMALL if size == "1KB" else LARGE
    benchmark.group = f"canonical {size}"
    out = benchmark(CONTENDERS[name], value)
    assert same_json(out, value)
    if name == "canonical_json":
        assert out == stdlib(value)


DIGEST_INPUT = stdlib(LARGE).encode()


@pytest.mark.parametrize("name", ["digest", "hashlib"])
def test_bench_digest(benchmark: Any, name: str) -> None:
    benchmark.group = "digest 1MB"
    if name == "digest":
        out = benchmark(digest, DIGEST_INPUT)
    else:
        out = benchmark(lambda data: "sha256:" + hashlib.sha256(data).hexdigest(), DIGEST_INPUT)
    assert out == "sha256:" + hashlib.sha256(DIGEST_INPUT).hexdigest()
