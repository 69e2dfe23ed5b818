"""``serve``: the Host check, no write endpoint, names kept in the folder, the picker rows, the event stream."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest

from agent_transcript import Message, Session, canonical_json
from agent_transcript.viewer.server import picker_row

from .helpers import every_kind
from .serving import append_line, connect, get, port_of, served

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "cli"


def envelope_line(n: int, text: str) -> bytes:
    env = {"id": f"live{n:04d}", "payload": {"role": "assistant", "content": text}, "ts": "2026-08-09T13:10:08.542283Z", "type": "message", "v": 1}
    return canonical_json(env).encode() + b"\n"


def test_the_server_checks_the_host_refuses_writes_and_escapes_nothing(tmp_path: Path) -> None:
    every_kind(tmp_path / "run.jsonl")
    (tmp_path / "secret.txt").write_text("secret")
    with served(tmp_path) as base:
        port = port_of(base)
        status, headers, body = get(base, "/")
        assert status == 200 and b"<code>run.jsonl</code>" in body
        assert "default-src 'none'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{int(port) + 1}", f"localhost.evil:{port}"):
            assert get(base, "/", host=host)[0] == 403, host
        assert get(base, "/", host=f"localhost:{port}")[0] == 200
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert get(base, "/t/run.jsonl", method=method)[0] == 405
        for bad in ("/t/..%2fsecret.txt", "/t/../../etc/passwd", "/t/%2fetc%2fpasswd", "/t/nope.jsonl", "/a/run.jsonl?file=..%2Frun.jsonl", "/nowhere"):
            assert get(base, bad)[0] == 404, bad
        status, headers, body = get(base, "/t/run.jsonl")
        assert status == 200 and b"compaction" in body and b'data-events="/e/run.jsonl?offset=' in body
        assert "connect-src 'self'" in headers["Content-Security-Policy"]
        # The records go as data, every < escaped inside their JSON strings (the page's
        # script draws them with DOM calls: tests/viewer/test_browser.py).
        assert b"<script>window.__pwned" not in body and b"\\u003cscript>window.__pwned=1\\u003c/script>" in body
        status, headers, body = get(base, "/a/run.jsonl?file=" + json.loads(_artifact_line(tmp_path / "run.jsonl"))["file"])
        assert status == 200 and body.startswith(b"full output") and headers["Content-Type"].startswith("text/plain")


def test_an_events_query_out_of_range_is_a_400_before_the_stream(tmp_path: Path) -> None:
    every_kind(tmp_path / "run.jsonl")
    with served(tmp_path) as base:
        for query in ("offset=-5", "offset=0&line=0", "offset=0&line=-3", "from=-1&n=2", "from=0&n=-2",
                      "offset=x", "offset=0&line=1.5"):
            status, headers, body = get(base, f"/e/run.jsonl?{query}")
            assert status == 400 and not headers["Content-Type"].startswith("text/event-stream"), (query, body)
        status, headers, _ = get(base, "/e/run.jsonl?offset=0&line=1", method="HEAD")
        assert status == 200 and headers["Content-Type"].startswith("text/event-stream")


def _artifact_line(path: Path) -> str:
    for line in path.read_bytes().split(b"\n"):
        if b'"artifact"' in line:
            return json.dumps(json.loads(line)["payload"]["artifact"])
    raise AssertionError("no artifact")


def test_picker_rows_from_the_first_and_last_lines(tmp_path: Path) -> None:
    with Session.create(tmp_path / "a.jsonl", meta={"task": "t"}) as s:
        s.append_message(Message.system("sys"))
        s.append_message(Message.user("Fix the <b>parser</b>\nsecond line"))
        s.append_tool_dispatched("c1", "run", "{}")
    (tmp_path / "torn.jsonl").write_bytes((FIXTURES / "torn.jsonl").read_bytes())
    (tmp_path / "text.jsonl").write_bytes(b"hello\n")
    row = picker_row(str(tmp_path), "a.jsonl")
    assert row.title == "Fix the <b>parser</b> second line" and row.status == "pending"  # fleet's title: its lines joined and row.started and row.last and row.size > 0
    assert picker_row(str(tmp_path), "torn.jsonl").status.startswith("torn tail")
    assert picker_row(str(tmp_path), "text.jsonl").status == "not a transcript"
    with served(tmp_path) as base:
        body = get(base, "/")[2].decode()
        assert body.count("<tr class=row") == 3 and "Fix the &lt;b&gt;parser&lt;/b&gt;" in body


def test_events_hold_a_half_line_and_follow_a_repair(tmp_path: Path) -> None:
    src = tmp_path / "live.jsonl"
    with Session.create(src) as s:
        s.append_message(Message.user("start"))
    size = src.stat().st_size
    with served(tmp_path) as base:
        c, r = connect(base, f"/e/live.jsonl?offset={size}&line=3")
        assert r.status == 200 and r.getheader("Content-Type", "").startswith("text/event-stream")
        assert r.readline() == b"retry: 1000\n" and r.readline() == b"\n"
        one = envelope_line(1, "first live")
        half = envelope_line(2, "torn")[:30]
        append_line(src, one + half)
        events = _read_event(r)
        assert events["event"] == "rec" and events["id"] == f"{size + len(one)}.4"
        assert json.loads(events["data"])["line"] == 3 and "first live" in json.loads(events["data"])["raw"]
        # The half line is held; a repair removes it (swapping the file); the next whole line comes.
        time.sleep(0.6)
        with Session.load(src) as s:  # load repairs the torn tail, by rename
            s.append_message(Message.assistant("after the repair"))
        events = _read_event(r)
        data = json.loads(events["data"])
        assert data["line"] == 4 and "after the repair" in data["raw"] and "torn" not in data["raw"]
        c.close()


def test_a_reconnection_goes_on_at_the_next_line_with_its_number(tmp_path: Path) -> None:
    """What a browser's EventSource does when a stream drops: it asks again with
    the last event's id (``Last-Event-ID``); the next line comes, numbered on."""
    src, size = _live(tmp_path)
    with served(tmp_path) as base:
        c, r = _stream(base, "live.jsonl", size, 3)
        append_line(src, envelope_line(1, "before the drop"))
        first = _read_event(r)
        assert json.loads(first["data"])["line"] == 3
        c.close()
        append_line(src, envelope_line(2, "after the drop"))
        c, r = connect(base, f"/e/live.jsonl?offset={size}&line=3", headers={"Last-Event-ID": first["id"]})
        assert r.readline() == b"retry: 1000\n" and r.readline() == b"\n"
        again = json.loads(_read_event(r)["data"])
        assert again["line"] == 4 and "after the drop" in again["raw"]
        c.close()


def _live(tmp_path: Path, first: str = "start") -> tuple[Path, int]:
    """A transcript ``live.jsonl`` of one user message, and its size: where a page ends."""
    src = tmp_path / "live.jsonl"
    with Session.create(src) as s:
        s.append_message(Message.user(first))
    return src, src.stat().st_size


def _stream(base: str, name: str, offset: int, line: int) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    c, r = connect(base, f"/e/{name}?offset={offset}&line={line}")
    assert r.status == 200 and r.readline() == b"retry: 1000\n" and r.readline() == b"\n"
    return c, r


@pytest.mark.parametrize("how", ["rotated", "rewritten-in-place"])
def test_events_reset_the_page_when_another_run_takes_the_path(tmp_path: Path, how: str) -> None:
    """Another run at the path, whether the old one was renamed away (a
    rotation, not a repair) or the file was emptied and written again in place
    past the page's end between two polls (its size never went below it): the
    page's lines are not the new file's start, so the stream says reset (the
    page reloads) instead of sending the new file's middle as the next records."""
    src, size = _live(tmp_path, "the first run")
    with served(tmp_path) as base:
        c, r = _stream(base, "live.jsonl", size, 3)
        other = tmp_path / "other.jsonl"
        with Session.create(other) as s:
            s.append_message(Message.user("a second run, longer than the first one was " * 3))
        if how == "rotated":
            src.rename(tmp_path / "live.1.jsonl")
            other.rename(src)
        else:
            with open(src, "r+b") as f:  # the same inode
                f.write(other.read_bytes())
        assert _read_event(r) == {"event": "reset", "data": "{}"}
        c.close()


def test_events_send_every_line_of_a_big_append_once(tmp_path: Path) -> None:
    src, size = _live(tmp_path)
    with served(tmp_path) as base:
        c, r = _stream(base, "live.jsonl", size, 3)
        append_line(src, b"".join(envelope_line(i, f"line {i}") for i in range(1, 2001)))
        got = [json.loads(_read_event(r)["data"]) for _ in range(2000)]
        assert [d["line"] for d in got] == list(range(3, 2003))
        assert [json.loads(d["raw"])["payload"]["content"] for d in got] == [f"line {i}" for i in range(1, 2001)]
        c.close()


def test_events_send_a_line_read_over_several_polls_once_whole(tmp_path: Path) -> None:
    """A line longer than a read (8 MiB), its pieces appended between polls: it is
    held, piece by piece, and sent once, whole (shortened), when its newline comes."""
    src, size = _live(tmp_path)
    big = envelope_line(1, "y" * (20 << 20))
    after = envelope_line(2, "after the big one")
    with served(tmp_path) as base:
        c, r = _stream(base, "live.jsonl", size, 3)
        for piece in (big[:9 << 20], big[9 << 20:19 << 20], big[19 << 20:] + after):
            append_line(src, piece)
            time.sleep(0.5)  # a poll or two between the pieces
        first, second = _read_event(r), _read_event(r)
        c.close()
    assert first["event"] == "rec" and first["id"] == f"{size + len(big)}.4"
    shown = json.loads(json.loads(first["data"])["raw"])
    cut = shown["payload"]["content"]  # cut as a page cuts a long string: its start, and its size
    assert shown["id"] == "live0001" and cut["bytes"] == 20 << 20 and set(next(v for k, v in cut.items() if k != "bytes")) == {"y"}
    assert second["id"] == f"{size + len(big) + len(after)}.5" and "after the big one" in json.loads(second["data"])["raw"]


def test_events_never_wait_on_a_fifo_put_at_the_path(tmp_path: Path) -> None:
    """Opening a FIFO waits for a writer: the stream would hang there for good.
    It goes on with the file it has, as ``follow`` does."""
    import os

    src, size = _live(tmp_path)
    with served(tmp_path) as base:
        c, r = _stream(base, "live.jsonl", size, 3)
        moved = tmp_path / "moved.jsonl"
        src.rename(moved)
        os.mkfifo(src)
        time.sleep(0.6)  # a few polls see the FIFO
        append_line(moved, envelope_line(1, "still followed"))
        event = _read_event(r)
        assert event["event"] == "rec" and "still followed" in json.loads(event["data"])["raw"]
        c.close()


def _read_event(r: http.client.HTTPResponse) -> dict[str, str]:
    out: dict[str, str] = {}
    while True:
        line = r.readline().decode()
        if line == "\n" and out:
            return out
        if line.startswith(":") or line == "\n":
            continue
        key, _, value = line.rstrip("\n").partition(": ")
        out[key] = value


def test_the_tail_page_is_read_back_from_the_end_and_the_rest_follows(tmp_path: Path) -> None:
    """The tail page carries the last whole lines only (never the half-written one),
    without its line numbers; the event stream then sends them, with what replay says."""
    from agent_transcript.viewer.server import TAIL_RECORDS

    src = tmp_path / "long.jsonl"
    with Session.create(src) as s:
        for k in range(400):
            s.append_message(Message.user(f"turn {k}"))
        s.append_message(Message.assistant("calling", tool_calls=[{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]))
        op = s.append_tool_dispatched("c1", "run", "{}")
    whole = src.read_bytes()
    lines = whole.count(b"\n")
    append_line(src, envelope_line(9, "half")[:40])
    with served(tmp_path) as base:
        status, _, body = get(base, "/t/long.jsonl")
        assert status == 200
        island = body.split(b'id=at-data data-first="', 1)[1].split(b"</script>", 1)[0]
        first, data = island.split(b'">\n', 1)
        assert first == b"0"  # not known yet: nothing before the tail was read
        shown = data.rstrip(b"\n").split(b"\n")
        assert len(shown) == TAIL_RECORDS and shown[-1] == whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
        assert b"half" not in data and op.encode() in shown[-1]
        events = body.split(b'data-events="', 1)[1].split(b'"', 1)[0].decode().replace("&amp;", "&")
        c, r = connect(base, events)
        assert r.readline() == b"retry: 1000\n" and r.readline() == b"\n"
        ev = _read_event(r)
        assert ev["event"] == "notes"
        notes = json.loads(ev["data"])
        assert notes["first"] == lines - TAIL_RECORDS + 1
        assert notes["summary"][0][0] == "verdict v-repairable" and "torn tail" in notes["summary"][0][1]
        assert notes["notes"][str(lines)] == {"pending": "dispatched"}
        assert [p[1:] for p in notes["pending"]] == [["run", "c1", "dispatched"]]
        # The call no tool message answers, named as check names it.
        assert notes["notes"][str(lines - 1)] == {"unanswered": ["c1"]}
        assert ["warning unanswered", f"1 tool call unanswered: run c1 (line {lines - 1})"] in notes["summary"]
        c.close()


def test_an_archive_is_shown_from_its_decompressed_lines(tmp_path: Path) -> None:
    """``html`` and ``serve`` of a ``.jsonl.zst`` carry its lines as they were before
    compression (read through the read model's decompressed file), never its bytes."""
    from agent_transcript.inspect import read
    from agent_transcript.viewer import write_html

    src = tmp_path / "closed.jsonl"
    with Session.create(src) as s:
        for k in range(5):
            s.append_message(Message.user(f"turn {k} <b>"))
    lines = src.read_bytes().rstrip(b"\n").split(b"\n")
    archive = Session.archive(src)
    out = tmp_path / "closed.html"
    write_html(read(str(archive), lenient=True), str(out))
    island = out.read_bytes().split(b'id=at-data data-first="1">\n', 1)[1].split(b"\n</script>", 1)[0]
    assert island.rstrip(b"\n").split(b"\n") == [ln.replace(b"<", b"\\u003c") for ln in lines]
    with served(tmp_path) as base:
        assert f"/t/{archive.name}".encode() in get(base, "/")[2]
        status, _, body = get(base, f"/t/{archive.name}")
        assert status == 200
        island = body.split(b'id=at-data data-first="1">\n', 1)[1].split(b"\n</script>", 1)[0]
        assert island.rstrip(b"\n").split(b"\n") == [ln.replace(b"<", b"\\u003c") for ln in lines]
