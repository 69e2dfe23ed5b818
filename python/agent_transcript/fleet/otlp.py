"""A transcript as OpenTelemetry trace data, following the GenAI semantic conventions.

``to_otlp(path)`` reads a transcript as load would (without writing, locking
or repairing: a torn last line is left out) and returns one OTLP/JSON
``ExportTraceServiceRequest`` (``agent-transcript export PATH... -o OUT
--format otlp-json`` writes one per line). The span names and attributes follow
the OpenTelemetry semantic conventions for generative AI as published in
semantic-conventions ``v1.41.0`` (``SEMCONV_VERSION``), which are experimental
(status "Development"): a later version may rename them.

The trace of one transcript:

* the run: an ``invoke_agent`` span (kind internal), from the session-meta
  line's time to the latest line's; an error when the run stopped with tool
  calls unsettled. Its events are the file's ``compaction``, ``rewind`` and
  ``elision`` lines (``agent_transcript.compaction``, ...), at their times;
* each assistant message line is a model turn: a ``chat`` span (kind client),
  from the line before it (when its input was complete) to its own line, with
  the tokens of the response it is (``gen_ai.usage.input_tokens``, the cached
  input included, as the conventions count it; ``output_tokens``;
  ``cache_read.input_tokens`` and ``cache_creation.input_tokens`` when there
  are any) and the model that answered, where the transcript records them
  (``inspect.tokens`` reads them);
* each ``tool-dispatched`` line is an ``execute_tool`` span (kind internal),
  from the dispatch to its ``tool-settled`` line. ``failed`` and
  ``outcome-unknown`` end it as an error; an operation the run never settled
  ends, as an error (``error.type`` ``interrupted``, its pending state in
  ``agent_transcript.tool.state``), at the run's last line. A call of the live
  conversation that no dispatch line covers (a framework that writes only
  messages) is a span from its assistant message to the tool message that
  answers it (the pairing of ``agent_transcript.tool_calls``), or an
  interrupted one when nothing answers it.

Every span is a child of the run's. Ids come from the transcript's ids (the
trace's from the session-meta line's, a span's from its line's), so a second
export of the same file gives the same trace, which a backend deduplicates.
A fork shares its source's session-meta line, so it shares its trace id too.

Message content is left out unless asked for (``content=True``), as the
conventions advise: then a chat span carries ``gen_ai.input.messages`` (the
messages written since the turn before: each turn's new input, not the whole
context resent) and ``gen_ai.output.messages``, a tool span
``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``, and a
compaction event its summary.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import CorruptTranscript, UnsupportedVersion, __version__, canonical_json
from ..inspect import Reading, os_error_reason, read, walk_transcripts
from ..inspect.paths import make_folders, open_replacement, replace_with
from ..inspect.tokens import TokenCount, token_totals, usage_of
from .export import ExportError
from .otlp_wire import SendError, send_otlp, traces_url

__all__ = ["to_otlp", "export_otlp", "OtlpExport", "SEMCONV_VERSION", "SCHEMA_URL", "OTLP_FORMAT", "SPAN_KIND", "STATUS_CODE"]

#: The semantic-conventions release whose GenAI conventions the spans follow (experimental).
SEMCONV_VERSION = "1.41.0"

#: The schema URL of that release, written on every resource and scope.
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

#: The ``--format`` of ``agent-transcript export`` that writes OTLP/JSON.
OTLP_FORMAT = "otlp-json"

#: OTLP's ``Span.SpanKind`` values used here.
SPAN_KIND = {"internal": 1, "client": 3}

#: OTLP's ``Status.StatusCode`` values.
STATUS_CODE = {"unset": 0, "ok": 1, "error": 2}

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _id(kind: str, source: str, size: int) -> str:
    """A trace or span id (``size`` bytes, as lowercase hex) derived from a transcript id."""
    raw = hashlib.sha256(f"agent-transcript/{kind}/{source}".encode("utf-8", "surrogatepass")).digest()[:size]
    if not any(raw):  # an all-zero id is invalid in OTLP
        raw = raw[:-1] + b"\x01"
    return raw.hex()


def _nanos(ts: Any) -> int | None:
    """An envelope's ``ts`` as Unix nanoseconds; None when it is not a time."""
    if not isinstance(ts, str):
        return None
    try:
        when = _dt.datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith("Z") else ts)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return (when - _EPOCH) // _dt.timedelta(microseconds=1) * 1000


def _value(v: Any) -> dict[str, Any]:
    """An OTLP/JSON ``AnyValue``: a string, bool, int64, double or array of
    them; anything else as its canonical JSON text."""
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int) and _INT64[0] <= v <= _INT64[1]:
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return {"arrayValue": {"values": [{"stringValue": x} for x in v]}}
    return {"stringValue": canonical_json(v)}


def _attributes(pairs: dict[str, Any]) -> list[dict[str, Any]]:
    """``pairs`` as OTLP attributes, leaving out the None values."""
    return [{"key": k, "value": _value(v)} for k, v in pairs.items() if v is not None]


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _json_text(v: Any) -> str:
    """``v`` as the conventions carry structured content: JSON text (a string as it is)."""
    if isinstance(v, str):
        return v
    try:
        return canonical_json(v)
    except (TypeError, ValueError):
        return repr(v)


def _parts(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A message payload's content and calls as the conventions' message parts."""
    content = payload.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append({"type": "text", "content": part["text"]})
            elif isinstance(part, dict) and isinstance(part.get("type"), str):
                parts.append(part)
            else:
                parts.append({"type": "text", "content": _json_text(part)})
    elif content is not None:
        parts.append({"type": "text", "content": _json_text(content)})
    if payload.get("role") == "tool":
        return [{"type": "tool_call_response", "id": payload.get("tool_call_id"),
                 "response": content}]
    calls = payload.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                      "arguments": arguments})
    return parts


def _message(payload: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"role": payload.get("role"), "parts": _parts(payload)}
    if isinstance(payload.get("name"), str):
        out["name"] = payload["name"]
    if output:
        out["finish_reason"] = "tool_call" if payload.get("tool_calls") else "stop"
    return out


@dataclass
class _Trace:
    """The spans of one transcript as they are built."""

    trace_id: str
    run_span: str
    common: dict[str, Any]
    content: bool
    spans: list[dict[str, Any]] = field(default_factory=list)

    def span(self, span_id: str, name: str, kind: str, start: int, end: int, attributes: dict[str, Any],
             *, error: tuple[str, str] | None = None) -> dict[str, Any]:
        """A span of this trace, a child of the run's unless it is the run's;
        ``error`` is its ``(error.type, status message)``."""
        if error is not None:
            attributes["error.type"] = error[0]
        span: dict[str, Any] = {
            "traceId": self.trace_id, "spanId": span_id, "name": name, "kind": SPAN_KIND[kind],
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(max(start, end)),
            "attributes": _attributes({**attributes, **self.common}),
            "status": ({"code": STATUS_CODE["error"], "message": error[1]} if error is not None else {}),
        }
        if span_id != self.run_span:
            span["parentSpanId"] = self.run_span
        self.spans.append(span)
        return span


def _refused(reading: Reading, path: str) -> Exception:
    refusal = reading.refusal
    if reading.error is not None or refusal is None:
        return CorruptTranscript(f"not a transcript ({reading.error or 'empty'})", None, path)
    kind = UnsupportedVersion if refusal.status == "unsupported" else CorruptTranscript
    return kind(refusal.reason, refusal.line, path)


def to_otlp(path: str | os.PathLike[str], *, content: bool = False) -> dict[str, Any]:
    """The transcript at ``path`` as one OTLP/JSON ``ExportTraceServiceRequest``
    (see the module docstring for what becomes which span).

    The dict is what ``json.dumps`` writes as OTLP/JSON: ids in hex, times as
    decimal strings of Unix nanoseconds, enums as numbers.

    Args:
        path: a transcript (``.jsonl`` or ``.jsonl.zst``); read only.
        content: also carry message content, tool arguments and results, and
            compaction summaries (off by default: they may hold anything).

    Raises:
        FileNotFoundError, OSError: the file cannot be read.
        CorruptTranscript: load would refuse the file, or it is not a transcript.
        UnsupportedVersion: it holds an envelope version this library does not read.
    """
    where = os.fspath(path)
    reading = read(where, lenient=False)
    if reading.transcript is None or reading.error is not None or len(reading) == 0:
        raise _refused(reading, where)
    return _request(reading, str(Path(os.path.abspath(where))), content)


def _request(reading: Reading, where: str, content: bool) -> dict[str, Any]:
    envelopes = [reading.event(i) for i in range(len(reading))]
    meta_env = envelopes[0]
    meta = meta_env.payload if isinstance(meta_env.payload, dict) else {}
    # A line whose time does not parse takes the time of the line before it.
    times: list[int] = []
    last = _nanos(meta_env.ts) or 0
    for env in envelopes:
        last = _nanos(env.ts) or last
        times.append(last)
    start, end = times[0], max(times)
    common = {"gen_ai.conversation.id": meta_env.id, "gen_ai.provider.name": _text(meta.get("provider"))}
    trace = _Trace(_id("trace", meta_env.id, 16), _id("span", meta_env.id, 8), common, content)
    agent, model = _text(meta.get("agent")), _text(meta.get("model"))
    run = trace.span(trace.run_span, f"invoke_agent {agent}" if agent else "invoke_agent", "internal", start, end,
                     {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
                      "gen_ai.request.model": model, "agent_transcript.path": where})
    run["events"] = list(_events(reading, envelopes, times, content))
    dispatched = _tool_spans(trace, reading, envelopes, times, end)
    unsettled = _paired_spans(trace, reading, envelopes, times, end, dispatched)
    _chat_spans(trace, reading, envelopes, times, model, _usage_by_message(envelopes))
    if unsettled:
        run["status"] = {"code": STATUS_CODE["error"],
                         "message": f"interrupted: {unsettled} tool call(s) unsettled when the run stopped"}
        run["attributes"].append({"key": "error.type", "value": {"stringValue": "interrupted"}})
    scope = {"name": "agent_transcript", "version": __version__}
    service = agent or "agent-transcript"
    return {"resourceSpans": [{
        "resource": {"attributes": _attributes({"service.name": service})},
        "scopeSpans": [{"scope": scope, "spans": trace.spans, "schemaUrl": SCHEMA_URL}],
        "schemaUrl": SCHEMA_URL,
    }]}


def _events(reading: Reading, envelopes: list[Any], times: list[int], content: bool) -> Iterator[dict[str, Any]]:
    """The run span's events: the compaction, rewind and elision lines."""
    for i, env in enumerate(envelopes):
        if env.type not in ("compaction", "rewind", "elision"):
            continue
        p = env.payload if isinstance(env.payload, dict) else {}
        attributes: dict[str, Any] = {"agent_transcript.envelope.id": env.id, "agent_transcript.line": env.line}
        if env.type == "compaction":
            effect = reading.compaction_effect(i)
            replacement = p.get("replacement")
            attributes.update({
                "agent_transcript.compaction.replaces_through_id": p.get("replaces-through-id"),
                "agent_transcript.compaction.tokens_before": p.get("tokens-before"),
                "agent_transcript.compaction.tokens_after": p.get("tokens-after"),
                "agent_transcript.compaction.fallback": bool(p.get("fallback")),
                "agent_transcript.compaction.messages_replaced": None if effect is None else len(effect.replaced),
                "agent_transcript.compaction.replacement_messages":
                    len(replacement) if isinstance(replacement, list) else None,
                "agent_transcript.compaction.summary": _text(p.get("summary")) if content else None,
            })
        elif env.type == "rewind":
            dropped = reading.rewind_effect(i)
            attributes.update({"agent_transcript.rewind.through_id": p.get("through-id"),
                               "agent_transcript.rewind.messages_dropped":
                                   None if dropped is None else len(dropped.dropped)})
        else:
            items = p.get("items")
            attributes["agent_transcript.elision.items"] = len(items) if isinstance(items, list) else 0
        yield {"timeUnixNano": str(times[i]), "name": f"agent_transcript.{env.type}",
               "attributes": _attributes(attributes)}


def _answers(envelopes: list[Any]) -> dict[str, list[int]]:
    """Each ``tool_call_id`` and the indices of the tool message lines that state it, in file order."""
    out: dict[str, list[int]] = {}
    for i, env in enumerate(envelopes):
        p = env.payload
        if env.type == "message" and isinstance(p, dict) and p.get("role") == "tool" \
                and isinstance(p.get("tool_call_id"), str):
            out.setdefault(p["tool_call_id"], []).append(i)
    return out


def _tool_attributes(tool: Any, call_id: Any) -> dict[str, Any]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": _text(tool),
            "gen_ai.tool.call.id": _text(call_id), "gen_ai.tool.type": "function"}


def _tool_spans(trace: _Trace, reading: Reading, envelopes: list[Any], times: list[int], end: int) -> set[str]:
    """The ``execute_tool`` spans of the dispatch lines; returns the call ids they cover."""
    pending = {op.op_id: op.state for op in reading.pending() or []}
    settles: dict[str, int] = {}  # op id -> its first settle line after the dispatch
    dispatches: dict[str, int] = {}
    for i, env in enumerate(envelopes):
        if env.type == "tool-dispatched":
            dispatches.setdefault(env.id, i)
        elif env.type == "tool-settled" and isinstance(env.payload, dict):
            op = env.payload.get("op-id")
            if isinstance(op, str) and op in dispatches and op not in settles:
                settles[op] = i
    answers = _answers(envelopes) if trace.content else {}
    covered: set[str] = set()
    for op_id, i in dispatches.items():
        p = envelopes[i].payload if isinstance(envelopes[i].payload, dict) else {}
        tool, call_id = p.get("tool"), p.get("call-id")
        if isinstance(call_id, str):
            covered.add(call_id)
        attributes = _tool_attributes(tool, call_id)
        attributes.update({"agent_transcript.tool.op_id": op_id, "agent_transcript.tool.idempotency": p.get("idempotency"),
                           "agent_transcript.tool.run_id": p.get("run-id"), "agent_transcript.tool.round": p.get("round"),
                           "agent_transcript.line": envelopes[i].line})
        error: tuple[str, str] | None = None
        k = settles.get(op_id)
        if k is None:
            state = pending.get(op_id, "dispatched")
            attributes["agent_transcript.tool.state"] = state
            error = ("interrupted", f"interrupted: {state}")
            stop = end
        else:
            s = envelopes[k].payload
            outcome = s.get("outcome")
            attributes.update({"agent_transcript.tool.outcome": outcome,
                               "agent_transcript.tool.settle_line": envelopes[k].line,
                               "agent_transcript.tool.duration": s.get("duration")})
            if outcome != "completed":
                why = s.get("error") if s.get("error") is not None else s.get("reason")
                error = (str(outcome), _json_text(why) if why is not None else str(outcome))
            stop = times[k]
        if trace.content:
            attributes["gen_ai.tool.call.arguments"] = _json_text(p.get("arguments"))
            after = [a for a in answers.get(call_id, []) if a > i] if isinstance(call_id, str) else []
            if after:
                attributes["gen_ai.tool.call.result"] = _json_text(envelopes[after[0]].payload.get("content"))
        name = f"execute_tool {tool}" if isinstance(tool, str) else "execute_tool"
        trace.span(_id("span", op_id, 8), name, "internal", times[i], stop, attributes, error=error)
    return covered


def _paired_spans(trace: _Trace, reading: Reading, envelopes: list[Any], times: list[int], end: int,
                  covered: set[str]) -> int:
    """The ``execute_tool`` spans of the live calls no dispatch line covers,
    from their assistant message to their answer; returns how many tool calls
    the run left unsettled (these and the dispatched ones)."""
    unsettled = sum(1 for op in reading.pending() or [])
    pairing = reading.pairing()
    if pairing is None:
        return unsettled
    live = reading.live()
    for call in pairing.calls:
        if call.call_id in covered or live[call.position].part is not None:
            continue  # a dispatch line's span, or a call of a compaction's replacement (no time of its own)
        i = live[call.position].index
        attributes = _tool_attributes(call.tool, call.call_id)
        attributes["agent_transcript.line"] = call.line
        if call.answer is None:
            error: tuple[str, str] | None = ("interrupted", "interrupted: unanswered")
            stop = end
        else:
            error, stop = None, times[live[call.answer].index]
        if error is not None:
            unsettled += 1
        if trace.content:
            attributes["gen_ai.tool.call.arguments"] = _json_text(call.arguments)
            if call.answer is not None:
                answer = envelopes[live[call.answer].index].payload
                attributes["gen_ai.tool.call.result"] = _json_text(answer.get("content"))
        name = f"execute_tool {call.tool}" if call.tool is not None else "execute_tool"
        trace.span(_id("span", f"{call.message_id}/{call.index}", 8), name, "internal", times[i], stop,
                   attributes, error=error)
    return unsettled


def _usage_by_message(envelopes: list[Any]) -> dict[str, tuple[TokenCount, str | None]]:
    """Each message's tokens (of the responses it is, each once) and the model that answered."""
    usages = usage_of(envelopes)
    models: dict[str, str] = {}
    for u in usages:
        if u.message_id is not None and u.model is not None:
            models.setdefault(u.message_id, u.model)
    return {m: (count, models.get(m)) for m, count in token_totals(usages).by_message.items()}


def _usage_attributes(count: TokenCount, model: str | None) -> dict[str, Any]:
    """A chat span's ``gen_ai.usage.*``: its input counts the cached input too, as the conventions say."""
    return {"gen_ai.usage.input_tokens": count.input + count.cache_read + count.cache_creation,
            "gen_ai.usage.output_tokens": count.output,
            "gen_ai.usage.cache_read.input_tokens": count.cache_read or None,
            "gen_ai.usage.cache_creation.input_tokens": count.cache_creation or None,
            "gen_ai.response.model": model}


def _chat_spans(trace: _Trace, reading: Reading, envelopes: list[Any], times: list[int], model: str | None,
                usage: dict[str, tuple[TokenCount, str | None]]) -> None:
    """A ``chat`` span for each assistant message line."""
    since = 1  # the first message line of the current turn's input
    for i, env in enumerate(envelopes):
        p = env.payload
        if env.type != "message" or not isinstance(p, dict) or p.get("role") != "assistant":
            continue
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                                      "agent_transcript.message.id": env.id, "agent_transcript.line": env.line}
        rewound = reading.later(i).rewound_line
        if rewound is not None:
            attributes["agent_transcript.rewound_line"] = rewound
        calls = p.get("tool_calls")
        if isinstance(calls, list) and calls:
            attributes["gen_ai.response.finish_reasons"] = ["tool_call"]
        if env.id in usage:
            attributes.update(_usage_attributes(*usage[env.id]))
        if trace.content:
            inputs = [_message(e.payload) for e in envelopes[since:i]
                      if e.type == "message" and isinstance(e.payload, dict)]
            attributes["gen_ai.input.messages"] = canonical_json(inputs)
            attributes["gen_ai.output.messages"] = canonical_json([_message(p, output=True)])
        since = i + 1
        name = f"chat {model}" if model else "chat"
        trace.span(_id("span", env.id, 8), name, "client", times[max(i - 1, 0)], times[i], attributes)


@dataclass
class OtlpExport:
    """What one ``export_otlp`` did.

    Attributes:
        out: the JSON Lines file written, or None.
        exported: the transcripts exported, in walk order (one request each).
        refused: the files that could not be exported, and why (load refuses
            them, or they cannot be read).
        unreadable: the folders that could not be listed, and why.
        spans: the spans exported, all files together.
        sent: the requests the receiver took (``endpoint`` given).
    """

    out: Path | None
    exported: list[Path] = field(default_factory=list)
    refused: dict[Path, str] = field(default_factory=dict)
    unreadable: dict[Path, str] = field(default_factory=dict)
    spans: int = 0
    sent: int = 0

    def to_json(self) -> dict[str, Any]:
        """The result as JSON-ready values."""
        return {"out": None if self.out is None else str(self.out), "exported": [str(p) for p in self.exported],
                "refused": [{"path": str(p), "reason": why} for p, why in self.refused.items()],
                "unreadable": [{"path": str(p), "reason": why} for p, why in self.unreadable.items()],
                "spans": self.spans, "sent": self.sent}


def _redact_texts(value: Any, redact: Callable[[str], str]) -> None:
    """Every ``stringValue`` of an OTLP request, redacted in place."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "stringValue" and isinstance(v, str):
                value[k] = redact(v)
            else:
                _redact_texts(v, redact)
    elif isinstance(value, list):
        for v in value:
            _redact_texts(v, redact)


def export_otlp(*paths: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, content: bool = False,
                endpoint: str | None = None, encoding: str = "protobuf", headers: dict[str, str] | None = None,
                retries: int = 4, redact: Callable[[str], str] | None = None) -> OtlpExport:
    """Export every transcript under ``paths`` (folders, walked recursively, or
    files) as OTLP trace data: one ``ExportTraceServiceRequest`` per
    transcript (``to_otlp``), written as a line of the JSON Lines file ``out``
    (what the OpenTelemetry Collector's ``otlpjsonfile`` receiver reads) and/or
    posted to the OTLP/HTTP receiver ``endpoint`` (``otlp_wire.send_otlp``).

    ``out`` is written whole beside its name and renamed over it (mode
    ``0600``, missing folders ``0700``): an export that fails leaves what was
    there. A file load refuses is left out and named in ``refused``.
    ``redact`` (``Redactor.redact``, say) is applied to every text attribute
    before it is written or sent: what ``content`` adds, mostly.

    Raises:
        ExportError: ``out`` is a transcript (never written over).
        ValueError: neither ``out`` nor ``endpoint`` is given, or no path.
        FileNotFoundError: a path does not exist (nothing is written or sent).
        SendError: the receiver refused the data or could not be reached.
        OSError: ``out`` cannot be written.
    """
    if out is None and endpoint is None:
        raise ValueError("export_otlp needs out, endpoint, or both")
    if not paths:
        raise ValueError("export needs at least one folder or file")
    if endpoint is not None:
        traces_url(endpoint)  # a URL that is no URL is refused before anything is read
    roots = [Path(os.path.abspath(p)) for p in paths]
    for root in roots:
        os.stat(root)  # FileNotFoundError before anything is written
    target = None if out is None else Path(os.path.abspath(out))
    result = OtlpExport(target)
    fd, tmp = -1, None
    if target is not None:
        _refuse_transcript(target)
        make_folders(target.parent)
        fd, tmp = open_replacement(target)
    try:
        for path in walk_transcripts(roots, result.unreadable):
            if path == target:
                continue  # the last export's output, in a folder it exports
            try:
                request = to_otlp(path, content=content)
                if redact is not None:
                    _redact_texts(request, redact)
            except OSError as exc:
                result.refused[path] = os_error_reason(exc)
                continue
            except CorruptTranscript as exc:
                result.refused[path] = str(exc.message)
                continue
            if fd >= 0:
                data = memoryview(_json_line(request))
                while data:
                    data = data[os.write(fd, data):]
            if endpoint is not None:
                try:
                    send_otlp([request], endpoint, encoding=encoding, headers=headers, retries=retries)
                except SendError as exc:
                    raise SendError(str(exc), result.sent) from None
                result.sent += 1
            result.exported.append(path)
            result.spans += len(request["resourceSpans"][0]["scopeSpans"][0]["spans"])
        if tmp is not None and target is not None:
            os.fsync(fd)
            os.close(fd)
            fd = -1
            replace_with(tmp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        if tmp is not None and tmp.exists():
            tmp.unlink()
        raise
    return result


def _json_line(request: dict[str, Any]) -> bytes:
    """``request`` as one line of OTLP/JSON, UTF-8 (a lone surrogate, which UTF-8
    cannot hold, makes the line ASCII with ``\\u`` escapes)."""
    try:
        return (json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(request, separators=(",", ":")) + "\n").encode("ascii")


def _refuse_transcript(out: Path) -> None:
    """Refuses an ``out`` whose first line is a session-meta envelope: a
    transcript (the one being exported, say), which an export must not replace."""
    try:
        with open(out, "rb") as f:
            first = json.loads(f.readline(1 << 20))
    except (OSError, ValueError):
        return  # missing, or not JSON: not a transcript
    if isinstance(first, dict) and first.get("type") == "session-meta":
        raise ExportError(f"{out}: a transcript; export writes its traces to a new file, never over a transcript")
