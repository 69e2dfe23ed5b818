"""Scenario 7: fuzzing load, its repair, peek and the tail check (see ``fuzz.py``).

The CI run is a fixed number of seeded cases, the same inputs on any machine
however fast (about 20 s here); ``AT_LONG=1`` runs thirty times as many. The
fuzzer runs in a child process so that an abort or a hang is caught here: the
input it was on is in ``current.bin``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import fuzz
from agent_transcript import CorruptTranscript, Message, Session
from rkit import HERE, figure, scale, tmpfs


def test_fuzz_load_repair_peek_and_tail_check() -> None:
    cases = scale(2000, 60_000)
    with tmpfs("256m") as fs:
        try:
            proc = subprocess.run([sys.executable, str(HERE / "fuzz.py"), str(fs / "fuzz"),
                                   str(cases), "7"], capture_output=True, text=True,
                                  timeout=cases + 600)
        except subprocess.TimeoutExpired:
            current = (fs / "fuzz" / "current.bin").read_bytes()
            raise AssertionError(f"the fuzzer hung on: {current[:2000]!r}") from None
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:],
                                      (fs / "fuzz" / "current.bin").read_bytes()[:2000])
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["failures"] == [], "\n".join(result["failures"][:5])
    counts, tails = result["counts"], result["tails"]
    # Every class of outcome, and every kind of tail, was reached.
    assert all(counts[k] > 0 for k in ("loaded", "repaired", "corrupt", "unsupported",
                                       "repaired+corrupt")), counts
    assert all(tails.get(k, 0) > 0 for k in ("empty", "whole", "torn", "corrupt", "damaged")), tails
    assert result["executions"] == cases
    figure("7. fuzz", executions=result["executions"], seconds=result["seconds"],
           panics=0, aborts=0, hangs=0, disagreements=0, **counts)


# Found by the fuzzer (issue 28, item 20): load cut each as a torn line, leaving
# an empty file, then refused it. SPEC's load step 2: a torn line begins with
# `{` at its first byte; these are damage, refused with the file untouched.
@pytest.mark.parametrize("data", [b" {", b"\r{", b'\t{"id', b" {\n", b"\r{\n\n"])
def test_a_lone_malformed_line_not_beginning_with_a_brace(tmp_path: Path, data: bytes) -> None:
    tails: dict[str, int] = {}
    fuzz.check(tmp_path / "case.jsonl", data, dict.fromkeys(("corrupt",), 0), tails)
    assert tails == {"damaged": 1}
    assert (tmp_path / "case.jsonl").read_bytes() == data


# Found by the fuzzer: lines load's and peek's checks accepted, but whose payload then
# failed to decode (ValueError from peek itself, CorruptTranscript from Session.events).
def test_an_int_over_4300_digits_in_a_line(tmp_path: Path) -> None:
    check_undecodable_line(tmp_path, b"9" * 4301)


def test_a_float_out_of_range_in_a_line(tmp_path: Path) -> None:
    check_undecodable_line(tmp_path, b"1e999")


@pytest.mark.parametrize("flag", ["sticky", "sysprompt"])
@pytest.mark.parametrize("number", [b"1e999", b"9" * 4301])
def test_a_message_flag_with_an_undecodable_number(tmp_path: Path, flag: str, number: bytes) -> None:
    # The flags are read for replay (is the message sticky?) apart from the rest.
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("x"))
        s.append_message(Message.user("y"))
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"role":"user"', b'"role":"user","' + flag.encode() + b'":' + number)
    path.write_bytes(b"".join(lines))
    p = Session.peek(path)
    assert p.error is None and len(p.envelopes) == 2 and len(p.warnings) == 1
    with pytest.raises(CorruptTranscript) as e:
        Session.load(path)
    assert e.value.line == 2


def check_undecodable_line(tmp_path: Path, number: bytes) -> None:
    """Expected: such a line is damage like any other malformed line — load raises
    CorruptTranscript at it, peek skips it with a warning — and never an error later."""
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_grants(1)
        s.append_grants(2)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"grants":1', b'"grants":' + number)
    path.write_bytes(b"".join(lines))
    p = Session.peek(path)
    assert p.error is None and len(p.envelopes) == 2 and len(p.warnings) == 1
    with pytest.raises(CorruptTranscript) as e:
        Session.load(path)
    assert e.value.line == 2
