"""Run context: facts in order, each section's text stored once, pointers to the
line that carries it, and reading a section back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_transcript import Message, Session, digest

from ._helpers import line, meta, msg, parsed, write

IDENTITY = "You are sadna, a coding agent.\n"
AGENTS = "# AGENTS.md\nrun the tests — always 😀\n"
TODAY = "Today is 2026-08-09."


def payloads(path: Path) -> dict[str, dict[str, Any]]:
    return {e["id"]: e["payload"] for e in parsed(path) if e["type"] == "run-context"}


def test_first_line_carries_the_text_and_facts_keep_their_order(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        rc = s.append_run_context([("identity", IDENTITY), ("agents", AGENTS)],
                                  [("date", "2026-08-09"), ("branch", "main"), ("a", {"n": [1, None]})])
        assert s.messages == [] and s.message_ids == []
    assert payloads(tmp_path / "run.jsonl")[rc] == {
        "facts": [["date", "2026-08-09"], ["branch", "main"], ["a", {"n": [1, None]}]],
        "sections": [{"name": "identity", "digest": digest(IDENTITY), "text": IDENTITY},
                     {"name": "agents", "digest": digest(AGENTS), "text": AGENTS}],
    }


def test_a_section_is_stored_once_and_later_lines_point_at_it(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        first = s.append_run_context([("identity", IDENTITY), ("agents", AGENTS)], [("date", "1")])
        s.append_message(Message.user("between"))
        second = s.append_run_context([("identity", IDENTITY), ("today", TODAY)], [("date", "2")])
        # Same text under another name: the digest is what counts.
        third = s.append_run_context([("renamed", AGENTS), ("today", TODAY), ("identity", IDENTITY)], [])
    got = payloads(p)
    assert got[second]["sections"] == [
        {"name": "identity", "digest": digest(IDENTITY), "rendered-in": first},
        {"name": "today", "digest": digest(TODAY), "text": TODAY},
    ]
    assert got[third] == {"facts": [], "sections": [
        {"name": "renamed", "digest": digest(AGENTS), "rendered-in": first},
        {"name": "today", "digest": digest(TODAY), "rendered-in": second},
        {"name": "identity", "digest": digest(IDENTITY), "rendered-in": first},
    ]}
    # The text is on exactly one line per digest.
    carried = [sec["digest"] for pl in got.values() for sec in pl["sections"] if "text" in sec]
    assert sorted(carried) == sorted({digest(IDENTITY), digest(AGENTS), digest(TODAY)})


def test_two_identical_sections_in_one_call(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        rc = s.append_run_context([("a", TODAY), ("b", TODAY), ("c", TODAY)], [])
        later = s.append_run_context([("a", TODAY), ("a", TODAY)], [])
        assert s.run_context_section(digest(TODAY)) == TODAY
    got = payloads(p)
    assert got[rc]["sections"] == [
        {"name": "a", "digest": digest(TODAY), "text": TODAY},
        {"name": "b", "digest": digest(TODAY), "rendered-in": rc},
        {"name": "c", "digest": digest(TODAY), "rendered-in": rc},
    ]
    assert got[later]["sections"] == [
        {"name": "a", "digest": digest(TODAY), "rendered-in": rc},
        {"name": "a", "digest": digest(TODAY), "rendered-in": rc},
    ]


def test_sections_are_read_back_after_a_reload(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        first = s.append_run_context([("identity", IDENTITY), ("empty", "")], [])
        s.append_run_context([("agents", AGENTS), ("identity", IDENTITY)], [])
    with Session.load(p) as s:
        for text in (IDENTITY, AGENTS, ""):
            assert s.run_context_section(digest(text)) == text
        assert s.run_context_section(digest("never rendered")) is None
        assert s.run_context_section("not a digest") is None
        # Dedup carries on across the reload: the text stays where it was.
        again = s.append_run_context([("identity", IDENTITY), ("new", TODAY)], [])
    got = payloads(p)
    assert got[again]["sections"] == [
        {"name": "identity", "digest": digest(IDENTITY), "rendered-in": first},
        {"name": "new", "digest": digest(TODAY), "text": TODAY},
    ]
    with Session.load(p) as s:
        assert s.run_context_section(digest(TODAY)) == TODAY


def test_a_missing_carrier_reads_as_none(tmp_path: Path) -> None:
    # A hand-written file: the pointer names a line that is not there (a repair,
    # a truncated copy). That is not an error.
    p = tmp_path / "run.jsonl"
    write(p, meta(), msg("m1"),
          line("rc2", "run-context", {"facts": [], "sections": [
              {"name": "identity", "digest": digest(IDENTITY), "rendered-in": "rc-gone"},
              {"name": "today", "digest": digest(TODAY), "text": TODAY}]}))
    with Session.load(p) as s:
        assert s.message_ids == ["m1"]
        assert s.run_context_section(digest(IDENTITY)) is None
        assert s.run_context_section(digest(TODAY)) == TODAY


def test_a_run_context_is_untouched_by_compaction(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    with Session.create(p) as s:
        a = s.append_message(Message.user("a"))
        s.append_run_context([("identity", IDENTITY)], [("k", "v")])
        s.append_message(Message.user("b"))
        k = s.append_compaction("sum", s.message_ids[-1], 1, 1)
        assert s.message_ids == [k]
        assert a not in s.message_ids
        assert s.run_context_section(digest(IDENTITY)) == IDENTITY
