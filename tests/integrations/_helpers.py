"""Shared by the integration tests: every file an adapter writes must check clean and load."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from agent_transcript import Session


def assert_checks_and_loads(path: Path) -> Session:
    """``agent-transcript check`` says clean (exit 0) and ``Session.load`` opens it
    without a warning; returns the loaded session, closed."""
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "check", str(path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    with Session.load(path) as s:
        assert s.warnings == []
    return s


def kill_9_when(marker: Path, args: list[str], *, env: dict[str, str] | None = None) -> None:
    """Run ``args`` and ``SIGKILL`` it as soon as ``marker`` exists (its tool
    writes it, then hangs); fails if it ends first or never writes it."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert p.poll() is None, p.communicate()[1].decode()
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        reap(p)


def reap(p: subprocess.Popen[Any]) -> None:
    """Kill ``p`` if it still runs, wait for it, and close its pipes."""
    if p.poll() is None:
        p.kill()
        p.wait()
    p.stdout.close()  # type: ignore[union-attr]
    p.stderr.close()  # type: ignore[union-attr]


def child_env() -> dict[str, str]:
    """The environment of a helper process: no tracing, no API key needed."""
    env = dict(os.environ)
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    env.setdefault("OPENAI_API_KEY", "sk-offline-test")
    return env


def close_default_loop() -> None:
    """Close the thread's default event loop, if one is set and idle.

    Both frameworks' ``run_sync`` leave it open on purpose (for their next call);
    a later ``asyncio.run`` unsets it, and its sockets are then reported as
    leaked (warnings are errors here). Call this after the last ``run_sync`` of a
    sequence; the integration tests' conftest calls it after every test.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


def calls_and_outputs_pair(items: list[Any]) -> bool:
    """What the Responses API checks of an input: every ``*_call`` item's call id is
    answered once by a ``*_call_output`` after it, and every output answers a call
    before it (an unanswered call or an orphan output is a 400)."""
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    for item in items:
        kind, call_id = item.get("type"), item.get("call_id")
        if not isinstance(kind, str) or not isinstance(call_id, str):
            continue
        if kind.endswith("_call_output"):
            if open_calls.pop(call_id, None) is None:
                return False
            answered.add(call_id)
        elif kind.endswith("_call"):
            if call_id in open_calls or call_id in answered:
                return False
            open_calls[call_id] = 1
    return not open_calls
