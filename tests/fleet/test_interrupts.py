"""Ctrl-C at any moment of a fork, an archive, a listing, an export.

The harness of tests/session/test_interrupts.py (:func:`interrupt.every_interrupt`):
a ``KeyboardInterrupt`` raised at each line the package runs during the call,
in turn. After each one the interrupt is what comes out, no descriptor is left
open, no lock is left (the same call, retried in this process, succeeds), no
partial or temporary file and no folder the call made is left behind, and the
source transcript is as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from interrupt import every_interrupt

from agent_transcript import Message, Session


def _transcript(path: Path) -> Path:
    with Session.create(path, {"agent": "test"}) as s:
        s.append_message(Message.user("hi"))
        s.append_message(Message.assistant("hello"))
        s.append_message(Message.user("more"))
    return path


def _everything(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` and the bytes of each file (None: a folder)."""
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("into", ["new folder", "empty file", "from an archive"])
def test_fork(fast_tmp: Path, into: str) -> None:
    """Ctrl-C at each line of a fork: the source is as it was, the fork is
    not there (or the empty file it was), no folder made for it is left, and
    the same fork then goes through (the fork's new file left locked, or
    half-written, would refuse it)."""
    source = _transcript(fast_tmp / "run.jsonl")
    if into == "from an archive":
        source = Session.archive(source)
    through = Session.peek(source).envelopes[1].id  # the first message
    out = fast_tmp / "out"
    dest = out / "deep" / "fork.jsonl" if into == "new folder" else out / "fork.jsonl"
    before = _everything(fast_tmp)

    def prepare() -> Path:
        shutil.rmtree(out, ignore_errors=True)
        if into != "new folder":
            out.mkdir()
            dest.write_bytes(b"")
        return dest

    def after(d: Path) -> None:
        left = _everything(fast_tmp)
        assert {k: v for k, v in left.items() if not k.startswith("out")} == before
        wanted = {} if into == "new folder" else {"out": None, "out/fork.jsonl": b""}
        assert {k: v for k, v in left.items() if k.startswith("out")} == wanted
        with Session.fork(source, d, through_id=through) as again:
            assert [m.content for m in again.messages] == ["hi"]

    every_interrupt(prepare, lambda d: Session.fork(source, d, through_id=through), after)


@pytest.mark.parametrize("keep", [False, True], ids=["archive", "keep"])
def test_archive(fast_tmp: Path, keep: bool) -> None:
    """Ctrl-C at each line of an archive: the transcript is as it was and not
    locked, no ``.partial`` is left, and the archive is not there (the same
    archive then goes through) or whole (the transcript may still be there
    if the interrupt came between the rename and its removal)."""
    path = fast_tmp / "run.jsonl"
    original = _transcript(path).read_bytes()
    ids = [e.id for e in Session.peek(path).envelopes]
    archived = path.with_name(path.name + ".zst")

    def prepare() -> Path:
        archived.unlink(missing_ok=True)
        path.write_bytes(original)
        return path

    def after(p: Path) -> None:
        assert sorted(x.name for x in fast_tmp.iterdir()) in ([p.name], [p.name, archived.name], [archived.name])
        if p.exists():
            assert p.read_bytes() == original
            Session.load(p).close()  # not left locked
        if archived.exists():  # whole: read back as the transcript was
            seen = Session.peek(archived)
            assert (seen.size, [e.id for e in seen.envelopes]) == (len(original), ids)
        else:
            Session.archive(p, keep=keep)

    every_interrupt(prepare, lambda p: Session.archive(p, keep=keep), after)


@pytest.mark.parametrize("keep", [False, True], ids=["extract", "keep"])
def test_unarchive(fast_tmp: Path, keep: bool) -> None:
    """Ctrl-C at each line of an extract: the archive is as it was and not
    locked, no ``.partial`` is left, and the transcript is not there (the same
    extract then goes through) or whole (the archive may still be there if the
    interrupt came between the link and its removal)."""
    path = fast_tmp / "run.jsonl"
    original = _transcript(path).read_bytes()
    archived = Session.archive(path)
    packed = archived.read_bytes()

    def prepare() -> Path:
        path.unlink(missing_ok=True)
        archived.write_bytes(packed)
        return archived

    def after(a: Path) -> None:
        assert sorted(x.name for x in fast_tmp.iterdir()) in ([a.name], [path.name, a.name], [path.name])
        if a.exists():
            assert a.read_bytes() == packed
        if path.exists():  # whole: the transcript as it was archived
            assert path.read_bytes() == original
        else:
            Session.unarchive(a, keep=keep)

    every_interrupt(prepare, lambda a: Session.unarchive(a, keep=keep), after)


@pytest.mark.parametrize("reader", ["list_transcripts", "read_row"])
def test_ls(fast_tmp: Path, reader: str) -> None:
    """Ctrl-C at each line of a listing (a folder holding a transcript, an
    archive, a sub-folder's transcript and a file that is none) and of the
    Python reader of one row: nothing is left open, the files are as they
    were, and the same listing then gives the same rows."""
    from agent_transcript.fleet import list_transcripts, read_row

    folder = fast_tmp / "runs"
    folder.mkdir()
    _transcript(folder / "a.jsonl")
    Session.archive(_transcript(folder / "b.jsonl"))
    (folder / "sub").mkdir()
    _transcript(folder / "sub" / "c.jsonl")
    (folder / "d.jsonl").write_bytes(b"not a transcript\n")
    before = _everything(fast_tmp)

    def ls(f: Path) -> list[Any]:
        if reader == "read_row":
            return [read_row(f / "a.jsonl", {}).to_json()]
        return [row.to_json() for row in list_transcripts(f, locks=True)]

    untouched = ls(folder)

    def after(f: Path) -> None:
        assert _everything(fast_tmp) == before
        assert ls(f) == untouched

    every_interrupt(lambda: folder, ls, after)


def test_export(fast_tmp: Path) -> None:
    """Ctrl-C at each line of an export of a folder into a new folder: nothing
    is left open, locked or running (its threads are stopped), and the folder
    holds the whole export or no part of it (a part no manifest lists would
    be read by a reader's ``*.parquet`` glob, and make the next export refuse
    the folder as not an export's), so the same export then goes through."""
    import threading

    pytest.importorskip("pyarrow")
    from agent_transcript.fleet import export_transcripts

    folder = fast_tmp / "runs"
    folder.mkdir()
    _transcript(folder / "a.jsonl")
    out = fast_tmp / "out"
    whole = export_transcripts(folder, out=out)
    parts = sorted(whole.parts)
    threads = threading.active_count()

    def prepare() -> Path:
        shutil.rmtree(out, ignore_errors=True)
        return out

    def after(o: Path) -> None:
        assert threading.active_count() == threads
        left = sorted(p.relative_to(o).as_posix() for p in o.rglob("*") if p.is_file()) if o.exists() else []
        if "_export.json" in left:
            assert len(left) == 2 + len(parts), left  # the lock, the manifest and the parts
        else:
            assert left in ([], ["_export.lock"]), left
        again = export_transcripts(folder, out=o)
        assert again.rows == (whole.rows if "_export.json" not in left else dict.fromkeys(whole.rows, 0))

    # Not interrupted: the columns' conversion to Arrow tables, which holds
    # nothing (two thirds of the lines an export runs).
    every_interrupt(prepare, lambda o: export_transcripts(folder, out=o), after, passing=frozenset({"_tables"}))


def test_re_export(fast_tmp: Path) -> None:
    """Ctrl-C at each line of the export of a folder in which one of two files
    changed since the last export into ``out``: the manifest is the last
    export's and every part it lists is as it was, byte for byte, with nothing
    of this run's left (its old rows were cut out of the listed parts in place,
    before the commit); or the new manifest is in place, and a part it does not
    list can only be an old one it replaced, which the next export sweeps.
    Either way, the same export then gives the rows an export into a new
    folder gives."""
    import threading

    pq = pytest.importorskip("pyarrow.parquet")
    from agent_transcript.fleet import MANIFEST, export_transcripts

    folder = fast_tmp / "runs"
    folder.mkdir()
    _transcript(folder / "a.jsonl")
    _transcript(folder / "b.jsonl")
    last = fast_tmp / "last"
    export_transcripts(folder, out=last)
    last_files = _everything(last)
    with Session.open(folder / "a.jsonl") as s:
        s.append_message(Message.user("changed"))
    fresh = export_transcripts(folder, out=fast_tmp / "fresh")
    out = fast_tmp / "out"
    threads = threading.active_count()

    def listed(o: Path) -> list[str]:
        sources = json.loads((o / MANIFEST).read_text())["sources"]
        return sorted({rel for entry in sources.values() for rel in entry["parts"]})

    def rows(o: Path) -> dict[str, int]:
        counted = dict.fromkeys(fresh.rows, 0)
        for rel in listed(o):
            counted[rel.split("/", 1)[0]] += pq.read_metadata(o / rel).num_rows
        return counted

    def prepare() -> Path:
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(last, out)
        return out

    def after(o: Path) -> None:
        assert threading.active_count() == threads
        parts = sorted(p.relative_to(o).as_posix() for p in o.rglob("*.parquet"))
        if (o / MANIFEST).read_bytes() == last_files[MANIFEST]:
            assert {rel: (o / rel).read_bytes() for rel in listed(o)} == {
                rel: last_files[rel] for rel in listed(last)}
            assert parts == listed(o)
        else:
            assert set(listed(o)) <= set(parts) and set(parts) - set(listed(o)) <= set(last_files)
        assert not [p for p in o.rglob("*") if p.name.startswith(".tmp-")]
        left = _everything(o)
        if left in retried:
            return  # the same export from the same folder, already done once
        retried.append(left)
        export_transcripts(folder, out=o)
        assert rows(o) == fresh.rows

    retried: list[dict[str, bytes | None]] = []

    # Not interrupted: what test_export interrupts at every line already, the
    # reading of the changed file into batches and its parts' first writing.
    every_interrupt(prepare, lambda o: export_transcripts(folder, out=o), after,
                    passing=frozenset({"_tables", "_export_file", "flush_all"}))
