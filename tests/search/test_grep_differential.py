"""grep against an oracle: Python's ``re`` over ``json.loads`` of each line (every line), or over
``Session.load``'s entries (live mode), on generated transcripts.

The transcripts hold what a prefilter over raw bytes could get wrong: JSON escapes inside a
match (``"``, ``\\``, newlines, control characters), multibyte UTF-8, lone surrogates, lines
rewritten with ``\\uXXXX`` escapes for every non-ASCII character and ``\\/`` for ``/`` (what
another JSON writer may do), damaged lines, a torn tail, and a ``.jsonl.zst`` copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import CorruptTranscript, Message, Session, _core
from agent_transcript.search import Hit, Unsearchable, grep

TEXT = "aAbBéÉ中😀\"\\/\n .x1_\x01\ud800"
PATTERN_CHARS = TEXT.replace("\ud800", "")
SKIPPED = {"type", "id", "tool_use_id", "tool_call_id", "call_id", "signature", "data"}

texts = st.text(alphabet=TEXT, max_size=10)
ATOMS = [".", "[aé\"]", "a+", "(?:b|\\\\)", "\\w", "\\d", "^", "$", "[^a]", "\\n"]


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            if k not in SKIPPED:
                yield from _strings(x)


def _visible(text: str) -> str:
    # The core gives a lone surrogate as U+FFFD.
    return re.sub("[\ud800-\udfff]", "\ufffd", text)


def _message_texts(p: dict[str, Any], field: str | None, content: bool = True) -> Iterator[tuple[str, str | None, str]]:
    role = p.get("role") if isinstance(p.get("role"), str) else None
    for key in ("content", "tool_calls") if content else ("tool_calls",):
        for s in _strings(p.get(key)):
            yield field or key, role, s


def _line_texts(kind: str, p: dict[str, Any]) -> Iterator[tuple[int | None, str, str | None, str]]:
    if kind == "message":
        for f, r, s in _message_texts(p, None):
            yield None, f, r, s
    elif kind == "compaction":
        for s in _strings(p.get("summary")):
            yield None, "summary", "user", s
        for k, part in enumerate(p.get("replacement") or []):
            for f, r, s in _message_texts(part, "replacement"):
                yield k, f, r, s
    elif kind == "tool-dispatched":
        for key in ("tool", "arguments"):
            for s in _strings(p.get(key)):
                yield None, key, None, s
    elif kind == "tool-settled":
        for key in ("error", "reason"):
            for s in _strings(p.get(key)):
                yield None, key, None, s
    elif kind == "elision":
        for item in p.get("items", []):
            if isinstance(item.get("stub"), str):
                yield None, "stub", None, item["stub"]


Row = tuple[int, str, str, "str | None", str, str, tuple[tuple[int, int], ...]]


def _hit(regex: re.Pattern[str], line: int, id: str, kind: str, role: str | None, field: str, text: str,
         want_role: str | None, want_type: str | None) -> Row | None:
    if want_type is not None and kind != want_type:
        return None
    if want_role is not None and role != want_role:
        return None
    text = _visible(text)
    spans = tuple(m.span() for m in regex.finditer(text))
    return (line, id, kind, role, field, text, spans) if spans else None


def oracle_all_lines(path: Path, regex: re.Pattern[str], role: str | None, type: str | None) -> list[Row]:
    rows = []
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        try:
            env = json.loads(raw)
        except ValueError:
            continue
        if not (isinstance(env, dict) and isinstance(env.get("id"), str) and isinstance(env.get("type"), str)
                and "payload" in env):
            continue
        for k, f, r, s in _line_texts(env["type"], env["payload"]):
            id = env["id"] if k is None else f"{env['id']}:{k}"
            row = _hit(regex, n, id, env["type"], r, f, s, role, type)
            if row:
                rows.append(row)
    return rows


def oracle_live(path: Path, regex: re.Pattern[str], role: str | None, type: str | None) -> list[Row] | None:
    """The live hits, from the entries ``Session.load`` gives a copy of ``path``; None when load refuses it."""
    with tempfile.TemporaryDirectory() as d:
        copy = Path(d) / "copy.jsonl"
        shutil.copyfile(path, copy)
        try:
            with Session.load(copy) as s:
                entries = s.entries
                types = {e.line: e.type for e in s.events}
        except CorruptTranscript:
            return None
    rows = []
    for e in entries:
        kind = types[e.line]
        m = e.message
        replacement = kind == "compaction" and ":" in e.id and e.id.rsplit(":", 1)[0] in {
            x.id for x in entries} | {e.id.rsplit(":", 1)[0]}
        texts: list[tuple[str, str | None, str]] = []
        if kind == "compaction" and not replacement:
            texts = [("stub" if e.elided else "summary", "user", m.content)]
        else:
            payload = m.to_dict()
            if e.elided:
                texts = [("stub", m.role, m.content)]
            texts += list(_message_texts(payload, "replacement" if replacement else None, content=not e.elided))
        for f, r, s in texts:
            if f == "stub" or f == "summary":
                r = "user" if kind == "compaction" and not replacement else m.role
            row = _hit(regex, e.line, e.id, kind, r, f, s, role, type)
            if row:
                rows.append(row)
    return rows


def _rows(found: list[Hit | Unsearchable]) -> list[Row] | None:
    if any(isinstance(h, Unsearchable) for h in found):
        return None
    return [(h.line, h.id, h.type, h.role, h.field, h.text, h.spans) for h in found if isinstance(h, Hit)]


@st.composite
def transcripts(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """A script of appends."""
    return draw(st.lists(st.tuples(st.sampled_from(
        ["user", "parts", "call", "tool", "compaction", "replacement", "elision", "rewind", "dispatch"]), texts, texts),
        min_size=1, max_size=12))


def write(path: Path, script: list[tuple[str, str, str]], pick: st.DrawFn) -> None:
    with Session.create(path, {"title": "t"}) as s:
        for op, a, b in script:
            ids = s.message_ids
            if op == "user":
                s.append_message(Message.user(a))
            elif op == "parts":
                s.append_message(Message("user", [{"type": "text", "text": a}, {"type": "image", "data": b}]))
            elif op == "call":
                s.append_message(Message.assistant(a, tool_calls=[
                    {"id": "c1", "type": "function", "function": {"name": b, "arguments": a + b}}]))
            elif op == "tool":
                s.append_message(Message.tool("c1", a), extra={"note": b})
            elif op == "dispatch":
                op_id = s.append_tool_dispatched("c1", a, {"q": b})
                s.append_tool_settled(op_id, "failed", reason=b, error=a)
            elif not ids:
                continue
            elif op in ("compaction", "replacement"):
                through = pick(st.sampled_from(ids))
                repl = [Message.user(b), Message.assistant(a)] if op == "replacement" else None
                s.append_compaction(a, through, 2, 1, replacement=repl)
            elif op == "elision":
                s.append_elision([(pick(st.sampled_from(ids)), a)])
            elif op == "rewind":
                s.append_rewind(pick(st.sampled_from([*ids, None])))


def rewrite(path: Path, ascii: bool, slash: bool, damage: bool, torn: bool) -> None:
    """The same envelopes as another writer may write them."""
    lines = path.read_bytes().split(b"\n")[:-1]
    out = []
    for raw in lines:
        line = json.dumps(json.loads(raw), ensure_ascii=ascii)
        line = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m[0]):04x}", line)  # still UTF-8
        if slash:
            line = line.replace("/", "\\/")
        out.append(line.encode())
    if damage:
        out.insert(len(out) // 2 + 1, b'{"id": "broken", "payload": {"content": "a')
    data = b"\n".join(out) + b"\n"
    if torn:
        data += b'{"id":"torn","payload":{"role":"user","content":"aaa'
    path.write_bytes(data)


@st.composite
def patterns(draw: st.DrawFn, texts_used: list[str]) -> tuple[str, bool]:
    literal = draw(st.booleans())
    if literal:
        source = draw(st.sampled_from([t for t in texts_used if t.replace("\ud800", "")] or ["a"]))
        source = source.replace("\ud800", "")
        i = draw(st.integers(0, len(source) - 1))
        j = draw(st.integers(i + 1, len(source)))
        return source[i:j], True
    parts = draw(st.lists(st.one_of(st.sampled_from(ATOMS), st.sampled_from(PATTERN_CHARS).map(re.escape)),
                          min_size=1, max_size=4))
    return "".join(parts), False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=transcripts(), data=st.data(), ignore_case=st.booleans(), ascii=st.booleans(),
       slash=st.booleans(), damage=st.booleans(), torn=st.booleans(),
       role=st.sampled_from([None, "user", "assistant", "tool"]),
       type=st.sampled_from([None, "message", "compaction", "tool-settled", "elision"]))
def test_grep_matches_re_over_decoded_text(script: list[tuple[str, str, str]], data: st.DataObject, ignore_case: bool,
                                           ascii: bool, slash: bool, damage: bool, torn: bool, role: str | None,
                                           type: str | None) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.jsonl"
        write(path, script, data.draw)
        rewrite(path, ascii, slash, damage, torn)
        pattern, literal = data.draw(patterns([t for _, a, b in script for t in (a, b)]))
        source = re.escape(pattern) if literal else pattern
        regex = re.compile(source, re.M | (re.I if ignore_case else 0))
        if regex.fullmatch(""):
            return  # an empty match: re and the regex crate step past it differently
        options = dict(literal=literal, ignore_case=ignore_case, role=role, type=type)

        every = _rows(list(grep(pattern, path, all_lines=True, **options)))  # type: ignore[arg-type]
        assert every == oracle_all_lines(path, regex, role, type)

        live = _rows(list(grep(pattern, path, **options)))  # type: ignore[arg-type]
        expected = oracle_live(path, regex, role, type)
        if expected is None and live == []:
            # A file load refuses is named only where it may hold a match: when no
            # line's bytes could match, there is nothing live to match either.
            assert every == [] and not regex.search(path.read_bytes().decode("utf-8", "replace"))
        else:
            assert (live is None) == (expected is None)
        if live is not None and expected is not None:
            assert sorted(live, key=repr) == sorted(expected, key=repr)

        archive = Path(d) / "run.jsonl.zst"
        src = os.open(path, os.O_RDONLY)
        dst = os.open(archive, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            _core.zstd_compress(src, path.stat().st_size, dst, 3)
        finally:
            os.close(src)
            os.close(dst)
        assert _rows(list(grep(pattern, archive, all_lines=True, **options))) == every  # type: ignore[arg-type]
        assert _rows(list(grep(pattern, archive, **options))) == live  # type: ignore[arg-type]


@pytest.mark.parametrize("pattern", ['say "hi"', "C:\\temp", "line one\nline two", "a/b", "é中😀"])
def test_a_literal_matches_the_text_not_its_json_escapes(tmp_path: Path, pattern: str) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user(f"before {pattern} after"))
    raw = path.read_text()
    hits = [h for h in grep(pattern, path, literal=True) if isinstance(h, Hit)]
    assert [(h.line, h.text[h.spans[0][0]:h.spans[0][1]]) for h in hits] == [(2, pattern)]
    if any(c in pattern for c in '"\\\n'):
        assert pattern not in raw  # the file holds it escaped: a raw search would miss it


def test_escaped_spellings_are_found_at_their_lines_across_read_blocks(tmp_path: Path) -> None:
    """The scan reads 4 MiB at a time and decodes only the lines its prefilter
    finds: ``a/b`` written plainly, as ``a\\/b`` or as ``\\u0061/b``, on the
    first line, the last, either side of a block's end, or in a line longer
    than a block, is found at its line."""
    filler = "f" * 1000
    contents = [filler] * (3 * (4 << 20) // 1100)
    for k in range(3):
        for j, spelled in enumerate(["a/b", "a\\/b", "\\u0061/b"]):
            contents[k * (4 << 20) // 1120 + j + k % 2] = filler + spelled
    contents[-1] = "a/b"
    contents[40] = "x" * (6 << 20) + "a\\/b"
    lines = ['{"id":"m","payload":{},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}'] + [
        f'{{"id":"m{n}","payload":{{"content":"{c}","role":"user"}},"ts":"2026-01-01T00:00:00.000000Z",'
        f'"type":"message","v":1}}' for n, c in enumerate(contents)]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n")
    want = [n for n, line in enumerate(lines, 1) if "a/b" in (json.loads(line)["payload"].get("content") or "")]
    assert len(want) == 11
    for all_lines in (True, False):
        assert [h.line for h in grep("a/b", path, literal=True, all_lines=all_lines) if isinstance(h, Hit)] == want
