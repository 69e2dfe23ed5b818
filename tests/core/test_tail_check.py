"""The tail check: it reads only the end of a file and says whether its last line is whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_transcript import _core

LINE = b'{"id":"a","payload":{},"ts":"2026-08-09T13:10:08.542283Z","type":"message","v":1}\n'


def check(path: Path) -> tuple[str, int, int, int, bool, int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return _core.tail_check(fd)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("content", "kind", "keep", "line", "missing_newline"),
    [
        (LINE * 3, "whole", len(LINE) * 3, 0, False),
        (LINE * 3 + b"\n  \r\n\t\n", "whole", len(LINE) * 3 + 7, 0, False),
        (LINE * 2 + LINE[:-1], "whole", len(LINE) * 3 - 1, 0, True),
        (b"", "empty", 0, 0, False),
        (b"\n \n\r\n", "empty", 5, 0, False),
        (LINE * 2 + LINE[:10], "torn", len(LINE) * 2, 3, False),
        (LINE + b"\n\n" + LINE[:10], "torn", len(LINE) + 2, 4, False),
        (LINE + b"{\n" + LINE[:10], "corrupt", len(LINE) * 1 + 2 + 10, 2, False),
        (LINE + b" {", "damaged", len(LINE) + 2, 2, False),
        (b"\r{", "damaged", 2, 1, False),
        (b'\t{"id', "damaged", 5, 1, False),
        (LINE + b"{\n" + b" x\n\n", "damaged", len(LINE) + 2 + 4, 3, False),
        (b'{"a"', "torn", 0, 1, False),
        (b"{}\n\n garbage\n", "damaged", 13, 3, False),
        (b'{}\n"a', "damaged", 5, 2, False),
        (b"{\n x", "damaged", 4, 2, False),
        # A blank line is not a line: the torn one after it still begins with `{`.
        (b'{}\n \n{"a', "torn", 5, 3, False),
    ],
)
def test_kinds_of_tail(tmp_path: Path, content: bytes, kind: str, keep: int, line: int, missing_newline: bool) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(content)
    got = check(p)
    assert got[0] == kind
    assert got[1] == keep
    assert got[2] == line
    assert got[3] == (len(content) - keep if kind == "torn" else 0)
    assert got[4] is missing_newline


def test_a_line_cut_inside_a_four_byte_character_is_torn(tmp_path: Path) -> None:
    whole = '{"content":"🚀"}'.encode()
    cut = whole.index("🚀".encode()) + 2
    p = tmp_path / "t.jsonl"
    p.write_bytes(LINE + whole[:cut])
    kind, keep, line, removed, _, _ = check(p)
    assert (kind, keep, line, removed) == ("torn", len(LINE), 2, cut)


def test_a_100_mb_file_is_read_only_at_its_tail(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    block = LINE * ((1 << 20) // len(LINE))
    with open(p, "wb") as f:
        for _ in range(100):
            f.write(block)
    kind, _, _, _, _, bytes_read = check(p)
    assert kind == "whole"
    assert bytes_read <= 64 * 1024


def test_a_file_whose_prefix_is_unreadable_garbage_still_checks_clean(tmp_path: Path) -> None:
    # A sparse hole of 1 GiB of NULs: reading it would be slow and it is not JSON.
    p = tmp_path / "sparse.jsonl"
    with open(p, "wb") as f:
        f.truncate(1 << 30)
        f.seek(1 << 30)
        f.write(b"\n" + LINE)
    kind, _, _, _, _, bytes_read = check(p)
    assert kind == "whole"
    assert bytes_read < 1 << 20


def test_a_torn_last_line_many_steps_long_is_read_in_linear_time(tmp_path: Path) -> None:
    step = 64 * 1024
    head = b"{}\n" + b" \n" * step
    torn_len = 40 * step
    content = head + b'{"' + ("\U0001f680" * (torn_len // 4)).encode()[: torn_len - 3]
    p = tmp_path / "t.jsonl"
    p.write_bytes(content)
    kind, keep, line, removed, _, bytes_read = check(p)
    assert (kind, keep, line, removed) == ("torn", len(head), step + 2, len(content) - len(head))
    # Walked back once, the line read once, the lines before it counted once.
    assert bytes_read <= 3 * len(content)


DEEP = 512
WHOLE_VALUES = [
    "null", "true", "false", "0", "-0", "12", "-1.5e+10", "1E-7", '""', '"a\\u00e9\\n"', "[]", "{}",
    ' [1, {"a": [null]} ] ', '{"a":1,"a":2}', '"\\ud800"', '"日本"', '"🚀"',
    "[" * DEEP + "]" * DEEP,
    # Syntax alone: a number Python cannot hold is still a whole value (load refuses it as damage).
    "[" + "9" * 4301 + "]", "[1e999]", '{"a":-1E400}',
]
NOT_VALUES = [
    "nul", "NaN", "Infinity", "-Infinity", "01", "1.", ".5", "1e", "+1", "[1,]", '{"a":1,}', "[1 2]", '{"a" 1}',
    "{1:2}", '"a', '"\\x"', '"\\u12"', '"\t"', "[", "]", "{}}", "1 2", "'a'", "[01]",
    "[" * (DEEP + 1) + "]" * (DEEP + 1), "[" * 100_000, '{"a":' * 100_000,
]


@pytest.mark.parametrize(
    ("last", "whole"),
    [(v.encode(), True) for v in WHOLE_VALUES]
    + [(v.encode(), False) for v in NOT_VALUES]
    + [(b'"\xff"', False), (b'"\xf0\x9f\x9a"', False)],
)
def test_the_last_line_is_whole_when_it_is_exactly_one_json_value(tmp_path: Path, last: bytes, whole: bool) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(LINE + last)
    kind, _, _, _, missing_newline, _ = check(p)
    assert (kind == "whole", missing_newline) == (whole, whole), kind
