"""docs/reference/transcript.schema.json accepts every transcript this library
writes and the fixtures hold, and refuses a line whose envelope or payload
breaks the format."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.bench import generator

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "reference" / "transcript.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
FIXTURES = ROOT / "tests" / "data"


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def whole_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each line of ``path`` that is one JSON value (a torn or damaged fixture line is not a line to check)."""
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except ValueError:
            continue


def fixture_files() -> list[Path]:
    found = sorted(p for p in FIXTURES.rglob("*.jsonl") if "golden" not in p.parts)
    assert len(found) >= 10, found
    return found


# Fixtures that are damaged on purpose in a way a single line shows.
NOT_TRANSCRIPT_LINES = {"future.jsonl", "future_mid.jsonl"}


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_line_of_every_fixture_is_valid(path: Path) -> None:
    lines = list(whole_lines(path))
    for number, value in lines:
        errors = list(VALIDATOR.iter_errors(value))
        if path.name in NOT_TRANSCRIPT_LINES and errors:
            assert any(e.validator == "const" and list(e.path) == ["v"] for e in errors), errors
            continue
        if not isinstance(value, dict) or value.get("type") is None:
            continue  # another program's line (not_meta_first, text): not an envelope at all
        assert errors == [], f"{path.name}:{number}: {errors[0].message}"


def test_a_future_version_is_refused() -> None:
    lines = [v for p in FIXTURES.rglob("future*.jsonl") for _, v in whole_lines(p)]
    assert any(not VALIDATOR.is_valid(v) for v in lines)


@pytest.mark.parametrize("profile", ["yardstick", "small"])
def test_generated_transcripts_are_valid(profile: str, tmp_path: Path) -> None:
    path = tmp_path / f"{profile}.jsonl"
    generator.write_transcript(path, 0.5, seed=7, profile=profile)
    types = set()
    for number, value in whole_lines(path):
        types.add(value["type"])
        errors = list(VALIDATOR.iter_errors(value))
        assert errors == [], f"line {number}: {errors[0].message}"
    assert {"session-meta", "message", "tool-dispatched", "tool-settled"} <= types


def every_kind(tmp_path: Path) -> list[dict[str, Any]]:
    """A transcript with a line of each type, written through the API."""
    path = tmp_path / "kinds.jsonl"
    with Session.create(path, meta={"agent": "schema"}) as s:
        s.append_message(Message.system("sys"))
        u = s.append_message(Message.user("hi"), extra={"finish-reason": "stop"})
        call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        a = s.append_message(Message.assistant(tool_calls=[call]))
        op = s.append_tool_dispatched("c1", "t", '{"x": 1}', idempotency="read-only", run_id="r", round=2)
        t = s.append_message(Message.tool("c1", "out"))
        art = s.write_artifact("x" * 100, excerpt="x")
        s.append_tool_settled(op, "completed", duration=0.5, result_digest="sha256:" + "0" * 64, artifact=art)
        op2 = s.append_tool_dispatched("c2", "t", "not json")
        s.append_tool_settled(op2, "failed", error={"message": "no"}, reason="because")
        s.append_grants({"t": "always"})
        s.append_run_context([("AGENTS.md", "be nice"), ("AGENTS.md", "be nice")], [("os", "linux")])
        s.append_elision([(t, "[elided]")])
        c = s.append_compaction("sum", u, 10, 2, replacement=[Message("user", "kept", sticky=True)])
        s.append_compaction("sum2", a, 10, 2, fallback=True)
        s.append_rewind(f"{c}:0")
        s.append_rewind(None)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_kind_the_api_writes_is_valid(tmp_path: Path) -> None:
    lines = every_kind(tmp_path)
    assert {v["type"] for v in lines} == {
        "session-meta", "message", "tool-dispatched", "tool-settled", "grants", "run-context",
        "elision", "compaction", "rewind"}
    for value in lines:
        assert VALIDATOR.is_valid(value), next(VALIDATOR.iter_errors(value)).message


# (envelope type, path to a key, the value put there or None to delete the key)
MUTATIONS = [
    (None, ("v",), 2),
    (None, ("id",), ""),
    (None, ("id",), None),
    (None, ("ts",), "2026-08-09 13:10:08"),
    (None, ("ts",), "2026-08-09T13:10:08Z"),
    (None, ("type",), 7),
    (None, ("payload",), None),
    ("message", ("payload", "role"), None),
    ("message", ("payload", "content"), 5),
    ("message", ("payload", "tool_calls"), "c1"),
    ("message", ("payload", "sticky"), False),
    ("grants", ("payload", "grants"), None),
    ("compaction", ("payload", "replaces-through-id"), None),
    ("compaction", ("payload", "tokens-before"), "10"),
    ("compaction", ("payload", "fallback"), "no"),
    ("compaction", ("payload", "replacement"), [{"content": "no role"}]),
    ("elision", ("payload", "items"), [{"id": "x"}]),
    ("rewind", ("payload", "through-id"), 3),
    ("rewind", ("payload", "through-id"), None),
    ("tool-dispatched", ("payload", "arguments-digest"), "md5:00"),
    ("tool-dispatched", ("payload", "call-id"), None),
    ("tool-dispatched", ("payload", "round"), "2"),
    ("tool-settled", ("payload", "outcome"), "ok"),
    ("tool-settled", ("payload", "op-id"), None),
    ("tool-settled", ("payload", "artifact", "file"), "../../etc/passwd"),
    ("tool-settled", ("payload", "artifact", "digest"), "sha256:xyz"),
    ("run-context", ("payload", "facts"), [["os"]]),
    ("run-context", ("payload", "sections"), [{"name": "a", "digest": "sha256:" + "0" * 64}]),
]


def mutate(value: dict[str, Any], path: tuple[str, ...], new: Any) -> dict[str, Any]:
    changed = copy.deepcopy(value)
    target = changed
    for key in path[:-1]:
        target = target[key]
    if new is None and path[-1] not in ("through-id",):
        del target[path[-1]]
    else:
        target[path[-1]] = new
    return changed


@pytest.mark.parametrize("kind, path, new", MUTATIONS, ids=lambda x: str(x))
def test_a_mutated_line_is_refused(kind: str | None, path: tuple[str, ...], new: Any, tmp_path: Path) -> None:
    lines = every_kind(tmp_path)
    candidates = [v for v in lines if (kind is None or v["type"] == kind)]
    if path[-2:] == ("artifact", "file") or path[-2:] == ("artifact", "digest"):
        candidates = [v for v in candidates if "artifact" in v["payload"]]
    original = candidates[0]
    assert VALIDATOR.is_valid(original)
    if (kind, path[-1], new) == ("rewind", "through-id", None):
        changed = copy.deepcopy(original)
        del changed["payload"]["through-id"]
    else:
        changed = mutate(original, path, new)
    assert not VALIDATOR.is_valid(changed), (original, changed)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_wrong_type_anywhere_in_the_envelope_is_refused(data: st.DataObject) -> None:
    line = {"id": "a", "payload": {"role": "user", "content": "hi"}, "ts": "2026-08-09T13:10:08.542283Z",
            "type": "message", "v": 1}
    key = data.draw(st.sampled_from(["id", "ts", "type", "v"]))
    wrong = data.draw(st.one_of(st.integers(min_value=2), st.floats(allow_nan=False), st.lists(st.integers()),
                                st.dictionaries(st.text(), st.integers()), st.booleans()))
    if key == "v" and isinstance(wrong, bool):
        wrong = [wrong]
    line[key] = wrong
    assert not VALIDATOR.is_valid(line)
