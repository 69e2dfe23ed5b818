"""The core's first/last-line reader behind ``list_transcripts``, against the Python oracle.

``list_transcripts`` and ``fleet.read_row`` read every file with the Rust
core. Where every line is JSON both read, each row must be the one the Python
reference reader (``reference_listing``, kept here as the oracle) gives, and,
where the file is a transcript, say what ``Session.peek`` says of its first and
last lines. These are the edges a native reader can get wrong: a tail torn
inside a UTF-8 character, no newline at all, a first line longer than the first
read, a file cut short between its stat and its read, CRLF, and archives.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.fleet import STATUSES, TranscriptRow, list_transcripts, read_row
from agent_transcript.inspect import content_text

from . import reference_listing
from .reference_listing import _clip

TS = "2026-08-09T13:10:08.542283Z"


def line(id: str, type: str, payload: object, ts: str = TS, v: int = 1) -> bytes:
    return (json.dumps({"id": id, "payload": payload, "ts": ts, "type": type, "v": v},
                       sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def meta(**payload: object) -> bytes:
    return line("m" * 32, "session-meta", payload or {"agent": "coder", "model": "m-1"})


def user(content: object, id: str = "u" * 32) -> bytes:
    return line(id, "message", {"role": "user", "content": content})


def turns(n: int) -> bytes:
    return b"".join(line(f"{i:032x}", "message", {"role": "assistant", "content": "x"},
                         ts=f"2026-08-10T00:00:{i % 60:02d}.000000Z") for i in range(n))


def only_row(path: Path) -> TranscriptRow:
    got = list(list_transcripts(path))
    assert len(got) == 1
    return got[0]


def oracle(path: Path) -> TranscriptRow:
    """The Python oracle's row of ``path``, where it differs from load by
    design made load's: a session-meta whose ``v`` is no int (missing, a
    string) is no envelope load reads, so no session-meta."""
    row = reference_listing.read_row(path, {})
    if row.status == "unsupported version" and not re.fullmatch(r"version -?[0-9]+", row.reason or ""):
        return dataclasses.replace(row, status="not a transcript", reason="the first line is not a session-meta",
                                   title=None, agent=None, model=None, started=None)
    return row


def same_as_reference(path: Path) -> TranscriptRow:
    """The listing's row of ``path``, checked equal to the Python oracle's
    and to ``read_row``'s."""
    row = only_row(path)
    assert row == oracle(path), path.read_bytes()[-300:]
    assert row == read_row(path, {})
    return row


def test_the_core_answers_for_an_ordinary_transcript(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(meta() + user("fix  the\tbug") + turns(3))
    row = same_as_reference(path)
    assert (row.status, row.title, row.agent, row.model, row.last_type) == (
        "clean", "fix the bug", "coder", "m-1", "message")
    st_ = os.stat(path)
    assert (row.size, row.mtime, row.held) == (st_.st_size, st_.st_mtime, False)
    assert read_row(path, {(st_.st_dev, st_.st_ino): 7}).writer_pid == 7


def test_a_tail_torn_inside_a_utf8_character(tmp_path: Path) -> None:
    whole = meta() + user("go") + turns(2) + user("héllo € 𝄞", id="z" * 32)
    for ch in ("€", "𝄞"):
        at = whole.rindex(ch.encode())
        for cut in range(at + 1, at + len(ch.encode())):
            path = tmp_path / f"cut{cut}.jsonl"
            path.write_bytes(whole[:cut])
            row = same_as_reference(path)
            assert (row.status, row.last_activity) == ("torn tail", "2026-08-10T00:00:01.000000Z")


def test_no_newline_at_all(tmp_path: Path) -> None:
    (tmp_path / "meta.jsonl").write_bytes(meta()[:-1])
    (tmp_path / "big.jsonl").write_bytes(meta(agent="a" * 20_000)[:-1])
    (tmp_path / "last.jsonl").write_bytes((meta() + user("go") + turns(2))[:-1])
    for name, last in (("meta.jsonl", "session-meta"), ("big.jsonl", "session-meta"), ("last.jsonl", "message")):
        row = same_as_reference(tmp_path / name)
        assert (row.status, row.last_type) == ("clean", last)


@pytest.mark.parametrize("size", [5_000, 70_000, 2_000_000])
def test_a_first_line_longer_than_a_head_block(tmp_path: Path, size: int) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(meta(agent="a", notes="n" * size) + user("the task") + turns(1))
    row = same_as_reference(path)
    if size < (1 << 20):
        assert (row.status, row.agent, row.title) == ("clean", "a", "the task")
    else:
        assert (row.status, row.reason) == ("not a transcript", "the first line is longer than 1 MiB")


@pytest.mark.parametrize("before", [100, 5_000, 40_000, 65_400, 70_000])
def test_the_title_after_long_first_messages(tmp_path: Path, before: int) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(meta() + line("s" * 32, "message", {"role": "system", "content": "s" * before})
                     + user([{"type": "text", "text": "look"}, {"type": "image"}, {}]) + turns(2))
    row = same_as_reference(path)
    assert row.title == ("look [image] [part]" if before < 65_000 else None)


@pytest.mark.parametrize("size", [200_000, 5 << 20])
def test_a_long_last_line(tmp_path: Path, size: int) -> None:
    """A canonical last line longer than the tail read is read by its end
    without parsing it, at any length; any other is parsed whole (up to 4 MiB,
    past which both readers call it torn)."""
    later = "2026-09-01T00:00:00.000000Z"
    big = line("c" * 32, "message", {"role": "tool", "content": "z" * size}, ts=later)
    odd = json.dumps({"v": 1, "type": "grants", "ts": later, "id": "g", "payload": "p" * size}).encode()
    odd_want = ("torn tail", "session-meta", TS) if size > 4 << 20 else ("clean", "grants", later)
    for name, body, want in (("whole", big, ("clean", "message", later)),
                             ("torn", big + big[:1000], ("torn tail", "message", later)),
                             ("odd", odd + b"\n\n", odd_want)):
        (tmp_path / name).write_bytes(meta() + user("go") + body)
        row = same_as_reference(tmp_path / name)
        assert (row.status, row.last_type, row.last_activity) == want, name


def test_crlf(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes((meta() + user("go") + turns(2)).replace(b"\n", b"\r\n") + b" \r\n\r\n")
    row = same_as_reference(path)
    assert (row.status, row.title, row.last_activity) == ("clean", "go", "2026-08-10T00:00:01.000000Z")


def test_a_line_only_pythons_json_reads_is_what_load_says(tmp_path: Path) -> None:
    """The core reads lines with the strict reader load uses: a line Python's
    ``json`` reads and load refuses (NaN, a float too big for a double, a BOM)
    is damaged, as it is to load (a BOM: refused as damage); a version that is no int is no session-meta.
    (The Python oracle read these as clean: it agreed with ``json``, not load.)"""
    torn = {
        "nan.jsonl": meta() + b'{"type":"x","ts":"t","n":NaN}\n',
        "huge.jsonl": meta() + b'{"type":"x","ts":"t","n":1e400}\n',
    }
    for name, body in torn.items():
        (tmp_path / name).write_bytes(body)
        loaded = Session.peek(tmp_path / name)
        assert any(w.startswith("line ") for w in loaded.warnings), (name, loaded.warnings)
    (tmp_path / "bom.jsonl").write_bytes(meta() + b'\xef\xbb\xbf{"type":"x","ts":"t"}\n')
    (tmp_path / "bad-utf8.jsonl").write_bytes(
        meta() + b'{"id":"' + b"\xff" * 3 + b'","payload":{},"ts":"t","type":"x","v":1}\n')
    (tmp_path / "v2.jsonl").write_bytes(line("m" * 32, "session-meta", {}, v=2))
    (tmp_path / "vfloat.jsonl").write_bytes(line("m" * 32, "session-meta", {}).replace(b'"v":1', b'"v":1.0'))
    (tmp_path / "vtrue.jsonl").write_bytes(line("m" * 32, "session-meta", {}).replace(b'"v":1', b'"v":true'))
    rows = {r.path.name: r for r in list_transcripts(tmp_path)}
    for name in torn:
        assert (rows[name].status, rows[name].last_type, rows[name].reason) == \
            ("torn tail", "session-meta", "the last line is cut short"), name
    # A canonical end is read without parsing the line (as the oracle reads it).
    assert rows["bad-utf8.jsonl"].status == "clean"
    # Damage that does not begin with '{' is no torn write: load refuses it.
    assert (rows["bom.jsonl"].status, rows["bom.jsonl"].reason) == \
        ("corrupt", "the last line is damaged and does not begin with '{'")
    assert (rows["v2.jsonl"].status, rows["v2.jsonl"].reason) == ("unsupported version", "version 2")
    for name in ("vfloat.jsonl", "vtrue.jsonl"):
        assert (rows[name].status, rows[name].reason) == ("not a transcript", "the first line is not a session-meta")
        with pytest.raises(Exception):
            Session.load(tmp_path / name).close()


def test_lone_surrogates_and_odd_content_are_read(tmp_path: Path) -> None:
    """A lone surrogate in a shown field comes back as itself; content that is
    no string nor list of parts is shown as its JSON."""
    (tmp_path / "s.jsonl").write_bytes(
        b'{"id":"m","payload":{"agent":"a\\ud800b"},"ts":"t","type":"session-meta","v":1}\n'
        b'{"id":"u","payload":{"content":"hi \\udc00  there","role":"user"},"ts":"t","type":"message","v":1}\n'
        b'{"id":"x","payload":{},"ts":"t\\ud800","type":"x","v":1}\n')
    (tmp_path / "dict.jsonl").write_bytes(meta() + user({"a": 1}) + turns(1))
    (tmp_path / "parts.jsonl").write_bytes(meta() + user(["plain", {"type": "text", "text": "t"}]) + turns(1))
    rows = {r.path.name: r for r in list_transcripts(tmp_path)}
    s = rows["s.jsonl"]
    assert (s.status, s.agent, s.title, s.last_activity) == ("clean", "a\ud800b", "hi \udc00 there", "t\ud800")
    assert rows["dict.jsonl"].title == '{"a":1}'
    assert rows["parts.jsonl"].title == '"plain" t'


def test_a_title_is_split_on_exactly_what_python_calls_a_space(tmp_path: Path) -> None:
    """Every code point (lone surrogates too) in some title: the core's clip
    is the oracle's ``" ".join(text.split())``, so it splits on exactly what
    ``str.isspace`` calls a space. A run of 79 characters fits a title, so one
    taken for a space (or a space not taken for one) changes it."""
    want = {}

    def write(name: str, text: str) -> None:
        body = json.dumps({"id": "u", "payload": {"content": text, "role": "user"}, "ts": TS, "type": "message",
                           "v": 1})
        (tmp_path / name).write_bytes(meta() + body.encode() + b"\n")
        want[name] = _clip(json.loads(body)["payload"]["content"])  # a surrogate pair is read as one

    for lo in range(0, 0x110000, 79):
        write(f"{lo}.jsonl", "".join(map(chr, range(lo, min(lo + 79, 0x110000)))))
    write("cut.jsonl", " " + "\ud800" * 81)
    assert want["cut.jsonl"] == "\ud800" * 79 + "…"  # a lone surrogate is one character
    assert {r.path.name: r.title for r in list_transcripts(tmp_path)} == want


def test_a_file_cut_short_while_it_is_listed(tmp_path: Path) -> None:
    """A writer's repair (or anyone) truncating files while ls reads them: every
    row is one of the statuses, never an exception."""
    body = meta() + user("go") + turns(2000)
    paths = [tmp_path / f"r{i}.jsonl" for i in range(200)]
    for p in paths:
        p.write_bytes(body)
    stop = threading.Event()

    def cutter() -> None:
        n = 0
        while not stop.is_set():
            p = paths[n % len(paths)]
            with open(p, "r+b") as f:
                f.truncate([0, 10, 300, len(body) // 2, len(body) - 7][n % 5])
                f.seek(0, os.SEEK_END)
            p.write_bytes(body)
            n += 1

    t = threading.Thread(target=cutter)
    t.start()
    try:
        for _ in range(20):
            for row in list_transcripts(tmp_path):
                assert row.status in STATUSES
    finally:
        stop.set()
        t.join()


def test_an_archive_lists_as_its_original(tmp_path: Path) -> None:
    src = tmp_path / "run.jsonl"
    src.write_bytes(meta() + user("archived") + turns(5) + b'{"id":"tor')
    packed = Session.archive(src, keep=True)
    a, b = only_row(src), only_row(packed)
    skip = {"path", "size", "mtime"}
    assert {k: v for k, v in a.to_json().items() if k not in skip} == \
        {k: v for k, v in b.to_json().items() if k not in skip}


def test_a_damaged_archive_is_unreadable(tmp_path: Path) -> None:
    src = tmp_path / "run.jsonl"
    src.write_bytes(meta() + user("archived") + turns(3000))
    packed = Session.archive(src).read_bytes()
    (tmp_path / "cut.jsonl.zst").write_bytes(packed[: len(packed) // 2])
    (tmp_path / "junk.jsonl.zst").write_bytes(b"junk")
    for name in ("cut.jsonl.zst", "junk.jsonl.zst"):
        row = read_row(tmp_path / name)
        assert (row.status, row.reason) == ("unreadable", "not a whole zstd archive"), name
        assert Session.peek(tmp_path / name).error is not None


def test_vanished_and_odd_paths_are_the_references(tmp_path: Path) -> None:
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "dir.jsonl").mkdir()
    rows = {r.path.name: r for r in list_transcripts(tmp_path)}
    for name in ("dangling.jsonl", "fifo.jsonl"):
        assert rows[name] == reference_listing.read_row(tmp_path / name, {})
    assert rows["dangling.jsonl"].reason == "a dangling symlink"
    assert rows["fifo.jsonl"].reason == "not a regular file"
    assert "dir.jsonl" not in rows
    for name in ("dir.jsonl", "gone.jsonl"):
        assert read_row(tmp_path / name) == reference_listing.read_row(tmp_path / name)
    assert read_row(tmp_path / "gone.jsonl").reason == "no such file"


NOBODY_LS = textwrap.dedent("""
    import json, os, sys
    from agent_transcript.fleet import list_transcripts
    os.setgroups([])
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[3]))
    print(json.dumps([r.to_json() for r in list_transcripts(sys.argv[1])]))
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to nobody (non-root runs the real test in test_ls)")
def test_a_file_the_core_may_not_open_is_unreadable(tmp_path: Path) -> None:
    import pwd
    import tempfile

    nobody = pwd.getpwnam("nobody")
    base = Path(tempfile.mkdtemp(prefix="at-ls-"))
    try:
        os.chmod(base, 0o755)
        (base / "mine.jsonl").write_bytes(meta() + user("go"))
        os.chmod(base / "mine.jsonl", 0o600)
        (base / "open.jsonl").write_bytes(meta() + user("go"))
        os.chmod(base / "open.jsonl", 0o644)
        r = subprocess.run([sys.executable, "-c", NOBODY_LS, str(base), str(nobody.pw_gid), str(nobody.pw_uid)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        rows = {Path(x["path"]).name: x for x in json.loads(r.stdout)}
        assert (rows["mine.jsonl"]["status"], rows["mine.jsonl"]["reason"]) == ("unreadable", "permission denied")
        assert (rows["open.jsonl"]["status"], rows["open.jsonl"]["title"]) == ("clean", "go")
    finally:
        for p in base.iterdir():
            p.unlink()
        base.rmdir()


# --- the property: generated transcripts, random tail cuts -------------------------

PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=120)
spaces = st.sampled_from(["", " ", "\t", "\r", "\r\n", "\n", "\n\n  \n"])


@st.composite
def transcripts(draw: Any) -> bytes:
    payload: dict[str, object] = {}
    for key in ("agent", "model"):
        payload[key] = draw(st.one_of(texts, st.none(), st.integers(), st.just(["x"])))
    out = [line("m" * 32, "session-meta", payload, ts=draw(st.sampled_from([TS, "x", "é"])))]
    for i in range(draw(st.integers(0, 3))):
        out.append(line(f"s{i:031}", "message", {"role": draw(st.sampled_from(["system", "assistant"])),
                                                 "content": draw(texts) * draw(st.sampled_from([1, 100, 700]))}))
    if draw(st.booleans()):
        content = draw(st.one_of(texts, st.none(), st.lists(st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, texts),
            st.builds(lambda k: {"type": k}, st.sampled_from(["image", "", "text"])),
            st.just({})), max_size=3)))
        out.append(user(content))
    for i in range(draw(st.integers(0, 6))):
        kind = "message"
        ts = draw(st.sampled_from([TS, "2026-08-10T00:00:00.000000Z", "ü"]))
        body = {"role": "assistant", "content": draw(texts) * draw(st.sampled_from([1, 50, 400]))}
        if draw(st.booleans()):
            out.append(line(f"{i:032x}", kind, body, ts=ts))
        else:  # not canonical: another key order, spaces
            out.append((json.dumps({"v": 1, "type": kind, "ts": ts, "id": str(i), "payload": body},
                                   ensure_ascii=draw(st.booleans())) + "\n").encode())
        out.append(draw(spaces).encode())
    data = b"".join(out)
    if draw(st.booleans()):
        data = data.replace(b"\n", b"\r\n")
    return data if draw(st.booleans()) else data[: draw(st.integers(0, len(data)))]


@PROPERTY
@given(data=transcripts())
def test_the_core_agrees_with_the_reference_and_with_peek(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    row = same_as_reference(path)
    if row.status not in ("clean", "torn tail"):
        return
    p = Session.peek(path)
    assert p.error is None
    assert row.started == p.envelopes[0].ts
    meta_payload = p.meta if isinstance(p.meta, dict) else {}
    assert row.agent == (meta_payload.get("agent") if isinstance(meta_payload.get("agent"), str) else None)
    last = p.envelopes[-1]
    torn = any(w.startswith("line ") for w in p.warnings)
    if not torn:
        assert (row.status, row.last_type, row.last_activity) == ("clean", last.type, last.ts)
    elif row.status == "torn tail":
        assert (row.last_type, row.last_activity) == (last.type, last.ts)
    # The title is looked for among the head's lines that end with a newline
    # (a last line without one may still be being written).
    if len(data) < 60_000 and data.endswith(b"\n"):
        texts_ = (content_text(m.content) for m in p.messages if m.role == "user")
        assert row.title == _clip(next((t for t in texts_ if t is not None), None))


@st.composite
def damaged(draw: Any) -> bytes:
    """A generated transcript with odd bytes written over a few of its bytes."""
    data = bytearray(draw(transcripts()))
    for _ in range(draw(st.integers(1, 4)) if data else 0):
        at = draw(st.integers(0, len(data) - 1))
        data[at:at + 1] = draw(st.sampled_from([b"\xff", b"\x00", b"{", b"}", b'"', b"\n", b"\\", b" ", b"\xc3"]))
    return bytes(data)


@PROPERTY
@given(data=damaged())
def test_the_core_agrees_with_the_reference_on_damaged_files(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    same_as_reference(path)


def test_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / os.fsdecode(b"caf\xe9.jsonl")
    path.write_bytes(meta() + user("hi"))
    row = same_as_reference(path)
    assert (row.path, row.title) == (path, "hi")


def call_message(call_id: object = "c1", id: str = "a" * 32, role: str = "assistant") -> bytes:
    return line(id, "message", {"role": role, "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "run", "arguments": "{}"}}]})


@pytest.mark.parametrize("tail, status", [
    (call_message(), "pending"),                                             # a call nothing answers
    (line("d" * 32, "tool-dispatched", {"call-id": "c1", "tool": "run"}), "pending"),  # never settled
    (call_message() + line("t" * 32, "message", {"role": "tool", "content": "ok", "tool_call_id": "c1"}),
     "clean"),
    (call_message(call_id=7), "clean"),                                      # no string id: not a call
    (call_message(role="user"), "clean"),                                    # only an assistant calls
    (line("u" * 32, "message", {"role": "user", "content": '"tool_calls":[{"id":"c1"}]'}), "clean"),
    (call_message() + b'{"id":"cut', "torn tail"),                           # a torn end still wins
    (call_message() + b"\n\n  \n", "pending"),                               # blank lines are no line
    (call_message(id="l" * 32)[:-1].replace(b'"content":null', b'"content":"' + b"x" * 40000 + b'"')
     + b"\n", "pending"),                                                    # longer than a block
])
def test_ls_calls_a_run_ending_in_a_call_pending(tmp_path: Path, tail: bytes, status: str) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(meta() + user("go") + tail)
    row = same_as_reference(path)
    assert row.status == status and status in STATUSES
    assert (row.reason is None) == (status == "clean")


def test_a_run_killed_mid_tool_is_pending_until_answered(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        s.append_message(Message.assistant(None, [{"id": "c1", "type": "function",
                                                   "function": {"name": "run", "arguments": "{}"}}]))
        assert only_row(path).status == reference_listing.read_row(path).status == "pending"  # a tool may run now
        s.append_tool_dispatched("c1", "run", {})
        assert only_row(path).status == reference_listing.read_row(path).status == "pending"
        s.answer_unanswered_tool_calls()
    assert same_as_reference(path).status == "clean"
    stopped = tmp_path / "stopped" / "run.jsonl"
    with Session.create(stopped) as s:
        s.append_tool_dispatched("c1", "run", {})
    assert only_row(Session.archive(stopped)).status == "pending"      # an archive says the same
