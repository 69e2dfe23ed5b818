"""``show``'s excerpts, built by the core (``_core.excerpt``), held to the Python
rendering they replaced (``wrap_py`` here: ``printable``, ``splitlines``,
``expandtabs``, textwrap), on generated texts and generated transcripts.

The texts hold what decides a break: lone surrogates (the core reads WTF-8),
hyphens beside non-ASCII letters, digits, numerals and marks (textwrap asks
Python's Unicode tables of those, and so does the core, through the binding),
tabs, every line end, long words, many paragraphs, at every width.
"""

from __future__ import annotations

import json
import re
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, _core, canonical_json
from agent_transcript.cli.render import Renderer
from agent_transcript.cli.style import Style, plural, printable
from agent_transcript.inspect import reader


def wrap_py(r: Renderer, text: str, max_lines: int = 8) -> list[str]:
    """``Renderer._wrap`` in Python, for a ``text`` already printable: textwrap's
    lines, at most ``max_lines`` of them and a line saying how many more
    (every line with ``r.full``). The oracle of the core's excerpt."""
    avail = max(20, r.width - len(r.INDENT))
    out: list[str] = []
    for para in text.splitlines() or [""]:
        para = para.expandtabs(4).rstrip()
        body = para.lstrip(" ")
        lead = para[: min(len(para) - len(body), avail // 2)]
        out.extend(textwrap.wrap(body, avail, initial_indent=lead, subsequent_indent=lead) or [lead])
    if not r.full and len(out) > max_lines:
        more = f"… {plural(len(out) - max_lines, 'more line')} ({len(text):,} chars; --full shows all)"
        return [r.INDENT + line for line in out[:max_lines]] + [r.INDENT + r.s(more, "dim")]
    return [r.INDENT + line for line in out]


# Characters that decide wrapping: spaces, tabs and every line end splitlines
# knows, hyphens and em-dashes, controls printable rewrites, whitespace that
# str.strip drops but textwrap does not split on, wide and combining
# characters, word punctuation, non-ASCII letters, digits (decimal or not,
# which textwrap's `[^\d\W]` tells apart) and numerals, and lone surrogates.
SPECIAL = list(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029-—") + [
    "\x00", "\x1b", "\x7f", "\x9f", "\xa0", "\u3000", "\u2003", "\u202f",
    "漢", "字", "😀", "e\u0301", "é", "Ω", "٣", "²", "Ⅻ", "_", "!", "'", '"', ".", ",", "?", "&",
    "\r\n", "--", "---", "a-b", "ab-cd", "a-b-c", "éé-éé", "٣-٣", "ab-²x", "Ⅻ-Ωé", "e\u0301-é", "x" * 120,
    "\ud800", "\udfff", "\ud83d\ude00", "é\udc80-é",
]
# Words of letters, digits and marks joined by hyphens, where the hyphen rules decide.
HYPHENATED = st.text(st.sampled_from("-----  aé٣²Ⅻ_\u0301\udc80Ω1."), min_size=1, max_size=40)
TEXT = st.lists(
    st.one_of(st.sampled_from(SPECIAL), st.text(min_size=1, max_size=12), st.text("ab -", min_size=1, max_size=30),
              HYPHENATED),
    max_size=60,
).map("".join)
WIDTH = st.integers(min_value=1, max_value=220)  # the terminal: the renderer takes max(20, width - 6)


def renderers(width: int, full: bool, colour: bool) -> tuple[Renderer, Renderer]:
    """The renderer as shipped, and one that decodes each envelope whole and
    builds every excerpt with the oracle."""
    native = Renderer(Style(colour), width, full=full)
    python = Renderer(Style(colour), width, full=full)
    python.native = False
    python._wrap = lambda text, max_lines=8: wrap_py(python, printable(text), max_lines)  # type: ignore[method-assign]
    return native, python


@settings(max_examples=600, deadline=None)
@given(text=TEXT, width=WIDTH, max_lines=st.sampled_from([3, 4, 8]), full=st.booleans(), colour=st.booleans())
@example(text="Look, goof-ball -- use the -b option! " * 9, width=40, max_lines=3, full=False, colour=False)
@example(text="\t  \tindented\tby tabs " * 20 + "\n" * 30, width=60, max_lines=8, full=False, colour=True)
@example(text="x" * 500 + "-" + "y" * 80, width=50, max_lines=8, full=True, colour=False)
@example(text="", width=100, max_lines=8, full=False, colour=False)
@example(text="a\r\n\r\nb\x1b[31m\u2028\x85c", width=100, max_lines=8, full=False, colour=False)
@example(text="ab " * 40 + "éé-éé " * 30, width=100, max_lines=8, full=False, colour=False)
@example(text="ab " * 6 + "٣٣-٣٣ Ⅻ-Ⅻ ²²-²² é-é-é-é", width=26, max_lines=8, full=True, colour=False)
@example(text="lone \udc80 surrogate\ud800-\ud800 " * 20, width=100, max_lines=8, full=False, colour=True)
@example(text="é-" * 40_000 + "\udc80 ", width=80, max_lines=4, full=False, colour=False)  # wrapped without the GIL
def test_the_core_excerpt_is_the_python_one(text: str, width: int, max_lines: int, full: bool, colour: bool) -> None:
    native, python = renderers(width, full, colour)
    assert native._wrap(text, max_lines=max_lines) == wrap_py(python, printable(text), max_lines)


def test_the_core_asks_python_how_a_non_ascii_character_beside_a_hyphen_is_classed() -> None:
    # textwrap breaks after the hyphen of "xx-yy" only where x and y are letters
    # (`[^\d\W]`): "é" and "Ⅻ" are, the Arabic-Indic digit "٣" is not.
    for word, breaks in [("éé-éé", True), ("ⅫⅫ-ⅫⅫ", True), ("٣٣-٣٣", False)]:
        text = "x" * 16 + " " + word
        assert (textwrap.wrap(text, 20)[-1] == word[3:]) is breaks
        assert _core.excerpt(text, "", 20, None)[0] == textwrap.wrap(text, 20), word


# -- whole transcripts: every block, native against Python -----------------------

SHORT = st.text(max_size=20)
# What a transcript holds: the writer refuses a high surrogate before a low one
# (JSON would read the two back as one character).
PAIRED = re.compile("[\ud800-\udbff](?=[\udc00-\udfff])")
FILE_TEXT = TEXT.map(lambda text: PAIRED.sub("h", text))
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | FILE_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SHORT, inner, max_size=4),
    max_leaves=12,
)
CONTENT = st.one_of(
    FILE_TEXT,
    st.none(),
    st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": FILE_TEXT}),
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
        ops.append((kind, draw(st.tuples(CONTENT, FILE_TEXT, JSON_VALUE, SHORT))))
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
                # A section's text is hashed as UTF-8: no lone surrogate there.
                text = text.encode("utf-8", "replace").decode()
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
