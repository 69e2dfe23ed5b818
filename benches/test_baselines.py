"""The baselines are right: stdlib and orjson agree, and the replay is SPEC's.

Runs with the standard library and orjson only (no native module): the
baselines and the generator are loaded by path (see ``baselines.py``). The
orjson cases are skipped when orjson is not installed. No timing here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, Callable

import pytest

import baselines as B

TS = "2026-08-09T13:10:08.542283Z"
Loads = Callable[[bytes], Any]


@pytest.fixture(params=["stdlib", "orjson"])
def loads(request: pytest.FixtureRequest) -> Loads:
    if request.param == "orjson":
        orjson = pytest.importorskip("orjson")
        return orjson.loads  # type: ignore[no-any-return]
    return B.stdlib_loads


def line(id_: str, type_: str, payload: Any, **overrides: Any) -> str:
    env = {"id": id_, "payload": payload, "ts": TS, "type": type_, "v": 1, **overrides}
    return json.dumps(env, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def meta(id_: str = "m0") -> str:
    return line(id_, "session-meta", {"agent": "test"})


def msg(id_: str, role: str = "user", content: Any = None, **fields: Any) -> str:
    return line(id_, "message", {"role": role, "content": content if content is not None else id_, **fields})


def compaction(id_: str, through: str, summary: str = "summary") -> str:
    return line(id_, "compaction", {"summary": summary, "replaces-through-id": through,
                                    "tokens-before": 100, "tokens-after": 10, "fallback": False})


def elision(id_: str, *items: tuple[str, str]) -> str:
    return line(id_, "elision", {"items": [{"id": i, "stub": s} for i, s in items]})


def write(tmp_path: Path, *lines: str | bytes, end: bytes = b"\n", name: str = "t.jsonl") -> Path:
    raw = b"\n".join(x.encode() if isinstance(x, str) else x for x in lines) + end
    p = tmp_path / name
    p.write_bytes(raw)
    p.chmod(0o600)
    return p


def contents(loaded: Any) -> list[Any]:
    return [m["content"] for m in loaded.messages]


# ------------------------------------------------------------------ generator

@pytest.mark.parametrize(("mb", "seed", "torn", "sha256"), [
    (1, 2, False, "b193173a06c674b452075dc58363f4c764c47650347c9e0906cacdf3490a7db8"),
    (1, 2, True, "01a11c68f52dcec5ff131ade02aa43ebfa6d30c2dcc7164412217115927e19dd"),
    (3, 7, False, "bb8c75934c5417288fb2893ebe675f7512c2a2819496256ef22b2fdd56329489"),
])
def test_vendored_generator_writes_what_the_shared_one_writes(
        tmp_path: Path, mb: float, seed: int, torn: bool, sha256: str) -> None:
    # Digests of `gen_transcript.py OUT --mb MB --seed SEED [--torn]` (shared/bench).
    out = tmp_path / "t.jsonl"
    B.write_transcript(out, mb, seed, torn)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sha256


def test_a_smaller_file_is_a_prefix_of_a_bigger_one(tmp_path: Path) -> None:
    big = B.write_transcript(tmp_path / "big.jsonl", 1.5, 3, marks=[0.5, 9])
    B.write_transcript(tmp_path / "small.jsonl", 0.5, 3)
    small = (tmp_path / "small.jsonl").read_bytes()
    assert big.marks == {0.5: len(small)}
    assert (tmp_path / "big.jsonl").read_bytes()[:len(small)] == small


# -------------------------------------------------- generated: parsers agree

@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A 2 MiB transcript, and the live ids the generator itself tracked."""
    path = tmp_path_factory.mktemp("gen") / "t.jsonl"
    g = B.gen.Gen(24)                      # seed 24: a compaction within 2 MiB
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(g.env("session-meta", {"agent": "sadna"})[1])
        written = 0
        while written < 2 * 1024 * 1024:
            chunk: list[str] = []
            g.run(chunk)
            text = "".join(chunk)
            f.write(text)
            written += len(text.encode())
    return path, list(g.live)


def test_generated_replay_matches_the_generators_own_bookkeeping(
        generated: tuple[Path, list[str]], loads: Loads) -> None:
    path, live = generated
    loaded = B.load(path, loads)
    assert loaded.message_ids == live
    types = {e["type"] for _, e in loaded.events}
    assert {"compaction", "elision", "grants", "tool-dispatched"} <= types, "too small to test replay"
    assert any(c == "[elided: old tool result]" for c in contents(loaded))
    assert loaded.warnings == []
    assert loaded.grants is not None


def test_generated_stdlib_and_orjson_agree(generated: tuple[Path, list[str]]) -> None:
    pytest.importorskip("orjson")
    path, _ = generated
    a, b = B.baseline_stdlib(path), B.baseline_orjson(path)
    assert a == b
    assert B.peek_stdlib(path) == B.peek_orjson(path)


def test_generated_torn_stdlib_and_orjson_agree(tmp_path: Path) -> None:
    pytest.importorskip("orjson")
    whole = tmp_path / "whole.jsonl"
    gen = B.write_transcript(whole, 2, 5)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    torn_a, torn_b = tmp_path / "a" / "t.jsonl", tmp_path / "b" / "t.jsonl"
    B.write_transcript(torn_a, 2, 5, torn=True)
    torn_b.write_bytes(torn_a.read_bytes())
    for p in (torn_a, torn_b):
        p.chmod(0o640)
    peeked = B.peek_orjson(torn_a)
    assert peeked == B.peek_stdlib(torn_a)
    assert len(peeked.warnings) == 1 and peeked.error is None

    a, b = B.baseline_stdlib(torn_a), B.baseline_orjson(torn_b)
    assert a == b
    n_lines = whole.read_bytes().count(b"\n")
    assert a.warnings == [f"removed a torn last line (line {n_lines + 1}, {len(gen.torn_tail)} bytes) "
                          f"from t.jsonl"]
    for p in (torn_a, torn_b):
        assert p.read_bytes() == whole.read_bytes()
        assert stat.S_IMODE(p.stat().st_mode) == 0o640
        assert not Path(str(p) + ".repair").exists()
    assert B.baseline_stdlib(whole) == B.Loaded(a.meta, a.messages, a.message_ids, a.events, a.grants, [])
    # Peek saw the same envelopes before the repair as load keeps after it.
    assert peeked.envelopes == a.events


# ------------------------------------------------------------ replay: by hand

def test_messages_drop_extras_and_keep_flags(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(),
              msg("a", "system", "sys", sysprompt=True, **{"finish-reason": "stop"}),
              msg("b", "tool", "out", tool_call_id="c1", name="grep", sticky=True, depth=0),
              msg("c", "assistant", None, tool_calls=[{"id": "c1"}], sticky=False))
    loaded = B.load(p, loads)
    assert loaded.meta == {"agent": "test"}
    assert loaded.messages == [
        {"role": "system", "content": "sys", "sysprompt": True},
        {"role": "tool", "content": "out", "tool_call_id": "c1", "name": "grep", "sticky": True, "depth": 0},
        {"role": "assistant", "content": "c", "tool_calls": [{"id": "c1"}]},
    ]
    assert loaded.message_ids == ["a", "b", "c"]
    assert [(n, e["id"]) for n, e in loaded.events] == [(1, "m0"), (2, "a"), (3, "b"), (4, "c")]


def test_compaction_keeps_sticky_and_splices_the_summary(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(),
              msg("sys", "system", "S", sysprompt=True),
              msg("u1"),
              msg("pin", "user", "P", depth=0),           # depth 0 is a depth: sticky
              msg("a1", "assistant"),
              msg("st", "user", "T", sticky=True),
              msg("u2"),                                  # the cut
              msg("a2", "assistant"),
              msg("st2", "user", "T2", sticky=True),      # after the cut: just stays
              compaction("k1", "u2", "the summary"),
              msg("u3"))
    loaded = B.load(p, loads)
    assert loaded.message_ids == ["sys", "pin", "st", "k1", "a2", "st2", "u3"]
    assert loaded.messages[3] == {"role": "user", "content": "the summary"}
    assert contents(loaded) == ["S", "P", "T", "the summary", "a2", "T2", "u3"]


def test_compaction_through_the_last_message_and_of_a_summary(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("u1"), msg("s", "user", "S", sticky=True), msg("u2"),
              compaction("k1", "u2", "first"),
              msg("u3"),
              compaction("k2", "k1", "second"),            # folds the first summary in
              msg("u4"),
              compaction("k3", "u4", "third"))
    loaded = B.load(p, loads)
    assert loaded.message_ids == ["s", "k3"]
    assert contents(loaded) == ["S", "third"]


def test_elision_replaces_only_the_content(tmp_path: Path, loads: Loads) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]
    p = write(tmp_path, meta(),
              msg("a", "assistant", "calling", tool_calls=calls),
              msg("t", "tool", "huge output", tool_call_id="c1", sticky=True, name="grep"),
              msg("u"),
              elision("e1", ("t", "[elided]"), ("a", "")))
    loaded = B.load(p, loads)
    assert loaded.message_ids == ["a", "t", "u"]
    assert loaded.messages == [
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "[elided]", "tool_call_id": "c1", "name": "grep", "sticky": True},
        {"role": "user", "content": "u"},
    ]
    # The record of what happened is untouched.
    assert loaded.events[2][1]["payload"]["content"] == "huge output"


def test_elision_then_compaction_keeps_the_stub(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("s", "user", "S", sticky=True), msg("t", "tool", "big"), msg("u"),
              elision("e1", ("s", "[s]"), ("t", "[t]")),
              compaction("k", "t"),
              elision("e2", ("k", "[summary elided]")))   # the summary lives under k
    loaded = B.load(p, loads)
    assert loaded.message_ids == ["s", "k", "u"]
    assert contents(loaded) == ["[s]", "[summary elided]", "u"]
    assert loaded.messages[0]["sticky"] is True


def test_elision_of_a_compacted_id_is_corrupt(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("u1"), msg("u2"), compaction("k", "u1"), elision("e", ("u1", "x")))
    with pytest.raises(B.BaselineCorrupt) as e:
        B.load(p, loads)
    assert e.value.line == 5


@pytest.mark.parametrize("bad", [
    compaction("k", "nope"),
    compaction("k", "m0"),                              # the meta is not a message
    line("k", "compaction", {"summary": "s"}),
    elision("e", ("nope", "x")),
    line("e", "elision", {"items": [{"id": "u1"}]}),
    line("e", "elision", {}),
    line("g", "grants", {"not-grants": 1}),
    line("u1", "message", {"role": "user"}),            # duplicate id
    line("x", "message", {"content": "no role"}),
    line("", "message", {"role": "user"}),
    line("x", "message", {"role": "user"}, v=True),
    line("x", "message", {"role": "user"}, v="1"),
    line("x", "message", {"role": "user"}, ts=5),
    line("x", "message", {"role": "user"}, type=None),
    json.dumps({"id": "x", "ts": TS, "type": "message", "v": 1}),
    "[1, 2]",
    '{"id": "x", "payload": 1, "ts": "t", "type": "t", "v": 1,',
    '{"id": "x", "payload": NaN, "ts": "t", "type": "t", "v": 1}',
])
def test_damage_mid_file_is_corrupt_with_its_line(tmp_path: Path, loads: Loads, bad: str) -> None:
    p = write(tmp_path, meta(), msg("u1"), bad, msg("u9"))
    before = p.read_bytes()
    with pytest.raises(B.BaselineCorrupt) as e:
        B.load(p, loads)
    assert type(e.value) is B.BaselineCorrupt
    assert e.value.line == 3
    assert p.read_bytes() == before


def test_unsupported_version(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), line("x", "message", {"role": "user"}, v=2), msg("u"))
    with pytest.raises(B.BaselineUnsupportedVersion) as e:
        B.load(p, loads)
    assert e.value.line == 2


@pytest.mark.parametrize("lines", [[], ["  ", "\t\r"], [msg("u1")], [line("m", "grants", {"grants": 1})]])
def test_no_session_meta_first_is_corrupt(tmp_path: Path, loads: Loads, lines: list[str]) -> None:
    p = write(tmp_path, *lines, end=b"\n" if lines else b"")
    with pytest.raises(B.BaselineCorrupt):
        B.load(p, loads)


def test_missing_file(tmp_path: Path, loads: Loads) -> None:
    with pytest.raises(FileNotFoundError):
        B.load(tmp_path / "nope.jsonl", loads)


def test_blank_lines_anywhere_and_unknown_types_and_grants(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, "", " \t", meta(), "\r", msg("u1"),
              line("g1", "grants", {"grants": {"bash": "ask"}}),
              line("x", "custom-thing", [1, 2]),
              " ",
              line("g2", "grants", {"grants": None}),
              line("g3", "grants", {"grants": ["last"]}),
              "\t \r")
    loaded = B.load(p, loads)
    assert loaded.grants == ["last"]
    assert [(n, e["type"]) for n, e in loaded.events] == [
        (3, "session-meta"), (5, "message"), (6, "grants"), (7, "custom-thing"), (9, "grants"), (10, "grants")]
    assert loaded.message_ids == ["u1"]
    assert loaded.warnings == []


def test_whitespace_key_order_and_escapes_are_read(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(),
              '  { "v" : 1, "type":"message", "ts":"t", "payload": {"content":"\\u00e9\\n\\ud83d\\ude80",'
              ' "role":"user", "role":"tool"}, "id":"x" }  \r')
    loaded = B.load(p, loads)
    assert loaded.messages == [{"role": "tool", "content": "é\n🚀"}]


# ------------------------------------------------------------------ the tail

TORN = '{"id":"t","payload":{"role":"assistant","content":"半分'.encode()[:-1]   # cut mid-character


def test_torn_tail_is_cut_through_a_repair_file(tmp_path: Path, loads: Loads) -> None:
    good = write(tmp_path, meta(), msg("u1"), "", msg("u2")).read_bytes()
    p = write(tmp_path, meta(), msg("u1"), "", msg("u2"), TORN, "  ", "", end=b"")
    p.chmod(0o640)
    (tmp_path / "t.jsonl.repair").write_bytes(b"leftover")
    loaded = B.load(p, loads)
    removed = len(TORN) + len(b"\n  \n")
    assert loaded.warnings == [f"removed a torn last line (line 5, {removed} bytes) from t.jsonl"]
    assert p.read_bytes() == good
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert not (tmp_path / "t.jsonl.repair").exists()
    assert loaded.message_ids == ["u1", "u2"]
    assert B.load(p, loads).warnings == []


@pytest.mark.parametrize("tail", [
    b'{"id":"t","payload":{},"ts":"t","type":"x","v":1',
    b'{"id":"t","payload":NaN,"ts":"t","type":"x","v":1}',
    b'{"id": "t"} {"id": "u"}',
    b"\xff",
    b"garbage",
])
def test_any_not_whole_json_last_line_is_repaired(tmp_path: Path, loads: Loads, tail: bytes) -> None:
    p = write(tmp_path, meta(), msg("u1"), tail)
    assert len(B.load(p, loads).warnings) == 1
    assert B.load(p, loads).message_ids == ["u1"]


def test_a_long_torn_line_is_found_backwards(tmp_path: Path, loads: Loads) -> None:
    big = msg("big", "tool", "x" * 300_000)
    p = write(tmp_path, meta(), big, big.replace('"big"', '"b2"').encode()[:250_000], end=b"")
    loaded = B.load(p, loads)
    assert loaded.message_ids == ["big"]
    assert "(line 3, 250000 bytes)" in loaded.warnings[0]


def test_whole_last_line_without_newline_is_kept(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("u1"), end=b"")
    before = p.read_bytes()
    loaded = B.load(p, loads)
    assert loaded.message_ids == ["u1"] and loaded.warnings == []
    assert p.read_bytes() == before


def test_whole_json_last_line_that_is_no_envelope_is_corrupt_not_cut(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("u1"), "[1]")
    before = p.read_bytes()
    with pytest.raises(B.BaselineCorrupt) as e:
        B.load(p, loads)
    assert e.value.line == 3
    assert p.read_bytes() == before


def test_two_malformed_last_lines_are_corrupt_and_untouched(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("u1"), "{oops", " ", TORN)
    before = p.read_bytes()
    with pytest.raises(B.BaselineCorrupt) as e:
        B.load(p, loads)
    assert e.value.line == 3
    assert p.read_bytes() == before
    assert not (tmp_path / "t.jsonl.repair").exists()


def test_a_torn_only_line_leaves_an_empty_file_which_is_corrupt(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, TORN, end=b"")
    with pytest.raises(B.BaselineCorrupt):
        B.load(p, loads)
    assert p.read_bytes() == b""


# ----------------------------------------------------------------------- peek

def test_peek_is_file_order_without_replay_and_skips_bad_lines(tmp_path: Path, loads: Loads) -> None:
    p = write(tmp_path, meta(), msg("u1"), "{oops", msg("u2"), compaction("k", "u2"),
              elision("e", ("u1", "stub")), line("x", "message", {"no": "role"}), TORN, end=b"")
    before = p.read_bytes()
    peeked = B.peek(p, loads)
    assert peeked.error is None
    assert peeked.size == len(before)
    assert peeked.meta == {"agent": "test"}
    assert [e["id"] for _, e in peeked.envelopes] == ["m0", "u1", "u2", "k", "e", "x"]
    assert [m["content"] for m in peeked.messages] == ["u1", "u2"]
    assert [w.split(":")[0] for w in peeked.warnings] == ["line 3", "line 7", "line 8"]
    assert p.read_bytes() == before


@pytest.mark.parametrize("lines", [None, [], [msg("u1"), meta()], ["{oops", meta()]])
def test_peek_error_when_nothing_to_read(tmp_path: Path, loads: Loads, lines: list[str] | None) -> None:
    p = tmp_path / "nope.jsonl" if lines is None else write(tmp_path, *lines, end=b"\n" if lines else b"")
    peeked = B.peek(p, loads)
    assert isinstance(peeked.error, str)
    assert (peeked.meta, peeked.envelopes, peeked.messages, peeked.warnings) == ({}, [], [], [])


# --------------------------------------------------------------------- append

@pytest.mark.parametrize("which", ["stdlib", "orjson"])
def test_user_appender_writes_one_sorted_line_each(tmp_path: Path, which: str) -> None:
    if which == "orjson":
        pytest.importorskip("orjson")
        dumps = None
    else:
        dumps = B.stdlib_dumps
    p = write(tmp_path, meta())
    with B.UserAppender(p, dumps) as app:
        ids = [app.append_message({"role": "user", "content": f"hé {i}"}, extra={"role": "x", "k": i})
               for i in range(3)]
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    lines = p.read_bytes().splitlines()[1:]
    assert len(lines) == 3
    for raw, id_ in zip(lines, ids):
        env = json.loads(raw)
        assert list(env) == ["id", "payload", "ts", "type", "v"]
        assert env["id"] == id_ and len(id_) == 32
        assert env["payload"]["role"] == "user"           # a message key wins over an extra
        assert env["ts"].endswith("Z") and len(env["ts"]) == 27
    loaded = B.load(p)
    assert loaded.message_ids == ids
    assert os.path.getsize(p) == len(p.read_bytes())
