"""Importing Claude Code sessions and Codex rollouts: replay equals the tool's own resume,
tool lifecycle, nothing lost, deterministic, bad input refused (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Session
from agent_transcript.formats import UnknownFormat, detect_format, import_transcript, source_lines

from .sources import BASIC, PRESERVED, SOURCES, Source, asst, lines, result, text, use, user


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_transcript", *map(str, args)],
                          capture_output=True, text=True, encoding="utf-8", timeout=120)


def write(tmp_path: Path, src: Source) -> Path:
    path = tmp_path / (src.name + src.suffix)
    path.write_bytes(src.data)
    return path


def shape(messages: list) -> list:
    return [(m.role, m.content, tuple(c["id"] for c in m.tool_calls or ()), m.tool_call_id) for m in messages]


@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_replay_equals_the_tools_resume(tmp_path: Path, src: Source) -> None:
    path = write(tmp_path, src)
    assert detect_format(path) == src.format
    dest = tmp_path / "out.jsonl"
    [result] = import_transcript(path, dest)
    assert result.source_format == src.format
    assert len(result.warnings) >= src.warnings
    with Session.load(dest) as s:
        assert shape(s.messages) == src.messages
        assert s.warnings == []
        # every tool message answers a call of an assistant message before it
        calls: set[str] = set()
        for m in s.messages:
            if m.role == "tool":
                assert m.tool_call_id in calls
            calls.update(c["id"] for c in m.tool_calls or ())
        pending = {op.call_id: op.state for op in s.pending_tool_operations()}
        assert pending == {c: "dispatched" for c in src.pending}
        settled = {e.payload["op-id"]: e.payload["outcome"] for e in s.events if e.type == "tool-settled"}
        ops = {e.id: e.payload["call-id"] for e in s.events if e.type == "tool-dispatched"}
        assert {ops[op]: outcome for op, outcome in settled.items()} == src.settled
        types = [e.type for e in s.events]
        for kind, least in src.types.items():
            assert types.count(kind) >= least, kind
        assert s.meta["format"] == src.format
        assert s.meta["source"]["path"] == str(path.resolve())
        assert s.meta["source"]["sha256"].startswith("sha256:")
    assert list(source_lines(dest)) == src.data.split(b"\n")[: -1 if src.data.endswith(b"\n") else None]


@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_imported_file_passes_check_and_show_json(tmp_path: Path, src: Source) -> None:
    dest = tmp_path / "out.jsonl"
    r = cli("import", write(tmp_path, src), "-o", dest)
    assert r.returncode == 0, r.stderr
    r = cli("check", dest)
    assert r.returncode == 0 and "clean" in r.stdout, r.stdout + r.stderr
    r = cli("show", "--json", dest)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    with Session.load(dest) as s:
        assert shown["meta"] == s.meta
        assert len(shown["envelopes"]) == len(s.events)


def test_importing_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    for src in SOURCES:
        path = write(tmp_path, src)
        import_transcript(path, tmp_path / "a.jsonl", force=True)
        import_transcript(path, tmp_path / "b.jsonl", force=True)
        assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes(), src.name


def test_claude_code_mapping_details(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(*BASIC))
    import_transcript(path, tmp_path / "o.jsonl")
    with Session.load(tmp_path / "o.jsonl") as s:
        entry = s.entries[1]
        assert entry.extra["claude-code"]["uuids"] == ["a1", "a2", "a3"]
        assert entry.extra["claude-code"]["thinking"][0]["thinking"] == "need ls"
        assert s.grants == {"claude-code": {"permission-mode": "acceptEdits"}}
        assert s.meta["title"] == "Listing demo files" and s.meta["cwd"] == "/w/demo"
        assert s.meta["version"] == "2.1.40" and s.meta["model"] == "claude-sonnet-4-5"
        dispatched = next(e for e in s.events if e.type == "tool-dispatched")
        assert dispatched.payload["arguments"] == {"command": "ls"}
        assert dispatched.payload["run-id"] == "p1"
        settled = next(e for e in s.events if e.type == "tool-settled")
        assert settled.payload["duration"] == 0.25
        assert settled.ts == "2026-03-01T10:00:04.000000Z"
        statuses = [e.payload["status"] for e in s.events if e.type == "source-line"]
        assert statuses[:5] == ["used"] * 5


def test_the_title_is_the_summary_of_a_leaf_on_the_branch(tmp_path: Path) -> None:
    from .sources import TITLES

    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(*TITLES))
    import_transcript(path, tmp_path / "o.jsonl", force=True)
    with Session.load(tmp_path / "o.jsonl") as s:
        assert s.meta["title"] == "Listing demo files"
    path.write_bytes(lines(*TITLES[:-2], TITLES[-1]))  # no summary of this branch: the last one
    import_transcript(path, tmp_path / "o.jsonl", force=True)
    assert Session.peek(tmp_path / "o.jsonl").meta["title"] == "Some other session"


def test_off_branch_and_damaged_lines_are_marked(tmp_path: Path) -> None:
    by = {s.name: s for s in SOURCES}
    for name, status in (("cc-rewind-branches", "off-branch"), ("cc-nul-line", "damaged"),
                         ("cc-sidechain", "sidechain"), ("codex-rollback", "rolled-back")):
        dest = tmp_path / f"{name}.out.jsonl"
        import_transcript(write(tmp_path, by[name]), dest)
        with Session.load(dest) as s:
            assert status in [e.payload["status"] for e in s.events if e.type == "source-line"], name


def test_codex_grants_and_meta(tmp_path: Path) -> None:
    src = next(s for s in SOURCES if s.name == "codex-g2")
    import_transcript(write(tmp_path, src), tmp_path / "o.jsonl")
    with Session.load(tmp_path / "o.jsonl") as s:
        assert s.grants == {"codex": {"approval-policy": "on-request", "sandbox-policy": {"type": "workspace-write"}}}
        assert s.meta["model"] == "gpt-5-codex" and s.meta["version"] == "0.98.0" and s.meta["cwd"] == "/w/demo"
        assert s.entries[2].extra["codex"]["reasoning"][0]["encrypted_content"] == "gAAAA"
        settled = next(e for e in s.events if e.type == "tool-settled")
        assert settled.payload["duration"] == 0.1


# -- bad input ------------------------------------------------------------------

def test_neither_format_is_one_line_and_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "notes.jsonl"
    src.write_text('{"hello": "world"}\n')
    r = cli("import", src, "-o", tmp_path / "out.jsonl")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "neither" in r.stderr
    assert list(tmp_path.iterdir()) == [src]
    with pytest.raises(UnknownFormat):
        import_transcript(src, tmp_path / "out.jsonl")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("import", empty, "-o", tmp_path / "outdir")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert not (tmp_path / "outdir").exists()


def test_forced_format_that_does_not_match_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCES[0])
    r = cli("import", "--from", "codex", path, "-o", tmp_path / "o.jsonl")
    assert r.returncode == 2 and "Claude Code" in r.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_existing_destination_is_never_overwritten_unless_forced(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCES[0])
    dest = tmp_path / "o.jsonl"
    dest.write_text("mine\n")
    r = cli("import", path, "-o", dest)
    assert r.returncode == 2 and "exists" in r.stderr and dest.read_text() == "mine\n"
    r = cli("import", "--force", path, "-o", dest)
    assert r.returncode == 0, r.stderr
    assert Session.peek(dest).error is None
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, "o.jsonl"])  # no temp left


def test_show_check_stats_name_the_format(tmp_path: Path) -> None:
    for src in (SOURCES[0], SOURCES[10]):
        path = write(tmp_path, src)
        word = "Claude Code session" if src.format == "claude-code" else "Codex rollout"
        for cmd in ("show", "check", "stats"):
            r = cli(cmd, path)
            assert r.returncode == 2
            assert f"this is a {word}: `agent-transcript import` converts it" in r.stderr, (cmd, r.stderr)


def test_folder_import_mirrors_the_tree_and_is_incremental(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    (root / "p1").mkdir(parents=True)
    (root / "p2").mkdir()
    (root / "p1" / "a.jsonl").write_bytes(SOURCES[0].data)
    (root / "p2" / "b.jsonl").write_bytes(SOURCES[10].data)
    (root / "p2" / "notes.json").write_text("{}")
    out = tmp_path / "out"
    results = import_transcript(root, out)
    assert [(r.dest.relative_to(out).as_posix(), r.skipped) for r in results] == [("p1/a.jsonl", False),
                                                                                   ("p2/b.jsonl", False)]
    before = (out / "p1" / "a.jsonl").read_bytes()
    results = import_transcript(root, out)
    assert [r.skipped for r in results] == [True, True]
    (root / "p1" / "a.jsonl").write_bytes(SOURCES[0].data + SOURCES[0].data.split(b"\n")[0] + b"\n")
    results = import_transcript(root, out)
    assert [r.skipped for r in results] == [False, True]
    assert (out / "p1" / "a.jsonl").read_bytes() != before
    r = cli("import", root, "-o", out)
    assert r.returncode == 0 and r.stdout.count("skipped") == 2


# -- nothing lost -----------------------------------------------------------------

_line = st.one_of(
    st.binary(max_size=40).filter(lambda b: b"\n" not in b),
    st.sampled_from([b"", b"   ", b"\r", b"\x00" * 8, b"{", b'{"type":"summary"', b"\xff\xfe"]),
    st.builds(lambda t: json.dumps({"type": "x-unknown", "t": t}).encode(), st.text(max_size=10)),
    st.sampled_from([json.dumps(r).encode() for r in BASIC]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_line, max_size=12), st.booleans())
def test_source_lines_give_the_source_back_byte_for_byte(tmp_path_factory: pytest.TempPathFactory,
                                                         body: list[bytes], final_newline: bool) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    data = b"\n".join([json.dumps(BASIC[0]).encode(), *body]) + (b"\n" if final_newline else b"")
    src = tmp / "s.jsonl"
    src.write_bytes(data)
    import_transcript(src, tmp / "o.jsonl")
    got = list(source_lines(tmp / "o.jsonl"))
    # Joined with \n they are the source, but for a final \n (SPEC "Beyond one file").
    assert b"\n".join(got) == (data[:-1] if data.endswith(b"\n") else data)
    with Session.load(tmp / "o.jsonl") as s:
        assert s.messages and s.warnings == []


def test_a_branch_not_taken_is_written_then_rewound(tmp_path: Path) -> None:
    src = next(s for s in SOURCES if s.name == "cc-rewind-branches")
    import_transcript(write(tmp_path, src), tmp_path / "o.jsonl")
    with Session.load(tmp_path / "o.jsonl") as s:
        kinds = [(e.type, e.payload.get("content")) for e in s.events if e.type in ("message", "rewind")]
        assert kinds == [("message", "hello"), ("message", "hi"), ("message", "write a poem"), ("message", "roses"),
                         ("rewind", None), ("message", "write a haiku"), ("message", "old pond")]
        rewind = next(e for e in s.events if e.type == "rewind")
        assert rewind.payload["through-id"] == s.message_ids[1]
        dropped = [e for e in s.events if e.type == "message" and e.payload["claude-code"].get("branch-not-taken")]
        assert [e.payload["content"] for e in dropped] == ["write a poem", "roses"]
        assert s.pending_tool_operations() == []


def test_a_refused_import_leaves_no_folder_it_made(tmp_path: Path) -> None:
    src = tmp_path / "notes.jsonl"
    src.write_text('{"hello": "world"}\n{"type": "user"}\n')
    r = cli("import", "--from", "claude-code", src, "-o", tmp_path / "new" / "deeper" / "out.jsonl")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.jsonl"]


# -- compressed rollouts -------------------------------------------------------------

def zst(path: Path) -> Path:
    from agent_transcript import _core

    out = path.with_name(path.name + ".zst")
    with open(path, "rb") as src, open(out, "wb") as dst:
        _core.zstd_compress(src.fileno(), path.stat().st_size, dst.fileno(), 3)
    return out


@pytest.mark.parametrize("name", ["codex-g2", "codex-replacement-history", "codex-legacy-compaction", "cc-basic-streamed-fragments"])
def test_a_zst_source_imports_as_its_plain_self(tmp_path: Path, name: str) -> None:
    src = next(s for s in SOURCES if s.name == name)
    plain = write(tmp_path, src)
    packed = zst(plain)
    assert detect_format(packed) == src.format
    before = {p.name for p in Path(tempfile.gettempdir()).glob("agent-transcript-import-*")}
    import_transcript(packed, tmp_path / "z.jsonl")
    before = {p.name for p in Path(tempfile.gettempdir()).glob("agent-transcript-import-*")} - before
    import_transcript(plain, tmp_path / "p.jsonl")
    assert list(source_lines(tmp_path / "z.jsonl")) == list(source_lines(tmp_path / "p.jsonl"))
    with Session.load(tmp_path / "z.jsonl") as z, Session.load(tmp_path / "p.jsonl") as p:
        assert shape(z.messages) == shape(p.messages) == src.messages
        assert z.meta["source"]["path"] == str(packed.resolve())
        assert z.meta["source"]["sha256"] == p.meta["source"]["sha256"]  # of the decompressed bytes
        assert z.meta["source"]["archive"]["bytes"] == packed.stat().st_size
    # the decompressed copy is gone with the import
    assert [p for p in Path(tempfile.gettempdir()).glob("agent-transcript-import-*") if p.name in before] == []


def test_a_folder_of_zst_rollouts_is_imported_and_the_plain_one_wins(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "2026" / "02" / "01"
    root.mkdir(parents=True)
    g2 = next(s for s in SOURCES if s.name == "codex-g2")
    rb = next(s for s in SOURCES if s.name == "codex-rollback")
    (root / "rollout-a.jsonl").write_bytes(g2.data)
    zst(root / "rollout-a.jsonl")  # both: the plain one is read, as Codex does
    (root / "rollout-b.jsonl").write_bytes(rb.data)
    zst(root / "rollout-b.jsonl")
    (root / "rollout-b.jsonl").unlink()
    out = tmp_path / "out"
    results = import_transcript(tmp_path / "sessions", out)
    assert [(r.source.name, r.dest.relative_to(out).as_posix()) for r in results] == [
        ("rollout-a.jsonl", "2026/02/01/rollout-a.jsonl"), ("rollout-b.jsonl.zst", "2026/02/01/rollout-b.jsonl")]
    with Session.load(out / "2026/02/01/rollout-b.jsonl") as s:
        assert shape(s.messages) == rb.messages
    assert [r.skipped for r in import_transcript(tmp_path / "sessions", out)] == [True, True]


def test_a_zst_that_is_not_zstd_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "rollout.jsonl.zst"
    bad.write_bytes(b'{"timestamp":"2026-02-01T09:00:00.000Z","type":"session_meta","payload":{}}\n')
    r = cli("import", bad, "-o", tmp_path / "o.jsonl")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rollout.jsonl.zst"]


def test_a_kept_message_carries_the_zeroed_usage_resume_gives_it(tmp_path: Path) -> None:
    """``claude --resume`` zeroes the token counts of the assistant messages a compaction
    kept (compactMetadata.preservedSegment): the kept message's extras say so; the
    others carry no usage of their own (it stays in their source lines)."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines(*PRESERVED))
    import_transcript(path, tmp_path / "o.jsonl")
    zeroed = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0}
    with Session.load(tmp_path / "o.jsonl") as s:
        usage = {e.message.content: e.extra["claude-code"].get("usage")
                 for e in s.entries if e.message.role == "assistant"}
        assert usage == {"keep this answer": zeroed, "ok after": None}
        replaced = [e for e in s.events if e.type == "message" and e.payload["role"] == "assistant"
                    and e.payload["content"] in ("done first", "done second")]
        assert len(replaced) == 2 and all("usage" not in e.payload["claude-code"] for e in replaced)


def _subagent(uid: str, parent: str | None, ts: str, agent: str, said: str, kind: str = "user") -> dict:
    record = user(uid, parent, ts, said) if kind == "user" else asst(uid, parent, ts, "m" + uid, text(said))
    return {**record, "isSidechain": True, "agentId": agent}


def test_a_folder_import_links_subagent_files_and_their_parent(tmp_path: Path) -> None:
    """Claude Code's ``<sessionId>/subagents/agent-<agentId>.jsonl``: each subagent's
    session-meta names its parent session (``source.parent``), the parent's lists its
    subagents (``subagents``), each with the Task call that spawned it (from the sidecar
    ``agent-<agentId>.meta.json``, or from the result's ``toolUseResult.agentId``);
    neither's replay changes; a new subagent file re-imports its parent."""
    project = tmp_path / "projects" / "-w-demo"
    subagents = project / "s1" / "subagents"
    subagents.mkdir(parents=True)
    parent = [
        user("u1", None, "00:00", "delegate twice"),
        asst("a1", "u1", "00:01", "m1", use("toolu_a", "Task", prompt="look"), use("toolu_b", "Task", prompt="dig")),
        user("u2", "a1", "00:04", [result("toolu_a", [text("agentId: ag1")])],
             toolUseResult={"agentId": "ag1", "status": "completed", "totalDurationMs": 3000}),
        user("u3", "u2", "00:05", [result("toolu_b", [text("agentId: ag2")])],
             toolUseResult={"agentId": "ag2", "status": "completed", "totalDurationMs": 1000}),
    ]
    (project / "s1.jsonl").write_bytes(lines(*parent))
    (subagents / "agent-ag1.jsonl").write_bytes(lines(_subagent("x1", None, "00:02", "ag1", "look"),
                                                      _subagent("x2", "x1", "00:03", "ag1", "seen", "assistant")))
    (subagents / "agent-ag1.meta.json").write_text(json.dumps({"agentType": "Explore", "description": "look"}))
    (subagents / "agent-ag2.jsonl").write_bytes(lines(_subagent("y1", None, "00:02", "ag2", "dig"),
                                                      _subagent("y2", "y1", "00:03", "ag2", "dug", "assistant")))
    out = tmp_path / "out"
    results = import_transcript(tmp_path / "projects", out)
    assert sorted(r.dest.relative_to(out).as_posix() for r in results) == [
        "-w-demo/s1.jsonl", "-w-demo/s1/subagents/agent-ag1.jsonl", "-w-demo/s1/subagents/agent-ag2.jsonl"]
    with Session.load(out / "-w-demo" / "s1.jsonl") as s:
        assert s.meta["subagents"] == [
            {"agent-id": "ag1", "call-id": "toolu_a", "transcript": "s1/subagents/agent-ag1.jsonl"},
            {"agent-id": "ag2", "call-id": "toolu_b", "transcript": "s1/subagents/agent-ag2.jsonl"}]
        assert "parent" not in s.meta["source"]
        parent_messages = shape(s.messages)
    with Session.load(out / "-w-demo" / "s1" / "subagents" / "agent-ag1.jsonl") as s:
        assert s.meta["source"]["parent"] == {"agent-id": "ag1", "session-id": "s1", "call-id": "toolu_a",
                                              "transcript": "../../s1.jsonl", "agent-type": "Explore",
                                              "description": "look"}
        assert shape(s.messages) == [("user", "look", (), None), ("assistant", "seen", (), None)]
        linked = (out / "-w-demo" / "s1" / "subagents" / s.meta["source"]["parent"]["transcript"]).resolve()
        assert linked == (out / "-w-demo" / "s1.jsonl").resolve()
    with Session.load(out / "-w-demo" / "s1" / "subagents" / "agent-ag2.jsonl") as s:
        assert s.meta["source"]["parent"] == {"agent-id": "ag2", "session-id": "s1", "call-id": "toolu_b",
                                              "transcript": "../../s1.jsonl"}
    # The replay is the file's own, linked or not.
    import_transcript(project / "s1.jsonl", tmp_path / "alone.jsonl")
    with Session.load(tmp_path / "alone.jsonl") as s:
        assert shape(s.messages) == parent_messages and "subagents" not in s.meta
    assert [r.skipped for r in import_transcript(tmp_path / "projects", out)] == [True, True, True]
    (subagents / "agent-ag3.jsonl").write_bytes(lines(_subagent("z1", None, "00:06", "ag3", "more")))
    again = {r.dest.relative_to(out).as_posix(): r.skipped for r in import_transcript(tmp_path / "projects", out)}
    assert again == {"-w-demo/s1.jsonl": False, "-w-demo/s1/subagents/agent-ag1.jsonl": True,
                     "-w-demo/s1/subagents/agent-ag2.jsonl": True, "-w-demo/s1/subagents/agent-ag3.jsonl": False}
    with Session.load(out / "-w-demo" / "s1.jsonl") as s:
        assert [e["agent-id"] for e in s.meta["subagents"]] == ["ag1", "ag2", "ag3"]
        assert "call-id" not in s.meta["subagents"][2]


def test_a_subagent_file_beside_its_session_links_by_session_id(tmp_path: Path) -> None:
    """The older layout: ``agent-<agentId>.jsonl`` beside the session files, its parent
    the session its records' ``sessionId`` names."""
    root = tmp_path / "projects"
    root.mkdir()
    (root / "s1.jsonl").write_bytes(lines(*BASIC))
    (root / "agent-ag9.jsonl").write_bytes(lines(_subagent("x1", None, "00:02", "ag9", "look")))
    out = tmp_path / "out"
    import_transcript(root, out)
    with Session.load(out / "agent-ag9.jsonl") as s:
        assert s.meta["source"]["parent"] == {"agent-id": "ag9", "session-id": "s1", "transcript": "s1.jsonl"}
    with Session.load(out / "s1.jsonl") as s:
        assert s.meta["subagents"] == [{"agent-id": "ag9", "transcript": "agent-ag9.jsonl"}]


def _family(project: Path) -> Path:
    """A session ``s1`` that spawned one subagent ``ag1`` (its Task call ``toolu_a``),
    in Claude Code's layout; answers the subagent's file."""
    subagents = project / "s1" / "subagents"
    subagents.mkdir(parents=True)
    (project / "s1.jsonl").write_bytes(lines(
        user("u1", None, "00:00", "delegate"),
        asst("a1", "u1", "00:01", "m1", use("toolu_a", "Task", prompt="look")),
        user("u2", "a1", "00:04", [result("toolu_a", [text("agentId: ag1")])],
             toolUseResult={"agentId": "ag1", "status": "completed"})))
    child = subagents / "agent-ag1.jsonl"
    child.write_bytes(lines(_subagent("x1", None, "00:02", "ag1", "look"),
                            _subagent("x2", "x1", "00:03", "ag1", "seen", "assistant")))
    return child


def test_a_subagent_file_imported_alone_names_its_parent(tmp_path: Path) -> None:
    """As a folder import links it, but for ``transcript``: where the parent's own
    import is, if it has one, is not this import's to know."""
    child = _family(tmp_path / "-w-demo")
    child.with_name("agent-ag1.meta.json").write_text(json.dumps({"agentType": "Explore"}))
    import_transcript(child, tmp_path / "ag1.jsonl")
    with Session.load(tmp_path / "ag1.jsonl") as s:
        assert s.meta["source"]["parent"] == {"agent-id": "ag1", "session-id": "s1", "call-id": "toolu_a",
                                              "agent-type": "Explore"}
        assert shape(s.messages) == [("user", "look", (), None), ("assistant", "seen", (), None)]
    # Its parent's file gone: what the subagent's own place and sidecar say.
    (tmp_path / "-w-demo" / "s1.jsonl").unlink()
    import_transcript(child, tmp_path / "ag1b.jsonl")
    with Session.load(tmp_path / "ag1b.jsonl") as s:
        assert s.meta["source"]["parent"] == {"agent-id": "ag1", "session-id": "s1", "agent-type": "Explore"}
    # A session file alone names no parent.
    (tmp_path / "-w-demo" / "s1.jsonl").write_bytes(lines(*BASIC))
    import_transcript(tmp_path / "-w-demo" / "s1.jsonl", tmp_path / "s1.jsonl")
    with Session.load(tmp_path / "s1.jsonl") as s:
        assert "parent" not in s.meta["source"]


@pytest.mark.parametrize("fifo", ["sidecar", "parent"])
@pytest.mark.parametrize("how", ["folder", "alone"])
def test_a_fifo_beside_a_subagent_file_is_never_waited_on(tmp_path: Path, fifo: str, how: str) -> None:
    """The sidecar ``agent-<id>.meta.json`` and the parent session are read to link a
    subagent file: a FIFO in either place was opened for reading, which waits for a
    writer for good. It is passed over (in a child process, so that a wait fails
    the test instead of hanging it)."""
    project = tmp_path / "projects" / "-w-demo"
    child = _family(project)
    if fifo == "sidecar":
        os.mkfifo(child.with_name("agent-ag1.meta.json"))
    else:
        (project / "s1.jsonl").unlink()
        os.mkfifo(project / "s1.jsonl")
    src = tmp_path / "projects" if how == "folder" else child
    run = subprocess.run([sys.executable, "-c", "import sys\nfrom agent_transcript.formats import import_transcript\n"
                          "import_transcript(sys.argv[1], sys.argv[2])", str(src), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("call", ["folder import onto it", "source_lines of it"])
def test_a_fifo_where_an_imported_transcript_is_read_is_never_waited_on(tmp_path: Path, call: str) -> None:
    """A folder import reads each destination's session-meta (is it this
    source's import already?), and ``source_lines`` reads an imported
    transcript: a FIFO there was opened for reading, which waits for a writer
    for good. Now it is refused without blocking (run in a child process, so
    that a wait fails the test instead of hanging it)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "s1.jsonl").write_bytes(lines(*BASIC))
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "s1.jsonl")
    code = ("import sys\nfrom agent_transcript.formats import import_transcript, source_lines\n"
            + ("import_transcript(sys.argv[1], sys.argv[2])" if call.startswith("folder")
               else "list(source_lines(sys.argv[2] + '/s1.jsonl'))"))
    run = subprocess.run([sys.executable, "-c", code, str(src), str(out)],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 1 and run.stderr.strip().splitlines()[-1].startswith(
        ("FileExistsError", "OSError")), run.stderr
    assert (out / "s1.jsonl").is_fifo()
