"""``ls``, ``export`` and the readers on folders a careless world leaves (issue 28):
a folder that cannot be listed, a JSONL file whose ``"type"`` is no string, a
name that is not UTF-8.

The unreadable-folder checks run their child as root without capabilities
(``setpriv --bounding-set=-all``): root reads any folder whatever its mode, and
root without ``CAP_DAC_READ_SEARCH`` does not, while it still runs this
interpreter wherever it is installed (another user may not read ``/root``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from agent_transcript.fleet import list_transcripts

#: A child that is root without capabilities: a folder's mode binds it.
CAPLESS = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]


def cli(*args: object, capless: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = CAPLESS if capless else []
    return subprocess.run([*prefix, sys.executable, "-m", "agent_transcript", *map(str, args)],
                          capture_output=True, text=True, timeout=300, errors="surrogateescape")


def transcript(path: Path, title: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with Session.create(path) as s:
        s.append_message(Message(role="user", content=title))
    return path


@pytest.fixture
def home() -> Iterator[Path]:
    """A folder of its own, outside pytest's temporary tree."""
    base = Path(tempfile.mkdtemp(prefix="at-fleet-"))
    try:
        yield base
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=True)  # what a test made unreadable
        shutil.rmtree(base)


def sessions_rows(out: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(pq.read_table(out / "sessions").column("session").to_pylist())


# -- a folder that cannot be listed -----------------------------------------------

@pytest.mark.parametrize("which", ["sub-folder", "root"])
def test_export_keeps_the_rows_of_a_folder_it_cannot_list(home: Path, which: str) -> None:
    root = home / "runs"
    for name in ("sub/a.jsonl", "sub/deeper/b.jsonl", "c.jsonl"):
        transcript(root / name, name)
    out = home / "out"
    first = cli("export", root, "-o", out, capless=True)
    assert first.returncode == 0, first.stderr
    before = sessions_rows(out)
    assert len(before) == 3
    hidden = root / "sub" if which == "sub-folder" else root
    os.chmod(hidden, 0o000)
    again = cli("export", root, "-o", out, "--json", capless=True)
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"{hidden}: not read (permission denied)" in again.stderr
    assert again.stderr.count("\n") == 1
    result = json.loads(again.stdout)
    assert result["removed"] == []
    assert result["unreadable"] == [{"path": str(hidden), "reason": "permission denied"}]
    assert sessions_rows(out) == before
    # readable again: nothing was lost, nothing to do
    os.chmod(hidden, 0o700)
    last = cli("export", root, "-o", out, capless=True)
    assert last.returncode == 0 and "gone" not in last.stdout, last.stdout + last.stderr
    assert sessions_rows(out) == before


def test_ls_says_a_folder_it_cannot_list(home: Path) -> None:
    root = home / "runs"
    transcript(root / "sub" / "a.jsonl", "a")
    transcript(root / "c.jsonl", "c")
    os.chmod(root / "sub", 0o000)
    listed = cli("ls", root, "--json", capless=True)
    assert listed.returncode == 0, listed.stderr
    rows = {Path(r["path"]).name: r for r in json.loads(listed.stdout)}
    assert sorted(rows) == ["c.jsonl", "sub"]
    assert rows["sub"]["status"] == "unreadable" and "permission denied" in rows["sub"]["reason"]
    text = cli("ls", root, capless=True)
    assert "unreadable" in text.stdout and f"{root / 'sub'}" in text.stdout, text.stdout
    # an unreadable root: one line on stderr, exit 2
    os.chmod(root, 0o000)
    refused = cli("ls", root, capless=True)
    assert refused.returncode == 2 and "permission denied" in refused.stderr, refused.stderr


def test_list_transcripts_yields_a_row_for_a_folder_it_cannot_list(home: Path) -> None:
    transcript(home / "sub" / "a.jsonl", "a")
    transcript(home / "c.jsonl", "c")
    os.chmod(home / "sub", 0o000)
    child = ("import sys; from agent_transcript.fleet import list_transcripts\n"
             "for r in list_transcripts(sys.argv[1]): print(r.path.name, r.status, r.reason, sep='|')")
    done = subprocess.run([*CAPLESS, sys.executable, "-c", child, str(home)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines()]
    assert [(name, status) for name, status, _ in rows] == [("c.jsonl", "clean"), ("sub", "unreadable")]
    assert "permission denied" in rows[1][2]


# -- a "type" that is a list or an object ---------------------------------------

ODD = [{"type": ["user"], "x": 1}, {"type": {"a": 1}, "payload": {}, "timestamp": "t"}]


@pytest.fixture
def odd_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    transcript(folder / "good.jsonl", "good")
    for i, record in enumerate(ODD):
        (folder / f"odd{i}.jsonl").write_text(json.dumps(record) + "\n")
    return folder


def test_a_type_that_is_no_string_is_listed(odd_folder: Path) -> None:
    rows = {r.path.name: r for r in list_transcripts(odd_folder)}
    assert rows["good.jsonl"].status == "clean"
    assert {rows[f"odd{i}.jsonl"].status for i in range(len(ODD))} == {"not a transcript"}
    listed = cli("ls", odd_folder)
    assert listed.returncode == 0 and "odd0.jsonl" in listed.stdout and "odd1.jsonl" in listed.stdout, listed.stderr


@pytest.mark.parametrize("command", ["check", "show", "stats", "import"])
def test_a_type_that_is_no_string_is_refused_in_one_line(odd_folder: Path, command: str) -> None:
    for i in range(len(ODD)):
        args = [odd_folder / f"odd{i}.jsonl"] + (["-o", odd_folder / "out.jsonl"] if command == "import" else [])
        done = cli(command, *args)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_type_that_is_no_string_is_in_the_picker(odd_folder: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from viewer.serving import served

    with served(odd_folder) as base:
        with urllib.request.urlopen(base, timeout=30) as answer:
            page = answer.read().decode()
    assert "3 transcripts" in page and "odd0.jsonl" in page and "odd1.jsonl" in page


# -- a name that is not UTF-8 ------------------------------------------------------

def test_export_of_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    folder = tmp_path / "runs"
    odd = Path(os.fsdecode(bytes(folder / "odd") + b"\xff\xfe.jsonl"))
    transcript(odd, "odd name")
    transcript(folder / "plain.jsonl", "plain")
    out = tmp_path / "out"
    done = cli("export", folder, "-o", out)
    assert done.returncode == 0, done.stderr
    sessions = pq.read_table(out / "sessions").column("session").to_pylist()
    messages = pq.read_table(out / "messages").to_pydict()
    hexed = "hex:" + os.fsencode(odd).hex()
    assert sorted(sessions) == sorted([hexed, str(folder / "plain.jsonl")])
    assert bytes.fromhex(hexed[4:]) == os.fsencode(odd)
    assert dict(zip(messages["session"], messages["text"]))[hexed] == "odd name"
    # the manifest knows it: a second export skips it, a removal removes its rows
    again = cli("export", folder, "-o", out, "--json")
    assert again.returncode == 0 and len(json.loads(again.stdout)["skipped"]) == 2, again.stdout + again.stderr
    odd.unlink()
    gone = cli("export", folder, "-o", out, "--json")
    assert json.loads(gone.stdout)["removed"] == [str(odd)]
    assert pq.read_table(out / "sessions").column("session").to_pylist() == [str(folder / "plain.jsonl")]
