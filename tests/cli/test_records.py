"""The read commands on rewinds and replacements (tests/data/cli/records.jsonl and
its damaged variants): ``show`` says what a rewind dropped and what a
replacement put in, and ``show --replayed``, ``check`` and ``stats`` agree with
``Session.load``."""

from __future__ import annotations

import json
from pathlib import Path

from agent_transcript import CorruptTranscript, Message, Session
from cli.helpers import DATA, fixture, run

RECORDS = DATA / "records.jsonl"


def block(stdout: str, number: int) -> list[str]:
    """The lines of the block of envelope line ``number``."""
    lines = stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if line[:5].strip().isdigit() and line[5:6] == " "]
    for k, i in enumerate(heads):
        if int(lines[i][:5]) == number:
            return lines[i: heads[k + 1] if k + 1 < len(heads) else len(lines)]
    raise AssertionError(f"no block for line {number}")


def test_show_says_what_each_rewind_dropped() -> None:
    out = run("show", RECORDS).stdout
    first = block(out, 7)
    assert "rewind  through line 4" in first[0]
    assert first[1].strip() == "dropped 2 messages (lines 5-6); the lines stay in the file"
    assert "(rewound at line 7)" in block(out, 5)[0] and "(rewound at line 7)" in block(out, 6)[0]
    second = block(out, 14)
    assert "rewind  through line 10" in second[0], "a rewind naming a replacement message"
    assert "dropped 2 messages (lines 12-13)" in second[1]
    assert "rewound" not in block(out, 15)[0]


def test_show_says_what_a_replacement_put_in(tmp_path: Path) -> None:
    out = block(run("show", RECORDS).stdout, 10)
    text = "\n".join(out)
    assert "replaced 4 messages (lines 3, 4, 8, 9), through line 9" in text
    assert "kept 1 sticky message (line 2)" in text
    assert "put in 3 messages in place of the summary:" in text
    assert ":0  user  (elided at line 11)" in text and "Rename the helper to parse_ts." in text
    assert ":1  user  +item" in text and "msg_u3" not in text   # an extra's value on request
    shown = "\n".join(block(run("show", "--extras", RECORDS).stdout, 10))
    assert ':1  user  item={"id": "msg_u3", "role": "user", "type": "message"}' in shown
    assert ":2  user" in text
    assert "summary (recorded, not replayed)" in text
    # An empty replacement, a rewind to the start, and what later lines did to replacement messages.
    path = tmp_path / "run.jsonl"
    with Session.create(path) as s:
        u = s.append_message(Message.user("u"))
        k = s.append_compaction("S", u, 9, 1, replacement=[Message.user("a"), Message.user("b")])
        s.append_compaction("S2", f"{k}:0", 9, 1, replacement=[])
        s.append_rewind(None)
    out = run("show", path).stdout
    assert ":0  user  (compacted away at line 4)" in "\n".join(block(out, 3))
    assert ":1  user  (rewound at line 5)" in "\n".join(block(out, 3))
    assert "put in 0 messages in place of the summary" in "\n".join(block(out, 4))
    rewind = block(out, 5)
    assert "to the start: every live message dropped" in rewind[0]
    assert "dropped 1 message (line 3)" in rewind[1]


def test_show_replayed_names_replacement_messages_as_load_does(tmp_path: Path) -> None:
    out = run("show", "--replayed", RECORDS).stdout
    assert "5 messages (from 10 message lines), compactions, elisions and rewinds applied" in out
    assert "(message 1 of the compaction's replacement, line 10)" in out
    assert "(message 0 of the compaction's replacement, line 10) (content elided at line 11)" in out
    doc = json.loads(run("show", "--replayed", "--json", RECORDS).stdout)
    with Session.load(fixture("records.jsonl", tmp_path)) as s:
        assert [(m["id"], m["line"]) for m in doc["messages"]] == [(e.id, e.line) for e in s.entries]
        assert [Message.from_dict(m) for m in doc["messages"]] == s.messages
    assert doc["messages"][1]["id"] == "0198a1b2c3d47000800000000000000a:0"


def dropped_by_each_rewind(path: Path, tmp: Path) -> list[int]:
    """For each rewind line, how many live messages ``Session.load`` loses at it:
    the live count of the file through the line before it, less through it."""
    lines = path.read_bytes().splitlines(keepends=True)
    out = []
    for n, raw in enumerate(lines):
        if json.loads(raw)["type"] != "rewind":
            continue
        counts = []
        for upto in (n, n + 1):
            prefix = tmp / f"prefix-{upto}.jsonl"
            prefix.write_bytes(b"".join(lines[:upto]))
            with Session.load(prefix) as s:
                counts.append(len(s.messages))
        out.append(counts[0] - counts[1])
    return out


def test_stats_counts_rewinds_and_the_messages_they_dropped_as_load_does(tmp_path: Path) -> None:
    path = fixture("records.jsonl", tmp_path)
    doc = json.loads(run("stats", "--json", path).stdout)
    dropped = dropped_by_each_rewind(path, tmp_path)
    assert doc["rewinds"] == {"count": len(dropped), "messages_dropped": sum(dropped)} == {"count": 2, "messages_dropped": 4}
    (c,) = doc["compactions"]
    assert (c["messages_replaced"], c["replacement"]) == (4, 3)
    with Session.load(path) as s:
        assert doc["messages"]["live"] == len(s.messages)
        assert doc["types"]["rewind"]["count"] == sum(e.type == "rewind" for e in s.events)
    text = run("stats", path).stdout
    assert "rewinds      2 (4 messages dropped)" in text
    assert "4 messages replaced by a replacement of 3 messages" in text
    clean = json.loads(run("stats", "--json", DATA / "clean.jsonl").stdout)
    assert clean["rewinds"] == {"count": 0, "messages_dropped": 0}
    assert clean["compactions"][0]["replacement"] is None
    assert "rewinds      none" in run("stats", DATA / "clean.jsonl").stdout


def test_check_refuses_what_load_refuses_at_the_same_line(tmp_path: Path) -> None:
    for name, needle in (("rewind_unknown.jsonl", "rewind names"), ("replacement_clash.jsonl", "replacement message")):
        path = fixture(name, tmp_path)
        (report,) = json.loads(run("check", "--json", path).stdout)
        try:
            Session.load(path)
        except CorruptTranscript as exc:
            assert (report["exit"], report["line"]) == (2, exc.line) == (2, 16)
            assert needle in report["reason"] and needle in str(exc)
        else:
            raise AssertionError(f"load accepted {name}")
        stats = json.loads(run("stats", "--json", path).stdout)
        assert stats["rewinds"]["messages_dropped"] is None and stats["messages"]["live"] is None
    (report,) = json.loads(run("check", "--json", RECORDS).stdout)
    assert (report["exit"], report["live_messages"]) == (0, 5)
