"""A real backend takes ``export --endpoint``'s traces: Arize Phoenix, run offline
on 127.0.0.1 as its own process, receives the protobuf, and its REST API gives
back the spans, parents, statuses and attributes the export made, and the
tokens it counted from them.

Phoenix is heavy and not in the test extra: the test runs with the interpreter
named by ``AGENT_TRANSCRIPT_PHOENIX_PYTHON`` (a virtualenv with ``arize-phoenix``),
or this one if it has ``phoenix``, and is skipped otherwise."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_transcript.fleet import to_otlp

from .test_otlp import attrs, spans_of, story


def _phoenix_python() -> str:
    named = os.environ.get("AGENT_TRANSCRIPT_PHOENIX_PYTHON")
    if named:
        return named
    pytest.importorskip("phoenix")
    return sys.executable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    python = _phoenix_python()
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(_free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = open(work / "log", "wb")
    server = subprocess.Popen([python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/healthz", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("Phoenix did not start: " + (work / "log").read_text()[-2000:])
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def test_phoenix_shows_the_trace_the_export_sent(phoenix: str, tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    story(run)
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "export", str(run), "--format", "otlp-json",
                        "--endpoint", phoenix, "--content"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    sent = {s["spanId"]: s for s in spans_of(to_otlp(run, content=True))}
    deadline = time.monotonic() + 60
    while True:  # Phoenix inserts what it received in the background
        got = _get(phoenix + "/v1/projects/default/spans?limit=100")["data"]
        if len(got) >= len(sent) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {s["context"]["span_id"] for s in got} == set(sent)
    for span in got:
        ours = sent[span["context"]["span_id"]]
        assert span["context"]["trace_id"] == ours["traceId"]
        assert span["name"] == ours["name"]
        assert span["parent_id"] == ours.get("parentSpanId")
        assert span["status_code"] == ("ERROR" if ours["status"] else "UNSET")
        assert span["attributes"]["gen_ai.operation.name"] == attrs(ours)["gen_ai.operation.name"]
    kinds = {s["name"].split(" ")[0]: s["span_kind"] for s in got}
    assert kinds["chat"] == "LLM"  # Phoenix read the GenAI conventions: a model turn
    # Phoenix counts a model turn's tokens from its gen_ai.usage (the story's first
    # turn records an OpenAI response's: 1,200 in, 1,024 of them cached, 30 out)
    counted = {s["context"]["span_id"]: {k: v for k, v in s["attributes"].items() if k.startswith("llm.token_count.")}
               for s in got if s["span_kind"] == "LLM"}
    (first,) = [i for i, s in sent.items() if attrs(s).get("gen_ai.usage.input_tokens") == 1200]
    assert {i: c for i, c in counted.items() if c} == {first: {
        "llm.token_count.prompt": 1200, "llm.token_count.completion": 30, "llm.token_count.total": 1230,
        "llm.token_count.prompt_details.cache_read": 1024}}
