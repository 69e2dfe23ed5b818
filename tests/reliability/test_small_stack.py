"""Threads with small stacks: load, peek, follow, appends and the codec run in
them without overflowing the stack.

A thread's stack can be much smaller than the main thread's (``threading.stack_size``,
a server's worker pool). Nothing the native core does may need more stack than
a few frames: no big array on the stack, and JSON nested as deep as the reader
allows (512 levels) decoded and checked without a frame per level. Each case
runs in a child process, since an overflow is a segfault; the child prints each
step as it starts, so a crash names the step.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rkit import run_python

KiB = 1 << 10


def platform_minimum() -> int:
    try:
        return max(int(os.sysconf("SC_THREAD_STACK_MIN")), 16 * KiB)
    except (ValueError, OSError, AttributeError):
        return 16 * KiB


IN_A_THREAD = r"""
import json, sys, threading
from pathlib import Path
from agent_transcript import Message, Session, canonical_json, _core

stack, folder, depth = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
outcome = []

def nested(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value

def step(name):
    print(name, flush=True)

def work():
    path = folder / f"run-{depth}.jsonl"
    # A message whose extra nests as deep as a line may: the line's object, the
    # payload and `depth - 2` levels of lists.
    value = nested(depth - 2)
    step("create and append")
    with Session.create(path) as s:
        s.append_message(Message.user("hi"), extra={"x": value})
    step("load")
    with Session.load(path) as s:
        step("messages and events")
        s.messages
        assert list(s.events)[1].payload["x"] == value
    step("peek")
    p = Session.peek(path)
    assert p.error is None and len(p.envelopes) == 2 and p.envelopes[1].payload["x"] == value
    step("follow")
    assert len(list(Session.follow(path, idle_timeout=0))) == 2
    step("codec")
    text = json.dumps(nested(depth))
    assert canonical_json(_core.loads(text)) == text.replace(" ", "")
    outcome.append("ok")

threading.stack_size(stack)
t = threading.Thread(target=work)
t.start()
t.join()
print(outcome[0] if outcome else "failed")
"""

STDLIB = r"""
import json, sys, threading
stack, depth = int(sys.argv[1]), int(sys.argv[2])
text = "[" * depth + "]" * depth
out = []
def work():
    json.dumps(json.loads(text))
    out.append("ok")
threading.stack_size(stack)
t = threading.Thread(target=work)
t.start()
t.join()
print(out[0] if out else "failed")
"""


def run_in_thread(folder: Path, stack: int, depth: int) -> None:
    proc = run_python(IN_A_THREAD, str(stack), str(folder), str(depth), check=False)
    steps = proc.stdout.splitlines()
    assert proc.returncode == 0 and steps[-1:] == ["ok"], (
        f"in a thread of {stack // KiB} KiB, nesting {depth}: exit {proc.returncode}, "
        f"last step {steps[-1:]}\n{proc.stderr[-2000:]}")


def test_a_two_line_transcript_in_a_64_kib_thread(tmp_path: Path) -> None:
    run_in_thread(tmp_path, max(64 * KiB, platform_minimum()), 3)


def test_the_deepest_nesting_in_the_smallest_thread_the_standard_library_needs(tmp_path: Path) -> None:
    # The smallest of these stacks in which json.loads and json.dumps handle
    # 512 levels on this platform: the core must not need more than they do.
    for stack in (64 * KiB, 96 * KiB, 128 * KiB, 192 * KiB, 256 * KiB):
        if stack < platform_minimum():
            continue
        if run_python(STDLIB, str(stack), "512", check=False).stdout.split()[-1:] == ["ok"]:
            break
    else:
        pytest.skip("the standard library's json needs more than 256 KiB here")
    run_in_thread(tmp_path, stack, 512)
