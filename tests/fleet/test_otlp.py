"""Transcripts as OpenTelemetry traces: the OTLP/JSON parses strictly into
opentelemetry-proto's own messages, our protobuf bytes decode into the same
message, the spans say what the transcript says (a hypothesis property over
runs with kills, compactions and rewinds), and a real OTLP/HTTP receiver on
127.0.0.1 takes ``--endpoint``'s data in both encodings, retried after a 503."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.fleet import SEMCONV_VERSION, otlp_protobuf, send_otlp, to_otlp
from agent_transcript.fleet.otlp_wire import SendError

json_format = pytest.importorskip("google.protobuf.json_format")
trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
Request = trace_service.ExportTraceServiceRequest

CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result", "agent_transcript.compaction.summary"}
_IDS = ("traceId", "spanId", "parentSpanId")


def _b64_ids(value: Any) -> Any:
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON mapping
    has base64: the one difference, undone for ``json_format.Parse``."""
    if isinstance(value, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in _IDS else _b64_ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_b64_ids(v) for v in value]
    return value


def parse_strict(request: dict[str, Any]) -> Any:
    """``request`` parsed by protobuf's own JSON parser into OTLP's message, unknown fields refused."""
    for span in spans_of(request):
        for key in _IDS:
            if key in span:
                assert len(span[key]) == (32 if key == "traceId" else 16)
                assert span[key] == span[key].lower() and int(span[key], 16) != 0
    return json_format.Parse(json.dumps(_b64_ids(request)), Request(), ignore_unknown_fields=False)


def spans_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    (resource,) = request["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    return list(scope["spans"])


def attrs(item: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for kv in item.get("attributes", []):
        (kind, v), = kv["value"].items()
        out[kv["key"]] = int(v) if kind == "intValue" else ([x["stringValue"] for x in v["values"]]
                                                            if kind == "arrayValue" else v)
    return out


def nanos(ts: str) -> int:
    from datetime import datetime, timezone

    when = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (when - epoch) // __import__("datetime").timedelta(microseconds=1) * 1000


def call(n: int, tool: str) -> dict[str, Any]:
    return {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps({"n": n})}}


def story(path: Path) -> None:
    """A run: a completed call (its response's usage recorded), a failed one, a
    compaction, a rewind, then a call killed mid-flight (dispatched, never
    settled) and a torn last line."""
    with Session.create(path, {"agent": "fixer", "model": "m-1", "provider": "openai"}) as s:
        s.append_message(Message.system("be brief"))
        u = s.append_message(Message.user("fix the date parser"))
        s.append_message(Message.assistant(tool_calls=[call(1, "ls")]), {"openai": {"model": "m-1-0425", "usage": {
            "prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1024}}}})
        op = s.append_tool_dispatched("c1", "ls", {"n": 1})
        s.append_message(Message.tool("c1", "a.py b.py"))
        s.append_tool_settled(op, "completed", duration=0.1)
        s.append_message(Message.assistant(tool_calls=[call(2, "cat")]))
        op = s.append_tool_dispatched("c2", "cat", {"n": 2})
        s.append_tool_settled(op, "failed", error="no such file")
        s.append_message(Message.tool("c2", "error"))
        s.append_compaction("they listed files", u, 900, 40)
        a = s.append_message(Message.assistant("done?"))
        s.append_message(Message.user("no"))
        s.append_message(Message.assistant("ok then"))
        s.append_rewind(a)
        s.append_message(Message.assistant(tool_calls=[call(3, "pytest")]))
        s.append_tool_dispatched("c3", "pytest", {"n": 3})
    with open(path, "ab") as f:
        f.write(b'{"id":"torn","payload":{"role":"tool","con')  # what a kill mid-write leaves


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    story(path)
    return path


def by_name(request: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for span in spans_of(request):
        out.setdefault(span["name"].split(" ")[0], []).append(span)
    return out


def test_a_run_parses_strictly_and_its_protobuf_decodes_to_the_same_message(run: Path) -> None:
    request = to_otlp(run, content=True)
    parsed = parse_strict(request)
    assert Request.FromString(otlp_protobuf(request)) == parsed
    assert parsed.resource_spans[0].scope_spans[0].schema_url.endswith(f"/schemas/{SEMCONV_VERSION}")
    assert len(parsed.resource_spans[0].scope_spans[0].spans) == len(spans_of(request)) == 1 + 5 + 3


def test_a_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children(run: Path) -> None:
    request = to_otlp(run)
    spans = by_name(request)
    (root,) = spans["invoke_agent"]
    assert root["name"] == "invoke_agent fixer" and "parentSpanId" not in root
    assert attrs(root)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(root)["gen_ai.provider.name"] == "openai"
    assert root["status"]["code"] == 2 and "1 tool call(s) unsettled" in root["status"]["message"]
    assert [s["name"] for s in spans["chat"]] == ["chat m-1"] * 5
    assert all(s["kind"] == 3 and s["parentSpanId"] == root["spanId"] for s in spans["chat"])
    ls, cat, pytest_ = spans["execute_tool"]
    assert (ls["name"], ls["status"], attrs(ls)["gen_ai.tool.call.id"]) == ("execute_tool ls", {}, "c1")
    assert cat["status"] == {"code": 2, "message": "no such file"} and attrs(cat)["error.type"] == "failed"
    assert pytest_["status"] == {"code": 2, "message": "interrupted: dispatched"}
    assert attrs(pytest_)["agent_transcript.tool.state"] == "dispatched"
    assert pytest_["endTimeUnixNano"] == root["endTimeUnixNano"]
    assert [e["name"] for e in root["events"]] == ["agent_transcript.compaction", "agent_transcript.rewind"]
    compaction = attrs(root["events"][0])
    assert compaction["agent_transcript.compaction.tokens_before"] == 900
    assert compaction["agent_transcript.compaction.messages_replaced"] == 1  # the user's; the system one is sticky
    assert attrs(root["events"][1])["agent_transcript.rewind.messages_dropped"] == 2
    rewound = [s for s in spans["chat"] if "agent_transcript.rewound_line" in attrs(s)]
    assert [attrs(s)["agent_transcript.line"] for s in rewound] == [15]  # "ok then", which the rewind dropped


def test_content_is_left_out_unless_asked_for(run: Path) -> None:
    without = {k for s in spans_of(to_otlp(run)) for k in attrs(s)}
    assert not without & CONTENT_KEYS
    with_content = to_otlp(run, content=True)
    chat = by_name(with_content)["chat"][0]
    assert json.loads(attrs(chat)["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "fix the date parser"}]}]
    assert json.loads(attrs(chat)["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "tool_call",
         "parts": [{"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"n": 1}}]}]
    ls = by_name(with_content)["execute_tool"][0]
    assert attrs(ls)["gen_ai.tool.call.result"] == "a.py b.py"
    assert attrs(ls)["gen_ai.tool.call.arguments"] == '{"n":1}'


def test_a_second_export_gives_the_same_trace(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(run, copy)
    first, again = to_otlp(run), to_otlp(copy)
    assert [(s["traceId"], s["spanId"], s.get("parentSpanId")) for s in spans_of(first)] == \
        [(s["traceId"], s["spanId"], s.get("parentSpanId")) for s in spans_of(again)]
    assert len({s["spanId"] for s in spans_of(first)}) == len(spans_of(first))


def test_calls_without_dispatch_lines_are_paired_with_their_answers(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.assistant(tool_calls=[call(1, "ls"), call(2, "cat")]))
        s.append_message(Message.tool("c2", "two"))
    spans = by_name(to_otlp(path))
    tools = {attrs(t)["gen_ai.tool.call.id"]: t for t in spans["execute_tool"]}
    events = Session.peek(path).envelopes
    assert tools["c2"]["status"] == {} and tools["c2"]["endTimeUnixNano"] == str(nanos(events[3].ts))
    assert tools["c1"]["status"] == {"code": 2, "message": "interrupted: unanswered"}
    assert tools["c1"]["startTimeUnixNano"] == str(nanos(events[2].ts))


# --- the property: spans against the transcript -------------------------------------------------

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
step = st.one_of(
    st.tuples(st.just("user"), text),
    st.tuples(st.just("assistant"), text),
    st.tuples(st.just("tool-call"), st.sampled_from(["ls", "cat", "grep"])),
    st.tuples(st.just("plain-call"), st.sampled_from(["ls", "cat"])),
    st.tuples(st.just("answer"), st.booleans()),
    st.tuples(st.just("settle"), st.sampled_from(["completed", "failed", "outcome-unknown"])),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("rewind"), st.integers(0, 3)),
    st.tuples(st.just("elide"), text),
)


def write(path: Path, steps: list[tuple[str, Any]], torn: bool) -> None:
    with Session.create(path, {"agent": "prop"}) as s:
        dispatched: list[tuple[str, str]] = []
        calls: list[str] = []
        for n, (kind, arg) in enumerate(steps):
            live = s.message_ids
            if kind == "user":
                s.append_message(Message.user(arg))
            elif kind == "assistant":
                s.append_message(Message.assistant(arg))
            elif kind == "tool-call":
                s.append_message(Message.assistant(tool_calls=[call(n, arg)]))
                dispatched.append((s.append_tool_dispatched(f"c{n}", arg, {"n": n}), f"c{n}"))
                calls.append(f"c{n}")
            elif kind == "plain-call":  # a framework that writes no dispatch lines
                s.append_message(Message.assistant(tool_calls=[{**call(n, arg), "id": f"p{n}"}]))
                calls.append(f"p{n}")
            elif kind == "answer" and calls:
                s.append_message(Message.tool(calls.pop() if arg else "nobody", "out"))
            elif kind == "settle" and dispatched:
                s.append_tool_settled(dispatched.pop(0)[0], arg, duration=n / 10)
            elif kind == "compact" and live:
                s.append_compaction("sum", live[len(live) // 2], 100, 10,
                                    replacement=[Message.user("r")] if arg else None)
            elif kind == "rewind" and live:
                s.append_rewind(live[min(arg, len(live) - 1)] if arg else None)
            elif kind == "elide" and live:
                s.append_elision([(live[-1], arg)])
    if torn:  # killed mid-write
        with open(path, "ab") as f:
            f.write(b'{"id":"x","payload":{"ro')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=25), st.booleans())
def test_spans_say_what_the_transcript_says(steps: list[tuple[str, Any]], torn: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        write(path, steps, torn)
        request = to_otlp(path)
        assert Request.FromString(otlp_protobuf(request)) == parse_strict(request)
        envelopes = Session.peek(path).envelopes  # the oracle: peek's own reading of the lines
        repaired = Path(tmp) / "copy.jsonl"
        shutil.copy(path, repaired)
        with Session.load(repaired) as s:  # load repairs the copy: its pending operations
            pending = {op.op_id: op.state for op in s.pending_tool_operations()}
            unanswered = {c.call_id for c in s.unanswered_tool_calls()}
        times = [nanos(e.ts) for e in envelopes]
        spans = spans_of(request)
        root = spans[0]
        assert "parentSpanId" not in root and root["name"] == "invoke_agent prop"
        assert (int(root["startTimeUnixNano"]), int(root["endTimeUnixNano"])) == (times[0], max(times))
        assert attrs(root)["gen_ai.conversation.id"] == envelopes[0].id
        assert len({s["traceId"] for s in spans}) == 1
        for span in spans[1:]:
            assert span["parentSpanId"] == root["spanId"]
            assert times[0] <= int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"]) <= max(times)
        # Each assistant line is a chat span, from the line before it to its own.
        chats = [s for s in spans if attrs(s)["gen_ai.operation.name"] == "chat"]
        assistants = [(k, e) for k, e in enumerate(envelopes)
                      if e.type == "message" and e.payload.get("role") == "assistant"]
        assert [attrs(c)["agent_transcript.message.id"] for c in chats] == [e.id for _, e in assistants]
        for c, (k, _) in zip(chats, assistants):
            assert (int(c["startTimeUnixNano"]), int(c["endTimeUnixNano"])) == (times[k - 1], times[k])
        # Each dispatch is an execute_tool span, to its settle line or, unsettled, to the end, as an error.
        tools = {attrs(s)["agent_transcript.tool.op_id"]: s for s in spans
                 if "agent_transcript.tool.op_id" in attrs(s)}
        paired = [s for s in spans if attrs(s)["gen_ai.operation.name"] == "execute_tool"
                  and "agent_transcript.tool.op_id" not in attrs(s)]
        for k, e in enumerate(envelopes):
            if e.type != "tool-dispatched":
                continue
            span = tools[e.id]
            assert int(span["startTimeUnixNano"]) == times[k]
            assert attrs(span)["gen_ai.tool.name"] == e.payload["tool"]
            settle = next((j for j, x in enumerate(envelopes) if x.type == "tool-settled"
                           and x.payload["op-id"] == e.id), None)
            if settle is None:
                assert span["status"] == {"code": 2, "message": f"interrupted: {pending[e.id]}"}
                assert int(span["endTimeUnixNano"]) == max(times)
            else:
                outcome = envelopes[settle].payload["outcome"]
                assert int(span["endTimeUnixNano"]) == times[settle]
                assert (span["status"].get("code") == 2) == (outcome != "completed")
        assert set(tools) == {e.id for e in envelopes if e.type == "tool-dispatched"}
        # The calls with no dispatch: an error exactly when no tool message answers them.
        assert all(attrs(s)["gen_ai.tool.call.id"].startswith("p") for s in paired)
        assert {attrs(s)["gen_ai.tool.call.id"] for s in paired if s["status"]} == \
            {c for c in unanswered if c.startswith("p")}
        assert (root["status"].get("code") == 2) == bool(pending or any(s["status"] for s in paired))
        # Compactions, rewinds and elisions are the run's events, in file order, at their times.
        marks = [(k, e) for k, e in enumerate(envelopes) if e.type in ("compaction", "rewind", "elision")]
        assert [(ev["name"], int(ev["timeUnixNano"]), attrs(ev)["agent_transcript.envelope.id"])
                for ev in root.get("events", [])] == \
            [(f"agent_transcript.{e.type}", times[k], e.id) for k, e in marks]
        assert not {k for s in spans for k in attrs(s)} & CONTENT_KEYS
        assert to_otlp(path) == request


# --- a real OTLP/HTTP receiver on 127.0.0.1 ---------------------------------------------------


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP receiver that decodes each request with opentelemetry-proto's
    classes; it answers ``refuse`` (a status) to the first ``failures`` posts."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, str, Any]] = []
        self.posts = 0
        self.failures = 0
        self.refuse = 503
        self.retry_after: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts += 1
        if self.server.posts <= self.server.failures:
            self.send_response(self.server.refuse)
            if self.server.retry_after is not None:
                self.send_header("Retry-After", self.server.retry_after)
            self.end_headers()
            self.wfile.write(b"busy")
            return
        kind = self.headers["Content-Type"]
        if kind == "application/x-protobuf":
            message = Request.FromString(body)
        else:
            message = parse_strict(json.loads(body))
        self.server.received.append((self.path, kind, message))
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(b"" if kind == "application/x-protobuf" else b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", "export", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_endpoint_sends_to_a_receiver_that_decodes_it_after_a_503(run: Path, receiver: Receiver,
                                                                  encoding: str) -> None:
    receiver.failures = 1
    r = cli(run, "--format", "otlp-json", "--endpoint", receiver.url, "--encoding", encoding, "--content")
    assert r.returncode == 0, r.stderr
    assert receiver.posts == 2  # the 503, then the retry
    (path, kind, message), = receiver.received
    assert path == "/v1/traces"
    assert kind == {"protobuf": "application/x-protobuf", "json": "application/json"}[encoding]
    assert message == parse_strict(to_otlp(run, content=True))


def test_out_and_endpoint_together_send_what_the_file_holds(run: Path, receiver: Receiver, tmp_path: Path) -> None:
    other = tmp_path / "more" / "b.jsonl"
    other.parent.mkdir()
    with Session.create(other, {"agent": "b"}) as s:
        s.append_message(Message.user("hi"))
    out = tmp_path / "traces" / "all.jsonl"
    r = cli(tmp_path, "-o", out, "--format", "otlp-json", "--endpoint", receiver.url + "/v1/traces")
    assert r.returncode == 0, r.stderr
    assert "exported 2 transcript(s)" in r.stdout
    lines = out.read_text().splitlines()
    assert [parse_strict(json.loads(line)) for line in lines] == [m for _, _, m in receiver.received]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and stat.S_IMODE(out.parent.stat().st_mode) == 0o700


def test_a_refused_request_is_one_line_and_exit_2(run: Path, receiver: Receiver) -> None:
    receiver.failures, receiver.refuse = 5, 400
    r = cli(run, "--format", "otlp-json", "--endpoint", receiver.url)
    assert r.returncode == 2 and receiver.posts == 1  # a 400 is not retried
    assert r.stderr.count("\n") == 1 and "answered 400" in r.stderr and "busy" in r.stderr


def test_a_bad_endpoint_is_one_line_and_exit_2_after_its_retries(run: Path, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "t.jsonl"
    r = cli(run, "-o", out, "--format", "otlp-json", "--endpoint", f"http://127.0.0.1:{port}", "--retries", "1")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "could not send (connection refused) after 2 attempt(s)" in r.stderr
    assert sorted(tmp_path.iterdir()) == [run]  # nothing written: no OUT, no temporary file
    r = cli(run, "--format", "otlp-json", "--endpoint", "ftp://x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not an http:// or https:// URL" in r.stderr


def test_send_waits_between_retries_doubling(run: Path, receiver: Receiver) -> None:
    receiver.failures, receiver.refuse = 3, 502
    waits: list[float] = []
    assert send_otlp([to_otlp(run)], receiver.url, retries=3, sleep=waits.append) == 1
    assert waits == [0.5, 1.0, 2.0] and receiver.posts == 4 and len(receiver.received) == 1
    receiver.posts, receiver.failures, receiver.retry_after = 0, 5, "7"  # the receiver's wait wins
    waits.clear()
    with pytest.raises(SendError, match="answered 502 .* after 3 attempt"):
        send_otlp([to_otlp(run)], receiver.url, retries=2, sleep=waits.append)
    assert waits == [7.0, 7.0]


def test_a_folder_with_a_damaged_file_exports_the_rest_and_exits_1(run: Path, tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text("not json\n")
    out = tmp_path / "out.jsonl"
    r = cli(tmp_path, "-o", out, "--format", "otlp-json")
    assert r.returncode == 1
    assert "bad.jsonl: not exported" in r.stderr
    (line,) = out.read_text().splitlines()
    assert parse_strict(json.loads(line)) == parse_strict(to_otlp(run))
    again = cli(tmp_path, "-o", out, "--format", "otlp-json")  # OUT is in the folder: not read as a transcript
    assert again.stderr.count("not exported") == 1 and "bad.jsonl" in again.stderr
    assert out.read_text() == line + "\n"
    r = cli(run, "--format", "otlp-json")
    assert r.returncode == 2 and "needs -o OUT, --endpoint URL, or both" in r.stderr


def test_out_never_replaces_a_transcript(run: Path) -> None:
    before = run.read_bytes()
    r = cli(run, "-o", run, "--format", "otlp-json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "never over a transcript" in r.stderr
    assert run.read_bytes() == before


def test_redact_takes_secrets_out_of_the_content_it_exports(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "Xy7" * 30
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"agent": "a"}) as s:
        s.append_message(Message.user(f"use the key {key} please"))
        s.append_message(Message.assistant(tool_calls=[call(1, "deploy")]))
        s.append_tool_dispatched("c1", "deploy", {"api_key": key})
        s.append_message(Message.tool("c1", f"deployed with {key}"))
    plain, redacted = tmp_path / "plain.jsonl", tmp_path / "redacted.jsonl"
    assert cli(path, "--format", "otlp-json", "--content", "-o", plain).returncode == 0
    assert key in plain.read_text()  # the assertion below could fail
    done = cli(path, "--format", "otlp-json", "--content", "--redact", "-o", redacted)
    assert done.returncode == 0, done.stderr
    text = redacted.read_text()
    assert key not in text and "[redacted:" in text
    assert json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"]  # still a trace
    assert key in path.read_text()  # the transcript is untouched
