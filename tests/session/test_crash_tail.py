"""The one crash load tolerates: a torn last line, cut off and reported; and the
damage it refuses, leaving the file exactly as it was."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Message, Session

from ._helpers import freeze, msg, parsed, python, state, umask, write


def good_transcript(path: Path, victim: str) -> tuple[bytes, bytes]:
    """A transcript written by a Session whose last line holds ``victim``;
    returns (everything before the last line, the last line)."""
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(Message.system("sys"))
        s.append_message(Message.user("question"))
        s.append_message(Message.assistant(victim), extra={"finish-reason": "stop"})
    data = path.read_bytes()
    cut = data.rindex(b"\n", 0, len(data) - 1) + 1
    return data[:cut], data[cut:]


def names(warning: str, number: int) -> bool:
    return re.search(rf"(?<!\d){number}(?!\d)", warning) is not None


def check_repaired(path: Path, prefix: bytes, line_no: int, removed: int) -> None:
    """Load repairs to exactly ``prefix``; the next append and reload are fine."""
    repair = path.with_name(path.name + ".repair")
    with Session.load(path) as s:
        assert path.read_bytes() == prefix
        assert not repair.exists()
        assert len(s.warnings) == 1, s.warnings
        assert names(s.warnings[0], line_no), (s.warnings, line_no)
        assert names(s.warnings[0], removed), (s.warnings, removed)
        n = len(s.message_ids)
        new = s.append_message(Message.user("after the crash"))
    data = path.read_bytes()
    assert data.startswith(prefix)
    assert data[len(prefix):].count(b"\n") == 1 and data.endswith(b"\n")
    assert json.loads(data[len(prefix):])["id"] == new
    with Session.load(path) as t:
        assert t.warnings == []
        assert len(t.message_ids) == n + 1 and t.message_ids[-1] == new
        assert t.events[-1].line == line_no, "the new line takes the torn one's place"


@pytest.mark.parametrize("victim", [
    "plain ascii text, nothing more",
    "two-byte: é ñ ü ß",
    "three-byte: € 中文 ␀",
    "four-byte: 😀 🎉 𝄞",
], ids=["ascii", "utf8-2", "utf8-3", "utf8-4"])
def test_a_line_cut_at_every_byte_is_repaired_to_the_good_prefix(fast_tmp: Path, victim: str) -> None:
    p = fast_tmp / "run.jsonl"
    prefix, last = good_transcript(p, victim)
    line_no = prefix.count(b"\n") + 1
    assert last.endswith(b"}\n")
    cuts = range(1, len(last) - 1)   # last[:len-1] is the whole value, only the \n missing
    mid_character = 0
    for k in cuts:
        torn = last[:k]
        try:
            torn.decode("utf-8")
        except UnicodeDecodeError:
            mid_character += 1
        write(p, prefix, torn)
        check_repaired(p, prefix, line_no, k)
    if victim.isascii():
        assert mid_character == 0
    else:
        assert mid_character > 0, "some cuts fall inside a multi-byte character"


def test_a_torn_line_after_blank_lines_keeps_them(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    kept = prefix + b"\n \t\r\n"
    write(p, kept, last[:20])
    check_repaired(p, kept, prefix.count(b"\n") + 3, 20)


@pytest.mark.parametrize("tail", [
    b'{"id":"x","payload":{},"ts":"t","type":"grants"\n',
    b'{"id":"x","payload":NaN,"ts":"t","type":"grants","v":1}\n',
    b'{"id":"x","payload":{"a":"\xe2\x82"},"ts":"t","type":"grants","v":1}\n',
    b'{"id":"x","payload":{},"ts":"t","type":"grants","v":1} {"a":1}\n',
    b'{garbage\n',
], ids=["unclosed", "nan", "bad-utf8", "two-values", "garbage"])
def test_a_malformed_whole_last_line_is_removed(tmp_path: Path, tail: bytes) -> None:
    p = tmp_path / "run.jsonl"
    prefix, _ = good_transcript(p, "x")
    write(p, prefix, tail)
    check_repaired(p, prefix, prefix.count(b"\n") + 1, len(tail))


@pytest.mark.parametrize("tail", [b" {", b"\r{", b'\t{"id', b"garbage\n", b' {"id":"x"\n \n', b'"id":"x"}'],
                         ids=["space", "cr", "tab", "garbage", "space-then-blank", "no-brace"])
@pytest.mark.parametrize("alone", [True, False], ids=["alone", "after-lines"])
def test_a_malformed_last_line_not_beginning_with_a_brace_is_damage(
        tmp_path: Path, tail: bytes, alone: bool) -> None:
    # SPEC, load step 2: a torn line begins with `{` at its first byte (this
    # library never writes a leading blank). Found by the fuzzer: a file holding
    # only ` {`, `\r{` or `\t{"id` was emptied and then refused.
    p = tmp_path / "run.jsonl"
    prefix = b"" if alone else good_transcript(p, "x")[0]
    write(p, prefix, tail)
    before = freeze(p)
    with pytest.raises(CorruptTranscript) as info:
        Session.load(p)
    assert info.value.line == prefix.count(b"\n") + 1
    if not alone:  # alone, it may be refused first as no session-meta
        assert "begin with '{'" in info.value.message
    assert state(p) == before
    assert not p.with_name(p.name + ".repair").exists()


def test_a_torn_line_with_blank_lines_after_it_goes_with_them(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    tail = last[:30] + b"\n\n \r\n"
    write(p, prefix, tail)
    check_repaired(p, prefix, prefix.count(b"\n") + 1, len(tail))


def test_a_torn_meta_line_leaves_an_empty_file_that_does_not_load(tmp_path: Path) -> None:
    # The repair runs before replay: the torn line goes even though what is
    # left is then not a transcript.
    p = tmp_path / "run.jsonl"
    prefix, _ = good_transcript(p, "x")
    write(p, prefix[:25])
    with pytest.raises(CorruptTranscript):
        Session.load(p)
    assert p.read_bytes() == b""
    assert not p.with_name(p.name + ".repair").exists()


def test_a_repair_keeps_the_original_mode(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    write(p, prefix, last[:10])
    os.chmod(p, 0o640)
    ino = os.stat(p).st_ino
    with umask(0o077):
        Session.load(p).close()
    assert p.read_bytes() == prefix
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    assert os.stat(p).st_ino != ino, "the repair is a new file renamed over the old one"


def test_a_whole_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "kept")
    original = write(p, prefix, last[:-1])
    with Session.load(p) as s:
        assert s.warnings == []
        assert p.read_bytes() == original
        assert s.messages[-1] == Message.assistant("kept")
        new = s.append_message(Message.user("next"))
        assert p.read_bytes().startswith(original + b"\n")
        new2 = s.append_message(Message.user("and next"))
    data = p.read_bytes()
    rest = data[len(original):]
    assert rest.startswith(b"\n") and rest.count(b"\n") == 3 and data.endswith(b"\n")
    assert [e["id"] for e in parsed(p)][-2:] == [new, new2]
    with Session.load(p) as t:
        assert t.warnings == []
        assert [m.content for m in t.messages][-3:] == ["kept", "next", "and next"]
        n = original.count(b"\n") + 1
        assert [e.line for e in t.events][-3:] == [n, n + 1, n + 2]


def test_a_lone_meta_line_without_newline(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    Session.create(p, {"a": 1}).close()
    original = p.read_bytes()[:-1]
    write(p, original)
    with Session.load(p) as s:
        assert s.meta == {"a": 1}
        s.append_grants({"g": 1})
    assert p.read_bytes().startswith(original + b"\n{")
    with Session.load(p) as s:
        assert s.grants == {"g": 1}


def test_a_whole_last_line_ending_in_whitespace_without_newline(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "kept")
    original = write(p, prefix, last[:-1], b" \t")
    with Session.load(p) as s:
        assert s.warnings == []
        s.append_message(Message.user("next"))
    assert p.read_bytes().startswith(original + b"\n")
    with Session.load(p) as s:
        assert [m.content for m in s.messages][-2:] == ["kept", "next"]


@pytest.mark.parametrize("between", [b"", b"\n", b" \r\n\t\n"], ids=["adjacent", "blank", "blanks"])
def test_two_malformed_tail_lines_are_fatal_and_untouched(tmp_path: Path, between: bytes) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    write(p, prefix, last[:40] + b"\n", between, last[:20])
    before = freeze(p)
    with pytest.raises(CorruptTranscript) as info:
        Session.load(p)
    assert info.value.line == prefix.count(b"\n") + 1
    assert state(p) == before
    assert not p.with_name(p.name + ".repair").exists()


def test_two_malformed_whole_tail_lines_are_fatal(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, _ = good_transcript(p, "x")
    write(p, prefix, b"{oops\n", b"{oops again\n")
    before = freeze(p)
    with pytest.raises(CorruptTranscript) as info:
        Session.load(p)
    assert info.value.line == prefix.count(b"\n") + 1
    assert state(p) == before


@pytest.mark.parametrize("bad", [b'{"id":"x"', b"\xff\xfe", b"{}", b"[", b'{"id":"m9","payload":{}}'])
def test_a_malformed_line_mid_file_is_fatal_and_untouched(tmp_path: Path, bad: bytes) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    lines = prefix.splitlines(keepends=True)
    write(p, *lines[:2], bad + b"\n", *lines[2:], last)
    before = freeze(p)
    with pytest.raises(CorruptTranscript) as info:
        Session.load(p)
    assert info.value.line == 3
    assert state(p) == before


def test_a_torn_tail_is_cut_even_when_the_file_then_fails_to_load(tmp_path: Path) -> None:
    # SPEC: repair, then replay. The seed: "a transcript that then fails to
    # load for some other reason has still lost its tail".
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    lines = prefix.splitlines(keepends=True)
    damaged = b"".join(lines[:2]) + b"{broken\n" + b"".join(lines[2:]) + last
    write(p, damaged, last[:15])
    with pytest.raises(CorruptTranscript) as info:
        Session.load(p)
    assert info.value.line == 3
    assert p.read_bytes() == damaged


@pytest.mark.parametrize("torn", [False, True], ids=["clean", "torn"])
def test_a_leftover_repair_file_is_deleted(tmp_path: Path, torn: bool) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    write(p, prefix, last[:10] if torn else last)
    repair = tmp_path / "run.jsonl.repair"
    repair.write_bytes(prefix[:30])
    with Session.load(p) as s:
        assert not repair.exists()
        assert p.read_bytes() == (prefix if torn else prefix + last)
        assert len(s.warnings) == (1 if torn else 0)


@pytest.mark.parametrize("torn", [False, True], ids=["clean", "torn"])
def test_a_planted_repair_symlink_is_not_followed(tmp_path: Path, torn: bool) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    write(p, prefix, last[:10] if torn else last)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "precious"
    victim.write_bytes(b"do not touch\n")
    os.chmod(victim, 0o644)
    victim_state = freeze(victim)
    repair = tmp_path / "run.jsonl.repair"
    repair.symlink_to(victim)
    with Session.load(p) as s:
        s.append_message(Message.user("more"))
    assert state(victim) == victim_state
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o644
    assert not os.path.lexists(repair)
    assert not p.is_symlink()
    data = p.read_bytes()
    assert data.startswith(prefix if torn else prefix + last)
    assert json.loads(data.splitlines()[-1])["payload"]["content"] == "more"


def test_a_dangling_repair_symlink_creates_nothing(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    write(p, prefix, last[:10])
    target = tmp_path / "would-be-created"
    (tmp_path / "run.jsonl.repair").symlink_to(target)
    with Session.load(p) as s:
        assert len(s.warnings) == 1
    assert not os.path.lexists(target)
    assert not os.path.lexists(tmp_path / "run.jsonl.repair")
    assert p.read_bytes() == prefix


FAILED_WRITE = r"""
import os, resource, signal, sys
from agent_transcript import Message, Session, SessionBroken
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
path = sys.argv[1]
s = Session.load(path)
before = (s.messages, s.message_ids, len(s.events))
size = os.path.getsize(path)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 60, resource.RLIM_INFINITY))
try:
    s.append_message(Message.user("x" * 4000))
except OSError as e:
    print("oserror", e.errno, flush=True)
else:
    print("no error", flush=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("unchanged", (s.messages, s.message_ids, len(s.events)) == before, flush=True)
for n in range(2):
    try:
        print("appended", s.append_message(Message.user(f"after {n}")), flush=True)
    except SessionBroken:
        print("broken", flush=True)
s.close()
"""


def test_a_failed_write_is_never_glued_to(tmp_path: Path) -> None:
    import errno

    p = tmp_path / "run.jsonl"
    prefix, last = good_transcript(p, "x")
    good = prefix + last
    r = python(FAILED_WRITE, str(p))
    assert r.returncode == 0, r.stderr
    out = r.stdout.split("\n")
    assert out[0] == f"oserror {errno.EFBIG}"
    assert out[1] == "unchanged True", "a refused append leaves the session as it was"
    if out[2].startswith("appended"):
        # Back at its last good length: the next line follows the good bytes.
        appended = [o.split()[1] for o in out[2:4]]
        assert out[3].startswith("appended")
        data = p.read_bytes()
        assert data.startswith(good)
        assert [json.loads(b)["id"] for b in data[len(good):].splitlines()] == appended
        with Session.load(p) as s:
            assert s.warnings == []
            assert s.message_ids[-2:] == appended
    else:
        assert out[2:4] == ["broken", "broken"]
        with Session.load(p) as s:   # at most a torn tail to cut off
            assert p.read_bytes() == good
            assert [m.content for m in s.messages][-1] == "x"
