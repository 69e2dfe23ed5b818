"""``Session.archive`` / ``agent-transcript archive``: PATH.zst, verified before the original goes;
and every read command reads the archive as it reads the transcript."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import CorruptTranscript, Message, Session, SessionLocked, _core
from interrupt import Stopped, stopped_by_a_signal

DATA = Path(__file__).resolve().parent.parent / "data" / "cli"
READABLE = ["clean.jsonl", "pending.jsonl", "torn.jsonl", "records.jsonl", "corrupt_mid.jsonl",
            "future.jsonl", "not_meta_first.jsonl", "two_bad_tails.jsonl"]


def unpacked(path: Path) -> bytes:
    out = path.with_name(path.name + ".out")
    src = os.open(path, os.O_RDONLY)
    dst = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _core.zstd_decompress(src, dst)
    finally:
        os.close(src)
        os.close(dst)
    data = out.read_bytes()
    out.unlink()
    return data


def copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copyfile(DATA / name, dest)
    os.chmod(dest, 0o600)
    return dest


def test_round_trip_byte_for_byte(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    original = path.read_bytes()
    dest = Session.archive(path)
    assert dest == tmp_path / "clean.jsonl.zst"
    assert not path.exists()
    assert unpacked(dest) == original
    assert os.stat(dest).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl.zst"]


def test_keep(tmp_path: Path) -> None:
    path = copy(tmp_path, "torn.jsonl")
    dest = Session.archive(path, keep=True)
    assert path.read_bytes() == (DATA / "torn.jsonl").read_bytes()  # a torn tail is archived as it is
    assert unpacked(dest) == path.read_bytes()


def test_refuses_a_held_transcript(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message(role="user", content="hi"))
        before = path.read_bytes()
        with pytest.raises(SessionLocked):
            Session.archive(path)
        s.append_message(Message(role="user", content="still writing"))
    assert path.read_bytes().startswith(before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]


def test_refuses_an_existing_archive_and_an_archive(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    (tmp_path / "clean.jsonl.zst").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        Session.archive(path)
    assert (tmp_path / "clean.jsonl.zst").read_bytes() == b"mine"
    assert path.read_bytes() == (DATA / "clean.jsonl").read_bytes()
    with pytest.raises(ValueError):
        Session.archive(tmp_path / "clean.jsonl.zst")
    with pytest.raises(FileNotFoundError):
        Session.archive(tmp_path / "missing.jsonl")


def test_an_archive_made_meanwhile_is_never_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another program puts a file where the archive goes after archive checked
    the name and before it is done: that file stays, and so does the transcript."""
    import agent_transcript._archive as archive_module

    path = copy(tmp_path, "clean.jsonl")
    dest = tmp_path / "clean.jsonl.zst"
    real = archive_module._core.zstd_compress

    def compress_and_race(*args: Any) -> Any:
        done = real(*args)
        dest.write_bytes(b"someone else's archive")
        return done

    monkeypatch.setattr(archive_module._core, "zstd_compress", compress_and_race)
    with pytest.raises(FileExistsError):
        Session.archive(path)
    assert dest.read_bytes() == b"someone else's archive"
    assert path.read_bytes() == (DATA / "clean.jsonl").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl", "clean.jsonl.zst"]


def test_without_hard_links_the_archive_still_goes_into_place(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A file system that refuses link(2) (FAT, some network mounts) still gets
    its archive, by the checked rename."""
    path = copy(tmp_path, "clean.jsonl")
    original = path.read_bytes()

    def no_links(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    dest = Session.archive(path)
    monkeypatch.undo()
    assert unpacked(dest) == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl.zst"]


class Killed(BaseException):
    """Stands for a kill between two steps."""


STEPS = ["zstd_compress", "sync", "zstd_matches", "link", "fsync_dir", "unlink"]


def kill_at(monkeypatch: pytest.MonkeyPatch, step: str, source: Path) -> None:
    """Make ``step`` of an archive or an extract raise ``Killed``; ``unlink`` only
    of ``source``, the file the call removes once it is done."""
    import agent_transcript._archive as archive_module

    target: Any = {"zstd_compress": archive_module._core, "zstd_decompress": archive_module._core,
                   "zstd_matches": archive_module._core, "sync": archive_module._platform,
                   "fsync_dir": archive_module._storage, "link": archive_module.os,
                   "unlink": archive_module.os}[step]
    real = getattr(target, step)

    def kill(*args: Any) -> Any:
        if step == "unlink" and Path(args[0]) != source:
            return real(*args)  # the leftover partial's removal, before the work
        raise Killed

    monkeypatch.setattr(target, step, kill)


@pytest.mark.parametrize("step", STEPS)
def test_a_kill_at_each_step_leaves_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  step: str) -> None:
    path = copy(tmp_path, "clean.jsonl")
    original = path.read_bytes()
    kill_at(monkeypatch, step, path)
    with pytest.raises(Killed):
        Session.archive(path)
    monkeypatch.undo()
    assert path.read_bytes() == original
    dest = tmp_path / "clean.jsonl.zst"
    if dest.exists():  # renamed into place: whole and verified
        assert step in ("fsync_dir", "unlink") and unpacked(dest) == original
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert "clean.jsonl.zst.partial" not in leftovers
    # And it can be done again (a kill's leftover partial is removed first).
    if not dest.exists():
        Session.archive(path)
        assert unpacked(dest) == original


def test_a_mismatch_read_back_keeps_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_transcript._archive as archive_module

    path = copy(tmp_path, "clean.jsonl")
    monkeypatch.setattr(archive_module._core, "zstd_matches", lambda *a: False)
    with pytest.raises(OSError, match="differs"):
        Session.archive(path)
    assert path.read_bytes() == (DATA / "clean.jsonl").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl"]


def big_transcript(path: Path, n: int) -> None:
    with Session.create(path, {"agent": "big"}) as s:
        for i in range(n):
            s.append_message(Message(role="user", content=f"message {i} " + "lorem ipsum " * 40))


def test_a_real_kill_minus_9_leaves_the_original(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big_transcript(path, 40_000)
    original = path.read_bytes()
    for delay in (0.05, 0.15, 0.3):
        proc = subprocess.Popen([sys.executable, "-m", "agent_transcript", "archive", str(path)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        dest = tmp_path / "big.jsonl.zst"
        if path.exists():
            assert path.read_bytes() == original
            if dest.exists():
                assert unpacked(dest) == original
                dest.unlink()
        else:  # it had finished: the archive is whole
            assert unpacked(dest) == original
            return


def run_cli(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "100", "TZ": "UTC"})


@pytest.mark.parametrize("name", READABLE)
def test_the_read_commands_agree_on_the_archive(tmp_path: Path, name: str) -> None:
    (tmp_path / "a").mkdir()
    plain = copy(tmp_path / "a", name)
    packed_dir = tmp_path / "b"
    packed_dir.mkdir()
    packed = packed_dir / name
    shutil.copyfile(plain, packed)
    packed = Session.archive(packed)
    for cmd in (["show", "--json"], ["show", "--replayed", "--json"], ["check", "--json"], ["stats", "--json"],
                ["show"], ["check"], ["stats"]):
        want, got = run_cli(*cmd, plain), run_cli(*cmd, packed)
        assert got.returncode == want.returncode, (cmd, got.stderr)
        norm = got.stdout.replace(str(packed), str(plain)).replace(packed.name, plain.name)
        if "stats" in cmd:  # the size on disk is the archive's; compare everything else
            norm_lines = [x for x in norm.splitlines() if "bytes" not in x and "KiB" not in x]
            want_lines = [x for x in want.stdout.splitlines() if "bytes" not in x and "KiB" not in x]
            assert norm_lines == want_lines, cmd
        else:
            assert norm == want.stdout, cmd
    a, b = Session.peek(plain), Session.peek(packed)
    assert (a.error, a.meta, list(a.envelopes), list(a.messages), a.warnings) == \
        (b.error, b.meta, list(b.envelopes), list(b.messages),
         [w.replace(str(packed), str(plain)) for w in b.warnings])


def test_ls_lists_an_archive_as_its_transcript(tmp_path: Path) -> None:
    from agent_transcript.fleet import list_transcripts

    for name in ("clean.jsonl", "pending.jsonl", "torn.jsonl"):
        shutil.copyfile(DATA / name, tmp_path / name)
        packed = tmp_path / "z" / name
        packed.parent.mkdir(exist_ok=True)
        shutil.copyfile(DATA / name, packed)
        Session.archive(packed)
    rows = {r.path.relative_to(tmp_path).as_posix(): r for r in list_transcripts(tmp_path)}
    for name in ("clean.jsonl", "pending.jsonl", "torn.jsonl"):
        a, b = rows[name], rows[f"z/{name}.zst"]
        keys = ("status", "title", "agent", "model", "started", "last_activity", "last_type")
        assert [getattr(a, k) for k in keys] == [getattr(b, k) for k in keys], name


def test_a_damaged_archive_is_refused_in_one_line(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    dest = Session.archive(path)
    data = dest.read_bytes()
    dest.write_bytes(data[: len(data) // 2])
    p = Session.peek(dest)
    assert p.error is not None and "zstd" in p.error
    r = run_cli("check", dest)
    assert r.returncode == 2 and r.stderr.count("\n") + r.stdout.count("\n") >= 1


def test_cli_archive(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    r = run_cli("archive", path, "--keep", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kept"] is True and out["bytes"] == path.stat().st_size and Path(out["archive"]).exists()
    r = run_cli("archive", path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "there already" in r.stderr
    os.unlink(out["archive"])
    r = run_cli("archive", path)
    assert r.returncode == 0 and "verified" in r.stdout and not path.exists()
    r = run_cli("archive", tmp_path / "missing.jsonl")
    assert r.returncode == 2 and "no such file" in r.stderr


def test_a_symlink_archives_the_file_it_names(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = copy(tmp_path / "real", "clean.jsonl")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    dest = Session.archive(link)
    assert dest == tmp_path / "real" / "clean.jsonl.zst"
    assert not target.exists() and unpacked(dest) == (DATA / "clean.jsonl").read_bytes()


def test_a_signal_during_the_compression_stops_it_with_its_handlers_exception(tmp_path: Path) -> None:
    """The core asks Python's signal handlers between chunks (its own tests count
    the questions): a Ctrl-C stops an archive of a GiB at once instead of a
    minute later. The handler's exception is what comes out, the transcript is
    as it was, and no ``.partial`` is left."""
    path = tmp_path / "run.jsonl"
    big_transcript(path, 30_000)
    original = path.read_bytes()
    with pytest.raises(Stopped), stopped_by_a_signal():
        Session.archive(path)
    assert path.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]
    assert unpacked(Session.archive(path)) == original  # and it is done when asked again


# -- the way back: Session.unarchive / archive --extract ----------------------


def test_load_of_an_archive_says_it_is_one_and_what_to_do(tmp_path: Path) -> None:
    """Before: 'invalid UTF-8 at byte 1'. Whatever the archive's name."""
    packed = Session.archive(copy(tmp_path, "clean.jsonl"))
    renamed = tmp_path / "renamed.jsonl"
    shutil.copyfile(packed, renamed)
    for path in (packed, renamed):
        before = path.read_bytes()
        for opener in (Session.load, Session.open):
            with pytest.raises(CorruptTranscript) as info:
                opener(path)
            assert "zstd archive" in info.value.message and "--extract" in info.value.message
            assert path.read_bytes() == before


@pytest.mark.parametrize("opener", ["create", "open", "fork"])
def test_a_transcript_is_never_written_under_an_archive_name(tmp_path: Path, opener: str) -> None:
    """Issue 28, item 13: create wrote plain JSONL at run.jsonl.zst, which every
    reader but load then refused as 'not a whole zstd archive'."""
    dest = tmp_path / "new" / "run.jsonl.zst"
    with pytest.raises(ValueError, match="archive"):
        if opener == "fork":
            Session.fork(DATA / "clean.jsonl", dest)
        else:
            getattr(Session, opener)(dest)
    assert not (tmp_path / "new").exists()


def test_a_plain_file_named_as_an_archive_is_not_loaded(tmp_path: Path) -> None:
    # What create used to make: load refuses it too, saying to rename it.
    plain = copy(tmp_path, "clean.jsonl").rename(tmp_path / "clean.jsonl.zst")
    with pytest.raises(ValueError, match="without .zst"):
        Session.load(plain)
    assert plain.read_bytes() == (DATA / "clean.jsonl").read_bytes()


@pytest.mark.parametrize("name", ["clean.jsonl", "torn.jsonl", "two_bad_tails.jsonl"])
def test_unarchive_round_trip_byte_for_byte(tmp_path: Path, name: str) -> None:
    path = copy(tmp_path, name)
    original = path.read_bytes()
    packed = Session.archive(path)
    assert Session.unarchive(packed) == path
    assert path.read_bytes() == original
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_unarchive_then_load_and_append(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    packed = Session.archive(path)
    Session.unarchive(packed, keep=True)
    with Session.load(path) as s:
        s.append_message(Message.user("back again"))
    assert unpacked(packed) == (DATA / "clean.jsonl").read_bytes()  # the archive kept, as it was


def test_an_archive_and_its_extract_are_0600_whatever_the_modes_before(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    os.chmod(path, 0o644)
    packed = Session.archive(path)
    assert os.stat(packed).st_mode & 0o777 == 0o600
    os.chmod(packed, 0o644)
    assert os.stat(Session.unarchive(packed)).st_mode & 0o777 == 0o600


def test_unarchive_never_clobbers(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    packed = Session.archive(path, keep=True)
    path.write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        Session.unarchive(packed)
    assert path.read_bytes() == b"mine" and packed.exists()
    with pytest.raises(ValueError):
        Session.unarchive(path)  # not an archive
    with pytest.raises(FileNotFoundError):
        Session.unarchive(tmp_path / "missing.jsonl.zst")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl", "clean.jsonl.zst"]


def test_a_transcript_made_meanwhile_is_never_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_transcript._archive as archive_module

    path = copy(tmp_path, "clean.jsonl")
    packed = Session.archive(path)
    real = archive_module._core.zstd_decompress

    def decompress_and_race(*args: Any) -> Any:
        done = real(*args)
        path.write_bytes(b"a transcript someone began meanwhile")
        return done

    monkeypatch.setattr(archive_module._core, "zstd_decompress", decompress_and_race)
    with pytest.raises(FileExistsError):
        Session.unarchive(packed)
    assert path.read_bytes() == b"a transcript someone began meanwhile"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl", "clean.jsonl.zst"]


def test_a_damaged_archive_is_not_extracted(tmp_path: Path) -> None:
    packed = Session.archive(copy(tmp_path, "clean.jsonl"))
    data = packed.read_bytes()
    packed.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptTranscript):
        Session.unarchive(packed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl.zst"]
    r = run_cli("archive", "--extract", packed)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not extracted" in r.stderr


EXTRACT_STEPS = ["zstd_decompress", "sync", "zstd_matches", "link", "fsync_dir", "unlink"]


@pytest.mark.parametrize("step", EXTRACT_STEPS)
def test_a_kill_at_each_extract_step_leaves_the_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        step: str) -> None:
    path = copy(tmp_path, "clean.jsonl")
    original = path.read_bytes()
    packed = Session.archive(path)
    archived = packed.read_bytes()
    kill_at(monkeypatch, step, packed)
    with pytest.raises(Killed):
        Session.unarchive(packed)
    monkeypatch.undo()
    assert packed.read_bytes() == archived
    if path.exists():  # linked into place: whole and verified
        assert step in ("fsync_dir", "unlink") and path.read_bytes() == original
    else:
        assert Session.unarchive(packed) == path and path.read_bytes() == original
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_a_real_kill_minus_9_of_an_extract_leaves_no_half_transcript(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    big_transcript(path, 40_000)
    original = path.read_bytes()
    packed = Session.archive(path)
    archived = packed.read_bytes()
    for delay in (0.05, 0.15, 0.3):
        proc = subprocess.Popen([sys.executable, "-m", "agent_transcript", "archive", "--extract", str(packed)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if packed.exists():
            assert packed.read_bytes() == archived
            if path.exists():
                assert path.read_bytes() == original  # never a half file under the name
                path.unlink()
        else:  # it had finished
            assert path.read_bytes() == original
            return
    # A kill's leftover .partial is removed by the next extract, which goes through.
    assert Session.unarchive(packed) == path and path.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl"]


def test_a_signal_during_the_extract_stops_it_with_its_handlers_exception(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    big_transcript(path, 30_000)
    original = path.read_bytes()
    packed = Session.archive(path)
    with pytest.raises(Stopped), stopped_by_a_signal():
        Session.unarchive(packed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl.zst"]
    assert Session.unarchive(packed).read_bytes() == original


def test_cli_archive_extract(tmp_path: Path) -> None:
    path = copy(tmp_path, "clean.jsonl")
    original = path.read_bytes()
    packed = Session.archive(path)
    r = run_cli("archive", "--extract", packed, "--keep", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out == {"archive": str(packed), "path": str(path), "bytes": len(original),
                   "archive_bytes": packed.stat().st_size, "kept": True}
    assert path.read_bytes() == original
    r = run_cli("archive", "--extract", packed)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "there already" in r.stderr
    path.unlink()
    r = run_cli("archive", "--extract", packed)
    assert r.returncode == 0 and "verified" in r.stdout and not packed.exists()
    assert path.read_bytes() == original
    for bad in (path, tmp_path / "missing.jsonl.zst"):
        r = run_cli("archive", "--extract", bad)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
