"""Differential (hypothesis): the export's ``envelopes`` and ``messages`` tables hold what a plain
Python reading of the file says each line holds, column by column; and an export cut into the
smallest batches (every envelope its own flush, so every buffer handed to pyarrow is cut at a
different row) writes the same four tables as one in a single batch.

The lines are written by hand, not by ``Session``: any JSON load accepts (spaces, any key order,
escapes, lone surrogates, content lists and objects, extras), so the column pass is held to the
text as written, not only to canonical lines."""

from __future__ import annotations

import datetime as dt
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript.fleet import TABLES, export_transcripts

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# Characters that need escapes, multibyte ones, and a lone surrogate (written as \ud800 by json.dumps).
text = st.text(st.sampled_from(list('ab é日🚀"\\\n\t\x00/') + ["\ud800", "\udfff"]), max_size=30)
role = st.sampled_from(["user", "assistant", "tool", "system", "critic"])
part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries({"type": st.sampled_from(["image_url", "input_audio"])}),
    st.fixed_dictionaries({"text": text}),
)
content = st.one_of(text, st.none(), st.lists(part, max_size=3), st.fixed_dictionaries({"x": st.integers()}))
call = st.fixed_dictionaries({"id": st.one_of(text, st.none()), "type": st.just("function"),
                              "function": st.fixed_dictionaries({"name": text, "arguments": text})})
message = st.fixed_dictionaries(
    {"role": role, "content": content},
    optional={"name": text, "tool_call_id": text, "tool_calls": st.one_of(st.lists(call, max_size=3), st.none()),
              "sticky": st.booleans(), "sysprompt": st.booleans(), "depth": st.one_of(st.none(), st.integers(0, 3)),
              "extra-key": text},
)
envelope = st.one_of(
    st.tuples(st.just("message"), message),
    st.tuples(st.just("grants"), st.fixed_dictionaries({"grants": st.dictionaries(text, text, max_size=2)})),
    st.tuples(st.just("custom-event"), st.dictionaries(text, st.one_of(text, st.integers(), st.floats(allow_nan=False,
                                                                                                     allow_infinity=False)),
                                                       max_size=3)),
)
style = st.sampled_from(["canonical", "spaced", "reordered"])


def dump(value: Any, how: str) -> str:
    """``value`` as JSON text; a lone surrogate as its escape (the file stays UTF-8)."""
    if how == "canonical":
        written = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        written = json.dumps(value, indent=None, ensure_ascii=(how == "spaced"))
    return escaped(written)


def line_of(n: int, kind: str, payload: Any, how: str) -> tuple[str, str]:
    """An envelope line and its payload's text as written in it."""
    ts = f"2026-08-09T13:{n // 60 % 60:02}:{n % 60:02}.{n:06}Z"
    body = dump(payload, how)
    parts = {"id": json.dumps(f"id-{n}\u00e9"), "payload": body, "ts": json.dumps(ts), "type": json.dumps(kind), "v": "1"}
    keys = sorted(parts) if how != "reordered" else ["v", "payload", "type", "id", "ts"]
    sep = ":" if how == "canonical" else ": "
    return "{" + (", " if how != "canonical" else ",").join(f'"{k}"{sep}{parts[k]}' for k in keys) + "}", body


def escaped(s: str) -> str:
    """A decoded string as the columns hold it: a lone surrogate as its ``\\uXXXX`` escape."""
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) < 0xE000 else c for c in s)


def text_of(c: Any, written: str) -> str | None:
    if c is None:
        return None
    if isinstance(c, str):
        return escaped(c)
    if isinstance(c, list):
        out = []
        for p in c:
            if p.get("type") == "text" and isinstance(p.get("text"), str):
                out.append(escaped(p["text"]))
            elif isinstance(p.get("type"), str):
                out.append(f"[{p['type']}]")
            else:
                out.append("[part]")
        return "\n".join(out)
    return written  # an object: its JSON text as written


def ts_of(n: int) -> dt.datetime:
    return dt.datetime(2026, 8, 9, 13, n // 60 % 60, n % 60, n, tzinfo=dt.timezone.utc)


def write(path: Path, items: list[tuple[tuple[str, Any], str]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Writes the transcript; returns the envelopes and message rows a Python reading gives."""
    session = str(path)
    meta, _ = line_of(0, "session-meta", {"agent": "diff"}, "canonical")
    lines = [meta]
    envelopes = [{"session": session, "line": 1, "id": "id-0\u00e9", "type": "session-meta", "ts": ts_of(0),
                  "bytes": len(meta.encode()) + 1, "payload": '{"agent":"diff"}'}]
    messages = []
    for n, ((kind, payload), how) in enumerate(items, start=1):
        line, body = line_of(n, kind, payload, how)
        lines.append(line)
        envelopes.append({"session": session, "line": n + 1, "id": f"id-{n}\u00e9", "type": kind, "ts": ts_of(n),
                          "bytes": len(line.encode()) + 1, "payload": body})
        if kind != "message":
            continue
        payload = json.loads(line)["payload"]  # as the file says it (an escaped surrogate pair is one character)
        calls = payload.get("tool_calls")
        content_written = dump(payload["content"], how) if isinstance(payload["content"], dict) else ""
        messages.append({
            "session": session, "line": n + 1, "id": f"id-{n}\u00e9", "source": "message", "part": None, "ts": ts_of(n),
            "role": payload["role"], "name": escaped(payload["name"]) if "name" in payload else None,
            "text": text_of(payload["content"], content_written),
            "tool_call_id": escaped(payload["tool_call_id"]) if "tool_call_id" in payload else None,
            "tool_call_ids": None if not isinstance(calls, list) else [None if c["id"] is None else escaped(c["id"]) for c in calls],
            "tool_call_names": None if not isinstance(calls, list) else [escaped(c["function"]["name"]) for c in calls],
            "sticky": bool(payload.get("sticky") or payload.get("sysprompt") or payload.get("depth") is not None),
        })
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return envelopes, messages


def table(out: Path, name: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
    t = pq.read_table(out / name)
    keys = [k for k in ("session", "line", "part", "op_id", "dispatch_line", "settle_line") if k in t.column_names]
    rows = t.drop_columns(["day"]).to_pylist()
    rows.sort(key=lambda r: tuple((r[k] is None, r[k] or 0) if k in ("part", "dispatch_line", "settle_line")
                                  else (r[k] is None, r[k] or "") for k in keys))
    return [{k: r[k] for k in columns} for r in rows] if columns else rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(envelope, style), max_size=12))
def test_the_tables_hold_what_a_python_reading_of_each_line_says(items: list[tuple[tuple[str, Any], str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        envelopes, messages = write(path, items)
        whole, cut = Path(tmp) / "whole", Path(tmp) / "cut"
        export_transcripts(path, out=whole)
        export_transcripts(path, out=cut, batch_bytes=1)
        assert table(whole, "envelopes") == envelopes
        assert table(whole, "messages", list(messages[0]) if messages else None) == messages
        for name in TABLES:
            assert table(cut, name) == table(whole, name), name


def ts_oracle(text: str) -> dt.datetime | None:
    """A timestamp as SPEC writes it (0 to 9 fraction digits, ``Z`` or
    ``+00:00``, a leap second rolling over), read by ``datetime``; None for
    any other text."""
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
                     r"(?:Z|\+00:00)", text)
    if m is None or int(m[4]) > 23 or int(m[5]) > 59 or int(m[6]) > 60:
        return None
    try:
        day = dt.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), tzinfo=dt.timezone.utc)
    except ValueError:  # no such day
        return None
    return day + dt.timedelta(seconds=int(m[6]), microseconds=int((m[7] or "").ljust(6, "0")[:6]))


# Mostly what SPEC writes, each part now and then out of range (days 28 to 31 often).
timestamp = st.one_of(
    st.builds("{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}{}{}".format, st.integers(1, 9999), st.integers(0, 13),
              st.one_of(st.integers(28, 31), st.integers(0, 32)), st.sampled_from("TTT "), st.integers(0, 24),
              st.integers(0, 60), st.integers(0, 61),
              st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,9}", fullmatch=True),
                        st.from_regex(r"\.[0-9]{0,10}", fullmatch=True)),
              st.sampled_from(["Z", "Z", "+00:00", "", "z"])),
    st.text(st.sampled_from("0129-:.TZ+ x"), max_size=30),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(timestamp, min_size=1, max_size=20))
def test_the_ts_column_reads_a_timestamp_as_datetime_does(stamps: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "t.jsonl", Path(tmp) / "out"
        meta, _ = line_of(0, "session-meta", {}, "canonical")
        lines = [meta] + [json.dumps({"id": f"e{n}", "payload": {}, "ts": ts, "type": "custom-event", "v": 1})
                          for n, ts in enumerate(stamps)]
        path.write_text("\n".join(lines) + "\n")
        export_transcripts(path, out=out)
        assert [row["ts"] for row in table(out, "envelopes")][1:] == [ts_oracle(ts) for ts in stamps]


def test_a_key_written_twice_is_read_as_json_reads_it(tmp_path: Path) -> None:
    """A payload member written twice: the last one counts, as for ``json``
    and load."""
    payloads = ['{"role":"user","content":"x\\ny","content":"last"}', '{"role":"user","content":"gone","content":null}',
                '{"role":"user","content":[{"type":"text","text":"p"}],"content":"q\\"r"}',
                '{"role":"tool","content":"\\ud800","role":"user","content":{"k":1}}']
    meta, _ = line_of(0, "session-meta", {}, "canonical")
    lines = [meta] + [f'{{"id":"e{n}","payload":{p},"ts":"2026-01-01T00:00:01Z","type":"message","v":1}}'
                      for n, p in enumerate(payloads)]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    export_transcripts(tmp_path / "t.jsonl", out=tmp_path / "out")
    want = [{"role": p["role"], "text": text_of(p["content"], '{"k":1}')} for p in map(json.loads, payloads)]
    assert want[0]["text"] == "last"
    assert table(tmp_path / "out", "messages", ["role", "text"]) == want
