"""Artifacts: full tool results beside the transcript, content-addressed, read
back by their digest; file names are plain basenames only."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from agent_transcript import Message, Session, digest

from ._helpers import umask

BIG = "line of output ✓\n" * 2000


def test_round_trip_and_the_settle_line(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        excerpt = BIG[:200]
        art = s.write_artifact(BIG, excerpt=excerpt)
        assert set(art) == {"file", "digest", "bytes", "chars", "elided-chars"}
        data = BIG.encode()
        assert art["digest"] == digest(data) == digest(BIG)
        assert art["bytes"] == len(data)
        assert art["chars"] == len(BIG)
        assert art["elided-chars"] == len(BIG) - len(excerpt)
        assert isinstance(art["file"], str) and "/" not in art["file"] and art["file"] not in ("", ".", "..")
        assert s.read_artifact(art) == data
        op = s.append_tool_dispatched("c1", "cat", {"path": "big.log"})
        s.append_tool_settled(op, "completed", result_digest=digest(excerpt), artifact=art)
    with Session.load(p) as s:
        settled = s.events[-1].payload
        assert settled["artifact"] == art
        assert s.read_artifact(settled["artifact"]) == data


def test_bytes_content(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        raw = bytes(range(256)) * 10
        art = s.write_artifact(raw, excerpt="binary")
        assert art["digest"] == digest(raw)
        assert art["bytes"] == len(raw)
        assert s.read_artifact(art) == raw


def test_content_addressing(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        a = s.write_artifact("same content", excerpt="same")
        b = s.write_artifact("same content", excerpt="s")
        c = s.write_artifact(b"same content", excerpt="")
        d = s.write_artifact("other content", excerpt="")
        assert a["file"] == b["file"] == c["file"]
        assert a["digest"] == c["digest"]
        assert d["file"] != a["file"]
        folder = s.artifact_path(a["file"]).parent
        assert sorted(os.listdir(folder)) == sorted({a["file"], d["file"]}), "one file per content, no leftovers"


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o077])
def test_the_folder_beside_the_transcript_and_its_modes(tmp_path: Path, mask: int) -> None:
    p = tmp_path / "runs" / "2026-08-09.jsonl"
    with umask(mask):
        with Session.create(p) as s:
            art = s.write_artifact("x" * 100, excerpt="x")
            where = s.artifact_path(art["file"])
    folder = tmp_path / "runs" / "2026-08-09.artifacts"
    assert where == folder / art["file"]
    assert where.read_bytes() == b"x" * 100
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o600


@pytest.mark.parametrize("name", ["..", "../run.jsonl", "a/b", "/etc/passwd", "a\\b", "..\\x", "x\x00y", "", "."])
def test_names_that_are_not_plain_basenames_are_refused(tmp_path: Path, name: str) -> None:
    p = tmp_path / "deep" / "run.jsonl"
    secret = tmp_path / "deep" / "run.jsonl"
    with Session.create(p) as s:
        with pytest.raises(ValueError):
            s.artifact_path(name)
        with pytest.raises(ValueError):
            s.read_artifact({"file": name, "digest": digest(secret.read_bytes())})


def test_a_missing_file_reads_as_none(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        art = s.write_artifact("gone soon", excerpt="")
        s.artifact_path(art["file"]).unlink()
        assert s.read_artifact(art) is None
        # Never written at all (a transcript moved without its folder).
        assert s.read_artifact({**art, "file": "sha256-" + "0" * 64}) is None


def test_a_tampered_file_is_a_value_error(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        art = s.write_artifact("the real result", excerpt="")
        path = s.artifact_path(art["file"])
        path.write_bytes(b"the real resulT")
        with pytest.raises(ValueError):
            s.read_artifact(art)
        path.write_bytes(b"")
        with pytest.raises(ValueError):
            s.read_artifact(art)


@pytest.mark.parametrize("how", ["create", "open", "load"])
def test_a_relative_path_is_resolved_when_the_session_opens(tmp_path: Path, how: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent opens "run.jsonl" in its run folder, then chdirs into its checkout:
    # the artifacts still go beside the transcript, not into the checkout.
    runs, checkout = tmp_path / "runs", tmp_path / "checkout"
    runs.mkdir()
    checkout.mkdir()
    monkeypatch.chdir(runs)
    if how == "load":
        Session.create("run.jsonl").close()
    with getattr(Session, how)("run.jsonl") as s:
        os.chdir(checkout)
        assert s.path == runs / "run.jsonl"
        art = s.write_artifact("the full tool output", excerpt="the full")
        assert (runs / "run.artifacts" / art["file"]).exists()
        assert s.artifact_path(art["file"]) == runs / "run.artifacts" / art["file"]
        assert s.read_artifact(art) == b"the full tool output"
        s.append_message(Message.user("after the chdir"))
    assert list(checkout.iterdir()) == []
    with Session.load(runs / "run.jsonl") as again:
        assert again.read_artifact(art) == b"the full tool output"
        assert [m.content for m in again.messages] == ["after the chdir"]


def test_the_same_content_from_many_threads_at_once(tmp_path: Path) -> None:
    # A tool result fanned out to workers: each stores it. The temporary name was
    # per process, so the second thread's exclusive create failed.
    with Session.create(tmp_path / "run.jsonl") as s:
        for round_ in range(20):
            content = f"round {round_}: " + "output ✓\n" * 5000
            start = threading.Barrier(8)
            results: list[object] = []

            def store() -> None:
                start.wait()
                try:
                    results.append(s.write_artifact(content, excerpt="output"))
                except Exception as e:  # noqa: BLE001 — collected, then asserted on
                    results.append(e)

            threads = [threading.Thread(target=store) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert all(isinstance(r, dict) for r in results), results
            assert len({r["file"] for r in results}) == 1  # type: ignore[index]
            assert s.read_artifact(results[0]) == content.encode()  # type: ignore[arg-type]
        folder = tmp_path / "run.artifacts"
        assert len(os.listdir(folder)) == 20  # no temporary file left behind


def test_a_damaged_artifact_is_stored_again(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        art = s.write_artifact("the full output", excerpt="the")
        target = s.artifact_path(art["file"])
        target.write_bytes(b"the full")  # cut short by someone
        assert s.write_artifact("the full output", excerpt="the") == art
        assert s.read_artifact(art) == b"the full output"
