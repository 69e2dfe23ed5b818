"""Transcripts for the viewer's tests, written with the library itself."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from agent_transcript import Message, Session

HOSTILE = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "[click me](javascript:window.__pwned=1) and [ok](https://example.org/a?b=1&c=\"2\")",
    "</script><script>window.__pwned=1</script>",
    "bell\x07 esc\x1b[31mred\x1b[0m nul\x00 del\x7f ls\u2028ps\u2029 lone\ud800 done",
    '"><svg onload=window.__pwned=1>',
    "``` \n<script>window.__pwned=1</script>\n```",
]


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def every_kind(path: Path) -> Path:
    """A transcript with every envelope type (rewind, replacement, an artifact,
    a missing and a mismatched one, a failed call, a pending call, an unknown type)."""
    with Session.create(path, meta={"agent": "viewer-test", "task": "every kind"}) as s:
        s.append_run_context(sections=[("identity", "I am a test."), ("AGENTS.md", "# Rules\n- be kind")], facts=[("os", "linux")])
        s.append_message(Message.system("You are a test agent."))
        u1 = s.append_message(Message.user("Hello **there**. See https://example.org/x and `code`."))
        s.append_grants({"read_file": "always"})
        a1 = s.append_message(Message.assistant("Reading.", tool_calls=[call("c1", "read_file", {"path": "a.py"})]), extra={"finish-reason": "tool_calls"})
        op1 = s.append_tool_dispatched("c1", "read_file", '{"path": "a.py"}', idempotency="read-only", round=1)
        r1 = s.append_message(Message.tool("c1", "print('hi')\n" * 40))
        art = s.write_artifact("full output\n" * 100, excerpt="full output (excerpt)")
        s.append_tool_settled(op1, "completed", duration=0.012, artifact=art)
        s.append_message(Message.assistant("Failing.", tool_calls=[call("c2", "run_tests", {})]))
        op2 = s.append_tool_dispatched("c2", "run_tests", "{}", round=2)
        s.append_message(Message.tool("c2", "boom"))
        s.append_tool_settled(op2, "failed", duration=1.5, error="exit 1",
                              artifact={"file": "gone.txt", "digest": "sha256:" + "0" * 64, "bytes": 3})
        s.append_elision([(r1, "[elided: a.py]")])
        u2 = s.append_message(Message.user("Now the second turn."))
        a2 = s.append_message(Message.assistant("An answer that will be rewound."))
        s.append_rewind(u2)
        s.append_compaction("Summary: the user said hello; a.py was read.", u2, 5000, 700,
                            replacement=[Message.user("[replacement] the story so far"), (Message.assistant("[replacement] ok"), {"k": 1})])
        s.append_message(Message.user("Third turn."))
        s.append_message(Message.assistant("Thinking first."), extra={"reasoning": "step one\nstep two <b>not bold</b>\n" * 30})
        s.append_message(Message.assistant("Last call.", tool_calls=[call("c3", "write_file", {"path": "b.py"})]))
        s.append_tool_dispatched("c3", "write_file", '{"path": "b.py"}', round=3)
        changed = s.write_artifact("original bytes", excerpt="orig")
        s.append_message(Message.tool("c9", "orig"))
        op9 = s.append_tool_dispatched("c9", "fetch", "{}")
        s.append_tool_settled(op9, "completed", artifact=changed)
        for text in HOSTILE:
            s.append_message(Message.user(text))
        del a1, a2, u1
    # An unknown type, written as a writer from the future would.
    with open(path, "ab") as f:
        f.write(b'{"id":"zz-unknown","payload":{"x":"<b>bold?</b>"},"ts":"2026-08-09T13:10:08.542283Z","type":"future-thing","v":1}\n')
    # An artifact whose bytes changed after it was written.
    (path.with_suffix(".artifacts") / changed["file"]).write_bytes(b"tampered")
    return path


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def parse(html: str) -> Tags:
    t = Tags()
    t.feed(html)
    t.close()
    return t
