"""``show``'s excerpts, built by the core (``_core.excerpt``), held to the Python
rendering they replace (``Renderer._wrap_py``: ``printable``, ``splitlines``,
``expandtabs``, textwrap), on generated texts and generated transcripts.

The core answers None where only Python's Unicode tables could say where a
line breaks (a hyphen beside a non-ASCII character) or where the text holds a
lone surrogate; the renderer then builds that excerpt in Python. These tests
check both that every answer the core gives is Python's and that the core does
answer for the texts a transcript is mostly made of.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, _core, canonical_json
from agent_transcript.cli.render import Renderer
from agent_transcript.cli.style import Style, printable
from agent_transcript.inspect import reader

# Characters that decide wrapping: spaces, tabs and every line end splitlines
# knows, hyphens and em-dashes, controls printable rewrites, whitespace that
# str.strip drops but textwrap does not split on, wide and combining
# characters, word punctuation, and non-ASCII letters and digits.
SPECIAL = list(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029-—") + [
    "\x00", "\x1b", "\x7f", "\x9f", "\xa0", "\u3000", "\u2003", "\u202f",
    "漢", "字", "😀", "e\u0301", "é", "Ω", "٣", "²", "_", "!", "'", '"', ".", ",", "?", "&",
    "\r\n", "--", "---", "a-b", "ab-cd", "a-b-c", "x" * 120,
]
TEXT = st.lists(
    st.one_of(st.sampled_from(SPECIAL), st.text(min_size=1, max_size=12), st.text("ab -", min_size=1, max_size=30)),
    max_size=60,
).map("".join)
WIDTH = st.integers(min_value=1, max_value=220)  # the terminal: the renderer takes max(20, width - 6)


def renderers(width: int, full: bool, colour: bool) -> tuple[Renderer, Renderer]:
    native = Renderer(Style(colour), width, full=full)
    python = Renderer(Style(colour), width, full=full)
    python.native = False
    return native, python


@settings(max_examples=600, deadline=None)
@given(text=TEXT, width=WIDTH, max_lines=st.sampled_from([3, 4, 8]), full=st.booleans(), colour=st.booleans())
@example(text="Look, goof-ball -- use the -b option! " * 9, width=40, max_lines=3, full=False, colour=False)
@example(text="\t  \tindented\tby tabs " * 20 + "\n" * 30, width=60, max_lines=8, full=False, colour=True)
@example(text="x" * 500 + "-" + "y" * 80, width=50, max_lines=8, full=True, colour=False)
@example(text="", width=100, max_lines=8, full=False, colour=False)
@example(text="a\r\n\r\nb\x1b[31m\u2028\x85c", width=100, max_lines=8, full=False, colour=False)
def test_the_core_excerpt_is_the_python_one(text: str, width: int, max_lines: int, full: bool, colour: bool) -> None:
    native, python = renderers(width, full, colour)
    assert native._wrap(text, max_lines=max_lines) == python._wrap_py(printable(text), max_lines=max_lines)


def test_the_core_answers_for_ordinary_text_and_leaves_the_rest_to_python() -> None:
    avail = 94
    for text in ["plain words " * 50, "naïve Ω données —\tcode\n" * 40, "漢字😀 " * 90, "a-b well-known x--y " * 20,
                 "\x1b[31mred\x1b[0m\r\n" * 10]:
        assert _core.excerpt(text, "", avail, 8) is not None, text[:40]
    # Whether "é-é" may break after its hyphen is a question for Python's tables.
    assert _core.excerpt("ab " * 40 + "éé-éé", "", avail, 8) is None
    assert _core.excerpt("lone \udc80 surrogate", "", avail, 8) is None
    # And the renderer then gives Python's answer all the same.
    for text in ["ab " * 40 + "éé-éé " * 30, "lone \udc80 surrogate " * 20]:
        native, python = renderers(100, False, False)
        assert native._wrap(text) == python._wrap_py(printable(text))


# -- whole transcripts: every block, native against Python -----------------------

SHORT = st.text(max_size=20)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SHORT, inner, max_size=4),
    max_leaves=12,
)
CONTENT = st.one_of(
    TEXT,
    st.none(),
    st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
                       st.fixed_dictionaries({"type": st.just("image_url")}), JSON_VALUE), max_size=4),
    JSON_VALUE,
)


@st.composite
def transcripts(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Operations to write: every record kind, with generated texts."""
    ops: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(min_value=1, max_value=14))):
        kind = draw(st.sampled_from(["user", "assistant", "tool", "system", "grants", "dispatch", "settle",
                                     "context", "compaction", "elision", "rewind", "unknown"]))
        ops.append((kind, draw(st.tuples(CONTENT, TEXT, JSON_VALUE, SHORT))))
    return ops


def write(path: Path, ops: list[tuple[str, Any]]) -> None:
    with Session.create(path, {"agent": "gen", "note": "x\x1b"}) as s:
        calls: list[str] = []
        ops_open: list[str] = []
        for n, (kind, (content, text, value, short)) in enumerate(ops):
            live = s.message_ids
            if kind in ("user", "system") or (kind in ("compaction", "elision", "rewind") and not live):
                m = Message.user(content) if kind == "user" else Message(role="system", content=content, sysprompt=True)
                s.append_message(m, extra={"note": short} if short else None)
            elif kind == "assistant":
                call_id = f"call-{n}{short}"
                calls.append(call_id)
                args = json.dumps(value) if n % 2 else text
                s.append_message(Message.assistant(content, tool_calls=[
                    {"id": call_id, "type": "function", "function": {"name": f"tool{short}", "arguments": args}}]))
            elif kind == "tool":
                s.append_message(Message.tool(calls[-1] if calls else short, content))
            elif kind == "grants":
                s.append_grants(value)
            elif kind == "dispatch":
                ops_open.append(s.append_tool_dispatched(calls[-1] if calls else short, f"t{short}", value,
                                                         run_id=short or None, round=n))
            elif kind == "settle" and ops_open:
                s.append_tool_settled(ops_open.pop(0), ["completed", "failed", "outcome-unknown"][n % 3],
                                      reason=text or None, duration=n / 7, error=value if n % 2 else None)
            elif kind == "context":
                s.append_run_context([(f"s{short}", text), ("same", "fixed")], [(short, value)])
            elif kind == "compaction":
                replacement = [Message.user(content), (Message.assistant(text), {"x": short})] if n % 2 else None
                s.append_compaction(text, live[len(live) // 2], 100, 10, fallback=n % 3 == 0, replacement=replacement)
            elif kind == "elision":
                s.append_elision([(live[0], text)])
            elif kind == "rewind":
                s.append_rewind(live[0] if n % 2 else None)
    if any(kind == "unknown" for kind, _ in ops):
        # A type this version does not know, written as any later version could.
        with path.open("a", encoding="utf-8") as f:
            for k, (kind, (content, text, value, short)) in enumerate(ops):
                if kind == "unknown":
                    env = {"id": f"unknown-{k}", "payload": {"text": text, "value": value},
                           "ts": "2026-08-09T13:10:08.542283Z", "type": f"future-{short}", "v": 1}
                    f.write(canonical_json(env) + "\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=transcripts(), width=WIDTH, full=st.booleans(), colour=st.booleans())
def test_every_block_of_a_generated_transcript_is_the_python_rendering(
        ops: list[tuple[str, Any]], width: int, full: bool, colour: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        write(path, ops)
        reading = reader.read(str(path), lenient=True)
        native, python = renderers(width, full, colour)
        for renderer in (native, python):
            renderer.reading = reading
            renderer.replayed = reading.replayed
        for i in range(len(reading)):
            assert native.block_at(i) == python.block_at(i), i
