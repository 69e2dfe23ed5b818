"""The private binding's read-only accessors (``_core.Transcript.read_only``, ``_core.Peeked``).

What the command line asks of a file without decoding it: types, roles, sizes,
and what replay did (what each compaction replaced, what each elision stubbed,
which settle settled a dispatch). The rules are tested in the core's own tests;
these hold the binding to them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import _core, canonical_json


def line(env_id: str, env_type: str, payload: Any) -> str:
    return canonical_json({"id": env_id, "payload": payload, "ts": "2026-08-09T13:10:08.542283Z", "type": env_type, "v": 1})


LINES = [
    line("meta", "session-meta", {"agent": "t"}),
    line("s", "message", {"role": "system", "content": "sys", "sysprompt": True}),
    line("u1", "message", {"role": "user", "content": "héllo"}),
    line("a1", "message", {"role": "assistant", "content": None, "tool_calls": []}),
    line("op1", "tool-dispatched", {"call-id": "c1", "tool": "grep", "arguments": {"q": "x" * 50}}),
    line("t1", "message", {"role": "tool", "content": "result\n" * 3, "tool_call_id": "c1"}),
    line("z", "later-thing", {"n": 1}),
    line("st1", "tool-settled", {"op-id": "op1", "outcome": "completed", "duration": 0.5}),
    line("e1", "elision", {"items": [{"id": "t1", "stub": "[gone]"}]}),
    line("d", "message", {"role": "developer", "content": ["part"]}),
    line("c", "compaction", {"replaces-through-id": "t1", "summary": "S", "tokens-before": 9, "tokens-after": 1, "fallback": False}),
    line("e2", "elision", {"items": [{"id": "d", "stub": "[d]"}, {"id": "c", "stub": "[c]"}]}),
    line("op2", "tool-dispatched", {"call-id": "c2", "tool": "ls", "arguments": {}}),
]


@pytest.fixture()
def fd(tmp_path: Path) -> Iterator[int]:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    fd = os.open(path, os.O_RDONLY)
    yield fd
    os.close(fd)


def test_types_roles_and_sizes_come_from_the_index(fd: int) -> None:
    size = os.fstat(fd).st_size
    for index in (_core.Transcript.read_only(fd, size), _core.Peeked.open(fd)):
        assert [index.type_name(i) for i in range(len(index))] == [
            "session-meta", "message", "message", "message", "tool-dispatched", "message", "later-thing",
            "tool-settled", "elision", "message", "compaction", "elision", "tool-dispatched",
        ]
        assert [index.role(i) for i in range(5)] == [None, "system", "user", "assistant", None]
        assert index.role_counts() == [("system", 1), ("user", 1), ("assistant", 1), ("tool", 1), ("developer", 1)]
        assert index.indices_of_type("later-thing") == [6]
        assert index.indices_of_type("elision") == [8, 11]
        totals = {name: (count, size_) for name, count, size_ in index.type_totals()}
        assert totals["message"] == (5, sum(len(LINES[i].encode()) + 1 for i in (1, 2, 3, 5, 9)))
        assert sum(b for _, b in totals.values()) == size
        assert index.line_count() == len(LINES)
        assert index.envelope_id(4) == "op1"
        assert index.payload_fields([7, 0, 6, 7], ["op-id", "duration", "agent", "missing"]) == [
            {"op-id": "op1", "duration": 0.5},
            {"agent": "t"},
            {},
            {"op-id": "op1", "duration": 0.5},
        ]
        many = index.payload_fields([4] * 3000, ["tool"])  # read on every core, in order
        assert many == [{"tool": "grep"}] * 3000
        with pytest.raises(IndexError):
            index.type_name(len(LINES))


def test_what_replay_did_is_kept_for_a_reader(fd: int) -> None:
    t = _core.Transcript.read_only(fd, os.fstat(fd).st_size)
    assert t.compaction_effect(10) == ([(2, None), (3, None), (5, None)], [(1, None)], None)
    assert t.later(4, None) == (7, None, None, None)  # dispatch -> its settle
    assert t.later(5, None) == (None, 8, 10, None)  # t1: elided by e1, then compacted away by c
    assert t.later(12, None) == (None, None, None, None)
    assert t.pending() == [(12, None)]
    effect = t.elision_effect(8)
    assert effect == [(5, {"role": "tool", "content": "result\n" * 3, "tool_call_id": "c1"})]
    (d_before, c_before) = t.elision_effect(11)
    assert d_before == (9, {"role": "developer", "content": ["part"]})
    assert c_before == (10, {"role": "user", "content": "S"})
    # The sizes, measured without decoding: None for a content that is not a string.
    assert t.elided_sizes([8, 11]) == [[len("result\n" * 3)], [None, 1]]
    assert t.live() == [(1, None, "system", None), (10, 11, "user", None), (9, 11, "developer", None)]
    assert t.live_message(1) == {"role": "user", "content": "[c]"}
    with pytest.raises(ValueError):
        t.compaction_effect(8)
    with pytest.raises(ValueError):
        t.elided_sizes([7])


def test_a_writing_session_keeps_no_history(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        t = _core.Transcript.load(fd, False, False)
        assert t.type_name(6) == "later-thing"
        with pytest.raises(ValueError):
            t.later(4, None)
    finally:
        os.close(fd)


RECORDS = [
    line("meta", "session-meta", {}),
    line("s", "message", {"role": "system", "content": "sys", "sysprompt": True}),
    line("u1", "message", {"role": "user", "content": "u1"}),
    line("u2", "message", {"role": "user", "content": "u2"}),
    line("r1", "rewind", {"through-id": "u1"}),
    line("c", "compaction", {"replaces-through-id": "u1", "summary": "S", "tokens-before": 9, "tokens-after": 1,
                             "fallback": False, "replacement": [{"role": "user", "content": "k0"},
                                                                {"role": "tool", "content": "k1", "n": 1}]}),
    line("e", "elision", {"items": [{"id": "c:1", "stub": "[k1]"}]}),
    line("u3", "message", {"role": "user", "content": "u3"}),
    line("r2", "rewind", {"through-id": "c:0"}),
    line("r3", "rewind", {"through-id": None}),
]


def test_what_rewinds_and_replacements_did_is_kept_for_a_reader(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(RECORDS[:-1]) + "\n", encoding="utf-8")
    fd = os.open(path, os.O_RDONLY)
    try:
        t = _core.Transcript.read_only(fd, os.fstat(fd).st_size)
        assert t.rewind_effect(4) == [(3, None)]
        assert t.compaction_effect(5) == ([(2, None)], [(1, None)], 2)
        assert t.rewind_effect(8) == [(5, 1), (7, None)]
        assert t.later(5, 1) == (None, 6, None, 8)  # c:1 elided, then rewound
        assert t.later(5, None) == (None, None, None, None), "the compaction's own id names no message"
        assert t.later(3, None) == (None, None, None, 4)
        assert t.live() == [(1, None, "system", None), (5, None, "user", 0)]
        assert t.live_ids() == ["s", "c:0"]
        assert t.resolve("c:1") == (5, 1) and t.resolve("c") == (5, None) and t.resolve("c:2") is None
        assert t.resolve("u3") == (7, None) and t.resolve("nope") is None
        with pytest.raises(ValueError):
            t.rewind_effect(5)
    finally:
        os.close(fd)
    path.write_text("\n".join(RECORDS) + "\n", encoding="utf-8")
    fd = os.open(path, os.O_RDONLY)
    try:
        t = _core.Transcript.read_only(fd, os.fstat(fd).st_size)
        assert t.rewind_effect(9) == [(1, None), (5, 0)] and t.live() == []
    finally:
        os.close(fd)


def test_an_os_error_from_the_core_says_what_python_would(tmp_path: Path) -> None:
    # errno kept (so the subclass is right) and strerror as os.strerror has it,
    # not Rust's "Is a directory (os error 21)".
    import errno

    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(IsADirectoryError) as caught:
            _core.Peeked.open(fd)
    finally:
        os.close(fd)
    assert caught.value.errno == errno.EISDIR
    assert caught.value.strerror == os.strerror(errno.EISDIR)


@contextlib.contextmanager
def file_of(path: Path, data: bytes) -> Iterator[int]:
    """A descriptor of a new file at ``path`` holding ``data``, open for reading."""
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


def read_only(fd: int) -> _core.Transcript:
    return _core.Transcript.read_only(fd, os.fstat(fd).st_size)


def lines_of(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=200)
@given(st.one_of(st.none(), st.text(st.characters(exclude_categories=()))), st.booleans())
def test_an_elided_contents_size_is_its_utf8_length_once_decoded(
    tmp_path_factory: pytest.TempPathFactory, content: str | None, ascii_only: bool
) -> None:
    # Escapes, escaped pairs and lone surrogates included: json.loads joins an escaped pair as the
    # reader does, and a lone surrogate counts its three bytes, as `surrogatepass` encodes it.
    dumped = json.dumps(content, ensure_ascii=ascii_only or content is None or not content.isprintable())
    expected = 0 if content is None else len(json.loads(dumped).encode("utf-8", "surrogatepass"))
    text = "\n".join([
        line("meta", "session-meta", {}),
        '{"id":"t1","payload":{"content":' + dumped + ',"role":"tool"},"ts":"t","type":"message","v":1}',
        line("e1", "elision", {"items": [{"id": "t1", "stub": "[gone]"}]}),
    ]) + "\n"
    with file_of(tmp_path_factory.mktemp("e") / "t.jsonl", text.encode("utf-8", "surrogatepass")) as fd:
        assert read_only(fd).elided_sizes([2]) == [[expected]]


def test_the_index_counts_blank_lines_and_a_last_line_without_its_newline(tmp_path: Path) -> None:
    lines = [
        line("meta", "session-meta", {}),
        line("s", "message", {"role": "system", "content": "s"}),
        line("z1", "later-thing", None),
        line("d", "message", {"role": "developer", "content": "d"}),
        line("u", "message", {"role": "user", "content": "u"}),
        line("z2", "other-thing", []),
        line("z3", "later-thing", 1),
        line("u2", "message", {"role": "user", "content": "u2"}),
    ]
    with file_of(tmp_path / "b.jsonl", "\n \n".join(lines).encode()) as fd:
        size = os.fstat(fd).st_size
        for index in (_core.Transcript.read_only(fd, size), _core.Peeked.open(fd)):
            assert [index.type_name(i) for i in range(len(index))] == [
                "session-meta", "message", "later-thing", "message", "message", "other-thing", "later-thing", "message"
            ]
            assert [index.role(i) for i in range(len(index))] == [
                None, "system", None, "developer", "user", None, None, "user"
            ]
            assert index.role_counts() == [("system", 1), ("developer", 1), ("user", 2)]
            assert index.indices_of_type("later-thing") == [2, 6] and index.indices_of_type("grants") == []
            assert [index.line_number(i) for i in range(len(index))] == [1, 3, 5, 7, 9, 11, 13, 15]
            assert index.line_count() == 15
            # Each line's bytes and its newline, the last without one; the blank lines' bytes in no type.
            sized = [len(text) + (i + 1 < len(lines)) for i, text in enumerate(lines)]
            totals = [(name, count, sum(sized[i] for i in index.indices_of_type(name))) for name, count, _ in index.type_totals()]
            assert index.type_totals() == totals
            assert sum(b for _, _, b in totals) == size - 7 * 2
            with pytest.raises(IndexError):
                index.type_name(8)
            many = [[1, 3, 2][k % 3] for k in range(1000)]  # read on every core, in order
            want = {1: {"role": "system"}, 3: {"role": "developer"}, 2: {}}
            assert index.payload_fields(many, ["role", "nope"]) == [want[i] for i in many]


def test_a_message_elided_twice_names_its_first_elision_and_each_stub_before(tmp_path: Path) -> None:
    lines = [
        line("meta", "session-meta", {}),
        line("t1", "message", {"role": "tool", "content": "t1", "tool_call_id": "c1"}),
        line("e1", "elision", {"items": [{"id": "t1", "stub": "[a]"}]}),
        line("e2", "elision", {"items": [{"id": "t1", "stub": "[b]"}]}),
    ]
    with file_of(tmp_path / "e.jsonl", lines_of(lines)) as fd:
        t = read_only(fd)
        assert t.later(1, None) == (None, 2, None, None), "the first elision"
        assert t.elision_effect(2) == [(1, {"role": "tool", "content": "t1", "tool_call_id": "c1"})]
        assert t.elision_effect(3) == [(1, {"role": "tool", "content": "[a]", "tool_call_id": "c1"})]
        # e2 stubbed the stub "[a]": its 3 bytes.
        assert t.elided_sizes([2, 3]) == [[2], [3]]


def test_elided_sizes_are_read_on_every_core_in_order(tmp_path: Path) -> None:
    lines = [line("meta", "session-meta", {})]
    for i in range(300):
        lines.append(line(f"m{i}", "message", {"role": "tool", "content": f"m{i}"}))
        lines.append(line(f"e{i}", "elision", {"items": [{"id": f"m{i}", "stub": "x" * (i % 7)}]}))
    lines.append(line("c", "compaction", {"replaces-through-id": "m0", "summary": "ü"}))
    lines.append(line("ec", "elision", {"items": [{"id": "c", "stub": "s"}]}))
    with file_of(tmp_path / "m.jsonl", lines_of(lines)) as fd:
        t = read_only(fd)
        sizes = t.elided_sizes([2 + 2 * i for i in range(300)] + [602])
        assert sizes == [[len(f"m{i}")] for i in range(300)] + [[2]]


def test_a_compaction_through_a_replacement_message_replaces_that_part(tmp_path: Path) -> None:
    lines = [
        line("meta", "session-meta", {}),
        line("u1", "message", {"role": "user", "content": "u1"}),
        line("u2", "message", {"role": "user", "content": "u2"}),
        line("c1", "compaction", {"replaces-through-id": "u2", "summary": "S", "replacement": [
            {"role": "user", "content": "ab"}, {"role": "user", "content": "x"}]}),
        line("e1", "elision", {"items": [{"id": "c1:0", "stub": "[x]"}]}),
        line("c2", "compaction", {"replaces-through-id": "c1:0", "summary": "S2"}),
    ]
    with file_of(tmp_path / "p.jsonl", lines_of(lines)) as fd:
        t = read_only(fd)
        assert t.compaction_effect(3) == ([(1, None), (2, None)], [], 2)
        assert t.compaction_effect(5) == ([(3, 0)], [], None)
        assert t.later(3, 0) == (None, 4, 5, None)
        assert t.elided_sizes([4]) == [[2]], "the replacement message's own content"
        assert t.live_ids() == ["c2", "c1:1"]
