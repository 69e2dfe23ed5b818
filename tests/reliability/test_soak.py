"""The soak: everything at once, as a busy machine runs it.

For a bounded time (30 s; ``AT_LONG=1``: 10 minutes) three writers append to
one folder, one through ``Session`` itself and one through each adapter
(``soak_writer.py``); one of them is SIGKILLed at random every fraction of a
second and started again, and resumes. Meanwhile, on the same folder: ``follow``
(the command, in child processes) and ``serve``'s live stream (a server in
this process) read the live files from their first line; ``ls`` and
``export`` run again and again in this process; settled runs are forked,
archived and rendered with ``html``.

At the end: every acknowledged line is in its file exactly once (and every
acknowledged item and turn in the adapter's own reading, once, in order);
each follower saw exactly its file's envelopes, in order; the last export's
rows are the transcripts; every file passes ``check`` with no call left
unanswered; no reader raised; and this process holds the descriptors and
threads it held before.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import Session, fleet
from agent_transcript.viewer.server import make_server

from rkit import HERE, LONG, figure

SECONDS = 600 if LONG else 30
WRITER = HERE / "soak_writer.py"
KINDS = ["library"] + [kind for kind, module in (("openai-agents", "agents"), ("pydantic-ai", "pydantic_ai"))
                       if importlib.util.find_spec(module) is not None]
#: The live file each writer keeps appending to, followed from its first line.
FOLLOWED = {"library": "lib-1.jsonl", "openai-agents": "oa-1.jsonl", "pydantic-ai": "pyd-1.jsonl"}


class Writer:
    """One writer process, started again after each kill; what it acknowledged."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind, self.folder = kind, folder
        self.incarnation = 0
        self.kills = 0
        self.acks: list[tuple[str, str, str]] = []  # (tag, file, what)
        self.settled: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *extra: str) -> None:
        self.incarnation += 1
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), self.kind, str(self.folder), str(self.incarnation), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def reap(self, *, kill: bool) -> None:
        """Kill (or wait for) the process, then take in what it acknowledged."""
        assert self.proc is not None
        if kill:
            self.proc.send_signal(signal.SIGKILL)
            self.kills += 1
        out, err = self.proc.communicate(timeout=120)
        code = self.proc.returncode
        assert code == (-signal.SIGKILL if kill else 0) or (kill and code == 0), \
            f"{self.kind} writer #{self.incarnation} exited {code}: {err.decode(errors='replace')}"
        assert not err.strip() or kill, err.decode(errors="replace")
        assert b"failed:" not in err, err.decode(errors="replace")
        for raw in out.decode().splitlines():
            tag, _, rest = raw.partition(" ")
            if tag == "S":
                self.settled.append(rest)
            elif tag in "AIP" and tag:
                file, _, what = rest.partition(" ")
                self.acks.append((tag, file, what))
        self.proc = None


def ids_of(path: Path) -> list[str]:
    peek = Session.peek(path)
    assert peek.error is None, peek.error
    return [e.id for e in peek.envelopes]


class Stream(threading.Thread):
    """``serve``'s live stream of one transcript, read as a browser reads it."""

    def __init__(self, url: str, problems: list[str]) -> None:
        super().__init__(name=f"stream {url}")
        self.url, self.problems = url, problems
        self.ids: list[str] = []

    def run(self) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=60) as answer:
                event = None
                for raw in answer:
                    line = raw.decode().rstrip("\n")
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: ") and event == "rec":
                        self.ids.append(json.loads(json.loads(line[6:])["raw"])["id"])
                    elif line.startswith("data: ") and event == "reset":
                        self.problems.append(f"{self.url}: the stream was reset")
        except Exception as e:  # noqa: BLE001 - every reader failure fails the soak
            self.problems.append(f"{self.url}: {type(e).__name__}: {e}")


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_everything_at_once_loses_nothing_and_leaks_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    forks, pages, exported = tmp_path / "forks", tmp_path / "pages", tmp_path / "export"
    forks.mkdir()
    pages.mkdir()
    problems: list[str] = []
    reads: Counter[str] = Counter()
    fds_before, threads_before = open_fds(), threading.active_count()
    rng = random.Random(20261205)

    writers = [Writer(kind, folder) for kind in KINDS]
    for w in writers:
        w.start()
    deadline = time.monotonic() + 60
    while not all((folder / FOLLOWED[w.kind]).exists() for w in writers):
        assert time.monotonic() < deadline, "a writer made no file in a minute"
        time.sleep(0.05)

    followers = {w.kind: subprocess.Popen(
        [sys.executable, "-m", "agent_transcript", "follow", "--json", "--poll", "0.02",
         str(folder / FOLLOWED[w.kind])], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for w in writers}
    server = make_server(str(folder), token=False)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    serving.start()
    streams = {w.kind: Stream(f"http://127.0.0.1:{server.port}/e/{FOLLOWED[w.kind]}?offset=0", problems)
               for w in writers}
    for s in streams.values():
        s.start()

    stop = threading.Event()

    def reader(name: str, read: Any) -> threading.Thread:
        def loop() -> None:
            while not stop.is_set():
                try:
                    read()
                    reads[name] += 1
                except Exception as e:  # noqa: BLE001 - every reader failure fails the soak
                    problems.append(f"{name}: {type(e).__name__}: {e}")
                stop.wait(0.05)
        t = threading.Thread(target=loop, name=name)
        t.start()
        return t

    def settled_runs() -> list[Path]:
        return [folder / name for w in writers for name in w.settled
                if name != FOLLOWED[w.kind] and (folder / name).exists()]

    done: set[Path] = set()

    def fork_archive_render() -> None:
        for path in settled_runs():
            if path in done:
                continue
            done.add(path)
            Session.fork(path, forks / path.name).close()
            page = subprocess.run([sys.executable, "-m", "agent_transcript", "html", str(path), "-o",
                                   str(pages / (path.name + ".html"))], capture_output=True, text=True)
            assert page.returncode == 0, page.stderr
            if len(done) % 2:
                Session.archive(path)

    def export() -> None:
        fleet.export_transcripts(folder, forks, out=exported)

    readers = [reader("ls", lambda: list(fleet.list_transcripts(folder, forks))),
               reader("export", export),
               reader("fork, archive, html", fork_archive_render)]

    # Whatever fails, nothing of this test runs on into the next ones (its readers
    # are threads of this process, its writers and followers children of it).
    try:
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            time.sleep(rng.uniform(0.1, 0.8))
            w = rng.choice(writers)
            w.reap(kill=True)
            # Settled runs are known once their writer's output is read: after a kill.
            w.start()

        for w in writers:
            w.reap(kill=True)
            w.start("finish")  # resume once more: answer what the last kill left asked
            w.reap(kill=False)
        stop.set()
        for t in readers:
            t.join()
        fork_archive_render()
        export()

        # Every acknowledged line, once; the adapters' readings hold every acknowledged item, in order.
        files = sorted(p for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.zst")))
        by_name = {p.name.removesuffix(".zst"): Counter(ids_of(p)) for p in files}
        lines = sum(sum(c.values()) for c in by_name.values())
        for w in writers:
            for tag, file, what in w.acks:
                if tag == "A":
                    assert by_name[file][what] == 1, f"{what} of {file}: {by_name[file][what]} times"
        oa = [w for w in writers if w.kind == "openai-agents"]
        if oa:
            from agent_transcript.integrations.openai_agents import TranscriptSession

            async def items() -> list[Any]:
                with TranscriptSession(folder / "oa-1.jsonl") as s:
                    return await s.get_items()
            got = [i["content"] for i in asyncio.run(items())]
            acked = [what for _, _, what in oa[0].acks]
            assert len(set(got)) == len(got), "an item twice"
            assert [g for g in got if g in set(acked)] == acked
        pyd = [w for w in writers if w.kind == "pydantic-ai"]
        if pyd:
            from agent_transcript.integrations.pydantic_ai import TranscriptConversationStore

            async def prompts(cid: str) -> list[str]:
                conversation = await TranscriptConversationStore(folder).load(cid)
                assert conversation is not None
                return [p.content for m in conversation.messages for p in m.parts if p.part_kind == "user-prompt"]
            for file in sorted({file for _, file, _ in pyd[0].acks}):
                got = asyncio.run(prompts(file.removesuffix(".jsonl")))
                acked = [what for _, f, what in pyd[0].acks if f == file]
                assert len(set(got)) == len(got), f"a turn twice in {file}"
                assert [g for g in got if g in set(acked)] == acked, file

        # Each follower saw exactly its file's envelopes, in order.
        for kind, proc in followers.items():
            want = ids_of(folder / FOLLOWED[kind])
            seen: list[str] = []
            lines_out = proc.stdout
            assert lines_out is not None
            os.set_blocking(lines_out.fileno(), False)
            deadline = time.monotonic() + 60
            buffer = b""
            while len(seen) < len(want) and time.monotonic() < deadline:
                chunk = lines_out.read() or b""
                buffer += chunk
                *whole, buffer = buffer.split(b"\n")
                seen += [json.loads(line)["id"] for line in whole if line.strip()]
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            assert seen == want, f"follow of {kind}'s file: saw {len(seen)} of {len(want)} ({err.decode()})"
        deadline = time.monotonic() + 60
        while any(len(s.ids) < len(ids_of(folder / FOLLOWED[k])) for k, s in streams.items()):
            assert time.monotonic() < deadline, "a live stream fell behind"
            time.sleep(0.05)
        server.shutdown()
        server.server_close()
        serving.join()
        for kind, s in streams.items():
            s.join(timeout=30)
            assert not s.is_alive()
            assert s.ids == ids_of(folder / FOLLOWED[kind]), f"serve's stream of {kind}'s file"

        # Nothing leaked: the server's handler threads end once their streams do.
        deadline = time.monotonic() + 30
        while threading.active_count() > threads_before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert threading.active_count() == threads_before, threading.enumerate()
        assert open_fds() == fds_before

        # The last export's rows are the transcripts.
        import duckdb
        rows = dict(duckdb.sql(
            f"select session, envelopes from read_parquet('{exported}/sessions/**/*.parquet', "
            "hive_partitioning=true)").fetchall())
        everything = files + sorted(forks.iterdir())
        assert rows == {str(p): len(ids_of(p)) for p in everything}

        # Every file a transcript `check` passes, nothing left unanswered.
        for p in everything:
            if p.name.endswith(".jsonl"):
                with Session.load(p) as s:
                    assert s.warnings == [] and s.unanswered_tool_calls() == [], p
        checked = subprocess.run([sys.executable, "-m", "agent_transcript", "check", *map(str, everything)],
                                 capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr

        assert problems == []
        kills = sum(w.kills for w in writers)
        figure("soak", seconds=SECONDS, writers=KINDS, kills=kills, lines=lines, files=len(everything),
               settled_runs=len(done), acknowledged=sum(len(w.acks) for w in writers), reads=dict(reads))
        assert kills >= SECONDS // 4  # the soak did soak: a kill every few seconds at least
    finally:
        stop.set()
        for proc in [w.proc for w in writers if w.proc is not None] + list(followers.values()):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        server.shutdown()
        server.server_close()
        for t in readers + [serving, *streams.values()]:
            t.join(timeout=30)
