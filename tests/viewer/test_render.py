"""The renderer and ``html`` on the fixtures: every record kind, hostile text, big lines, the CSP, the folder of pages."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.inspect import read
from agent_transcript.viewer import write_html
from agent_transcript.viewer.render import anchor

from .helpers import HOSTILE, every_kind, parse

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "cli"
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "div", "span", "input", "select", "option", "label", "button",
    "main", "section", "article", "header", "a", "time", "p", "pre", "code", "details", "summary", "table", "tr", "th",
    "td", "ul", "ol", "li", "h3", "h4", "h5", "h6", "b", "strong", "em", "br", "nav", "script", "tbody",
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *args], capture_output=True, text=True, timeout=120)


def page(tmp_path: Path, src: Path, **kw: object) -> str:
    out = tmp_path / (src.stem + ".html")
    write_html(read(str(src), lenient=True), str(out), **kw)  # type: ignore[arg-type]
    return out.read_text("utf-8")


def shown(browser: Any, tmp_path: Path, src: Path, **kw: object) -> str:
    """The page of ``src`` as the browser shows it: the DOM the page's script drew
    (its cards, the summary and the outline), serialized, after checking the file."""
    html = page(tmp_path, src, **kw)
    assert_file_safe(html)
    browser.get_log("browser")
    browser.get((tmp_path / (src.stem + ".html")).as_uri())
    errors = [e for e in browser.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
    assert errors == []
    assert browser.execute_script("return window.__pwned") is None
    dom: str = browser.execute_script("return document.querySelector('.layout').outerHTML")
    assert_safe(dom)
    return dom


def assert_file_safe(html: str) -> None:
    """The file: one script that runs (the viewer's), the records only as data in
    elements that never run, in which no ``<`` can end or open anything."""
    t = parse(html)
    scripts = [a for tag, a in t.tags if tag == "script"]
    runs = [a for a in scripts if "src" not in a and a.get("type") is None]
    shipped = [a for a in scripts if (a.get("src") or "").endswith("viewer.js")]
    assert len(runs) + len(shipped) == 1, "one script of the viewer's, inline or (a folder's page) its file"
    assert all(a.get("type") in (None, "application/json") for a in scripts)
    for a, body in zip(scripts, t.scripts):
        if a.get("type") == "application/json":
            assert "<" not in body
    assert_safe(html)


def assert_safe(html: str) -> None:
    """Nothing in the page can run but the viewer's own script, and no link leaves for a bad scheme."""
    t = parse(html)
    for tag, attrs in t.tags:
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name, value)
            assert name != "style", (tag, name)
            if name == "src":
                assert tag == "script" and value is not None and value.endswith(".js") and "://" not in value
            if name == "href":
                assert value is not None
                assert value.startswith(("#", "https://", "http://")) or "://" not in value, value
                assert not value.lower().lstrip().startswith(("javascript:", "data:", "vbscript:")), value
    assert "javascript:window" not in re.sub(r">[^<]*<", "><", html), "a javascript: link survived outside text"


def test_every_record_kind_is_rendered(browser: Any, tmp_path: Path) -> None:
    src = every_kind(tmp_path / "run.jsonl")
    html = shown(browser, tmp_path, src)
    t = parse(html)
    articles = [a for tag, a in t.tags if tag == "article"]
    types = [json.loads(line)["type"] for line in src.read_bytes().split(b"\n") if line.strip()]
    assert [a["data-type"] for a in articles] == types
    assert [int(a["data-line"] or 0) for a in articles] == list(range(1, len(types) + 1))
    ids = [a["id"] for a in articles]
    assert len(set(ids)) == len(ids) and all(i and i.startswith("e-") for i in ids)
    assert {"session-meta", "run-context", "message", "grants", "tool-dispatched", "tool-settled", "elision", "rewind", "compaction", "future-thing"} <= set(types)
    # The cut: summary beside what it replaced, the tokens, the replacement sent instead.
    assert "compaction — the cut" in html and "tokens 5,000 → 700 (−86%)" in html
    assert "[replacement] the story so far" in html and "recorded but not sent" in html
    assert re.search(r"replaced: \d+ messages \(lines \d+–\d+\)", html)
    # Elision: the stub and the original on demand; the message says it was elided.
    assert "stub the model sees" in html and "the original, " in html and "elided at line" in html
    assert re.search(r'<details class="original"><summary>the original, 480 B</summary><details class="fold"><summary>41 lines, 480 B</summary><pre class="txt">print', html)
    # Rewind: the rewound answer is flagged as no longer sent.
    assert "keeps the live messages through" in html and "dropped by the rewind at line" in html and "dropped: 1 message" in html
    # Tool lifecycle and the end of the run.
    assert "failed" in html and "1.50 s" in html and "12 ms" in html
    assert "dispatched: never settled" in html and "The run ended here." in html
    assert "grants in force" in html
    # Artifacts: ok, missing, mismatched.
    assert "digest matches" in html and ">missing<" in html and "digest does not match" in html
    assert "a type this version does not know" in html and "&lt;b&gt;bold?&lt;/b&gt;" in html
    assert "check</b> clean" in html
    # A long extra (reasoning) is folded with its size; a short one is a chip.
    assert '<details class="fold extra"><summary>reasoning, 1,020 B</summary><pre class="txt">step one' in html and "finish-reason=tool_calls" in html
    # The outline: turns and the cut, linked to their cards.
    assert re.search(r'<li class="o-compaction"><a href="#e-[0-9a-f]{32}">compaction 5000→700</a>', html)


def test_hostile_text_is_shown_not_run(browser: Any, tmp_path: Path) -> None:
    src = every_kind(tmp_path / "run.jsonl")
    html = shown(browser, tmp_path, src)
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert '&lt;img src=x onerror="window.__pwned=1"&gt;' in html
    assert "<img" not in html and "<svg" not in html
    assert '<a href="https://example.org/a?b=1&amp;c=&quot;2&quot;"' not in html  # the quote ends the URL
    assert '<a href="https://example.org/x"' in html
    assert "[click me](javascript:window.__pwned=1)" in html  # shown as text, not a link
    # Control characters, DEL, U+2028/9 and a lone surrogate are made visible.
    assert "␇" in html and "␛[31m" in html and "␀" in html and "\\u2028" in html and "\\ud800" in html
    assert "\x1b" not in html and "\x00" not in html and "\u2028" not in html
    html.encode("utf-8")  # no lone surrogate reached the page
    # The data the page carries: every < escaped inside its JSON strings.
    data = page(tmp_path, src).split('id=at-data data-first="1">', 1)[1].split("</script>", 1)[0]
    assert "\\u003cscript>window.__pwned=1\\u003c/script>" in data and "<" not in data


def test_a_10_mb_line_is_cut_and_folded(browser: Any, tmp_path: Path) -> None:
    src = tmp_path / "big.jsonl"
    with Session.create(src) as s:
        s.append_message(Message.user("x" * (10 * 1024 * 1024)))
        s.append_message(Message.assistant("<script>" * 200_000))
    assert len(page(tmp_path, src, single=True)) < 3 * 1024 * 1024
    out = shown(browser, tmp_path, src, single=True)
    assert "more not shown here; the whole text is line 2 of the file" in out
    assert re.search(r"<summary>1 lines, 10\.0 MB</summary>", out)
    assert "&lt;script&gt;" in out


def test_the_csp_forbids_every_load_but_the_inline_css_and_js(tmp_path: Path) -> None:
    html = page(tmp_path, FIXTURES / "clean.jsonl")
    t = parse(html)
    metas = [a for tag, a in t.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    policy = metas[0]["content"] or ""
    assert policy.startswith("default-src 'none';") and "connect-src 'none'" in policy and "'unsafe-inline'" not in policy
    script = [body for (tag, a), body in zip([x for x in t.tags if x[0] == "script"], t.scripts) if a.get("type") is None][0]
    style = html.split("<style>", 1)[1].split("</style>", 1)[0]
    for body, directive in ((script, "script-src"), (style, "style-src")):
        h = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert re.search(rf"{directive} 'sha256-{re.escape(h)}';", policy), directive
    assert "'self'" not in policy
    assert_file_safe(html)


@pytest.mark.parametrize("name", ["clean", "pending", "torn", "missing_newline", "corrupt_mid", "unknown_id", "duplicate_id", "records", "rewind_unknown", "replacement_clash"])
def test_every_fixture_renders(browser: Any, tmp_path: Path, name: str) -> None:
    src = FIXTURES / f"{name}.jsonl"
    html = shown(browser, tmp_path, src)
    verdict = re.search(r'class="verdict v-(\w+)"', html)
    assert verdict is not None
    corrupt = ("corrupt_mid", "unknown_id", "duplicate_id", "rewind_unknown", "replacement_clash")
    expected = "repairable" if name == "torn" else ("corrupt" if name in corrupt else "clean")
    assert verdict.group(1) == expected
    if expected == "corrupt":
        assert re.search(r"load refuses this file at line \d+: ", html)
        assert 'class="refusal"' in html  # the line it names says so on its card
    if name == "torn":
        assert "The run ended here." in html
    if name == "records":  # rewinds and a replacement, from replay
        assert "dropped: 2 messages" in html and "dropped by the rewind at line 7" in html
        assert "the replacement messages, in place of the summary" in html


def chunk_lines(path: Path) -> tuple[int, list[str]]:
    """A folder page's chunk script: its first line's number and its lines."""
    text = path.read_text("utf-8")
    head, rest = text.split(",String.raw`\n", 1)
    assert head.startswith("window.AT_CHUNK=[") and rest.endswith("\n`];\n")
    return int(head.split("[", 1)[1]), rest[: -len("\n`];\n")].split("\n")


def test_a_folder_of_pages_holds_every_record_once(tmp_path: Path) -> None:
    src = tmp_path / "long.jsonl"
    with Session.create(src) as s:
        for k in range(700):
            s.append_message(Message.user(f"turn {k} `${{x}}` \\ {'</script>' if k == 5 else ''}"))
            s.append_message(Message.assistant(f"answer {k} " + "y" * 2000))
    out = tmp_path / "site"
    result = write_html(read(str(src), lenient=True), str(out), single=False)
    assert result.pages > 2 and result.path == str(out / "index.html")
    seen: list[int] = []
    for k in range(1, result.pages + 1):
        html = (out / "p" / f"{k:06d}.html").read_text("utf-8")
        assert_file_safe(html)
        assert f'<script src="../c/{k:06d}.js"></script>' in html and '<script src="../viewer.js"></script>' in html
        first, lines = chunk_lines(out / "c" / f"{k:06d}.js")
        records = [(first + n, json.loads(line)) for n, line in enumerate(lines) if line]
        seen += [n for n, _ in records]
        if k > 1:  # pages are cut at a turn
            assert records[0][1]["type"] == "message" and records[0][1]["payload"]["role"] == "user"
        for n, env in records:
            assert src.read_bytes().split(b"\n")[n - 1] == json.dumps(env, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert seen == list(range(1, 1402))
    index = (out / "index.html").read_text("utf-8")
    policy = [a["content"] for tag, a in parse(index).tags if tag == "meta" and a.get("http-equiv")][0] or ""
    assert "script-src 'self' 'sha256-" in policy and f'data-pages="{result.pages}"' in index
    ranges = json.loads((out / "pages.js").read_text().split("setPages(", 1)[1].rsplit(");", 1)[0])
    assert ranges[0][0] == 1 and ranges[-1][1] == 1401


def test_cli_html(tmp_path: Path) -> None:
    r = cli("html", str(FIXTURES / "pending.jsonl"), "-o", str(tmp_path / "p.html"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {tmp_path / 'p.html'}\n"
    assert "never settled" in (tmp_path / "p.html").read_text("utf-8")
    r = cli("html", str(FIXTURES / "clean.jsonl"), "--pages", "-o", str(tmp_path / "big.html"))
    assert r.returncode == 0 and (tmp_path / "big" / "index.html").is_file() and not (tmp_path / "big.html").exists()
    assert r.stdout == f"wrote {tmp_path / 'big'}/ (1 page; open {tmp_path / 'big' / 'index.html'})\n"
    r = cli("html", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "x.html"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nope.jsonl" in r.stderr
    r = cli("html", str(FIXTURES / "text.txt"), "-o", str(tmp_path / "x.html"))
    assert r.returncode == 2 and "not a transcript" in r.stderr
    assert not (tmp_path / "x.html").exists()
    r = cli("html", str(FIXTURES / "clean.jsonl"), "-o", str(tmp_path / "no" / "such" / "dir" / "x.html"))
    assert r.returncode == 2 and r.stderr.startswith("agent-transcript: ") and r.stderr.count("\n") == 1


def test_the_page_and_serve_name_the_unanswered_calls(tmp_path: Path) -> None:
    """The page's summary, its end banner and the records' notes name the
    call no tool message answers, and the tool message that answers no call,
    as check does; answered, the call is not named. (Serve's live summary:
    test_serve's tail test.)"""
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.tool("ghost", "stray"))                       # line 3
        s.append_message(Message.assistant(None, [
            {"id": "c9", "type": "function", "function": {"name": "deploy", "arguments": "{}"}}]))  # line 4
    r = cli("html", str(path), "-o", str(tmp_path / "p.html"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "p.html").read_text("utf-8")
    assert "1 tool call unanswered</b>" in page and "deploy <code>c9</code>" in page
    assert "1 tool message answering no call</b>" in page
    assert "The run ended here.</b> 1 tool call unanswered:" in page
    notes = json.loads(page.split("id=at-notes>", 1)[1].split("</script>", 1)[0])["notes"]
    assert notes["4"] == {"unanswered": ["c9"]} and notes["3"] == {"orphan": True}
    with Session.load(path) as s:
        s.answer_unanswered_tool_calls()
    cli("html", str(path), "-o", str(tmp_path / "q.html"))
    answered = (tmp_path / "q.html").read_text("utf-8")
    assert "unanswered" not in answered.split("<script")[0] and '"unanswered"' not in answered


_ID_CHARS = "0123456789abcdefAZ_.:- \"\\é"


@given(st.lists(st.one_of(st.text(_ID_CHARS, min_size=32, max_size=32), st.text(_ID_CHARS, min_size=1, max_size=140),
                          st.text("0123456789abcdef", min_size=32, max_size=32)), min_size=1, max_size=12, unique=True),
       st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_record_whose_id_is_not_a_plain_word_gets_its_anchor(tmp_path: Path, ids: list[str], spaced: bool) -> None:
    """The page reads a record's id from the head of its line when the line says it is
    plain; every other record's note names its anchor, whatever its line looks like."""
    seps = (", ", ": ") if spaced else (",", ":")
    lines = [{"id": "d8f16adf91b7584a2265b1f500000001", "payload": {"agent": "a"}, "ts": "2026-08-09T13:10:09Z",
              "type": "session-meta", "v": 1}]
    lines += [{"id": eid, "payload": {"role": "user", "content": "m"}, "ts": "2026-08-09T13:10:10Z",
               "type": "message", "v": 1} for eid in ids]
    src = tmp_path / "ids.jsonl"
    src.write_text("".join(json.dumps(line, separators=seps, ensure_ascii=False) + "\n" for line in lines), "utf-8")
    notes = json.loads(re.findall(r"id=at-notes>(.*?)</script>", page(tmp_path, src), re.S)[0])["notes"]
    want = {str(k): anchor(eid) for k, eid in enumerate(ids, 2) if anchor(eid) != "e-" + eid}
    assert {k: v["a"] for k, v in notes.items() if "a" in v} == want
