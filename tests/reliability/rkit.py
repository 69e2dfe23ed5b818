"""Shared pieces of the reliability suite: scale, figures, real faults, fixtures.

Every scenario runs in the normal ``python -m pytest`` with few cases; with
``AT_LONG=1`` the same tests scale up (``run_long.py`` does that and prints the
figures each test reports through :func:`figure`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_transcript import Message, Session

HERE = Path(__file__).resolve().parent
LONG = os.environ.get("AT_LONG") == "1"


def scale(ci: int, long: int) -> int:
    """``long`` under ``AT_LONG=1``, else ``ci``."""
    return long if LONG else ci


def figure(scenario: str, **fields: Any) -> None:
    """Report one scenario's figures: printed, and appended to ``$AT_FIGURES`` if set."""
    record = {"scenario": scenario, "long": LONG, **fields}
    print(f"FIGURE {json.dumps(record, sort_keys=True)}")
    out = os.environ.get("AT_FIGURES")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


# -- real filesystems ---------------------------------------------------------


@contextlib.contextmanager
def tmpfs(size: str = "256m") -> Iterator[Path]:
    """A private tmpfs of ``size`` mounted for the duration (we run as root).

    Fails, never skips, when it cannot be mounted: the scenarios that need a
    real full disk must not turn green without one.
    """
    where = Path(tempfile.mkdtemp(prefix="at-tmpfs-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                   check=True)
    try:
        yield where
    finally:
        # A session left open (a test that failed) holds the mount until it is collected.
        for _ in range(5):
            if subprocess.run(["umount", str(where)], capture_output=True).returncode == 0:
                break
            gc.collect()
            time.sleep(0.05)
        else:
            subprocess.run(["umount", "-l", str(where)], check=False)
        shutil.rmtree(where, ignore_errors=True)


_SHIM: Path | None = None


def fault_shim() -> Path:
    """Build ``faultshim.c`` into a shared object once per run; gcc is required."""
    global _SHIM
    if _SHIM is not None and _SHIM.exists():
        return _SHIM
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise AssertionError("gcc is needed to build the LD_PRELOAD fault shim, and it is missing")
    out = Path(tempfile.mkdtemp(prefix="at-shim-")) / "faultshim.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O2", "-U_FORTIFY_SOURCE", "-o", str(out),
                    str(HERE / "faultshim.c"), "-ldl"], check=True)
    _SHIM = out
    return out


def fault_env(op: str, match: str, *, nth: int = 1, count: int = 1, errno_: int = 5,
              partial: int = 0, action: str = "fail", target: str = "", also: str = "",
              also_errno: int = 0, log: Path | None = None) -> dict[str, str]:
    """The environment of a child process whose ``op`` call on ``*match`` fails for real."""
    env = dict(os.environ)
    env.update({
        "LD_PRELOAD": str(fault_shim()),
        "AT_FAULT_OP": op,
        "AT_FAULT_MATCH": match,
        "AT_FAULT_NTH": str(nth),
        "AT_FAULT_COUNT": str(count),
        "AT_FAULT_ERRNO": str(errno_),
        "AT_FAULT_PARTIAL": str(partial),
        "AT_FAULT_ACTION": action,
        "AT_FAULT_TARGET": target,
        "AT_FAULT_ALSO": also,
        "AT_FAULT_ALSO_ERRNO": str(also_errno),
    })
    if log is not None:
        env["AT_FAULT_LOG"] = str(log)
    return env


def run_python(code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120,
               check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (the one running the tests)."""
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


# -- a realistic transcript ---------------------------------------------------

BIG_LINE_CHARS = 34_000  # about 72 KB of UTF-8: over 64 KiB, the tail scan's step


def realistic_transcript(path: Path) -> list[bytes]:
    """Write a transcript with every envelope type (a compaction with a
    replacement and rewinds among them), ASCII and multi-byte text and one line
    over 64 KiB; returns its lines (each with its ``\\n``)."""
    with Session.create(path, {"agent": "reliability", "model": "test-model", "cwd": "/tmp/ü"}) as s:
        sys_id = s.append_message(Message.system("You are careful. Ünïcödé ✓"))
        s.append_run_context([("identity", "I am the agent."), ("agents.md", "Be brief 🚀")],
                             [("date", "2026-08-09"), ("branch", "main")])
        u1 = s.append_message(Message.user("héllo — 日本語のテキスト 🚀🚀"), {"finish-reason": "stop"})
        call = {"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"a.txt\"}"}}
        s.append_message(Message.assistant(None, [call]))
        op = s.append_tool_dispatched("call_1", "read_file", '{"path": "a.txt"}',
                                      idempotency="read-only", run_id="run-1", round=1)
        big = ("Ω≈ç√∫ 🚀 " * (BIG_LINE_CHARS // 9))[:BIG_LINE_CHARS]
        art = s.write_artifact(big, excerpt=big[:100])
        t1 = s.append_message(Message.tool("call_1", big))
        s.append_tool_settled(op, "completed", duration=0.25, result_digest="sha256:" + "0" * 64,
                              artifact=art)
        s.append_grants({"read_file": "always", "write_file": {"paths": ["/tmp/ü"]}})
        a1 = s.append_message(Message.assistant("Done: \u2028 \x00 \ud800 ascii"))
        s.append_elision([(t1, f"[elided {BIG_LINE_CHARS} chars]")])
        s.append_compaction("The user said hello; the file was read.", a1, 1200, 80)
        s.append_run_context([("identity", "I am the agent."), ("new", "ñ")], [("date", "2026-08-10")])
        op2 = s.append_tool_dispatched("call_2", "write_file", {"path": "b", "text": "ß"})
        u2 = s.append_message(Message.user("and now the tests"), {"x-extra": [1, 2.5, None, True]})
        # A compaction whose result is several messages, one of them named by later lines.
        k = s.append_compaction("Kept the system prompt and the last turn ✓", u2, 300, 40, replacement=[
            Message.system("You are careful. Ünïcödé ✓"),
            (Message.user("and now the tests — 日本語"), {"item": {"id": "msg_1", "n": [1, 2.5]}}),
            Message.assistant("On it 🚀"),
        ])
        s.append_elision([(f"{k}:1", "[the turn]")])
        s.append_rewind(f"{k}:1")
        s.append_message(Message.user("after the rewind ✓"))
        s.append_rewind(None)
        s.append_message(Message.user("from scratch"))
        del sys_id, u1, op2
    lines = path.read_bytes().splitlines(keepends=True)
    assert any(len(line) > 65_536 for line in lines)
    return lines


# -- comparing what came back ---------------------------------------------------


def same_json(a: Any, b: Any) -> bool:
    """Deep equality that tells ``1`` from ``1.0`` and ``True``, and ``0.0`` from ``-0.0``
    (iterative: values nest 512 deep)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif type(x) is not type(y):
            return False
        elif isinstance(x, float):
            if not ((x == y and math.copysign(1, x) == math.copysign(1, y)) or (x != x and y != y)):
                return False
        elif isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


def event_view(session: Session) -> list[tuple[str, str, Any]]:
    return [(e.id, e.type, e.payload) for e in session.events]


def no_stray_files(folder: Path) -> list[str]:
    """Names in ``folder`` that a repair must not leave behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".repair"))
