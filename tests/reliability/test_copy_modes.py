"""Every file made from a transcript is 0600 and every folder made for it 0700,
whatever the umask (SPEC, "The file"): a copy never reads wider than its source.

Each command that makes files runs in a child with the usual umask (022), which
would leave a file made with 0o666 at 0644 and a folder at 0755.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from agent_transcript import Message, Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from formats.sources import BASIC, lines  # noqa: E402


def _transcript(path: Path, messages: int = 4) -> Path:
    with Session.create(path) as s:
        for i in range(messages):
            s.append_message(Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i}"))
    os.chmod(path, 0o600)
    return path


def _cli_with_umask(*args: object) -> subprocess.CompletedProcess[str]:
    command = " ".join(f"'{a}'" for a in [sys.executable, "-m", "agent_transcript", *map(str, args)])
    return subprocess.run(["sh", "-c", f"umask 022 && exec {command}"], capture_output=True, text=True, timeout=300)


def _html_single(src: Path, out: Path) -> list[object]:
    return ["html", "--single", src, "-o", out / "page.html"]


def _html_pages(src: Path, out: Path) -> list[object]:
    return ["html", "--pages", src, "-o", out / "nested" / "pages"]


def _export(src: Path, out: Path) -> list[object]:
    return ["export", src.parent, "-o", out / "nested" / "export"]


def _import(src: Path, out: Path) -> list[object]:
    cc = src.parent / "claude.jsonl"
    cc.write_bytes(lines(*BASIC))
    os.chmod(cc, 0o600)
    return ["import", cc, "-o", out / "nested" / "imported.jsonl"]


def _import_folder(src: Path, out: Path) -> list[object]:
    tree = src.parent / "claude"
    (tree / "project").mkdir(parents=True)
    (tree / "project" / "session.jsonl").write_bytes(lines(*BASIC))
    return ["import", tree, "-o", out / "nested" / "imported"]


def _fork(src: Path, out: Path) -> list[object]:
    return ["fork", src, out / "nested" / "fork.jsonl"]


def _archive(src: Path, out: Path) -> list[object]:
    copy = out / "closed.jsonl"
    _transcript(copy)
    return ["archive", copy]


COMMANDS: dict[str, Callable[[Path, Path], list[object]]] = {
    "html-single": _html_single, "html-pages": _html_pages, "export": _export, "import": _import,
    "import-folder": _import_folder,
    "fork": _fork, "archive": _archive,
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_what_a_command_makes_is_owner_only(tmp_path: Path, command: str) -> None:
    src = _transcript(tmp_path / "in" / "run.jsonl")
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    args = COMMANDS[command](src, out)
    before = {p for p in out.rglob("*")}
    done = _cli_with_umask(*args)
    assert done.returncode == 0, done.stderr
    made = sorted(p for p in out.rglob("*") if p not in before)
    assert any(p.is_file() for p in made), made
    wider = {str(p.relative_to(out)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in made
             if stat.S_IMODE(p.lstat().st_mode) != (0o700 if p.is_dir() else 0o600)}
    assert wider == {}
