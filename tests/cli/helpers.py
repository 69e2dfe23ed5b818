"""Shared by the command line's tests (tests/cli/test_*.py): running it, and its fixtures.

The fixtures are in tests/data/cli/, written by tests/cli/make_fixtures.py.
Every command runs as a real subprocess, ``python -m agent_transcript ...``,
with a fixed time zone and width so that its output can be compared.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "cli"

ANSI = "\x1b["


def env(**extra: str) -> dict[str, str]:
    """The environment the command runs in: UTC, 100 columns, no NO_COLOR."""
    e = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "COLUMNS", "TZ")}
    e.update({"TZ": "UTC", "COLUMNS": "100", "PYTHONUTF8": "1"})
    e.update(extra)
    return e


def run(*args: str | os.PathLike[str], timeout: float = 60, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """``python -m agent_transcript ARGS``; its exit status and output, as text."""
    return subprocess.run(
        [sys.executable, "-m", "agent_transcript", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env=env(**extra_env),
    )


def fixture(name: str, into: Path) -> Path:
    """A copy of the fixture ``name`` in ``into`` (with its artifacts folder, if any)."""
    src = DATA / name
    dst = into / name
    shutil.copyfile(src, dst)
    arts = src.with_suffix(".artifacts")
    if arts.is_dir():
        shutil.copytree(arts, into / arts.name)
    return dst


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """Asserts the bad-input contract (exit 2, one line on stderr, no traceback) and returns the line."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agent-transcript: ")
    return lines[0]
