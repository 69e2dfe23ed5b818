"""``serve``'s tail page: the last whole lines, read back from the end with a
bounded number of copies whatever the lines' length."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from agent_transcript import Message, Session
from agent_transcript.viewer import server
from agent_transcript.viewer.server import TAIL_MAX


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.one_of(st.integers(0, 40), st.integers(60_000, 400_000)), max_size=16),
       partial=st.integers(0, 100), records=st.integers(1, 6), tail_max=st.sampled_from([1 << 16, 1 << 20, TAIL_MAX]))
def test_the_tail_is_the_last_whole_lines(lengths: list[int], partial: int, records: int, tail_max: int) -> None:
    """What the tail page shows, against the file's lines: the last ``records``
    whole lines (fewer only when one whole line and ``TAIL_MAX`` bytes are read),
    never the half-written one, with their offsets."""
    lines = [bytes([97 + k % 26]) * n for k, n in enumerate(lengths)]
    data = b"".join(line + b"\n" for line in lines) + b"z" * partial
    with tempfile.TemporaryFile() as f, pytest.MonkeyPatch.context() as mp:
        mp.setattr(server, "TAIL_MAX", tail_max)
        f.write(data)
        f.flush()
        start, end, got = server.read_tail(f.fileno(), len(data), records)
    if not lines:
        assert (start, end, got) == (0, 0, [])
        return
    assert end == len(data) - partial and data[start:end] == b"".join(line + b"\n" for line in got)
    assert 1 <= len(got) <= records and got == lines[len(lines) - len(got):]
    if len(got) < min(records, len(lines)):  # stopped early: the line before the first shown starts TAIL_MAX back or more
        assert len(data) - (start - len(lines[-len(got) - 1]) - 1) >= tail_max


# Run in a child: every allocation of 128 KiB or more a fresh mapping (freed at
# once), no transparent huge pages, so its minor faults count the bytes the tail
# read wrote into new memory: what it copied.
TAIL_FAULTS = r"""
import ctypes, os, resource, sys
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
from agent_transcript.viewer.server import read_tail
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
start, end, lines = read_tail(fd, size, 200)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(start, end, len(lines), len(lines[-1]), faults * resource.getpagesize())
"""


def test_the_tail_of_a_long_last_line_is_copied_a_bounded_number_of_times(tmp_path: Path) -> None:
    """A last line of 96 MiB: the tail was read back 4 MiB at a time, each block put
    in front of all read so far (about 1.2 GB copied for it, quadratic in the line).
    Now each block is copied a bounded number of times: the memory written is a
    few times the line, counted in pages, not timed."""
    path = tmp_path / "long.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("x" * (96 << 20)))
    size = path.stat().st_size
    first = path.read_bytes().index(b"\n") + 1  # the session-meta's line, then the long one
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 << 10)}
    run = subprocess.run([sys.executable, "-c", TAIL_FAULTS, str(path)], capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    start, end, n, longest, written = map(int, run.stdout.split())
    assert (start, end, n, longest) == (0, size, 2, size - first - 1)
    assert written < 4 * size, f"{written / size:.1f}x the file written to read its tail"
