"""``agent-transcript demo``: the whole story, narrated, on a scratch transcript.

A scripted agent (``agent_transcript.demo.agent``) runs in a child process
and is killed with SIGKILL while a line is half written and two tool calls are
in flight. Then, in this process: ``peek`` (read-only), ``check`` (what load
would do), ``load`` (the repair and its warning), ``pending_tool_operations``,
``resolve_tool_operation``, a resumed run appending to the same file. It fits
one screen; ``verbose`` tells each step at length and ends with the transcript
as ``show`` prints it. No model, no network; the files stay.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import Message, Session, SessionLocked, digest
from ..inspect import CheckReport, check_path, compact, content_text, describe_os_error, tool_call_parts
from .agent import RUN_ID, tool_call

__all__ = ["run", "Terminal", "DemoError"]


class DemoError(Exception):
    """The demo cannot run: its directory is not usable, or the scripted agent failed."""


@dataclass(frozen=True)
class Terminal:
    """What the demo prints with, handed in by the front end that runs it.

    Attributes:
        style: ``style(text, *names)``: ``text`` in the named styles (``"bold"``, ``"red"``, ...).
        width: the terminal's width in columns.
        check_line: the one line ``agent-transcript check`` prints for a report.
        show: prints the transcript at a path as ``agent-transcript show`` does.
    """

    style: Callable[..., str]
    width: int
    check_line: Callable[[CheckReport], str]
    show: Callable[[str], None]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


class _Narrator:
    """Prints the story: its short form, and with ``verbose`` the longer telling too."""

    def __init__(self, style: Callable[..., str], width: int, verbose: bool) -> None:
        self.s = style
        self.width = width
        self.verbose = verbose
        self.step = 0

    def out(self, text: str = "") -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def title(self, what: str, code: str = "") -> None:
        self.step += 1
        self.out()
        head = self.s(f"{self.step}. {what}", "bold")
        self.out(head + (("  " + self.s(code, "cyan")) if code else ""))

    def say(self, text: str) -> None:
        for line in textwrap.wrap(text, max(40, self.width - 3)) or [""]:
            self.out("   " + line)

    def more(self, text: str) -> None:
        """What only the long telling (``--verbose``) says."""
        if self.verbose:
            self.say(text)

    def show(self, text: str, *styles: str) -> None:
        """``text`` indented, each line cut to the width unless verbose (a person
        reads the story on one screen; the whole line is in the files)."""
        for line in text.splitlines() or [""]:
            self.out("     " + self.s(line if self.verbose else _clip(line, self.width - 5), *styles))


def _start_agent(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "agent_transcript.demo.agent", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_ready(child: subprocess.Popen[bytes], timeout: float) -> None:
    """Waits for the child's ``ready``; raises DemoError if it dies or dawdles."""
    assert child.stdout is not None
    deadline = time.monotonic() + timeout
    buf = b""
    while b"ready\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            child.kill()
            child.wait()
            raise DemoError(f"demo: the scripted agent did not get to its crash point within {timeout:.0f} s")
        ready, _, _ = select.select([child.stdout], [], [], left)
        if ready:
            chunk = os.read(child.stdout.fileno(), 4096)
            if not chunk:
                child.wait()
                err = child.stderr.read().decode(errors="replace").strip() if child.stderr else ""
                last = err.splitlines()[-1] if err else f"exit status {child.returncode}"
                raise DemoError(f"demo: the scripted agent failed before its crash point: {last}")
            buf += chunk


def run(directory: str | None, terminal: Terminal, verbose: bool = False) -> int:
    """Runs the demo in ``directory`` (a new temporary one when None); returns 0.

    The story fits one screen; ``verbose`` tells each step at length and ends
    by showing the whole transcript.

    Raises:
        DemoError: the directory holds an earlier demo's files or cannot be
            written, or the scripted agent failed.
    """
    started = time.monotonic()
    s = terminal.style
    width = terminal.width
    n = _Narrator(s, width, verbose)
    where = _directory(directory)
    path = where / "run.jsonl"
    crashed = where / "crashed.jsonl"
    for existing in (path, crashed):
        if existing.exists():
            raise DemoError(f"{existing}: exists (from an earlier demo?); give an empty or new directory")

    n.out(s("agent-transcript demo", "bold") + ": an agent killed mid-tool-call, and what happens next")
    n.out(f"   files: {where}/ (kept)")

    # 1. The run that crashes.
    child = _start_agent(path)
    n.title("A scripted agent runs in a child process", f"pid {child.pid}")
    n.more(
        "No model and no network: it appends what a real loop appends — meta, run context, "
        "the system prompt, a user turn, grants, two rounds of tool calls (one with an artifact), "
        "an elision, a compaction — and then dispatches write_file and run_tests together."
    )
    _wait_ready(child, timeout=30)
    child.send_signal(signal.SIGKILL)
    child.wait()
    if child.stdout:
        child.stdout.close()
    if child.stderr:
        child.stderr.close()
    size = path.stat().st_size
    n.say(
        f"It writes what a real loop writes, dispatches write_file and run_tests together, and "
        f"halfway through a line gets SIGKILL (kill -9 {child.pid}). The file is {size:,} bytes."
    )
    shutil.copyfile(path, crashed)
    os.chmod(crashed, 0o600)
    if (where / "run.artifacts").is_dir():
        shutil.copytree(where / "run.artifacts", where / "crashed.artifacts")

    # 2. peek.
    n.title("Read it without opening it", "Session.peek(path)")
    peek = Session.peek(path)
    n.say(
        f"No lock, no repair, safe while a writer holds it: {len(peek.envelopes)} envelopes parse, "
        f"{len(peek.messages)} of them messages. Skipped:"
    )
    for w in peek.warnings:
        n.show(w, "yellow")

    # 3. check.
    n.title("What would load do?", f"agent-transcript check {path.name}")
    report = check_path(str(path))
    n.show(terminal.check_line(report).replace(str(path), path.name), "yellow")
    n.say(f"exit status {report.exit_code}: a torn tail that load repairs. check wrote nothing.")

    # 4. load: the repair.
    n.title("Load it: repair, then replay", "Session.load(path)")
    session = Session.load(path)
    for w in session.warnings:
        n.show("warning: " + w, "yellow")
    written = sum(1 for e in session.events if e.type == "message")
    n.more(
        f"The good prefix was copied to run.jsonl.repair and renamed over the file: "
        f"{path.stat().st_size:,} bytes now."
    )
    n.say(
        f"Replay applied the compaction and the elision: {len(session.messages)} live messages from "
        f"{written} message lines, the list the agent had when it died:"
    )
    for m in session.messages:
        text = content_text(m.content) or ""
        calls = ", ".join(tool_call_parts(c).name for c in (m.tool_calls or []))
        line = f"{m.role:<9} " + _clip(text.replace("\n", " "), max(20, width - 40))
        if calls:
            line += f"  -> {calls}"
        n.show(line)
    n.more("grants (the last snapshot), handed back to the permission policy so the human is not asked twice:")
    n.show(("" if verbose else "grants ") + compact(session.grants), "green")

    # 5. pending tool operations.
    n.title("Which tool calls were interrupted?", "session.pending_tool_operations()")
    pending = session.pending_tool_operations()
    for op in pending:
        if verbose:
            meaning = (f"idempotency={op.idempotency}  (its result is in the file, its settle line is not: "
                       "it completed)" if op.state == "result-persisted" else
                       f"idempotency={op.idempotency}  (no result: it may or may not have run)")
        else:
            meaning = "its result is in the file" if op.state == "result-persisted" else "it may or may not have run"
        n.show(f"{op.tool:<11} {op.call_id}  {op.state:<17} {meaning}", "yellow")

    # 6. resolve them.
    n.title("The app decides, and writes it down", "session.resolve_tool_operation(op_id)")
    unanswered: list[Any] = []
    for op in pending:
        outcome = None if op.state == "result-persisted" else "outcome-unknown"
        session.resolve_tool_operation(op.op_id, outcome)
        chosen = "completed" if op.state == "result-persisted" else "outcome-unknown"
        n.show(f"{op.tool:<11} -> {chosen}")
        if op.state == "dispatched":
            unanswered.append(op)
    for op in unanswered:
        note = (
            f"[interrupted: the agent was killed while {op.tool} was running; whether it ran is unknown. "
            "Run it again if it is safe to.]"
        )
        session.append_message(Message.tool(op.call_id, note))
        n.say(f"A model must see an answer to every tool call: the app appends a tool message for "
              f"{op.call_id} that says what happened.")
        n.more(
            f"{op.tool} ({op.call_id}) had no answer in the conversation. (Dropping the turn instead "
            f"would be the other honest choice; the library makes neither for you.)"
        )
    left = session.pending_tool_operations()
    n.say(f"pending_tool_operations() now: {left!r}")

    # 7. The resumed run.
    n.title("A resumed run appends to the same file", "session.append_message(...)")
    try:
        Session.load(path)
        n.say("(a second load got in: that should not happen)")
    except SessionLocked as exc:
        n.say("Meanwhile another writer is refused at once"
              + (f" — SessionLocked: {exc}" if verbose else ": SessionLocked."))
    session.append_message(Message.user("and now the tests, please"))
    call = tool_call("call_5", "run_tests", {"args": ["-q", "tests/test_dates.py"]})
    session.append_message(Message.assistant("Running the tests again.", tool_calls=[call]))
    op_id = session.append_tool_dispatched(
        "call_5", "run_tests", call["function"]["arguments"], idempotency="unknown", run_id="run-2", round=1
    )
    result = "12 passed in 0.31s"
    session.append_message(Message.tool("call_5", result))
    session.append_tool_settled(op_id, "completed", duration=0.412, result_digest=digest(result))
    session.append_message(
        Message.assistant("Fixed: parse() now accepts timestamps without a fraction. 12 tests pass."),
        extra={"finish-reason": "stop"},
    )
    n.say(
        f"Run run-2 (the first was {RUN_ID}): the user's next turn, a fresh run_tests call and its "
        f"settle, and the answer; {len(session.messages)} live messages. Then close()."
    )
    session.close()
    final = check_path(str(path))
    n.show(terminal.check_line(final).replace(str(path), path.name), "green")

    # 8. The transcript (the long telling only: it is as long as the rest).
    if verbose:
        n.title("The transcript, as a person reads it", f"agent-transcript show {path}")
        n.out()
        terminal.show(str(path))

    elapsed = time.monotonic() - started
    n.out()
    n.out(s(f"done in {elapsed:.1f} s. The files are in {where}/:", "bold"))
    n.out("   run.jsonl      the transcript, repaired and resumed")
    n.out("   crashed.jsonl  a copy as the kill left it (torn last line)")
    n.out("   run.artifacts/ the search output too big for the conversation")
    n.out("Try:" + ("" if verbose else "  (or demo --verbose: each step at length, and the transcript)"))
    for cmd in (
        f"cd {where}",
        f"agent-transcript show {path.name}",
        f"agent-transcript show --replayed {path.name}",
        f"agent-transcript stats {path.name}",
        f"agent-transcript check {crashed.name}",
        f"agent-transcript show --type tool-dispatched,tool-settled {crashed.name}",
    ):
        n.out("   " + s(cmd, "cyan"))
    return 0


def _directory(directory: str | None) -> Path:
    """The demo's folder: ``directory``, made if missing, or a new temporary one."""
    if directory is None:
        return Path(tempfile.mkdtemp(prefix="agent-transcript-demo-"))
    where = Path(directory)
    not_a_directory = f"{directory}: not a directory; give an empty or new directory"
    if where.exists() and not where.is_dir():  # /dev/null, a file: mkdir would say "File exists"
        raise DemoError(not_a_directory)
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        raise DemoError(not_a_directory) from None
    except OSError as exc:
        raise DemoError(describe_os_error(exc, directory)) from None
    if not where.is_dir():
        raise DemoError(not_a_directory)
    return where
