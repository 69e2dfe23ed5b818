"""The core's walk over a transcript's pages and its page writer (``_core.PageWalk``,
``_core.PageWriter``), against a plain-Python oracle: the line-by-line walk
``html`` did before it was native.

Property: for any transcript (blank lines, damaged lines, a torn tail, a last line
without its newline, records too long for a page), the pages hold every record
exactly once, in order, each page starting where the last stopped (at a turn or a
compaction once past the soft limit), and a chunk is the page's bytes with its odd
lines replaced, escaped for a ``String.raw`` template.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import _core
from agent_transcript.inspect import Reading, read
from agent_transcript.viewer import write_html
from agent_transcript.viewer.page import chunk_bytes

from .test_render import chunk_lines

HEAD = 48


def oracle(reading: Reading, data: bytes, end: int, soft_records: int, hard_records: int, soft_bytes: int,
           hard_bytes: int, big_line: int) -> list[tuple[int, int, int, list[tuple[int, int, str, bytes]], list[tuple[int, int | None, int, int]]]]:
    """The pages of ``data[:end]`` as a plain walk finds them, line by line: a
    page is cut before a record past the limits, and after any other line once
    it holds ``hard_bytes``; a run of damaged lines (blank ones between them)
    within ``big_line`` bytes is one odd entry; blank lines alone make no page."""
    index = reading.index
    assert index is not None
    n = len(index)
    pages: list[Any] = []
    page: list[Any] | None = None  # [start, stop, first_line, items, odd]
    origin = (0, 1)  # where the next page opens: offset, line
    i, line, pos, gap = 0, 1, 0, 0
    next_line = index.line_number(0) if n else -1
    while pos < end:
        nl = data.find(b"\n", pos, end)
        whole = nl >= 0
        if not whole:
            nl = end
        if line == next_line:
            t = index.type_name(i)
            if page is not None and page[3]:
                count, written = len(page[3]), pos - page[0]
                if count >= hard_records or written >= hard_bytes or (
                        (count >= soft_records or written >= soft_bytes)
                        and (t == "compaction" or (t == "message" and index.role(i) == "user"))):
                    page[1] = pos - 1
                    pages.append(page)
                    page = [pos, None, line, [], []]
            if page is None:
                page = [*origin[:1], None, origin[1], [], []]
            page[3].append((i, line, t, data[pos : min(nl, pos + HEAD)]))
            if nl - pos > big_line:
                page[4].append((line, i, pos, nl))
            i += 1
            next_line = index.line_number(i) if i < n else -1
            gap = nl + 1
        else:
            if data[pos:nl].strip(b" \t\r"):
                if page is None:
                    page = [*origin[:1], None, origin[1], [], []]
                odd = page[4]
                if (odd and odd[-1][1] is None and odd[-1][3] >= gap and nl - pos <= big_line
                        and nl - odd[-1][2] <= big_line):
                    odd[-1] = (odd[-1][0], None, odd[-1][2], nl)
                else:
                    odd.append((line, None, pos, nl))
            if whole and page is None:
                if nl + 1 - origin[0] >= hard_bytes:
                    origin = (nl + 1, line + 1)
            elif whole and page is not None and nl + 1 - page[0] >= hard_bytes:
                if page[3] or page[4]:
                    page[1] = nl
                    pages.append(page)
                    page = None
                    origin = (nl + 1, line + 1)
                else:
                    page[0], page[2] = nl + 1, line + 1
        line += 1
        pos = nl + 1
    if page is not None:
        page[1] = end
        pages.append(page)
    return [tuple(p) for p in pages]


def native(reading: Reading, end: int, *limits: int) -> list[Any]:
    assert reading.index is not None
    walk = _core.PageWalk(reading.index, end, *limits, HEAD)
    out = []
    while (got := walk.next_page()) is not None:
        out.append(got)
    return out


def envelope(k: int, ty: str, payload: dict[str, Any]) -> bytes:
    return json.dumps({"id": f"e{k}", "payload": payload, "ts": "2026-01-01T00:00:00.000000Z", "type": ty, "v": 1},
                      separators=(",", ":")).encode()


_RECORD = st.one_of(
    st.tuples(st.just("message"), st.sampled_from(["user", "assistant", "tool", "system"]), st.integers(0, 300)),
    st.tuples(st.just("grants"), st.just(""), st.integers(0, 40)),
    st.tuples(st.just("blank"), st.sampled_from(["", " ", "\t\r", "  "]), st.just(0)),
    st.tuples(st.just("damaged"), st.sampled_from(["{", "not json", "{\"id\":1}", "`$\r"]), st.just(0)),
)


@st.composite
def transcripts(draw: st.DrawFn) -> bytes:
    lines = [envelope(0, "session-meta", {})]
    for k, (kind, role, size) in enumerate(draw(st.lists(_RECORD, max_size=60)), 1):
        if kind == "message":
            text = draw(st.sampled_from(["x", "`", "$", "\\r", "<", "\u00e9"])) * size
            lines.append(envelope(k, "message", {"content": text, "role": role}))
        elif kind == "grants":
            lines.append(envelope(k, "grants", {"grants": ["$" * size]}))
        else:
            lines.append(role.encode())  # a blank or a damaged line
    data = b"\n".join(lines)
    ending = draw(st.sampled_from(["newline", "none", "torn"]))
    if ending == "newline":
        data += b"\n"
    elif ending == "torn":
        data += b"\n" + envelope(999, "message", {"content": "cut", "role": "user"})[:25]
    return data


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=transcripts(), soft=st.integers(1, 12), soft_bytes=st.integers(50, 4000), big=st.integers(40, 400))
def test_the_native_walk_is_the_python_walk(tmp_path: Path, data: bytes, soft: int, soft_bytes: int, big: int) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    reading = read(str(path), lenient=True)
    if reading.index is None:
        return
    end = reading.tail.keep if reading.replayed else reading.size
    limits = (soft, soft * 2 + 1, soft_bytes, soft_bytes * 2, big)
    got = native(reading, end, *limits)
    want = oracle(reading, data, end, *limits)
    assert [g[:5] for g in got] == want
    seen = [i for g in got for i, *_ in g[3]]
    assert seen == list(range(len(reading.index)))  # every record once, in order
    for start, stop, _, _, odd, page in got:
        # The page's bytes: the file's from start to stop, but for its odd lines.
        expected, at = [], start
        for _, _, a, b in odd:
            expected.append(data[at:a])
            at = b
        expected.append(data[at:stop])
        assert len(page) == len(b"".join(expected))
    for earlier, later in zip(got, got[1:]):
        assert earlier[1] + 1 == later[0] and data[earlier[1]] == ord("\n")


def test_past_the_hard_limit_a_page_ends_at_any_record(tmp_path: Path) -> None:
    """Records that are no turn: a page holds ``hard_records`` of them, then
    ends whatever comes next (in the property, the byte limits mostly cut first)."""
    path = tmp_path / "t.jsonl"
    lines = [envelope(0, "session-meta", {})] + [envelope(k, "message", {"role": "assistant"}) for k in range(1, 50)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    reading = read(str(path), lenient=True)
    limits = (6, 16, 1 << 30, 1 << 30, 1 << 20)
    got = native(reading, reading.size, *limits)
    assert [len(page[3]) for page in got] == [16, 16, 16, 2]
    assert [g[:5] for g in got] == oracle(reading, path.read_bytes(), reading.size, *limits)


def test_a_walk_from_a_record_starts_at_its_line(tmp_path: Path) -> None:
    """``PageWalk(..., first)`` (the tail page ``serve`` opens): its first page
    starts at that record, and every page's first line is the file's."""
    path = tmp_path / "t.jsonl"
    lines = [envelope(0, "session-meta", {})] + [
        envelope(k, "message", {"role": "user" if k % 3 == 1 else "assistant"}) for k in range(1, 40)]
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    reading = read(str(path), lenient=True)
    assert reading.index is not None
    walk = _core.PageWalk(reading.index, reading.size, 6, 16, 1 << 30, 1 << 30, 1 << 20, HEAD, 10)
    pages = list(iter(walk.next_page, None))
    assert (pages[0][0], pages[0][3][0][:2]) == (sum(len(line) + 1 for line in lines[:10]), (10, 11))
    assert [item[0] for page in pages for item in page[3]] == list(range(10, 40))
    assert [page[2] for page in pages] == [data[:page[0]].count(b"\n") + 1 for page in pages]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=transcripts(), big=st.integers(40, 400),
       subs=st.lists(st.binary(max_size=20).map(lambda b: b + b"`$\r"), max_size=60))  # a replacement is escaped too
def test_a_chunk_is_the_page_escaped_with_its_odd_lines_replaced(tmp_path: Path, data: bytes, big: int, subs: list[bytes]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    reading = read(str(path), lenient=True)
    if reading.index is None:
        return
    end = reading.tail.keep if reading.replayed else reading.size
    writer = _core.PageWriter(2)
    want = {}
    for k, (start, stop, _, _, odd, page) in enumerate(native(reading, end, 1000, 2000, 1 << 30, 1 << 30, big)):
        replaced = [(a, b, subs[j % len(subs)] if subs else b"") for j, (_, _, a, b) in enumerate(odd)]
        pieces, at = [], start
        for a, b, sub in replaced:
            pieces += [data[at:a], sub]
            at = b
        pieces.append(data[at:stop])
        target = tmp_path / f"c{k}.js"
        writer.chunk(str(target), b"<`$", page, replaced, b"$`>")
        assert len(page) == 0  # taken, not copied
        want[target] = b"<`$" + chunk_bytes(b"".join(pieces)) + b"$`>"
    writer.finish()
    for target, content in want.items():
        assert target.read_bytes() == content
    assert not list(tmp_path.glob("*.tmp"))


def test_a_file_that_cannot_be_written_raises_oserror_with_its_name(tmp_path: Path) -> None:
    writer = _core.PageWriter(1)
    missing = tmp_path / "no-such-folder" / "000001.html"
    writer.file(str(missing), [b"x"])
    with pytest.raises(FileNotFoundError) as exc:
        for _ in range(5):  # the error comes back from a later call, or from finish
            writer.file(str(tmp_path / "ok.html"), [b"y"])
        writer.finish()
    assert exc.value.filename == str(missing)
    writer.finish()  # once failed, finishing again is quiet


def test_a_folder_of_a_damaged_transcript_holds_every_line_once(tmp_path: Path) -> None:
    src = tmp_path / "damaged.jsonl"
    lines = [envelope(0, "session-meta", {})]
    for k in range(1, 900):
        lines.append(envelope(k, "message", {"content": f"turn {k} `${{x}}` " + "y" * 3000, "role": "user" if k % 4 == 1 else "assistant"}))
        if k % 97 == 0:
            lines.append(b"not json <script>alert(1)</script>")
        if k % 50 == 0:
            lines.append(b"  ")
    src.write_bytes(b"\n".join(lines) + b"\n")
    reading = read(str(src), lenient=True)
    assert not reading.replayed  # load refuses it: the pages are peek's
    result = write_html(reading, str(tmp_path / "site"), single=False)
    assert result.pages > 2
    seen: list[int] = []
    for chunk in sorted((tmp_path / "site" / "c").iterdir()):
        first, got = chunk_lines(chunk)
        seen += [first + n for n, line in enumerate(got) if line.strip()]
        for line in got:
            if line.strip():
                json.loads(line)  # a damaged line is there as a JSON string
    count = sum(1 for line in src.read_bytes().split(b"\n") if line.strip())
    assert seen == [n + 1 for n, line in enumerate(src.read_bytes().split(b"\n")) if line.strip()]
    assert len(seen) == count
    assert not [p for p in (tmp_path / "site").rglob("*.tmp")]
    assert os.path.exists(result.path)


@pytest.mark.parametrize("single", [True, False])
def test_runs_of_damaged_lines_keep_their_line_numbers(tmp_path: Path, single: bool) -> None:
    src = tmp_path / "junk.jsonl"
    lines = [envelope(0, "session-meta", {})]
    for k in range(1, 40):
        lines.append(envelope(k, "message", {"content": "x" * 2000, "role": "user" if k % 3 == 1 else "assistant"}))
        lines += [b"junk `$ <b> " + b"z" * 32 + str(j).encode() if j % 5 else b" \t" for j in range(k * 300)]
    src.write_bytes(b"\n".join(lines) + b"\nlast junk")
    reading = read(str(src), lenient=True)
    result = write_html(reading, str(tmp_path / "out.html" if single else tmp_path / "site"), single=single)
    if single:
        text = (tmp_path / "out.html").read_text()
        island = text.split('id=at-data data-first="1">\n', 1)[1].split("\n</script>", 1)[0]
        shown = [(1, island.split("\n"))]
    else:
        assert result.pages > 2  # junk lines count toward a page's bytes
        shown = [chunk_lines(c) for c in sorted((tmp_path / "site" / "c").iterdir())]
    file_lines = src.read_bytes().split(b"\n")
    seen = []
    for first, got in shown:
        for n, line in enumerate(got):
            if line.strip():
                value = json.loads(line.replace("\\u003c", "<") if single else line)
                seen.append(first + n)
                if isinstance(value, str):  # a damaged line, shown as its text
                    assert value == file_lines[first + n - 1].decode()
    assert seen == [n + 1 for n, line in enumerate(file_lines) if line.strip()]


# Runs html in a grandchild (so that its peak RSS is its own, not a big parent's
# fork) and prints that peak, in KiB.
_PEAK = r"""
import os, subprocess, sys
code = '''
import sys
from agent_transcript.inspect import read
from agent_transcript.viewer import write_html
write_html(read(sys.argv[1], lenient=True), sys.argv[2], single=sys.argv[3] == "single")
'''
p = subprocess.Popen([sys.executable, "-c", code, *sys.argv[1:]])
_, status, usage = os.wait4(p.pid, 0)
assert status == 0, status
print(usage.ru_maxrss)
"""


def _html_peak(tmp_path: Path, mib: int, how: str) -> int:
    """The peak RSS, in bytes, of a fresh interpreter writing the html of a
    session-meta then ``mib`` MiB of short lines that are no envelopes."""
    src = tmp_path / f"junk{mib}.jsonl"
    line = b"not an envelope, line %08d\n"
    with open(src, "wb") as f:
        f.write(envelope(0, "session-meta", {}) + b"\n")
        f.writelines(line % k for k in range((mib << 20) // len(line % 0)))
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", _PEAK, str(src), str(tmp_path / f"out{mib}{how}"), how],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return int(done.stdout) * 1024


def test_html_of_damaged_lines_stays_in_bounded_memory(tmp_path: Path) -> None:
    """A run of junk lines is a few entries and a page's bytes are bounded, so a
    folder of pages of 32 MiB of junk peaks where one of 8 MiB does, and one page
    of 6 MiB (the single-file output) holds a few times its bytes, not dozens."""
    base = _html_peak(tmp_path, 0, "single")
    single = _html_peak(tmp_path, 6, "single")
    small, big = _html_peak(tmp_path, 8, "folder"), _html_peak(tmp_path, 32, "folder")
    print("html peaks (MiB): base, 6 MiB single, 8 and 32 MiB folders:", *(round(x / 2**20) for x in (base, single, small, big)))
    assert single - base < 8 * (6 << 20), (base, single)
    assert big - base < (small - base) * 5 // 4 + (16 << 20), (base, small, big)
