"""OTLP trace data on the wire: its protobuf encoding, and OTLP/HTTP sending.

``otlp_protobuf(request)`` encodes an OTLP/JSON ``ExportTraceServiceRequest``
(what ``to_otlp`` returns) in the protobuf wire format of
``opentelemetry/proto/collector/trace/v1/trace_service.proto``: a small
encoder for the few messages a trace uses, so that no protobuf library is
needed. ``send_otlp(requests, endpoint)`` posts them to an OTLP/HTTP receiver
with the standard library's HTTP client, retrying what the OTLP
specification calls retryable (a connection that fails, 429, 502, 503, 504)
with exponential backoff, and honouring a ``Retry-After`` in seconds.
"""

from __future__ import annotations

import base64
import json
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any, Callable

from .export import ExportError

__all__ = ["otlp_protobuf", "send_otlp", "traces_url", "SendError", "ENCODINGS", "RETRYABLE"]

#: The encodings ``send_otlp`` posts: its default first.
ENCODINGS = ("protobuf", "json")

#: The HTTP statuses OTLP/HTTP says to retry.
RETRYABLE = frozenset({429, 502, 503, 504})

_CONTENT_TYPE = {"protobuf": "application/x-protobuf", "json": "application/json"}

# message -> its JSON field name -> (field number, kind, message of a nested field).
# Kinds: "message" (one), "messages" (repeated), "string", "hex" (bytes written
# as hex in OTLP/JSON), "bytes" (base64 in JSON), "enum", "uint32", "int64",
# "fixed64", "fixed32", "bool", "double".
_SCHEMA: dict[str, dict[str, tuple[int, str, str | None]]] = {
    "ExportTraceServiceRequest": {"resourceSpans": (1, "messages", "ResourceSpans")},
    "ResourceSpans": {"resource": (1, "message", "Resource"), "scopeSpans": (2, "messages", "ScopeSpans"),
                      "schemaUrl": (3, "string", None)},
    "Resource": {"attributes": (1, "messages", "KeyValue"), "droppedAttributesCount": (2, "uint32", None)},
    "ScopeSpans": {"scope": (1, "message", "InstrumentationScope"), "spans": (2, "messages", "Span"),
                   "schemaUrl": (3, "string", None)},
    "InstrumentationScope": {"name": (1, "string", None), "version": (2, "string", None),
                             "attributes": (3, "messages", "KeyValue"), "droppedAttributesCount": (4, "uint32", None)},
    "Span": {"traceId": (1, "hex", None), "spanId": (2, "hex", None), "traceState": (3, "string", None),
             "parentSpanId": (4, "hex", None), "name": (5, "string", None), "kind": (6, "enum", None),
             "startTimeUnixNano": (7, "fixed64", None), "endTimeUnixNano": (8, "fixed64", None),
             "attributes": (9, "messages", "KeyValue"), "droppedAttributesCount": (10, "uint32", None),
             "events": (11, "messages", "Event"), "droppedEventsCount": (12, "uint32", None),
             "droppedLinksCount": (14, "uint32", None), "status": (15, "message", "Status"),
             "flags": (16, "fixed32", None)},
    "Event": {"timeUnixNano": (1, "fixed64", None), "name": (2, "string", None),
              "attributes": (3, "messages", "KeyValue"), "droppedAttributesCount": (4, "uint32", None)},
    "Status": {"message": (2, "string", None), "code": (3, "enum", None)},
    "KeyValue": {"key": (1, "string", None), "value": (2, "message", "AnyValue")},
    "AnyValue": {"stringValue": (1, "string", None), "boolValue": (2, "bool", None), "intValue": (3, "int64", None),
                 "doubleValue": (4, "double", None), "arrayValue": (5, "message", "ArrayValue"),
                 "kvlistValue": (6, "message", "KeyValueList"), "bytesValue": (7, "bytes", None)},
    "ArrayValue": {"values": (1, "messages", "AnyValue")},
    "KeyValueList": {"values": (1, "messages", "KeyValue")},
}


def _varint(n: int, out: bytearray) -> None:
    n &= (1 << 64) - 1  # a negative int64 is its two's complement: ten bytes
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _key(number: int, wire: int, out: bytearray) -> None:
    _varint(number << 3 | wire, out)


def _delimited(number: int, data: bytes, out: bytearray) -> None:
    _key(number, 2, out)
    _varint(len(data), out)
    out += data


def _message(name: str, value: Mapping[str, Any]) -> bytes:
    if not isinstance(value, Mapping):
        raise ValueError(f"{name}: expected an object, not {type(value).__name__}")
    fields = _SCHEMA[name]
    out = bytearray()
    for key, v in value.items():
        try:
            number, kind, nested = fields[key]
        except KeyError:
            raise ValueError(f"{name}: no field {key!r} in OTLP's {name}") from None
        if kind == "messages":
            assert nested is not None
            for item in v:
                _delimited(number, _message(nested, item), out)
        elif kind == "message":
            assert nested is not None
            _delimited(number, _message(nested, v), out)
        else:
            _scalar(number, kind, v, out)
    return bytes(out)


def _scalar(number: int, kind: str, v: Any, out: bytearray) -> None:
    if kind == "string":
        _delimited(number, str(v).encode("utf-8", "replace"), out)  # a lone surrogate: "?"
    elif kind == "hex":
        _delimited(number, bytes.fromhex(v), out)
    elif kind == "bytes":
        _delimited(number, base64.b64decode(v), out)
    elif kind in ("enum", "uint32", "int64", "bool"):
        _key(number, 0, out)
        _varint(int(v), out)
    elif kind == "fixed64":
        _key(number, 1, out)
        out += struct.pack("<Q", int(v))
    elif kind == "fixed32":
        _key(number, 5, out)
        out += struct.pack("<I", int(v))
    else:  # double
        _key(number, 1, out)
        out += struct.pack("<d", float(v))


def otlp_protobuf(request: Mapping[str, Any]) -> bytes:
    """The OTLP/JSON ``ExportTraceServiceRequest`` ``request`` in the protobuf wire format.

    Raises:
        ValueError: ``request`` holds a field OTLP's trace messages do not have.
    """
    return _message("ExportTraceServiceRequest", request)


class SendError(ExportError):
    """An OTLP/HTTP receiver did not take the data: refused it, or could not be
    reached after every retry. ``sent`` says how many requests it took before."""

    def __init__(self, message: str, sent: int = 0) -> None:
        super().__init__(message)
        self.sent = sent


def traces_url(endpoint: str) -> str:
    """The URL traces are posted to: ``endpoint`` itself, or with ``/v1/traces``
    added when it names no path (``http://localhost:4318``), as OTLP exporters do.

    Raises:
        SendError: ``endpoint`` is not an ``http://`` or ``https://`` URL.
    """
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SendError(f"{endpoint}: not an http:// or https:// URL")
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urllib.parse.urlunsplit(parts)


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> None:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as response:
        response.read()


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the backoff's own wait is used


def send_otlp(requests: Iterable[Mapping[str, Any]], endpoint: str, *, encoding: str = "protobuf",
              headers: Mapping[str, str] | None = None, retries: int = 4, backoff: float = 0.5,
              timeout: float = 10.0, sleep: Callable[[float], None] = time.sleep) -> int:
    """Post each ``ExportTraceServiceRequest`` of ``requests`` (OTLP/JSON dicts,
    as ``to_otlp`` returns) to the OTLP/HTTP receiver at ``endpoint``, in order.

    A failed connection, a timeout and a retryable status (429, 502, 503, 504)
    are tried again up to ``retries`` times, waiting ``backoff`` seconds, then
    twice that, and so on (or what the receiver's ``Retry-After`` asks, up to
    a minute).

    Args:
        endpoint: the receiver's URL (``/v1/traces`` added when it has no path).
        encoding: ``"protobuf"`` (``application/x-protobuf``, what every OTLP/HTTP
            receiver takes) or ``"json"`` (``application/json``).
        headers: extra HTTP headers (an ``Authorization`` a backend asks for).

    Returns:
        How many requests were sent.

    Raises:
        SendError: the receiver refused a request or could not be reached after
            the retries (``sent`` says how many it took before).
        ValueError: ``encoding`` is not one of ``ENCODINGS``.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}, not {encoding!r}")
    url = traces_url(endpoint)
    head = {"Content-Type": _CONTENT_TYPE[encoding], "User-Agent": "agent-transcript", **(headers or {})}
    sent = 0
    for request in requests:
        body = otlp_protobuf(request) if encoding == "protobuf" else json.dumps(request).encode("utf-8")
        wait = backoff
        for attempt in range(retries + 1):
            try:
                _post(url, body, head, timeout)
                break
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRYABLE or attempt == retries:
                    raise SendError(_refusal(url, exc, attempt), sent) from None
                asked = _retry_after(exc)
                sleep(min(asked, 60.0) if asked is not None else wait)
            except (urllib.error.URLError, OSError) as exc:
                if attempt == retries:
                    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                    raise SendError(f"{url}: could not send ({_reason(reason)}) after {attempt + 1} attempt(s)",
                                    sent) from None
                sleep(wait)
            wait *= 2
        sent += 1
    return sent


def _reason(reason: Any) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


def _refusal(url: str, exc: urllib.error.HTTPError, attempt: int) -> str:
    try:
        said = exc.read(200).decode("utf-8", "replace")
    except OSError:
        said = ""
    said = " ".join(said.split())
    tries = f" after {attempt + 1} attempt(s)" if attempt else ""
    return f"{url}: the receiver answered {exc.code} {exc.reason}{tries}" + (f": {said}" if said else "")
