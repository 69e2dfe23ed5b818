"""Session against the plain-Python baselines, on a ~5 MiB generated transcript.

Two kinds of test here:

* pytest-benchmark benches, grouped so each group reads as one row of the
  performance targets (load, peek, append, append after load, repair, tail).
  With ``--benchmark-disable`` (the default in pyproject) each runs once, as a
  smoke test; ``pytest benches --benchmark-enable`` measures them. The 1 GiB
  comparisons are ``agent-transcript bench``'s job.
* Cross-checks, untimed: Session and the baselines agree on what the file
  says, so the benches compare two things that do the same work.

No assertion here depends on time.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

import baselines as B
from agent_transcript import Message, Session

MIB = 1024 * 1024
SEED = 2
MB = 5                   # seed 2 compacts for the first time at 4.1 MB
MESSAGE = Message.user("Please read src/agent/loop.py and tell me why the resume path sends the tool "
                       "result twice; keep the answer short, cite line numbers, and do not touch tests.")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, bytes]:
    """The whole transcript, a torn original (never loaded: copy it), and the torn tail."""
    d = tmp_path_factory.mktemp("bench")
    whole, torn = d / "whole.jsonl", d / "torn.jsonl"
    gen = B.write_transcript(whole, MB, SEED)
    B.write_transcript(torn, MB, SEED, torn=True)
    return whole, torn, gen.torn_tail


@pytest.fixture
def transcript(generated: tuple[Path, Path, bytes]) -> Path:
    return generated[0]


@pytest.fixture
def torn_copy(generated: tuple[Path, Path, bytes], tmp_path: Path) -> Callable[[], Path]:
    """Make a fresh torn copy (a load repairs it, so each load needs its own)."""
    counter = [0]

    def make() -> Path:
        counter[0] += 1
        p = tmp_path / f"torn-{counter[0]}.jsonl"
        shutil.copyfile(generated[1], p)
        return p

    return make


def load_and_close(path: Path) -> Session:
    s = Session.load(path)
    s.close()
    return s


def orjson_or_skip() -> Any:
    return pytest.importorskip("orjson")


# ----------------------------------------------------------------------- load

@pytest.mark.benchmark(group="load")
def test_load_session(benchmark: Any, transcript: Path) -> None:
    benchmark(load_and_close, transcript)


@pytest.mark.benchmark(group="load")
def test_load_baseline_orjson(benchmark: Any, transcript: Path) -> None:
    orjson_or_skip()
    benchmark(B.baseline_orjson, transcript)


@pytest.mark.benchmark(group="load")
def test_load_baseline_stdlib(benchmark: Any, transcript: Path) -> None:
    benchmark(B.baseline_stdlib, transcript)


# ----------------------------------------------------------------------- peek

@pytest.mark.benchmark(group="peek")
def test_peek_session(benchmark: Any, transcript: Path) -> None:
    benchmark(Session.peek, transcript)


@pytest.mark.benchmark(group="peek")
def test_peek_baseline_orjson(benchmark: Any, transcript: Path) -> None:
    orjson_or_skip()
    benchmark(B.peek_orjson, transcript)


@pytest.mark.benchmark(group="peek")
def test_peek_baseline_stdlib(benchmark: Any, transcript: Path) -> None:
    benchmark(B.peek_stdlib, transcript)


# --------------------------------------------------------------------- append

def session_line(tmp_path: Path) -> bytes:
    """The bytes Session writes for MESSAGE."""
    with Session.create(tmp_path / "probe.jsonl") as s:
        s.append_message(MESSAGE)
    return (tmp_path / "probe.jsonl").read_bytes().splitlines(keepends=True)[-1]


@pytest.mark.benchmark(group="append")
def test_append_session(benchmark: Any, tmp_path: Path) -> None:
    with Session.create(tmp_path / "t.jsonl") as s:
        benchmark(s.append_message, MESSAGE)


@pytest.mark.benchmark(group="append")
def test_append_user_orjson_loop(benchmark: Any, tmp_path: Path) -> None:
    orjson_or_skip()
    with B.UserAppender(tmp_path / "t.jsonl") as app:
        benchmark(app.append_message, MESSAGE.to_dict())


@pytest.mark.benchmark(group="append")
def test_append_bare_os_write(benchmark: Any, tmp_path: Path) -> None:
    line = session_line(tmp_path)
    fd = os.open(tmp_path / "t.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        benchmark(os.write, fd, line)
    finally:
        os.close(fd)


@pytest.mark.benchmark(group="append-after-load")
def test_append_fresh_session(benchmark: Any, tmp_path: Path) -> None:
    with Session.create(tmp_path / "t.jsonl") as s:
        benchmark(s.append_message, MESSAGE)


@pytest.mark.benchmark(group="append-after-load")
def test_append_after_load(benchmark: Any, transcript: Path, tmp_path: Path) -> None:
    copy = tmp_path / "t.jsonl"
    shutil.copyfile(transcript, copy)
    with Session.load(copy) as s:
        benchmark(s.append_message, MESSAGE)


# --------------------------------------------------------------------- repair

@pytest.mark.benchmark(group="repair")
def test_load_torn_session(benchmark: Any, torn_copy: Callable[[], Path]) -> None:
    benchmark.pedantic(load_and_close, setup=lambda: ((torn_copy(),), {}), rounds=3)


@pytest.mark.benchmark(group="repair")
def test_load_whole_session(benchmark: Any, transcript: Path) -> None:
    benchmark(load_and_close, transcript)


@pytest.mark.benchmark(group="repair")
def test_copy_file(benchmark: Any, transcript: Path, tmp_path: Path) -> None:
    benchmark(shutil.copyfile, transcript, tmp_path / "copy.jsonl")


# ----------------------------------------------------------------------- tail

@pytest.mark.benchmark(group="tail")
def test_tail_scan(benchmark: Any, transcript: Path) -> None:
    from agent_transcript.bench import command

    tail_scan = command._tail_scan_hook()
    if tail_scan is None:
        pytest.skip("no native tail check to time alone (see agent_transcript.bench.command._tail_scan_hook)")
    benchmark(tail_scan, str(transcript))


@pytest.mark.benchmark(group="tail")
def test_tail_check_baseline(benchmark: Any, transcript: Path) -> None:
    assert benchmark(B.check_tail, str(transcript), B.stdlib_loads) is None


# ------------------------------------------------------- cross-checks, untimed

def envelope_rows(events: Any) -> list[tuple[int, str, str, Any]]:
    return [(e.line, e.id, e.type, e.payload) for e in events]


def baseline_rows(events: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str, str, Any]]:
    return [(n, e["id"], e["type"], e["payload"]) for n, e in events]


def test_session_load_agrees_with_the_baselines(transcript: Path) -> None:
    expected = B.baseline_stdlib(transcript)
    assert {e["type"] for _, e in expected.events} >= {"compaction", "elision", "grants"}
    with Session.load(transcript) as s:
        assert [m.to_dict() for m in s.messages] == expected.messages
        assert s.message_ids == expected.message_ids
        assert s.meta == expected.meta
        assert s.grants == expected.grants
        assert s.warnings == []
        assert envelope_rows(s.events) == baseline_rows(expected.events)


def test_session_repairs_a_torn_tail_as_the_baselines_do(
        generated: tuple[Path, Path, bytes], torn_copy: Callable[[], Path]) -> None:
    whole, _, tail = generated
    ours, theirs = torn_copy(), torn_copy()
    expected = B.baseline_stdlib(theirs)
    with Session.load(ours) as s:
        assert len(s.warnings) == 1
        line = whole.read_bytes().count(b"\n") + 1
        assert str(line) in s.warnings[0] and str(len(tail)) in s.warnings[0]
        assert s.message_ids == expected.message_ids
        assert [m.to_dict() for m in s.messages] == expected.messages
    assert ours.read_bytes() == theirs.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize("which", ["whole", "torn"])
def test_session_peek_agrees_with_the_baselines(
        generated: tuple[Path, Path, bytes], torn_copy: Callable[[], Path], which: str) -> None:
    path = generated[0] if which == "whole" else torn_copy()
    before = path.read_bytes()
    expected = B.peek_stdlib(path)
    p = Session.peek(path)
    assert p.error is None and expected.error is None
    assert p.size == expected.size == len(before)
    assert p.meta == expected.meta
    assert envelope_rows(p.envelopes) == baseline_rows(expected.envelopes)
    assert [m.to_dict() for m in p.messages] == expected.messages
    assert len(p.warnings) == len(expected.warnings) == (1 if which == "torn" else 0)
    assert path.read_bytes() == before


def test_user_loop_lines_and_session_lines_read_back_alike(tmp_path: Path) -> None:
    orjson_or_skip()
    path = tmp_path / "t.jsonl"
    with Session.create(path, {"agent": "bench"}) as s:
        ours = [s.append_message(MESSAGE) for _ in range(3)]
    with B.UserAppender(path) as app:
        theirs = [app.append_message(MESSAGE.to_dict()) for _ in range(3)]
    with Session.load(path) as s:
        assert s.message_ids == ours + theirs
        assert s.messages == [MESSAGE] * 6
    loaded = B.baseline_orjson(path)
    assert loaded.message_ids == ours + theirs
    assert loaded.messages == [MESSAGE.to_dict()] * 6
