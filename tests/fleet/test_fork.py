"""Session.fork: a new transcript from a prefix of another, read like peek, made like create."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import (
    CorruptTranscript,
    Message,
    Session,
    SessionLocked,
    UnknownId,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "cli"
FORKABLE = ["clean.jsonl", "pending.jsonl", "missing_newline.jsonl", "blank_lines.jsonl", "torn.jsonl"]


def replay_state(s: Session) -> dict[str, Any]:
    """Everything replay decides, as plain values."""
    return {
        "meta": s.meta,
        "messages": [m.to_dict() for m in s.messages],
        "ids": s.message_ids,
        "entries": [(e.id, e.line, e.elided, e.extra) for e in s.entries],
        "grants": s.grants,
        "pending": [(p.op_id, p.state, p.result_message_id) for p in s.pending_tool_operations()],
        "events": [(e.id, e.type, e.payload) for e in s.events],
    }


def whole_lines(path: Path) -> list[bytes]:
    """The file's lines with their ``\\n``, a torn (unparseable) last one left out."""
    out = path.read_bytes().splitlines(keepends=True)
    if out and not out[-1].endswith(b"\n"):
        try:
            json.loads(out[-1])
        except ValueError:
            out.pop()
    return out


def envelope_lines(path: Path) -> list[tuple[int, str]]:
    """(0-based line index, id) of every envelope line."""
    out = []
    for i, raw in enumerate(whole_lines(path)):
        if raw.strip(b" \t\r\n"):
            out.append((i, json.loads(raw)["id"]))
    return out


@pytest.mark.parametrize("name", FORKABLE)
def test_fork_at_every_envelope_replays_as_the_source_at_that_line(tmp_path: Path, name: str) -> None:
    source = tmp_path / name
    shutil.copyfile(DATA / name, source)
    before = source.read_bytes()
    raw = whole_lines(source)
    for k, (i, env_id) in enumerate(envelope_lines(source)):
        prefix = tmp_path / f"prefix{k}.jsonl"
        body = b"".join(raw[: i + 1])
        prefix.write_bytes(body if body.endswith(b"\n") else body + b"\n")
        fork_path = tmp_path / "forks" / f"fork{k}.jsonl"
        with Session.fork(source, fork_path, through_id=env_id) as fork, Session.load(prefix) as want:
            assert replay_state(fork) == replay_state(want)
        # The source's lines, byte for byte, ids unchanged.
        assert fork_path.read_bytes() == prefix.read_bytes()
    assert source.read_bytes() == before  # never written


def test_fork_without_through_id_copies_every_whole_line(tmp_path: Path) -> None:
    dest = tmp_path / "all.jsonl"
    with Session.fork(DATA / "clean.jsonl", dest) as fork:
        assert fork.path == dest
    assert dest.read_bytes() == (DATA / "clean.jsonl").read_bytes()


def test_a_torn_tail_is_not_copied(tmp_path: Path) -> None:
    torn = (DATA / "torn.jsonl").read_bytes()
    assert not torn.endswith(b"\n")
    dest = tmp_path / "f.jsonl"
    Session.fork(DATA / "torn.jsonl", dest).close()
    assert dest.read_bytes() == torn[: torn.rindex(b"\n") + 1]
    with Session.load(dest) as s:
        assert s.warnings == []  # nothing to repair


def test_a_missing_last_newline_is_written(tmp_path: Path) -> None:
    src = (DATA / "missing_newline.jsonl").read_bytes()
    assert not src.endswith(b"\n")
    dest = tmp_path / "f.jsonl"
    Session.fork(DATA / "missing_newline.jsonl", dest).close()
    assert dest.read_bytes() == src + b"\n"


def test_made_like_create_and_locked(tmp_path: Path) -> None:
    os.umask(0o022)
    dest = tmp_path / "a" / "b" / "fork.jsonl"
    with Session.fork(DATA / "clean.jsonl", dest):
        assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(dest.parent).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(dest.parent.parent).st_mode) == 0o700
        with pytest.raises(SessionLocked):
            Session.load(dest)
    Session.load(dest).close()


def test_exclusive_create(tmp_path: Path) -> None:
    dest = tmp_path / "there.jsonl"
    dest.write_bytes(b"something\n")
    with pytest.raises(FileExistsError):
        Session.fork(DATA / "clean.jsonl", dest)
    assert dest.read_bytes() == b"something\n"
    # Onto itself: refused, untouched.
    src = tmp_path / "src.jsonl"
    shutil.copyfile(DATA / "clean.jsonl", src)
    with pytest.raises(FileExistsError):
        Session.fork(src, src)
    assert src.read_bytes() == (DATA / "clean.jsonl").read_bytes()


def test_an_existing_empty_file_is_taken_as_new(tmp_path: Path) -> None:
    dest = tmp_path / "empty.jsonl"
    dest.touch()
    Session.fork(DATA / "clean.jsonl", dest).close()
    assert dest.read_bytes() == (DATA / "clean.jsonl").read_bytes()


def test_the_fork_appends_and_reloads(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    shutil.copyfile(DATA / "clean.jsonl", src)
    first_id = envelope_lines(src)[3][1]
    dest = tmp_path / "fork.jsonl"
    with Session.fork(src, dest, through_id=first_id) as fork:
        new_id = fork.append_message(Message(role="user", content="the other branch"))
        want = replay_state(fork)
    with Session.load(dest) as again:
        assert replay_state(again) == want
        assert again.message_ids[-1] == new_id
    assert src.read_bytes() == (DATA / "clean.jsonl").read_bytes()


def test_the_source_held_by_a_writer_is_forked(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    with Session.create(src, {"agent": "a"}) as writer:
        mid = writer.append_message(Message(role="user", content="one"))
        writer.append_message(Message(role="assistant", content="two"))
        with Session.fork(src, tmp_path / "f.jsonl", through_id=mid) as fork:
            assert [m.content for m in fork.messages] == ["one"]
        writer.append_message(Message(role="user", content="three"))  # the writer is unaffected


def test_unknown_through_id_creates_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "f.jsonl"
    with pytest.raises(UnknownId):
        Session.fork(DATA / "clean.jsonl", dest, through_id="no-such-id")
    assert not dest.exists()


@pytest.mark.parametrize("name", ["corrupt_mid.jsonl", "not_meta_first.jsonl", "empty.jsonl",
                                  "garbage.bin", "duplicate_id.jsonl"])
def test_a_source_load_refuses_creates_nothing(tmp_path: Path, name: str) -> None:
    dest = tmp_path / "d" / "f.jsonl"
    with pytest.raises(CorruptTranscript) as info:
        Session.fork(DATA / name, dest)
    assert info.value.path == str(DATA / name)
    assert not dest.exists()


def test_a_damaged_line_after_through_id_is_not_copied(tmp_path: Path) -> None:
    # corrupt_mid's damage is past its first envelopes: a fork before it is fine.
    first = envelope_lines(DATA / "clean.jsonl")[1][1]
    with Session.fork(DATA / "corrupt_mid.jsonl", tmp_path / "f.jsonl", through_id=first) as fork:
        assert len(fork.events) == 2


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Session.fork(tmp_path / "nope.jsonl", tmp_path / "f.jsonl")
    assert not (tmp_path / "f.jsonl").exists()


def test_through_id_must_be_a_string(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        Session.fork(DATA / "clean.jsonl", tmp_path / "f.jsonl", through_id=3)  # type: ignore[arg-type]


def run_cli(*args: str | os.PathLike[str]) -> Any:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_cli_fork(tmp_path: Path) -> None:
    through = envelope_lines(DATA / "clean.jsonl")[4][1]
    dest = tmp_path / "f.jsonl"
    r = run_cli("fork", DATA / "clean.jsonl", dest, "--through", through, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["through_id"] == through and out["envelopes"] == 5
    assert dest.read_bytes() == b"".join(whole_lines(DATA / "clean.jsonl")[:5])
    r = run_cli("fork", DATA / "clean.jsonl", dest)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "exists" in r.stderr
    r = run_cli("fork", DATA / "clean.jsonl", tmp_path / "g.jsonl", "--through", "nope")
    assert r.returncode == 2 and "nope" in r.stderr and not (tmp_path / "g.jsonl").exists()
    r = run_cli("fork", DATA / "corrupt_mid.jsonl", tmp_path / "g.jsonl")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    r = run_cli("fork", tmp_path / "missing.jsonl", tmp_path / "g.jsonl")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = run_cli("fork", DATA / "clean.jsonl", tmp_path / "h.jsonl")
    assert r.returncode == 0 and "forked from" in r.stdout


def test_fork_from_an_archive(tmp_path: Path) -> None:
    src = tmp_path / "src.jsonl"
    shutil.copyfile(DATA / "clean.jsonl", src)
    packed = Session.archive(src, keep=True)
    through = envelope_lines(src)[6][1]
    with Session.fork(packed, tmp_path / "a.jsonl", through_id=through) as a, \
            Session.fork(src, tmp_path / "b.jsonl", through_id=through) as b:
        assert replay_state(a) == replay_state(b)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


@pytest.mark.parametrize("name", ["pending.jsonl", "torn.jsonl", "corrupt_mid.jsonl"])
def test_cli_fork_through_line_is_through_that_lines_envelope(tmp_path: Path, name: str) -> None:
    """--through-line N copies through the envelope show prints on line N, whatever
    its type: the same file --through with its id makes."""
    source = tmp_path / "src.jsonl"
    shutil.copyfile(DATA / name, source)
    data = source.read_bytes().replace(b"\n", b"\n\n", 2)  # blank lines: numbers count them
    source.write_bytes(data)
    peeked = Session.peek(source)
    damaged = min([int(w.split()[1].rstrip(":")) for w in peeked.warnings], default=len(data))
    numbers = {e.line: e.id for e in peeked.envelopes if e.line < damaged}  # a fork copies no damage
    for number, env_id in list(numbers.items())[:4] + list(numbers.items())[-2:]:
        by_line, by_id = tmp_path / f"l{number}.jsonl", tmp_path / f"i{number}.jsonl"
        r = run_cli("fork", source, by_line, "--through-line", str(number), "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["through_id"] == env_id
        assert run_cli("fork", source, by_id, "--through", env_id).returncode == 0
        assert by_line.read_bytes() == by_id.read_bytes()
    assert source.read_bytes() == data


def test_cli_fork_through_line_refuses_a_line_without_an_envelope(tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    lines = (DATA / "clean.jsonl").read_bytes().splitlines(keepends=True)
    source.write_bytes(b"".join(lines[:2]) + b"\n" + b"".join(lines[2:4]) + b'{"id":"cut\n' + b"".join(lines[4:]))
    last = len(source.read_bytes().splitlines())
    dest = tmp_path / "f.jsonl"
    for n, says in [("3", "is blank"), ("6", "is damaged"), (str(last + 1), "past the last envelope"),
                    ("0", "not a line number"), ("-2", "not a line number"), ("x", "not a line number"),
                    ("2.0", "not a line number")]:
        r = run_cli("fork", source, dest, "--through-line", n)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, (n, r.stderr)
        assert r.stdout == "" and not dest.exists()
    r = run_cli("fork", source, dest, "--through-line", "2", "--through", "x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not dest.exists()
    r = run_cli("fork", tmp_path / "missing.jsonl", dest, "--through-line", "2")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not dest.exists()
    r = run_cli("fork", source, dest, "--through-line", "2")
    assert r.returncode == 0, r.stderr
    assert dest.read_bytes() == b"".join(lines[:2])


def test_cli_fork_into_an_archive_name_is_refused_in_one_line(tmp_path: Path) -> None:
    r = run_cli("fork", DATA / "clean.jsonl", tmp_path / "f.jsonl.zst")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "archive" in r.stderr
    assert list(tmp_path.iterdir()) == []
