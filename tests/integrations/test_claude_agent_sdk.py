"""TranscriptSessionStore against the real Claude Agent SDK, offline.

The SDK's own conformance suite runs with nothing skipped; its in-memory store
is the oracle for the same calls; Claude Code sessions appended in random
batches replay to what a whole-file import replays to, across processes and a
SIGKILL. (The Claude Code CLI that drives a store needs the API: no live run.)
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk", reason="the claude-agent-sdk extra is not installed")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from claude_agent_sdk import (  # noqa: E402
    InMemorySessionStore,
    SessionKey,
    SessionStore,
    get_session_messages_from_store,
    get_subagent_messages_from_store,
    import_session_to_store,
    list_sessions_from_store,
    list_subagents_from_store,
    project_key_for_directory,
)
from claude_agent_sdk.testing import run_session_store_conformance  # noqa: E402

from agent_transcript import Session  # noqa: E402
from agent_transcript.formats import import_transcript, source_lines  # noqa: E402
from agent_transcript.formats.mirror import Mirror  # noqa: E402
from agent_transcript.integrations.claude_agent_sdk import TranscriptSessionStore  # noqa: E402

from ._helpers import assert_checks_and_loads, reap  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _module(path: Path) -> Any:
    """A module of another test folder (or the benches), by path."""
    spec = importlib.util.spec_from_file_location(f"_claude_sdk_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SOURCES = _module(ROOT / "tests" / "formats" / "sources.py").SOURCES
sys.path.insert(0, str(ROOT / "benches"))
import bench_claude_agent_sdk as bench  # noqa: E402
from import_gen import write_claude_code  # noqa: E402

CLAUDE_SOURCES = [s for s in SOURCES if s.format == "claude-code"]
OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
KEY: SessionKey = {"project_key": "-home-me-proj", "session_id": "0b9f3c2e-1111-4222-8333-444455556666"}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def generated(tmp: Path, size: int = 200_000, seed: int = 7) -> bytes:
    path = tmp / f"generated-{size}-{seed}.jsonl"
    if not path.exists():
        write_claude_code(str(path), size, seed)
    return path.read_bytes()


def raw_lines(data: bytes) -> list[bytes]:
    """A source's lines as a mirror takes them (the last one whether or not it ends in ``\\n``)."""
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


def imported(tmp: Path, data: bytes) -> tuple[list[tuple[Any, dict[str, Any]]], Any]:
    """What the whole file imported replays to: its messages with their extras, and its grants."""
    src, dest = tmp / "whole-src.jsonl", tmp / "whole.jsonl"
    src.write_bytes(data)
    import_transcript(src, dest, source_format="claude-code", force=True)
    return replayed(dest)


def replayed(path: Path) -> tuple[list[tuple[Any, dict[str, Any]]], Any]:
    with Session.load(path) as s:
        return [(e.message, e.extra) for e in s.entries], s.grants


def batches(lines: list[bytes], cuts: list[int]) -> list[list[bytes]]:
    at = sorted({c % (len(lines) + 1) for c in cuts} | {0, len(lines)})
    return [lines[a:b] for a, b in zip(at, at[1:]) if b > a]


# -- the SDK's own contracts ------------------------------------------------------------


def test_every_optional_method_is_implemented() -> None:
    for name in OPTIONAL:
        assert getattr(TranscriptSessionStore, name) is not getattr(SessionStore, name), name


def test_the_sdk_conformance_suite_passes_with_nothing_skipped(tmp_path: Path) -> None:
    made: list[TranscriptSessionStore] = []

    def fresh() -> TranscriptSessionStore:
        made.append(TranscriptSessionStore(tmp_path / f"store-{len(made)}"))
        return made[-1]

    run(run_session_store_conformance(fresh))
    assert len(made) >= 14  # one store per contract: none was skipped
    for store in made:
        store.close()
    for path in tmp_path.rglob("*.jsonl"):
        assert_checks_and_loads(path)


_keys = st.sampled_from([
    {"project_key": "p", "session_id": "s1"},
    {"project_key": "p", "session_id": "S2 é"},
    {"project_key": "p", "session_id": "s1", "subpath": "subagents/agent-a"},
    {"project_key": "p", "session_id": "s1", "subpath": "subagents/agent-B"},
    {"project_key": "Other/Proj", "session_id": "s1"},
])
_json = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False,
                     allow_infinity=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=8)
_entry = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "summary", "custom-title", "x"])},
    optional={"uuid": st.text(min_size=1, max_size=6), "timestamp": st.just("2026-03-01T10:00:00.000Z"),
              "customTitle": st.text(max_size=10), "message": _json, "extra": _json})
_call = st.one_of(
    # Never an empty batch: the protocol's no-op, which writes nothing here (a key
    # never written loads as None), where the in-memory store records the key.
    st.tuples(st.just("append"), _keys, st.lists(_entry, min_size=1, max_size=4)),
    st.tuples(st.just("load"), _keys, st.none()),
    st.tuples(st.just("delete"), _keys, st.none()),
    st.tuples(st.just("list"), _keys, st.none()),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(_call, max_size=12))
def test_the_same_calls_give_what_the_sdks_in_memory_store_gives(tmp_path_factory: pytest.TempPathFactory,
                                                                  calls: list[Any]) -> None:
    folder = tmp_path_factory.mktemp("oracle")

    async def both() -> None:
        oracle, store = InMemorySessionStore(), TranscriptSessionStore(folder)
        try:
            for what, key, entries in calls:
                if what == "append":
                    await oracle.append(key, entries)
                    await store.append(key, entries)
                elif what == "load":
                    assert await store.load(key) == await oracle.load(key)
                elif what == "delete":
                    await oracle.delete(key)
                    await store.delete(key)
                else:
                    project = key["project_key"]
                    ours = sorted(s["session_id"] for s in await store.list_sessions(project))
                    assert ours == sorted(s["session_id"] for s in await oracle.list_sessions(project))
                    main = {"project_key": project, "session_id": key["session_id"]}
                    assert sorted(await store.list_subkeys(main)) == sorted(await oracle.list_subkeys(main))
                    summaries = {s["session_id"]: s["data"] for s in await store.list_session_summaries(project)}
                    expected = {s["session_id"]: s["data"] for s in await oracle.list_session_summaries(project)}
                    assert summaries == expected
            for _, key, _ in calls:  # and every key at the end, from a store that opened nothing
                again = TranscriptSessionStore(folder)
                assert await again.load(key) == await oracle.load(key)
        finally:
            store.close()

    run(both())


def test_the_sdks_own_helpers_read_what_they_wrote_as_from_the_in_memory_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local session and its subagent, imported by the SDK's own helper in its own
    batches into both stores, then read back through the SDK's helpers."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    work = tmp_path / "work"
    work.mkdir()
    sid = KEY["session_id"]
    project = tmp_path / "config" / "projects" / project_key_for_directory(work)
    (project / sid / "subagents").mkdir(parents=True)
    data = generated(tmp_path, 120_000, 5)
    (project / f"{sid}.jsonl").write_bytes(data)
    (project / sid / "subagents" / "agent-a1.jsonl").write_bytes(CLAUDE_SOURCES[0].data)
    oracle, store = InMemorySessionStore(), TranscriptSessionStore(tmp_path / "store")

    async def both() -> None:
        for one in (oracle, store):
            await import_session_to_store(sid, one, directory=str(work), batch_size=50)
        for read in (lambda s: get_session_messages_from_store(s, sid, directory=str(work)),
                     lambda s: list_subagents_from_store(s, sid, directory=str(work)),
                     lambda s: get_subagent_messages_from_store(s, sid, "a1", directory=str(work))):
            assert await read(store) == await read(oracle)
        ours = await list_sessions_from_store(store, directory=str(work))
        theirs = await list_sessions_from_store(oracle, directory=str(work))
        assert [(i.session_id, i.summary, i.first_prompt) for i in ours] == \
            [(i.session_id, i.summary, i.first_prompt) for i in theirs]
        assert ours and ours[0].session_id == sid

    try:
        run(both())
        main: SessionKey = {"project_key": project_key_for_directory(work), "session_id": sid}
        paths = [store.transcript_path(main), store.transcript_path({**main, "subpath": "subagents/agent-a1"})]
    finally:
        store.close()
    assert replayed(paths[0]) == imported(tmp_path, data)
    assert replayed(paths[1]) == imported(tmp_path, CLAUDE_SOURCES[0].data)
    for path in paths:
        assert_checks_and_loads(path)


def test_an_empty_batch_writes_nothing(tmp_path: Path) -> None:
    with TranscriptSessionStore(tmp_path) as store:
        run(store.append(KEY, []))
        assert run(store.load(KEY)) is None
        assert run(store.list_sessions(KEY["project_key"])) == []
    assert not store.transcript_path(KEY).exists()


def test_a_bad_entry_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with TranscriptSessionStore(tmp_path) as store:
        run(store.append(KEY, [{"type": "user", "n": 1}]))
        for bad, error in (({"type": "user", "n": float("nan")}, ValueError), ({"type": "user", "s": {1, 2}}, TypeError),
                           (["not", "a", "dict"], TypeError)):
            with pytest.raises(error):
                run(store.append(KEY, [{"type": "user", "n": 2}, bad]))
        with pytest.raises(ValueError):
            store.transcript_path({**KEY, "subpath": ""})
        assert run(store.load(KEY)) == [{"type": "user", "n": 1}]


def test_a_lone_surrogate_comes_back_as_it_went(tmp_path: Path) -> None:
    entry = {"type": "user", "message": {"content": "half an emoji: \ud83d", "é": "日本"}}
    with TranscriptSessionStore(tmp_path) as store:
        run(store.append(KEY, [entry]))
        assert run(store.load(KEY)) == [entry]
    assert run(TranscriptSessionStore(tmp_path).load(KEY)) == [entry]


# -- Claude Code sessions, a batch at a time ------------------------------------------------


@pytest.mark.parametrize("src", CLAUDE_SOURCES, ids=[s.name for s in CLAUDE_SOURCES])
def test_each_line_alone_replays_as_the_whole_file_imported(tmp_path: Path, src: Any) -> None:
    lines = raw_lines(src.data)
    path = tmp_path / "mirror.jsonl"
    mirror = Mirror.open(path, {})
    for line in lines:
        mirror.append([line])
    mirror.close()
    assert replayed(path) == imported(tmp_path, src.data)
    assert list(source_lines(path)) == lines  # byte for byte, damaged lines included
    assert_checks_and_loads(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(CLAUDE_SOURCES)), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_random_batches_replay_as_the_whole_file_imported(tmp_path_factory: pytest.TempPathFactory,
                                                           index: int, cuts: list[int]) -> None:
    tmp = tmp_path_factory.mktemp("batches")
    data = CLAUDE_SOURCES[index].data if index < len(CLAUDE_SOURCES) else generated(tmp, 60_000, 3)
    lines = raw_lines(data)
    path = tmp / "mirror.jsonl"
    mirror = Mirror.open(path, {})
    for batch in batches(lines, cuts):
        mirror.append(batch)
    mirror.close()
    assert replayed(path) == imported(tmp, data)
    assert list(source_lines(path)) == lines


def test_a_session_a_turn_at_a_time_is_converted_by_extending_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The usual batch (a turn: prompts, streamed fragments, parallel calls and their
    results) only extends the chain: the conversion goes on from where it was,
    and gives what the whole file imported gives."""
    from agent_transcript.formats import _conversion

    extended = []
    extend = _conversion.Conversion.extend
    monkeypatch.setattr(_conversion.Conversion, "extend", lambda self: extended.append(extend(self)) or extended[-1])
    data = generated(tmp_path, 300_000, 13)
    lines = raw_lines(data)
    turns = bench.batches([json.loads(line) for line in lines], 0)  # as the SDK's mirror sends them
    sent = []
    for turn in turns:
        sent.append(lines[:len(turn)])
        del lines[:len(turn)]
    path = tmp_path / "mirror.jsonl"
    mirror = Mirror.open(path, {})
    for batch in sent:
        mirror.append(batch)
    mirror.close()
    assert replayed(path) == imported(tmp_path, data)
    # Every turn but those a compaction starts (or ends, its summary coming later) goes on.
    boundaries = data.count(b'"subtype":"compact_boundary"')
    assert len(extended) == len(sent) - 1 and extended.count(False) <= 2 * boundaries + 1, extended


def test_a_long_generated_session_through_the_store_replays_as_imported(tmp_path: Path) -> None:
    data = generated(tmp_path)
    entries = [json.loads(line) for line in raw_lines(data)]
    with TranscriptSessionStore(tmp_path / "store") as store:
        for at in range(0, len(entries), 37):
            run(store.append(KEY, entries[at:at + 37]))
        assert run(store.load(KEY)) == entries
        path = store.transcript_path(KEY)
    assert replayed(path) == imported(tmp_path, data)
    assert_checks_and_loads(path)
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "show", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout, r.stderr


# -- across processes ----------------------------------------------------------------------

CHILD = textwrap.dedent('''
    import asyncio, json, sys
    from agent_transcript.integrations.claude_agent_sdk import TranscriptSessionStore

    folder, key, source, start, stop, size = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], *map(int, sys.argv[4:7])
    lines = open(source, "rb").read().split(b"\\n")
    entries = [json.loads(line) for line in lines if line]

    async def main():
        store = TranscriptSessionStore(folder)
        for at in range(start, stop, size):
            await store.append(key, entries[at:min(at + size, stop)])
            print(min(at + size, stop), flush=True)
        store.close()

    asyncio.run(main())
''')


def child(tmp: Path, folder: Path, source: Path, start: int, stop: int, size: int) -> subprocess.Popen[str]:
    script = tmp / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen([sys.executable, str(script), str(folder), json.dumps(KEY), str(source),
                             str(start), str(stop), str(size)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_new_process_carries_the_conversion_on(tmp_path: Path) -> None:
    data = generated(tmp_path)
    source = tmp_path / "source.jsonl"
    source.write_bytes(data)
    entries = [json.loads(line) for line in raw_lines(data)]
    half = len(entries) // 2
    p = child(tmp_path, tmp_path / "store", source, 0, half, 23)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    with TranscriptSessionStore(tmp_path / "store") as store:
        assert run(store.load(KEY)) == entries[:half]
        path = store.transcript_path(KEY)
        size = path.stat().st_size
        Mirror.open(path, {}).close()  # a whole conversation found whole: nothing written again
        assert path.stat().st_size == size
        for at in range(half, len(entries), 29):
            run(store.append(KEY, entries[at:at + 29]))
        path = store.transcript_path(KEY)
    assert replayed(path) == imported(tmp_path, data)
    assert_checks_and_loads(path)


@pytest.mark.parametrize("wait_for", [3, 11])
def test_a_sigkill_mid_append_loses_nothing_acknowledged(tmp_path: Path, wait_for: int) -> None:
    data = generated(tmp_path, 400_000, 11)
    source = tmp_path / "source.jsonl"
    source.write_bytes(data)
    entries = [json.loads(line) for line in raw_lines(data)]
    p = child(tmp_path, tmp_path / "store", source, 0, len(entries), 7)
    acknowledged = 0
    try:
        assert p.stdout is not None
        for _ in range(wait_for):
            line = p.stdout.readline()
            assert line, p.communicate()[1]
            acknowledged = int(line)
        os.kill(p.pid, signal.SIGKILL)  # while it appends the next batch
        p.wait(timeout=60)
        rest = p.stdout.read()  # an acknowledgement printed before the kill landed
        acknowledged = max([acknowledged, *(int(n) for n in rest.split())])
    finally:
        reap(p)
    with TranscriptSessionStore(tmp_path / "store") as store:
        got = run(store.load(KEY))
        assert got is not None and got[:acknowledged] == entries[:acknowledged]
        assert got == entries[:len(got)]  # the batch cut short: whole or not there
        assert len(got) - acknowledged in (0, 7)
        run(store.append(KEY, entries[len(got):]))
        path = store.transcript_path(KEY)
    assert replayed(path) == imported(tmp_path, data)
    assert_checks_and_loads(path)


def test_a_mirror_reopened_after_its_conversation_was_cut_short_writes_it_again(tmp_path: Path) -> None:
    """A crash between a batch's lines and its conversation: the next open writes the rest."""
    data = CLAUDE_SOURCES[0].data
    lines = raw_lines(data)
    path = tmp_path / "mirror.jsonl"
    with Session.create(path, {"format": "claude-code"}) as s:  # the lines alone, as a crash leaves them
        s.append_events([("source-line", {"line": i, "status": "metadata", "text": line.decode()})
                         for i, line in enumerate(lines, 1)])
    Mirror.open(path, {}).close()
    assert replayed(path) == imported(tmp_path, data)
    assert_checks_and_loads(path)


def test_the_layout_is_claude_codes_and_modes_are_private(tmp_path: Path) -> None:
    sub: SessionKey = {**KEY, "subpath": "subagents/agent-a1"}
    with TranscriptSessionStore(tmp_path / "store") as store:
        run(store.append(KEY, [{"type": "user", "n": 1}]))
        run(store.append(sub, [{"type": "user", "n": 2}]))
        main, child_path = store.transcript_path(KEY), store.transcript_path(sub)
    assert child_path.parent.parent == main.with_suffix("")
    assert child_path.name == "agent-a1.jsonl"
    for path in (main, child_path):
        assert path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "store" / main.parent.name).stat().st_mode & 0o777 == 0o700


def test_a_second_process_waits_then_is_told_the_session_is_locked(tmp_path: Path) -> None:
    with TranscriptSessionStore(tmp_path) as store:
        run(store.append(KEY, [{"type": "user", "n": 1}]))
        t0 = time.monotonic()
        code = ("import asyncio, json, sys\n"
                "from agent_transcript import SessionLocked\n"
                "from agent_transcript.integrations.claude_agent_sdk import TranscriptSessionStore\n"
                "s = TranscriptSessionStore(sys.argv[1])\n"
                "print(asyncio.run(s.load(json.loads(sys.argv[2]))))\n"
                "try:\n    asyncio.run(s.append(json.loads(sys.argv[2]), [{'type': 'user'}]))\n"
                "except SessionLocked:\n    print('locked')\n")
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path), json.dumps(KEY)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[:2] == ["[{'type': 'user', 'n': 1}]", "locked"]
        assert time.monotonic() - t0 >= 4  # it waited for the lock a while
