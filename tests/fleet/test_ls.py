"""``list_transcripts`` and ``agent-transcript ls``: a folder from first and last lines, lock-free."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agent_transcript import Message, Session
from agent_transcript.fleet import STATUSES, TranscriptRow, list_transcripts, read_row, writer_locks

TS = "2026-08-09T13:10:08.542283Z"


def line(id: str, type: str, payload: object, ts: str = TS, v: int = 1) -> bytes:
    return (json.dumps({"id": id, "payload": payload, "ts": ts, "type": type, "v": v},
                       sort_keys=True, separators=(",", ":")) + "\n").encode()


def clean_bytes(n: int = 0, title: str = "fix the bug") -> bytes:
    out = [line("m" * 32, "session-meta", {"agent": "coder", "model": "m-1"}),
           line("a" * 32, "message", {"role": "system", "content": "be brief"}),
           line("b" * 32, "message", {"role": "user", "content": title})]
    out += [line(f"{i:032x}", "message", {"role": "assistant", "content": "x"}, ts=f"2026-08-10T00:00:{i % 60:02d}.000000Z")
            for i in range(n)]
    return b"".join(out)


def rows(*roots: Path, **kw: object) -> dict[str, TranscriptRow]:
    return {r.path.name: r for r in list_transcripts(*roots, **kw)}  # type: ignore[arg-type]


def test_every_status(tmp_path: Path) -> None:
    (tmp_path / "clean.jsonl").write_bytes(clean_bytes(3))
    (tmp_path / "torn.jsonl").write_bytes(clean_bytes(3) + b'{"id":"cut')
    (tmp_path / "corrupt.jsonl").write_bytes(clean_bytes(3) + b"garbage\nmore garbage")
    (tmp_path / "future.jsonl").write_bytes(line("m" * 32, "session-meta", {}, v=2))
    (tmp_path / "text.jsonl").write_bytes(b"hello\n")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "claude.jsonl").write_text(json.dumps(
        {"type": "user", "sessionId": "s1", "uuid": "u1", "message": {"role": "user", "content": "hi"}}) + "\n")
    (tmp_path / "rollout.jsonl").write_text(json.dumps(
        {"timestamp": TS, "type": "session_meta", "payload": {"id": "x", "cwd": "/"}}) + "\n")
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    os.mkfifo(tmp_path / "fifo.jsonl")
    (tmp_path / "ignored.txt").write_bytes(clean_bytes())
    got = rows(tmp_path)
    assert {name: r.status for name, r in got.items()} == {
        "clean.jsonl": "clean", "torn.jsonl": "torn tail", "corrupt.jsonl": "corrupt",
        "future.jsonl": "unsupported version", "text.jsonl": "not a transcript",
        "empty.jsonl": "not a transcript", "claude.jsonl": "claude-code", "rollout.jsonl": "codex",
        "dangling.jsonl": "unreadable", "fifo.jsonl": "unreadable",
    }
    assert {r.status for r in got.values()} <= set(STATUSES)
    c = got["clean.jsonl"]
    assert (c.title, c.agent, c.model, c.started) == ("fix the bug", "coder", "m-1", TS)
    assert (c.last_type, c.last_activity, c.size, c.reason) == ("message", "2026-08-10T00:00:02.000000Z",
                                                               len(clean_bytes(3)), None)
    t = got["torn.jsonl"]
    assert (t.last_type, t.last_activity) == ("message", "2026-08-10T00:00:02.000000Z")
    assert got["dangling.jsonl"].reason == "a dangling symlink"
    assert got["fifo.jsonl"].reason == "not a regular file"
    # Nothing was touched.
    assert (tmp_path / "torn.jsonl").read_bytes().endswith(b'{"id":"cut')


def test_title_is_clipped_and_one_line(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(clean_bytes(title="word\n" * 100))
    title = rows(tmp_path)["a.jsonl"].title
    assert title is not None and len(title) == 80 and "\n" not in title and title.endswith("…")


def test_only_a_session_meta(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(line("m" * 32, "session-meta", {}))
    (tmp_path / "b.jsonl").write_bytes(line("m" * 32, "session-meta", {})[:-1])  # no newline: whole
    for name in ("a.jsonl", "b.jsonl"):
        r = rows(tmp_path)[name]
        assert (r.status, r.last_type, r.title) == ("clean", "session-meta", None)


def test_a_long_last_line_is_read_from_its_end(tmp_path: Path) -> None:
    big = line("c" * 32, "message", {"role": "tool", "content": "z" * 200_000}, ts="2026-09-01T00:00:00.000000Z")
    (tmp_path / "a.jsonl").write_bytes(clean_bytes() + big)
    (tmp_path / "b.jsonl").write_bytes(clean_bytes() + big + big[:1000])
    a, b = rows(tmp_path)["a.jsonl"], rows(tmp_path)["b.jsonl"]
    assert (a.status, a.last_activity) == ("clean", "2026-09-01T00:00:00.000000Z")
    assert (b.status, b.last_activity) == ("torn tail", "2026-09-01T00:00:00.000000Z")


def test_a_non_canonical_last_line_is_parsed(tmp_path: Path) -> None:
    last = json.dumps({"v": 1, "type": "grants", "ts": "2026-09-01T00:00:00.000000Z", "id": "g", "payload": {}})
    (tmp_path / "a.jsonl").write_bytes(clean_bytes() + last.encode() + b"\n\n  \n")
    r = rows(tmp_path)["a.jsonl"]
    assert (r.status, r.last_type) == ("clean", "grants")


def test_symlinks_and_recursion(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "x.jsonl").write_bytes(clean_bytes())
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "deep" / "er" / "x.jsonl")
    (tmp_path / "dirlink").symlink_to(tmp_path / "deep")  # not walked into: no cycles, no twice
    (tmp_path / "deep" / "loop").symlink_to(tmp_path)
    (tmp_path / "self.jsonl").symlink_to(tmp_path / "self.jsonl")
    listed = [r.path.relative_to(tmp_path).as_posix() for r in list_transcripts(tmp_path)]
    assert listed == ["link.jsonl", "self.jsonl", "deep/er/x.jsonl"] or \
        sorted(listed) == sorted(["deep/er/x.jsonl", "link.jsonl", "self.jsonl"])
    got = rows(tmp_path)
    assert got["link.jsonl"].status == "clean" and got["self.jsonl"].status == "unreadable"
    assert [r.path.name for r in list_transcripts(tmp_path, recursive=False)] == ["link.jsonl", "self.jsonl"]
    assert [r.status for r in list_transcripts(tmp_path / "deep" / "er" / "x.jsonl")] == ["clean"]


def test_a_missing_root_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(list_transcripts(tmp_path / "nope"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_and_folder(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(clean_bytes())
    os.chmod(tmp_path / "a.jsonl", 0)
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "b.jsonl").write_bytes(clean_bytes())
    os.chmod(tmp_path / "closed", 0)
    try:
        got = rows(tmp_path)
        assert got["a.jsonl"].status == "unreadable" and got["a.jsonl"].reason == "permission denied"
        assert "b.jsonl" not in got
    finally:
        os.chmod(tmp_path / "closed", 0o700)


_LISTING_PEAKS = textwrap.dedent("""
    import json, sys, tracemalloc
    from agent_transcript.fleet import list_transcripts

    def peak(root):
        tracemalloc.start()
        try:
            n = 0
            for r in list_transcripts(root):
                assert r.status == "clean" and r.title == "fix the bug", r
                n += 1
            return n, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(sys.argv[1])  # warms the lazy imports and pathlib's interning of path parts
    print(json.dumps([peak(root) for root in sys.argv[2:]]))
""")


def _listing_peaks(warm: Path, *roots: Path) -> list[tuple[int, int]]:
    """How many rows listing each of ``roots`` gives, and the peak of Python memory
    it took, in a fresh interpreter: what the rest of a test run left in this one
    (its modules, its collector's state) is not the listing's."""
    done = subprocess.run([sys.executable, "-c", _LISTING_PEAKS, str(warm), *map(str, roots)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [tuple(x) for x in json.loads(done.stdout)]


def test_ten_thousand_small_transcripts_in_bounded_memory(tmp_path: Path) -> None:
    body = clean_bytes(2)
    for d in range(10):
        folder = tmp_path / "many" / f"day{d}"
        folder.mkdir(parents=True)
        for i in range(1000):
            (folder / f"run{i:04}.jsonl").write_bytes(body)
    (tmp_path / "one").mkdir()
    (tmp_path / "many" / "day0").rename(tmp_path / "one" / "day0")
    (tmp_path / "many" / "day0").mkdir()
    for i in range(1000):
        (tmp_path / "many" / "day0" / f"run{i:04}.jsonl").write_bytes(body)
    # A first listing of everything warms the lazy imports, and pathlib's interning of
    # every path part (whose table's resize, ~2 MiB, is the interpreter's, not ours).
    (n_one, peak_one), (n_many, peak_many) = _listing_peaks(tmp_path, tmp_path / "one", tmp_path / "many")
    assert (n_one, n_many) == (1_000, 10_000)
    # One folder's names at a time, never every row: ten folders of 1,000 cost what one
    # does (an absolute bound would depend on the interpreter and the temporary path).
    assert peak_many < peak_one * 3 // 2 + (256 << 10), (peak_one, peak_many)


HOLDER = textwrap.dedent("""
    import sys
    from agent_transcript import Session
    s = Session.load(sys.argv[1])
    print("held", flush=True)
    sys.stdin.readline()
    s.close()
""")

RELOADER = textwrap.dedent("""
    import sys
    from agent_transcript import Session, SessionLocked
    locked = 0
    for _ in range(int(sys.argv[2])):
        try:
            Session.load(sys.argv[1]).close()
        except SessionLocked:
            locked += 1
    print(locked)
""")


@pytest.mark.skipif(writer_locks() is None, reason="no /proc/locks here")
def test_a_held_file_is_said_held_and_ls_never_gets_in_a_writers_way(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Session.create(path, {"agent": "a"}) as s:
        s.append_message(Message(role="user", content="go"))
    (tmp_path / "other.jsonl").write_bytes(clean_bytes())
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        got = rows(tmp_path)
        assert got["run.jsonl"].held is True and got["run.jsonl"].writer_pid == holder.pid
        assert got["other.jsonl"].held is False
        r = subprocess.run([sys.executable, "-m", "agent_transcript", "ls", str(tmp_path), "--json"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        held = {Path(row["path"]).name: row["held"] for row in json.loads(r.stdout)}
        assert held == {"run.jsonl": True, "other.jsonl": False}
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()
    # A writer loading and closing again and again while ls runs without a pause:
    # not one of its loads fails.
    stop = threading.Event()
    listings = 0

    def lister() -> None:
        nonlocal listings
        while not stop.is_set():
            read_row(path)  # the file alone, as often as can be
            listings += 1

    t = threading.Thread(target=lister)
    t.start()
    try:
        r = subprocess.run([sys.executable, "-c", RELOADER, str(path), "2000"], capture_output=True,
                           text=True, timeout=120)
    finally:
        stop.set()
        t.join()
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0" and listings > 0


def run_cli(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})


def test_cli_ls(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_bytes(clean_bytes(5))
    (tmp_path / "a.jsonl").write_bytes(clean_bytes(1, title="first"))
    (tmp_path / "c.jsonl").write_bytes(b"nope\n")
    r = run_cli("ls", tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    out = r.stdout.splitlines()
    assert out[0].startswith("STATUS") and len(out) == 4
    assert "a.jsonl  first" in out[1] and "not a transcript" in out[3]
    r = run_cli("ls", tmp_path, "--json", "--sort", "size", "--reverse")
    listed = json.loads(r.stdout)
    assert [Path(x["path"]).name for x in listed] == ["b.jsonl", "a.jsonl", "c.jsonl"]
    assert listed[0]["title"] == "fix the bug" and listed[0]["held"] is False
    assert json.loads(run_cli("ls", tmp_path / "none-here.d", "--json").stdout or "null") is None
    r = run_cli("ls", tmp_path / "none-here.d")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr
    empty = tmp_path / "e"
    empty.mkdir()
    assert json.loads(run_cli("ls", empty, "--json").stdout) == []


def test_a_progress_line_on_a_terminal_only(tmp_path: Path) -> None:
    import pty

    for i in range(5):
        (tmp_path / f"r{i}.jsonl").write_bytes(clean_bytes())
    master, slave = pty.openpty()
    try:
        r = subprocess.run([sys.executable, "-m", "agent_transcript", "ls", str(tmp_path), "--sort", "size"],
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 6
    assert b"listed 1 files" in err and err.endswith(b"\r\x1b[K")
    # Not a terminal: no progress at all.
    r = run_cli("ls", tmp_path, "--sort", "size")
    assert r.returncode == 0 and r.stderr == ""


def test_to_json_is_asdict_with_a_string_path(tmp_path: Path) -> None:
    from dataclasses import asdict

    (tmp_path / "a.jsonl").write_bytes(clean_bytes(2))
    (tmp_path / "b.jsonl").write_bytes(b"nope\n")
    for r in list_transcripts(tmp_path):
        want = asdict(r)
        want["path"] = str(r.path)
        assert r.to_json() == want and list(r.to_json()) == list(want)


@pytest.mark.parametrize("ts", ["2026-08-09T13:10:08.542283Z", "2026-02-30T13:10:08.542283Z", "2026-8-9T1:2:3.5Z",
                                "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00.000000Z", "2026-08-09T24:00:00.000000Z",
                                "", None, "x", "\uff12\uff10\uff12\uff16-08-09T13:10:08.542283Z"])
def test_the_text_listings_time_is_local_times(ts: str | None) -> None:
    from agent_transcript.cli.ls import _when
    from agent_transcript.cli.style import local_time

    t = local_time(ts) if ts else None
    assert _when(ts) == (t.strftime("%Y-%m-%d %H:%M:%S") if t else "-")


@pytest.mark.parametrize("end", [b" {", b"\r{", b'\t{"id', b" garbage", b'{"id":"cut'])
def test_ls_says_of_a_bad_last_line_what_load_does(tmp_path: Path, end: bytes) -> None:
    """A bad last line that begins with ``{`` is a torn tail, which load removes;
    any other is damage, which load refuses: ``ls`` (the core's reader and the
    reference one, which archives take) calls them so."""
    from agent_transcript import CorruptTranscript

    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hi"))
    with open(path, "ab") as f:
        f.write(end)
    listed = next(iter(list_transcripts(tmp_path)))
    assert listed.status == read_row(path).status
    before = path.read_bytes()
    try:
        Session.load(path).close()
        assert listed.status == "torn tail"
    except CorruptTranscript:
        assert listed.status == "corrupt" and "does not begin with '{'" in (listed.reason or "")
        assert path.read_bytes() == before
