"""Scenario 15: real kills and faults in what writes beside a transcript.

* ``import``: a ``SIGKILL`` at each step of writing the destination (the
  temporary file's open, each of its buffered writes, its fsync, the rename of
  ``--force``, the folder's fsync; before and after each call), through the
  ``LD_PRELOAD`` shim: the source is unchanged byte for byte; the destination
  is absent or the whole import, byte for byte what an undisturbed import
  writes; an import run again then succeeds. A full disk (a small tmpfs):
  ``OSError`` ``ENOSPC``, no destination, no temporary file, no folder left.
* ``Session.fork`` and ``archive``: a ``SIGKILL`` at each step: the source
  transcript is intact (its bytes, and it loads and takes appends: no stale
  lock); for ``archive``, if the transcript is gone, the ``.zst`` is complete
  (it decompresses to the transcript's bytes).
* The OpenAI Agents SDK adapter: ``add_items`` in a loop, killed at random
  times and at the Nth write: after a reload every item of every call that
  returned is there, in order, and after them at most a prefix of the call
  that was cut.
* The pydantic-ai conversation store (the real pydantic-ai, its offline
  ``TestModel``): ``save`` of each run's result in a loop, killed at random
  times, at the Nth write, and in the middle of the Nth write (a torn line):
  after a reload the conversation holds every turn of every save that
  returned, in order, each message whole, and at most the cut save after them;
  a torn line is never read as data (the file loads, its tail repaired).
"""

from __future__ import annotations

import errno
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Message, Session
from rkit import LONG, fault_env, figure, run_python, scale, tmpfs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))
import sources  # noqa: E402  (tests/formats/sources.py: synthetic sessions)


def claude_session(turns: int) -> bytes:
    """A Claude Code session of ``turns`` user/assistant/tool turns (about 1.2 KB each)."""
    records: list[Any] = []
    parent = None
    for t in range(turns):
        ts = f"{(t // 60) % 60:02d}:{t % 60:02d}"
        u, a, r = f"u{t}", f"a{t}", f"r{t}"
        records.append(sources.user(u, parent, ts, f"turn {t}: list the files ünïcödé " + "x" * 200))
        records.append(sources.asst(a, u, ts, f"m{t}", sources.text("Checking. " * 20),
                                    sources.use(f"toolu_{t}", command="ls")))
        records.append(sources.user(r, a, ts, [sources.result(f"toolu_{t}", "a.txt\nb.txt\n" * 30)]))
        parent = r
    return sources.lines(*records)


IMPORT = r"""
import sys
from agent_transcript.formats import import_transcript
import_transcript(sys.argv[1], sys.argv[2], force=sys.argv[3] == "1")
print("imported")
"""


def _import(src: Path, dest: Path, *, force: bool = False, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return run_python(IMPORT, str(src), str(dest), "1" if force else "0", env=env, check=False)


def _killed(proc: subprocess.CompletedProcess[str]) -> bool:
    return proc.returncode == -signal.SIGKILL


# (op, path suffix, action, nth): every step of writing the destination.
IMPORT_STEPS = [
    ("open", ".tmp", "kill", 1),
    ("open", ".tmp", "kill-after", 1),
    ("write", ".tmp", "kill", 1),
    ("write", ".tmp", "kill-after", 1),
    ("write", ".tmp", "kill", 2),
    ("write", ".tmp", "kill-after", 2),
    ("write", ".tmp", "kill-after", 3),
    ("fsync", ".tmp", "kill", 1),
    ("fsync", ".tmp", "kill-after", 1),
    ("rename", ".tmp", "kill", 1),        # --force: os.replace
    ("rename", ".tmp", "kill-after", 1),
    ("open", "imports", "kill-after", 1),  # the folder, opened for its fsync after the link
]


def test_import_killed_at_each_step(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(claude_session(scale(1600, 4000)))  # a few MiB: several buffered writes
    original = src.read_bytes()
    clean = tmp_path / "clean.jsonl"
    assert _import(src, clean).returncode == 0
    want = clean.read_bytes()
    killed = complete = absent = leftovers = 0
    for k, (op, match, action, nth) in enumerate(IMPORT_STEPS):
        out = tmp_path / f"step{k}" / "imports"
        out.mkdir(parents=True)
        dest = out / "run.jsonl"
        force = op == "rename"
        if force:
            dest.write_bytes(b"an older import\n")
        proc = _import(src, dest, force=force, env=fault_env(op, match, nth=nth, action=action))
        assert src.read_bytes() == original, (op, action, nth)
        if not _killed(proc):
            # The step is not reached this way (fewer writes): then the import is whole.
            assert proc.returncode == 0, (op, action, nth, proc.stderr)
        else:
            killed += 1
        if dest.exists() and dest.read_bytes() != b"an older import\n":
            assert dest.read_bytes() == want, (op, action, nth)
            complete += 1
        else:
            absent += 1
            again = _import(src, dest, force=force)
            assert again.returncode == 0, again.stderr
            assert dest.read_bytes() == want
        with Session.load(dest) as s:
            assert s.warnings == [] and s.messages
        # The next import into the same name removes what a killed one left.
        assert _import(src, dest, force=True).returncode == 0
        assert dest.read_bytes() == want
        leftovers += len([p for p in out.iterdir() if p.name.endswith(".tmp")])
    assert killed >= len(IMPORT_STEPS) - 2
    assert leftovers == 0
    figure("15. import killed at each step", steps=len(IMPORT_STEPS), killed=killed,
           complete_after_kill=complete, absent_then_reimported=absent, stale_temporary_files=leftovers)


def test_import_on_a_full_disk(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(claude_session(400))
    original = src.read_bytes()
    with tmpfs("256k") as fs:
        dest = fs / "deep" / "er" / "run.jsonl"
        proc = _import(src, dest)
        assert proc.returncode != 0 and "No space left on device" in proc.stderr, proc.stderr
        assert src.read_bytes() == original
        assert list(fs.iterdir()) == [], list(fs.rglob("*"))  # no file, no temporary, no folder
        # The command line: one line on stderr, exit 2.
        cli = subprocess.run([sys.executable, "-m", "agent_transcript", "import", str(src), "-o", str(dest)],
                             capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2 and len(cli.stderr.strip().splitlines()) == 1, cli.stderr
        assert list(fs.iterdir()) == []


def _transcript(path: Path, n: int) -> list[str]:
    with Session.create(path, {"agent": "killed"}) as s:
        ids = [s.append_message(Message.user(f"message {i} " + "ü" * 300)) for i in range(n)]
    return ids


def _source_intact(path: Path, original: bytes, ids: list[str]) -> None:
    assert path.read_bytes() == original
    with Session.load(path) as s:  # no stale lock, nothing repaired
        assert s.message_ids == ids and s.warnings == []
        s.append_message(Message.user("still writable"))
    path.write_bytes(original)


FORK = r"""
import sys
from agent_transcript import Session
Session.fork(sys.argv[1], sys.argv[2]).close()
print("forked")
"""

FORK_STEPS = [
    ("open", "fork.jsonl", "kill", 1),
    ("open", "fork.jsonl", "kill-after", 1),
    ("write", "fork.jsonl", "kill", 1),
    ("write", "fork.jsonl", "kill-after", 1),
    ("write", "fork.jsonl", "kill-after", 2),
    ("fsync", "fork.jsonl", "kill", 1),
    ("fsync", "fork.jsonl", "kill-after", 1),
    ("statx", "fork.jsonl", "kill", 1),
]


def test_fork_killed_at_each_step(tmp_path: Path) -> None:
    src = tmp_path / "run.jsonl"
    ids = _transcript(src, scale(3000, 6000))  # > 1 MiB: two chunks copied
    original = src.read_bytes()
    killed = 0
    for k, (op, match, action, nth) in enumerate(FORK_STEPS):
        dest = tmp_path / f"f{k}" / "fork.jsonl"
        proc = run_python(FORK, str(src), str(dest), env=fault_env(op, match, nth=nth, action=action),
                          check=False)
        killed += _killed(proc)
        assert _killed(proc) or proc.returncode == 0, (op, action, nth, proc.stderr)
        _source_intact(src, original, ids)
        # A fork to a new path works after it.
        with Session.fork(src, tmp_path / f"f{k}" / "again.jsonl") as f:
            assert f.message_ids == ids
    assert killed >= len(FORK_STEPS) - 2
    figure("15. fork killed at each step", steps=len(FORK_STEPS), killed=killed)


ARCHIVE = r"""
import sys
from agent_transcript import Session
Session.archive(sys.argv[1])
print("archived")
"""

ARCHIVE_STEPS = [
    ("open", ".zst.partial", "kill", 1),
    ("open", ".zst.partial", "kill-after", 1),
    ("write", ".zst.partial", "kill", 1),
    ("write", ".zst.partial", "kill-after", 1),
    ("fsync", ".zst.partial", "kill", 1),
    ("fsync", ".zst.partial", "kill-after", 1),
    ("open", ".zst.partial", "kill", 2),      # opened again for the comparison
    ("rename", ".zst.partial", "kill", 1),
    ("rename", ".zst.partial", "kill-after", 1),  # renamed: the transcript not yet removed
]


def test_archive_killed_at_each_step(tmp_path: Path) -> None:
    src = tmp_path / "run.jsonl"
    ids = _transcript(src, scale(2000, 6000))
    original = src.read_bytes()
    zst = src.with_name(src.name + ".zst")
    killed = both = 0
    for op, match, action, nth in ARCHIVE_STEPS:
        proc = run_python(ARCHIVE, str(src), env=fault_env(op, match, nth=nth, action=action), check=False)
        killed += _killed(proc)
        assert _killed(proc) or proc.returncode == 0, (op, action, nth, proc.stderr)
        if src.exists():
            if zst.exists():
                both += 1
                assert Session.peek(zst).envelopes == Session.peek(src).envelopes
                zst.unlink()
            _source_intact(src, original, ids)
        else:
            # Gone only once the archive is whole: it reads back as the transcript.
            assert zst.exists(), (op, action, nth)
            peeked = Session.peek(zst)
            assert [m.content for m in peeked.messages] == [f"message {i} " + "ü" * 300 for i in range(len(ids))]
            zst.unlink()
            src.write_bytes(original)
        # The next archive succeeds (a leftover .partial is removed first).
        again = run_python(ARCHIVE, str(src), check=False)
        assert again.returncode == 0, again.stderr
        assert not src.exists() and zst.exists()
        zst.unlink()
        src.write_bytes(original)
    assert killed >= len(ARCHIVE_STEPS) - 2
    figure("15. archive killed at each step", steps=len(ARCHIVE_STEPS), killed=killed,
           both_left=both)


ADAPTER = r"""
import asyncio, os, sys
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
from agent_transcript.integrations.openai_agents import TranscriptSession

async def main(path, start, batches, size):
    session = TranscriptSession(path)
    n = start
    for b in range(batches):
        items = [{"role": "user" if k % 2 else "assistant", "content": f"item {n + k} " + "é" * (n % 97)}
                 for k in range(size)]
        await session.add_items(items)
        n += size
        sys.stdout.write(f"{n}\n")
        sys.stdout.flush()
    session.close()

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
"""


def _items_after_reload(path: Path) -> list[str]:
    code = ("import asyncio, json, sys\n"
            "from agent_transcript.integrations.openai_agents import TranscriptSession\n"
            "async def main():\n"
            "    s = TranscriptSession(sys.argv[1])\n"
            "    print(json.dumps([i['content'].split(' ')[1] for i in await s.get_items()]))\n"
            "    s.close()\n"
            "asyncio.run(main())\n")
    return [str(x) for x in json.loads(run_python(code, str(path)).stdout)]


@pytest.mark.parametrize("how", ["random SIGKILL", "shim kill at the Nth write"])
def test_openai_agents_add_items_killed(tmp_path: Path, how: str) -> None:
    pytest.importorskip("agents")
    rng = random.Random(18 if how.startswith("random") else 81)
    path = tmp_path / "agent.jsonl"
    acked = 0  # items of every add_items call that returned
    size = 5
    rounds = scale(8, 40)
    cut = 0
    for r in range(rounds):
        env = None
        if how.startswith("shim"):
            env = fault_env("write", "agent.jsonl", nth=rng.randrange(1, 3 * size), action="kill")
        proc = subprocess.Popen([sys.executable, "-c", ADAPTER, str(path), str(acked), "1000", str(size)],
                                stdout=subprocess.PIPE, text=True, env=env)
        if env is None:
            time.sleep(rng.uniform(0.3, 1.5))
            proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL, proc.returncode
        returned = [int(x) for x in out.split()]
        if returned:
            acked = returned[-1]
        items = _items_after_reload(path)
        # Every acknowledged item, in order, then at most the items of the call
        # the kill cut: a prefix of them, or all of them when the kill fell
        # after the call returned and before the child said so.
        assert items == [str(i) for i in range(len(items))], r
        assert acked <= len(items) <= acked + size, (r, len(items), acked)
        cut += len(items) - acked
        acked = len(items)  # the next run goes on after what is there
    figure(f"15. openai-agents add_items, {how}", kills=rounds, items=acked,
           items_of_cut_calls_kept=cut, long=LONG)


PYDANTIC_AI_STORE = r"""
import asyncio, sys
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits
from agent_transcript.integrations.pydantic_ai import TranscriptConversationStore

async def main(folder, start, turns):
    store = TranscriptConversationStore(folder)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for n in range(start, start + turns):
        conversation = await store.load("k") or Conversation(conversation_id="k")
        agent = Agent(TestModel(custom_output_text=f"answer {n} " + "\u00e9" * (n % 97)))
        # The conversation's usage adds up across its runs: no request limit.
        result = await agent.run(f"turn {n} " + "\u03a9" * (n % 31), conversation=conversation,
                                 usage_limits=UsageLimits(request_limit=None))
        await store.save(result)
        sys.stdout.write(f"{n + 1}\n")
        sys.stdout.flush()

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""

PYDANTIC_AI_RELOAD = r"""
import asyncio, json, sys
from pydantic_ai.messages import ModelRequest, ModelResponse
from agent_transcript.integrations.pydantic_ai import TranscriptConversationStore

async def main(folder):
    loaded = await TranscriptConversationStore(folder).load("k")
    out = []
    for m in (loaded.messages if loaded is not None else []):
        kind = "request" if isinstance(m, ModelRequest) else "response" if isinstance(m, ModelResponse) else "?"
        out.append([kind, [getattr(p, "content", None) for p in m.parts]])
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""


def _turns_after_reload(folder: Path) -> list[int]:
    """The turns of conversation ``k`` as a fresh store loads it, each checked whole:
    a request holding exactly turn n's prompt, then the response holding exactly its answer."""
    messages = json.loads(run_python(PYDANTIC_AI_RELOAD, str(folder)).stdout)
    assert len(messages) % 2 == 0, messages[-2:]
    turns = []
    for n, (request, response) in enumerate(zip(messages[::2], messages[1::2])):
        assert request == ["request", [f"turn {n} " + "\u03a9" * (n % 31)]], (n, request)
        assert response == ["response", [f"answer {n} " + "\u00e9" * (n % 97)]], (n, response)
        turns.append(n)
    return turns


def _torn_tail(path: Path) -> bool:
    """The file's last line is not one whole envelope (what load's repair removes)."""
    data = path.read_bytes() if path.exists() else b""
    if not data:
        return False
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        json.loads(last)
    except ValueError:
        return True
    return not data.endswith(b"\n")


@pytest.mark.parametrize("how", ["random SIGKILL", "shim kill at the Nth write", "shim kill inside the Nth write"])
def test_pydantic_ai_store_save_killed(tmp_path: Path, how: str) -> None:
    if sys.version_info < (3, 11):
        pytest.skip("pydantic-ai-slim needs Python >= 3.11")
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("pydantic_ai.conversation_store")
    rng = random.Random(f"pydantic-ai {how}")
    folder = tmp_path / "store"
    path = folder / "k.jsonl"
    acked = 0  # turns of every save that returned
    rounds = scale(6, 30)
    cut = torn = 0
    for r in range(rounds):
        env = None
        if how == "shim kill at the Nth write":
            env = fault_env("write", "k.jsonl", nth=rng.randrange(1, 10), action="kill")
        elif how == "shim kill inside the Nth write":
            # A line is one write(2): cut it after 1 byte up to its last byte but one.
            env = fault_env("write", "k.jsonl", nth=rng.randrange(1, 10), partial=rng.randrange(1, 200),
                            action="kill-partial")
        proc = subprocess.Popen([sys.executable, "-c", PYDANTIC_AI_STORE, str(folder), str(acked), "1000"],
                                stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        if env is None:
            # Kill once the store is open (not while pydantic-ai is being imported).
            assert proc.stdout.readline() == "ready\n"
            time.sleep(rng.uniform(0.0, 0.6))
            proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == -signal.SIGKILL, proc.returncode
        returned = [int(x) for x in out.split() if x.isdigit()]
        if returned:
            acked = returned[-1]
        torn += _torn_tail(path)
        turns = _turns_after_reload(folder)
        # Every acknowledged turn, in order and whole; after them at most the cut save.
        assert turns[:acked] == list(range(acked)), r
        assert len(turns) - acked <= 1, (r, len(turns), acked)
        cut += len(turns) - acked
        acked = len(turns)  # the next run goes on after what is there
    # The file load takes (its torn tail removed, if the last kill left one) and says what it did.
    with Session.load(path) as session:
        assert len(session.messages) >= 2 * acked
    if how == "shim kill inside the Nth write":
        assert torn > 0
    figure(f"15. pydantic-ai store save, {how}", kills=rounds, turns=acked, cut_saves_kept=cut,
           torn_tails=torn, long=LONG)
