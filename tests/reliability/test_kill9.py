"""Scenario 2: ``kill -9`` under load.

Four processes, each with four threads appending to its own transcript and
printing every id an append returned, are killed with SIGKILL at random moments
(during start-up and load too), restarted with ``Session.load`` and killed
again. Afterwards every acknowledged id is in its file exactly once, with the
exact content it was written with, in order per thread; the only other lines
are appends that were in flight when the kill came (at most one per thread per
kill, since a thread acknowledges one append before it starts the next).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent_transcript import Session
from kill_writer import content
from rkit import HERE, figure, scale

PROCESSES = 4
THREADS = 4


@dataclass
class Slot:
    """One transcript and the process currently writing it."""

    path: Path
    logs: Path
    incarnation: int = 0
    proc: subprocess.Popen[bytes] | None = None
    # (incarnation, thread, seq) -> id, for every acknowledged append
    acked: dict[tuple[int, int, int], str] = field(default_factory=dict)
    repairs: int = 0
    kills: int = 0
    killed_before_ready: int = 0

    def start(self) -> None:
        self.incarnation += 1
        out = open(self.logs / f"{self.path.stem}.{self.incarnation}.out", "wb")
        err = open(self.logs / f"{self.path.stem}.{self.incarnation}.err", "wb")
        with out, err:
            self.proc = subprocess.Popen(
                [sys.executable, str(HERE / "kill_writer.py"), str(self.path),
                 str(self.incarnation), str(THREADS)],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL)

    def wait_ready(self) -> None:
        out = self.logs / f"{self.path.stem}.{self.incarnation}.out"
        deadline = time.monotonic() + 60
        while not ready(out):
            assert self.proc is not None and self.proc.poll() is None, "a writer died by itself"
            assert time.monotonic() < deadline, "a writer did not load in 60 s"
            time.sleep(0.005)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        rc = self.proc.wait()
        err = (self.logs / f"{self.path.stem}.{self.incarnation}.err").read_text()
        assert rc == -signal.SIGKILL, f"{self.path.name} #{self.incarnation} exited {rc}:\n{err}"
        self.kills += 1
        self.collect()

    def collect(self) -> None:
        text = (self.logs / f"{self.path.stem}.{self.incarnation}.out").read_text()
        if "R\n" not in text:
            self.killed_before_ready += 1
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "W":
                self.repairs += 1
            elif kind == "A":
                t, seq, mid = rest.split()
                self.acked[(self.incarnation, int(t), int(seq))] = mid


def ready(out: Path) -> bool:
    with open(out, "rb") as f:
        return b"R\n" in f.read(1 << 16)


def verify(slot: Slot) -> dict[str, int]:
    """Everything acknowledged is there once, unchanged, in order; returns counts."""
    with Session.load(slot.path) as s:
        if s.warnings:
            slot.repairs += 1
        ids = s.message_ids
        texts = [m.content for m in s.messages]
    assert len(set(ids)) == len(ids)
    position = {mid: i for i, mid in enumerate(ids)}
    for key, mid in slot.acked.items():
        assert mid in position, f"{slot.path.name}: acknowledged {key} {mid} is lost"
        assert texts[position[mid]] == content(*key), f"{slot.path.name}: {key} was garbled"
    # In order per thread, across incarnations; nothing acknowledged is missing in between.
    last: dict[int, tuple[int, int, int]] = {}
    unacked: dict[int, list[tuple[int, int, int]]] = {}
    acked_ids = set(slot.acked.values())
    for i, (mid, text) in enumerate(zip(ids, texts)):
        inc, t, seq = (int(x) for x in text.split(":")[:3])
        assert text == content(inc, t, seq), f"{slot.path.name}: line of {mid} garbled"
        if t in last:
            assert (inc, seq) > last[t][:2], f"{slot.path.name}: thread {t} out of order"
            if inc == last[t][0]:
                assert seq == last[t][1] + 1, f"{slot.path.name}: thread {t} skipped"
        last[t] = (inc, seq, i)
        if mid not in acked_ids:
            unacked.setdefault(inc, []).append((inc, t, seq))
    for inc, extra in unacked.items():
        assert len(extra) <= THREADS, f"{slot.path.name} #{inc}: {len(extra)} unacknowledged"
        for _, t, seq in extra:
            # An unacknowledged line is the last append its thread had in flight.
            assert (inc, t, seq + 1) not in slot.acked
            assert seq == 1 or (inc, t, seq - 1) in slot.acked
    per_kill = max((len(v) for v in unacked.values()), default=0)
    return {"unacked": sum(len(v) for v in unacked.values()), "max_unacked_per_kill": per_kill,
            "lines": len(ids)}


def test_kill_9_under_load(tmp_path: Path) -> None:
    kills_wanted = scale(32, 520)
    rng = random.Random(9)
    logs = tmp_path / "logs"
    logs.mkdir()
    slots = []
    for n in range(PROCESSES):
        path = tmp_path / f"run{n}.jsonl"
        Session.create(path, {"slot": n}).close()
        slots.append(Slot(path, logs))
    started = time.monotonic()
    for slot in slots:
        slot.start()
    kills = 0
    try:
        while kills < kills_wanted:
            slot = rng.choice(slots)
            if rng.random() < 0.2:
                # During start-up, load and its repair.
                time.sleep(rng.uniform(0, 0.3))
            else:
                # While appending.
                slot.wait_ready()
                time.sleep(rng.uniform(0, 0.08))
            slot.kill()
            kills += 1
            slot.start()
    finally:
        for slot in slots:
            if slot.proc is not None and slot.proc.poll() is None:
                slot.kill()
    counts = [verify(slot) for slot in slots]
    acked = sum(len(s.acked) for s in slots)
    assert acked > kills, "the writers barely wrote anything between kills"
    figure("2. kill -9 under load", kills=sum(s.kills for s in slots), processes=PROCESSES, threads=THREADS,
           acknowledged=acked, lost=0, duplicated=0,
           unacknowledged_lines=sum(c["unacked"] for c in counts),
           max_unacknowledged_per_kill=max(c["max_unacked_per_kill"] for c in counts),
           torn_tails_repaired=sum(s.repairs for s in slots),
           killed_before_load_finished=sum(s.killed_before_ready for s in slots),
           lines=sum(c["lines"] for c in counts),
           bytes=sum(s.path.stat().st_size for s in slots),
           seconds=round(time.monotonic() - started, 1))
