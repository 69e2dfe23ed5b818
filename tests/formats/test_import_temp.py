"""The temporary file an import writes its destination into: it fits beside a
destination of any legal name (249 to 255 bytes too), and what a killed import
left is removed by the next import into the same name, never a live one's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Session
from agent_transcript.formats import import_transcript
from agent_transcript.formats._source import import_temp, remove_dead_imports

from .sources import BASIC as BASIC_RECORDS, lines

SESSION = lines(*BASIC_RECORDS)


def long_name(length: int, unit: str = "x") -> str:
    """A ``.jsonl`` name of exactly ``length`` bytes, of ``unit`` characters
    (padded with ``x`` where a wide unit does not divide the length)."""
    body = length - len(".jsonl")
    width = len(unit.encode())
    return unit * (body // width) + "x" * (body % width) + ".jsonl"


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


@pytest.mark.parametrize("length", [200, 236, 240, 248, 249, 250, 254, 255])
@pytest.mark.parametrize("unit", ["x", "é", "日"])
def test_an_import_into_a_name_of_any_legal_length_works(tmp_path: Path, length: int, unit: str) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(SESSION)
    dest = tmp_path / long_name(length, unit)
    assert len(os.fsencode(dest.name)) == length
    import_transcript(src, dest)
    with Session.load(dest) as s:
        assert s.messages
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, dest.name])


@settings(max_examples=200, deadline=None)
@given(name=st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="/\x00"),
                    min_size=1, max_size=255).filter(lambda n: n not in (".", "..")
                                                     and len(os.fsencode(n)) <= 255),
       pid=st.integers(1, 4_194_304))
def test_the_temporary_name_fits_and_names_its_destination(name: str, pid: int) -> None:
    dest = Path("/tmp") / name
    temp = import_temp(dest, pid)
    assert temp.parent == dest.parent
    assert len(os.fsencode(temp.name)) <= 255
    assert temp.name.startswith(".") and temp.name.endswith(f".import-{pid:010d}.tmp")
    assert import_temp(dest, pid) == temp  # the same every time
    # Another destination's temporary file is never taken for this one's.
    other = import_temp(dest.with_name(name + "x"), pid)
    assert other != temp


def test_the_next_import_removes_what_a_killed_one_left(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(SESSION)
    for length in (20, 255):
        dest = tmp_path / long_name(length)
        dead = import_temp(dest, dead_pid())
        live = import_temp(dest, os.getppid())  # the test runner's parent: alive
        neighbour = import_temp(tmp_path / "other.jsonl", dead_pid())
        for p in (dead, live, neighbour):
            p.write_bytes(b"half an import")
        import_transcript(src, dest)
        assert not dead.exists()
        assert live.read_bytes() == b"half an import"
        assert neighbour.read_bytes() == b"half an import"


def test_a_refused_import_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    src.write_bytes(SESSION)
    dest = tmp_path / "run.jsonl"
    dest.write_bytes(b"already here\n")
    dead = import_temp(dest, dead_pid())
    dead.write_bytes(b"half an import")
    with pytest.raises(FileExistsError):
        import_transcript(src, dest)
    assert dead.read_bytes() == b"half an import"
    assert dest.read_bytes() == b"already here\n"


def test_a_missing_folder_is_nothing_to_clean(tmp_path: Path) -> None:
    remove_dead_imports(tmp_path / "absent" / "run.jsonl")  # no error


def test_a_live_import_in_another_pid_namespace_keeps_its_file(tmp_path: Path) -> None:
    """An import in another container writes ``.<name>.import-<pid>.tmp`` with a
    pid that names no process here: its lock, not its pid, says it is alive.
    A process holding the flock on a file named with a dead pid stands for it."""
    dest = tmp_path / "run.jsonl"
    theirs = import_temp(dest, dead_pid())
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)\n"
         "os.write(fd, b'their import, under way')\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\n"
         "time.sleep(60)\n", str(theirs)],
        stdout=subprocess.PIPE, text=True)
    with holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            remove_dead_imports(dest)
            assert theirs.read_bytes() == b"their import, under way"
        finally:
            holder.kill()
    remove_dead_imports(dest)  # its process gone, the lock with it: now it is a dead import's
    assert not theirs.exists()


def test_an_import_holds_its_temporary_file_locked_until_the_rename(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    from agent_transcript.formats import _source

    src = tmp_path / "session.jsonl"
    src.write_bytes(SESSION)
    dest = tmp_path / "run.jsonl"
    temp = import_temp(dest, os.getpid())
    seen: list[bool] = []
    real = _source.move_into_place

    def check_then_move(tmp: Path, path: Path) -> None:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append(False)
        except BlockingIOError:
            seen.append(True)
        finally:
            os.close(fd)
        real(tmp, path)

    monkeypatch.setattr(_source, "move_into_place", check_then_move)
    import_transcript(src, dest)
    assert seen == [True]
    assert dest.exists() and not temp.exists()


def test_a_folder_import_lists_each_destination_folder_once(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Its files' dead leftovers go, a live import's and a file of no destination
    of this import stay; and the cleaning lists each destination folder once,
    not once a file (a folder of thousands of sessions made that quadratic)."""
    from agent_transcript.formats import _source

    src = tmp_path / "src"
    (src / "deep").mkdir(parents=True)
    names = [f"s{i}.jsonl" for i in range(6)]
    for name in names:
        (src / name).write_bytes(SESSION)
    (src / "deep" / "d.jsonl").write_bytes(SESSION)
    out = tmp_path / "out"
    (out / "deep").mkdir(parents=True)
    dead = [import_temp(out / names[0], dead_pid()), import_temp(out / "deep" / "d.jsonl", dead_pid())]
    live = import_temp(out / names[1], os.getppid())
    neighbour = import_temp(out / "not-a-source.jsonl", dead_pid())
    for p in (*dead, live, neighbour):
        p.write_bytes(b"half an import")
    listed: list[str] = []
    real = os.listdir

    def counting(path: Any = ".") -> list[str]:
        if str(path).startswith(str(tmp_path)):  # not the interpreter's own (importlib's) listings
            listed.append(str(path))
        return real(path)

    monkeypatch.setattr(_source.os, "listdir", counting)
    results = import_transcript(src, out)
    monkeypatch.undo()
    assert [r.source.name for r in results] == ["d.jsonl", *names]
    assert not any(p.exists() for p in dead)
    assert live.read_bytes() == neighbour.read_bytes() == b"half an import"
    assert sorted(listed) == sorted([str(out), str(out / "deep")])


def test_an_import_on_a_file_system_without_locks_still_works(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """flock(2) answers ENOLCK on an NFS mount without its lock daemon: the
    import goes on, and a leftover is judged by its pid alone, as before."""
    import errno
    import fcntl

    from agent_transcript.formats import _source

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    src = tmp_path / "session.jsonl"
    src.write_bytes(SESSION)
    dest = tmp_path / "run.jsonl"
    dead = import_temp(dest, dead_pid())
    dead.write_bytes(b"half an import")
    monkeypatch.setattr(_source.fcntl, "flock", no_locks)
    import_transcript(src, dest)
    monkeypatch.undo()
    assert dest.exists() and not dead.exists()
    assert fcntl.flock is not no_locks


@pytest.mark.parametrize("force", [True, False])
def test_threads_importing_into_one_destination_take_turns(tmp_path: Path, force: bool) -> None:
    """The temporary name is the process's for that destination: threads met
    each other's file and failed with a bare 'File exists'. They take turns:
    with force each import replaces the last (all the same bytes), without it
    the first is written and the others are told the destination exists."""
    import threading

    from agent_transcript.formats import _source

    src = tmp_path / "session.jsonl"
    src.write_bytes(SESSION)
    alone = tmp_path / "alone.jsonl"
    import_transcript(src, alone)
    dest = tmp_path / "run.jsonl"
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def one() -> None:
        start.wait()
        try:
            import_transcript(src, dest, force=force)
        except BaseException as e:  # noqa: BLE001 - kept for the assertion
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert dest.read_bytes() == alone.read_bytes()
    if force:
        assert errors == []
    else:
        assert len(errors) == 5
        assert all(isinstance(e, FileExistsError) and e.filename == str(dest) for e in errors)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alone.jsonl", "run.jsonl", "session.jsonl"]
    assert _source._TURNS == {}


@settings(max_examples=60, deadline=None)
@given(spool_bytes=st.binary(max_size=4000), stretch=st.integers(1, 700),
       in_kernel=st.booleans(), after=st.binary(max_size=50))
def test_the_spool_is_copied_whole_and_in_order_and_left_empty(
        tmp_path_factory: pytest.TempPathFactory, spool_bytes: bytes, stretch: int, in_kernel: bool,
        after: bytes) -> None:
    # Copied from its end backwards, a stretch at a time, each cut off the spool:
    # the destination must still be the envelope before it, the spool, in order,
    # then what is written after it (at the end, not where the last copy was).
    import contextlib
    import tempfile
    from unittest import mock

    from agent_transcript.formats import _source

    folder = tmp_path_factory.mktemp("spool")
    dest = folder / "out.jsonl"
    with contextlib.ExitStack() as patched:
        patched.enter_context(mock.patch.object(_source, "_SPOOL_STRETCH", stretch))
        if not in_kernel:  # a file system where copy_file_range cannot copy
            patched.enter_context(mock.patch.object(os, "copy_file_range",
                                                    side_effect=OSError(18, "Invalid cross-device link")))
        out = _source.Destination(dest, force=False)
        out.write("session-meta", "m", "2026-01-01T00:00:00.000000Z", {})
        with tempfile.TemporaryFile(dir=folder) as spool:
            spool.write(spool_bytes)
            out.copy_from(spool)
            assert os.fstat(spool.fileno()).st_size == 0
        os.write(out.flushed_fileno(), after)
        out.commit()
    head = b'{"id":"m","payload":{},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}\n'
    assert dest.read_bytes() == head + spool_bytes + after


def test_a_folder_import_syncs_each_folder_once_at_its_end(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Each file's bytes are synced before its rename; the folders' names once
    # each, after the last file: made folders in their parents too, deepest first.
    from agent_transcript.formats import _source

    src = tmp_path / "src"
    for name in ("a/one.jsonl", "a/two.jsonl", "b/c/three.jsonl"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(SESSION)
    out = tmp_path / "out"
    synced: list[tuple[Path, int]] = []
    real = _source._sync_names
    monkeypatch.setattr(_source, "_sync_names", lambda folder: (
        synced.append((folder, len(list(out.rglob("*.jsonl"))))), real(folder))[-1])
    import_transcript(src, out)
    assert sorted(f for f, _ in synced) == sorted({out, out / "a", out / "b", out / "b" / "c", tmp_path})
    assert len(synced) == len({f for f, _ in synced})          # once each
    assert all(files == 3 for _, files in synced)              # after every rename
    depths = [len(f.parts) for f, _ in synced]
    assert depths == sorted(depths, reverse=True)
    synced.clear()
    import_transcript(src / "a" / "one.jsonl", tmp_path / "single" / "one.jsonl")
    assert [f for f, _ in synced] == [tmp_path / "single", tmp_path]  # a single file: at once


def test_a_folder_import_that_fails_still_syncs_the_folders_of_what_it_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_transcript.formats import _source

    src = tmp_path / "src"
    src.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (src / name).write_bytes(SESSION)
    out = tmp_path / "out"
    (out / "b.jsonl").mkdir(parents=True)   # the second destination cannot be written
    synced: list[Path] = []
    monkeypatch.setattr(_source, "_sync_names", synced.append)
    with pytest.raises(OSError):
        import_transcript(src, out)
    assert (out / "a.jsonl").is_file() and synced == [out]
