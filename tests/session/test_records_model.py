"""Hypothesis: random sequences of messages, compactions with and without a
replacement, elisions and rewinds (and appends that must be refused). After
each step the session's live state equals a small plain-Python model of SPEC's
rules written here; at the end, the state after a reload equals both."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Entry, Message, Session, UnknownId

FIELDS = frozenset(("role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth"))


@dataclasses.dataclass
class Model:
    """SPEC's replay, over what was appended: the live list as Entries."""

    live: list[Entry] = dataclasses.field(default_factory=list)
    lines: int = 1  # the session-meta
    seen: list[str] = dataclasses.field(default_factory=list)  # every id ever live

    def ids(self) -> list[str]:
        return [e.id for e in self.live]

    def message(self, mid: str, m: Message, extra: dict[str, Any] | None) -> None:
        self.lines += 1
        self.live.append(Entry(mid, m, {k: v for k, v in (extra or {}).items() if k not in FIELDS},
                               self.lines, False))
        self.seen.append(mid)

    def compaction(self, cid: str, summary: str, through: str,
                   replacement: list[tuple[Message, dict[str, Any] | None]] | None) -> None:
        self.lines += 1
        i = self.ids().index(through)
        if replacement is None:
            put = [Entry(cid, Message.user(summary), {}, self.lines, False)]
        else:
            put = [Entry(f"{cid}:{k}", m, {a: b for a, b in (x or {}).items() if a not in FIELDS},
                         self.lines, False) for k, (m, x) in enumerate(replacement)]
        self.live = [e for e in self.live[: i + 1] if e.message.is_sticky] + put + self.live[i + 1:]
        self.seen += [e.id for e in put]

    def elision(self, items: list[tuple[str, str]]) -> None:
        self.lines += 1
        for mid, stub in items:
            j = self.ids().index(mid)
            e = self.live[j]
            self.live[j] = dataclasses.replace(e, message=dataclasses.replace(e.message, content=stub), elided=True)

    def rewind(self, through: str | None) -> None:
        self.lines += 1
        self.live = [] if through is None else self.live[: self.ids().index(through) + 1]


ROLES = st.sampled_from(["user", "assistant", "tool", "system", "developer"])
TEXT = st.text(max_size=6)
EXTRA = st.one_of(st.none(), st.dictionaries(st.sampled_from(["item", "n", "role", "finish-reason"]),
                                             st.one_of(st.integers(), TEXT, st.lists(st.integers(), max_size=2)),
                                             max_size=2))


@st.composite
def messages(draw: Any) -> Message:
    pin = draw(st.sampled_from(["none", "none", "none", "sticky", "sysprompt", "depth"]))
    return Message(role=draw(ROLES), content=draw(st.one_of(TEXT, st.none())),
                   sticky=pin == "sticky", sysprompt=pin == "sysprompt",
                   depth=2 if pin == "depth" else None)


def step(data: Any, s: Session, model: Model) -> None:
    ids = model.ids()
    gone = [i for i in model.seen if i not in ids] + ["nope"]
    kinds = ["message", "message", "message", "refused"] + (["compaction", "elision", "rewind"] * 2 if ids else [])
    kinds.append("rewind-none")
    kind = data.draw(st.sampled_from(kinds), label="kind")
    if kind == "message":
        m, extra = data.draw(messages()), data.draw(EXTRA)
        model.message(s.append_message(m, extra), m, extra)
    elif kind == "compaction":
        through = data.draw(st.sampled_from(ids), label="through")
        summary = data.draw(TEXT)
        replacement = data.draw(st.one_of(st.none(), st.lists(st.tuples(messages(), EXTRA), max_size=3)),
                                label="replacement")
        cid = s.append_compaction(summary, through, 10, 1, replacement=replacement)
        model.compaction(cid, summary, through, replacement)
    elif kind == "elision":
        items = data.draw(st.lists(st.tuples(st.sampled_from(ids), TEXT), min_size=1, max_size=3), label="items")
        s.append_elision(items)
        model.elision(items)
    elif kind == "rewind":
        through = data.draw(st.sampled_from(ids), label="through")
        s.append_rewind(through)
        model.rewind(through)
    elif kind == "rewind-none":
        s.append_rewind(None)
        model.rewind(None)
    else:
        bad = data.draw(st.sampled_from(gone), label="not live")
        how = data.draw(st.sampled_from(["rewind", "compaction", "elision", "replacement"]), label="refused")
        size = s.path.stat().st_size
        try:
            if how == "rewind":
                s.append_rewind(bad)
            elif how == "elision":
                s.append_elision([*[(i, "x") for i in ids[:1]], (bad, "x")])
            else:
                s.append_compaction("S", bad, 1, 1, replacement=[Message.user("r")] if how == "replacement" else None)
        except UnknownId:
            pass
        else:
            raise AssertionError(f"{how} naming {bad!r} was not refused")
        assert s.path.stat().st_size == size, "a refused append wrote nothing"


def check(s: Session, model: Model) -> None:
    assert s.entries == model.live
    assert s.messages == [e.message for e in model.live]
    assert s.message_ids == model.ids()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_live_state_equals_the_model_and_the_reload(data: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.jsonl"
        with Session.create(path) as s:
            model = Model()
            for _ in range(data.draw(st.integers(1, 25), label="steps")):
                step(data, s, model)
                check(s, model)
        with Session.load(path) as again:
            check(again, model)
            assert again.warnings == []
