"""Shared by the integration tests: every file an adapter writes must check clean and load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def child_env() -> dict[str, str]:
    """The environment of a helper process: no tracing, no API key needed."""
    env = dict(os.environ)
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    env.setdefault("OPENAI_API_KEY", "sk-offline-test")
    return env
