"""Odd paths given to the commands that write beside a transcript, and to the
importer's reading: names of up to 255 bytes (legal everywhere, too long for a
suffix), FIFOs and devices.

* A transcript name of 251 to 255 bytes still has its artifacts: the folder
  ``<stem>.artifacts`` does not fit, so it is cut and tagged with the stem's
  digest (the rule of the repair file's name), and every reader (the session,
  ``stats``, the page) finds it there.
* ``archive`` of a name of 249 to 251 bytes: ``<name>.zst`` fits but
  ``<name>.zst.partial`` does not, so that one is cut; one of 252 or more, whose
  ``.zst`` cannot exist, is refused before anything is written.
* ``html -o`` a name of 250 to 255 bytes: its temporary file fits beside it;
  one of 256 or more is refused in its own name, and nothing is left behind.
* A ``create`` or ``fork`` that fails (a full disk) removes the folders it made.
* ``import`` of a FIFO or a device is refused at once (it used to wait for a
  writer forever); a folder import skips them.
* ``html -o`` and ``import --force -o`` onto a FIFO or a socket are refused and
  leave it as it was (a page written to ``/dev/null`` used to leave a regular
  file in its place); a symlink left where a page's temporary file goes is
  removed, never written through.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from agent_transcript.artifacts import artifacts_folder
from agent_transcript.formats import detect_format, import_transcript
from agent_transcript.viewer.render import check_artifact
from rkit import tmpfs

OUTPUT = "a long tool output ✓\n" * 500
#: A one-record Claude Code session, for ``import``.
CLAUDE_LINE = json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
                          "sessionId": "s1", "version": "2.1.40", "type": "user", "uuid": "u1",
                          "timestamp": "2026-03-01T10:00:00.000Z",
                          "message": {"role": "user", "content": "hello"}}).encode() + b"\n"


def cli(*args: object, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, encoding="utf-8", timeout=timeout)


def name_of(length: int, unit: str = "x", suffix: str = ".jsonl") -> str:
    """A name of exactly ``length`` bytes ending in ``suffix``, of ``unit`` characters."""
    body = length - len(suffix.encode())
    width = len(unit.encode())
    return unit * (body // width) + "x" * (body % width) + suffix


def with_artifact(path: Path) -> dict[str, object]:
    with Session.create(path) as s:
        s.append_message(Message.user("read the log"))
        art = s.write_artifact(OUTPUT, excerpt=OUTPUT[:40])
        op = s.append_tool_dispatched("c1", "cat", {"path": "big.log"})
        s.append_tool_settled(op, "completed", artifact=art)
    return art


@pytest.mark.parametrize("length", [240, 250, 251, 252, 254, 255])
@pytest.mark.parametrize("unit", ["x", "é"])
def test_a_transcript_of_a_long_name_keeps_its_artifacts(tmp_path: Path, length: int, unit: str) -> None:
    path = tmp_path / name_of(length, unit)
    art = with_artifact(path)
    folder = artifacts_folder(path)
    assert len(os.fsencode(folder.name)) <= 255
    if len(os.fsencode(path.stem + ".artifacts")) <= 255:
        assert folder.name == path.stem + ".artifacts"  # the documented name wherever it fits
    assert (folder / str(art["file"])).read_text(encoding="utf-8") == OUTPUT
    with Session.load(path) as s:
        assert s.read_artifact(art) == OUTPUT.encode()
    stats = cli("stats", path, "--json")
    assert stats.returncode == 0, stats.stderr
    found = json.loads(stats.stdout)["artifacts"]
    assert (found["count"], found["missing"]) == (1, 0)
    page = tmp_path / "page.html"
    made = cli("html", path, "-o", page)
    assert made.returncode == 0, made.stderr
    assert check_artifact(str(path), art).status == "ok"  # what the page shows of it
    # An archive's artifacts are its transcript's.
    assert artifacts_folder(path.with_name(path.name + ".zst")) == folder


@pytest.mark.parametrize("length", [200, 249, 250, 251])
def test_archive_of_a_name_whose_partial_does_not_fit(tmp_path: Path, length: int) -> None:
    path = tmp_path / name_of(length)
    with Session.create(path) as s:
        for i in range(20):
            s.append_message(Message.user(f"m{i}"))
    original = path.read_bytes()
    done = cli("archive", path, "--keep")
    assert done.returncode == 0, done.stderr
    archive = path.with_name(path.name + ".zst")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, archive.name])
    assert [m.content for m in Session.peek(archive).messages] == [f"m{i}" for i in range(20)]
    assert path.read_bytes() == original


@pytest.mark.parametrize("length", [252, 255])
def test_archive_of_a_name_with_no_room_for_zst_is_refused_first(tmp_path: Path, length: int) -> None:
    path = tmp_path / name_of(length)
    with Session.create(path) as s:
        s.append_message(Message.user("keep me"))
    original = path.read_bytes()
    with pytest.raises(OSError) as e:
        Session.archive(path)
    assert e.value.errno == errno.ENAMETOOLONG and "too long" in str(e.value)
    done = cli("archive", path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert path.read_bytes() == original


@pytest.mark.parametrize("length", [250, 254, 255])
def test_html_into_a_long_name(tmp_path: Path, length: int) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hello <b>page</b>"))
    out = tmp_path / name_of(length, suffix=".html")
    made = cli("html", path, "-o", out)
    assert made.returncode == 0, made.stderr
    assert "hello" in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, out.name])


@pytest.mark.parametrize("length", [256, 300])
def test_html_into_a_name_too_long_to_exist_names_it(tmp_path: Path, length: int) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hello"))
    out = tmp_path / name_of(length, suffix=".html")
    made = cli("html", path, "-o", out)
    assert made.returncode == 2
    assert made.stderr.count("\n") == 1 and out.name in made.stderr and ".tmp" not in made.stderr, made.stderr
    assert "longer than its folder allows" in made.stderr
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_import_of_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    for source in (fifo, Path("/dev/zero")):
        with pytest.raises(OSError) as e:
            import_transcript(source, tmp_path / "out.jsonl")
        assert "not a regular file" in str(e.value)
        with pytest.raises(OSError):
            detect_format(source)
        done = cli("import", source, "-o", tmp_path / "out.jsonl", timeout=30)
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["session.jsonl"]


def test_a_folder_import_tells_a_fifo_it_could_not_read(tmp_path: Path) -> None:
    """Never opened (that would wait for a writer), never passed over in silence:
    the import would look complete. Alone in the folder, it is named in the error."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    os.mkfifo(folder / "a.jsonl")
    done = cli("import", folder, "-o", tmp_path / "out", timeout=30)
    assert done.returncode == 2 and "no file in this folder" in done.stderr, done.stderr
    assert "1 could not be read" in done.stderr and "a.jsonl" in done.stderr, done.stderr
    (folder / "b.jsonl").write_bytes(_session())
    done = cli("import", folder, "-o", tmp_path / "out", timeout=30)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [f"warning: {folder / 'a.jsonl'}: not imported: not a regular file (a FIFO)"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["b.jsonl"]
    results = import_transcript(folder, tmp_path / "out2")
    assert [(r.source.name, r.source_format, r.refused) for r in results] == [
        ("a.jsonl", "", "not a regular file (a FIFO)"), ("b.jsonl", "claude-code", None)]


def _session() -> bytes:
    """A small Claude Code session: one user line."""
    record = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "timestamp":
              "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": "hello"}}
    return json.dumps(record).encode() + b"\n"


def test_a_create_or_fork_that_fails_leaves_no_folder_it_made(tmp_path: Path) -> None:
    """On a full disk: no file, and none of the folders made for it."""
    source = tmp_path / "run.jsonl"
    with Session.create(source) as s:
        for i in range(200):
            s.append_message(Message.user(f"m{i} " + "z" * 2000))
    with tmpfs("256k") as fs:
        (fs / "filler").write_bytes(b"\0" * (256 * 1024 - 4096 * 2))  # room for a folder, not a line
        with pytest.raises(OSError) as e:
            Session.fork(source, fs / "a" / "b" / "fork.jsonl")
        assert e.value.errno == errno.ENOSPC
        with pytest.raises(OSError) as e:
            Session.create(fs / "c" / "d" / "run.jsonl", meta={"note": "n" * 20000})
        assert e.value.errno == errno.ENOSPC
        assert sorted(p.name for p in fs.iterdir()) == ["filler"]


def not_files(folder: Path) -> dict[str, Path]:
    """A FIFO and a listening socket's file in ``folder``: what no writer may replace."""
    fifo = folder / "fifo.html"
    os.mkfifo(fifo)
    sock = folder / "socket.html"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()  # the socket's file stays
    return {"a FIFO": fifo, "a socket": sock}


def test_html_and_a_forced_import_never_replace_a_fifo_or_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hello"))
    source = tmp_path / "session.jsonl"
    source.write_bytes(CLAUDE_LINE)
    targets = not_files(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for kind, target in targets.items():
        mode = os.lstat(target).st_mode
        for args in (("html", path, "-o", target), ("html", path, "--pages", "-o", target / "x"),
                     ("import", "--force", source, "-o", target)):
            done = cli(*args, timeout=30)
            assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)
            assert os.lstat(target).st_mode == mode, args
        done = cli("html", path, "-o", target, timeout=30)
        assert f"not a regular file ({kind})" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing left beside them


def test_a_symlink_where_a_page_is_made_is_not_written_through(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        for k in range(50):
            s.append_message(Message.user(f"turn {k}"))
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    site = tmp_path / "site"
    for sub in ("p", "c"):
        (site / sub).mkdir(parents=True)
    for planted in (site / "p" / "000001.html.tmp", site / "c" / "000001.js.tmp", site / "pages.js.tmp"):
        planted.symlink_to(victim)
    done = cli("html", path, "--pages", "-o", site)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "keep me"
    assert "turn 49" in (site / "c" / "000001.js").read_text(encoding="utf-8")
    assert not [p for p in site.rglob("*.tmp") if p.name != "pages.js.tmp"]
    assert stat.S_ISREG(os.lstat(site / "index.html").st_mode)


def _with_an_artifact(folder: Path) -> tuple[Path, Path, bytes]:
    """A transcript whose one settle names an artifact; its path, the
    artifact's path, and its bytes."""
    path = folder / "run.jsonl"
    content = b"the whole tool output " * 50
    with Session.create(path) as s:
        s.append_message(Message.user("go"))
        op = s.append_tool_dispatched("c1", "read", {"p": 1})
        art = s.write_artifact(content, excerpt="the whole")
        s.append_tool_settled(op, "completed", artifact=art)
    return path, artifacts_folder(path) / art["file"], content


@pytest.mark.parametrize("what", ["a FIFO", "a link to /dev/zero", "a link out of the folder"])
def test_what_takes_an_artifacts_place_is_never_waited_on_nor_read(tmp_path: Path, what: str) -> None:
    """``html`` hashed the artifact with a plain open and read: a FIFO in its
    place hung it, a link to ``/dev/zero`` read forever, and ``serve`` handed
    out whatever a link named. Now each is no stored artifact: the page says
    missing, ``serve`` answers 404, ``read_artifact`` refuses it at once."""
    from viewer.serving import get, served

    path, art, content = _with_an_artifact(tmp_path)
    art.unlink()
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not the transcript's")
    if what == "a FIFO":
        os.mkfifo(art)
    else:
        art.symlink_to("/dev/zero" if "zero" in what else secret)
    page = cli("html", path, "-o", tmp_path / "page.html", timeout=60)
    assert page.returncode == 0, page.stderr
    assert "missing" in (tmp_path / "page.html").read_text(encoding="utf-8")
    with Session.load(path) as s:
        settle = s.events[-1].payload["artifact"]
        with pytest.raises(ValueError, match="never"):
            s.read_artifact(settle)
    with served(tmp_path) as base:
        status, _, body = get(base, f"/a/run.jsonl?file={art.name}")
        assert status == 404 and b"not the transcript" not in body


def test_serve_sends_a_stored_artifact_whole(tmp_path: Path) -> None:
    from viewer.serving import get, served

    path, art, content = _with_an_artifact(tmp_path)
    with served(tmp_path) as base:
        status, headers, body = get(base, f"/a/run.jsonl?file={art.name}")
        assert status == 200 and headers["Content-Length"] == str(len(content)) and body == content


@pytest.mark.parametrize("what", ["a file", "a folder"])
def test_an_import_by_relative_paths_survives_a_chdir_during_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                what: str) -> None:
    """Another thread's chdir just before the rename: the import's temporary
    file was named relative to the old working directory, so the rename failed
    and left it behind. The paths are made absolute first; the results still
    name them as given."""
    from agent_transcript.formats import _source

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "s.jsonl").write_bytes(_session())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = _source.move_into_place

    def chdir_then_move(tmp: Path, path: Path) -> None:
        os.chdir(elsewhere)
        real(tmp, path)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_source, "move_into_place", chdir_then_move)
    src, dest = (Path("src/s.jsonl"), Path("out.jsonl")) if what == "a file" else (Path("src"), Path("out"))
    results = import_transcript(src, dest)
    monkeypatch.undo()
    expected = (tmp_path / "out.jsonl") if what == "a file" else (tmp_path / "out" / "s.jsonl")
    assert expected.is_file()
    assert [(r.source, r.dest) for r in results] == (
        [(src, dest)] if what == "a file" else [(src / "s.jsonl", dest / "s.jsonl")])
    assert list(elsewhere.iterdir()) == []
    leftovers = [p.name for p in tmp_path.rglob("*.tmp")]
    assert leftovers == []
