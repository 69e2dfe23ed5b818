"""Where two transcripts part: the first envelope they do not share, and what each has from there.

Two envelopes are the same when they have the same type and the same payload,
and either the same id (a fork shares its source's ids line for line) or ids
that the earlier shared lines pair up (two retries of one task write the same
things under new ids and times: a payload that names an earlier id, such as a
settle's ``op-id``, is compared with that id read as its counterpart's). The
session-meta lines are compared apart: a meta that differs is said, and the
comparison goes on from the next line. Blank lines are skipped; every line
number is the file's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import Envelope, Session, canonical_json
from ..inspect import content_text, tool_call_parts

__all__ = ["diff_runs", "Parting", "RunSide"]


@dataclass(frozen=True)
class RunSide:
    """One of the two transcripts: its envelopes after the parting (up to the limit), and how many there are."""

    path: str
    lines: int
    envelopes: int
    then: list[dict[str, Any]]
    rest: int
    error: str | None = None


@dataclass(frozen=True)
class Parting:
    """What ``diff_runs`` found.

    Attributes:
        same: how many envelopes (session-meta included) the two share from the start.
        identical: neither has anything the other has not.
        meta_differs: their session-meta payloads differ.
        last_same: the line of the last shared envelope in ``a`` and in ``b`` (None: none shared).
        a, b: each side.
    """

    same: int
    identical: bool
    meta_differs: bool
    last_same: tuple[int, int] | None
    a: RunSide
    b: RunSide
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The parting as plain JSON."""
        def side(s: RunSide) -> dict[str, Any]:
            return {"path": s.path, "lines": s.lines, "envelopes": s.envelopes, "rest": s.rest,
                    "then": s.then, "error": s.error}

        return {"identical": self.identical, "same": self.same, "meta_differs": self.meta_differs,
                "last_same": None if self.last_same is None else {"a": self.last_same[0], "b": self.last_same[1]},
                "a": side(self.a), "b": side(self.b), "warnings": self.warnings}


def _mapped(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_mapped(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _mapped(v, ids) for k, v in value.items()}
    return value


def _same(a: Envelope, b: Envelope, ids: dict[str, str]) -> bool:
    if a.type != b.type:
        return False
    if a.id != b.id and a.id in ids:
        return False  # a's id already stands for another line of b
    try:
        return canonical_json(_mapped(a.payload, ids)) == canonical_json(b.payload)
    except (TypeError, ValueError):
        return False


def summary(e: Envelope) -> dict[str, Any]:
    """An envelope in a few words: line, id, type, and for a message its role, text and tool calls."""
    out: dict[str, Any] = {"line": e.line, "id": e.id, "type": e.type, "ts": e.ts}
    p = e.payload if isinstance(e.payload, dict) else {}
    if e.type == "message":
        out["role"] = p.get("role")
        text = content_text(p.get("content"))
        if text:
            out["text"] = " ".join(text.split())[:200]
        calls = p.get("tool_calls")
        if isinstance(calls, list) and calls:
            out["tool_calls"] = [tool_call_parts(c).name for c in calls]
        if p.get("tool_call_id") is not None:
            out["tool_call_id"] = p.get("tool_call_id")
    elif e.type == "tool-dispatched":
        out["tool"] = p.get("tool")
    elif e.type == "tool-settled":
        out["outcome"] = p.get("outcome")
    elif e.type == "compaction":
        out["text"] = " ".join(str(p.get("summary", "")).split())[:200]
    return out


def diff_runs(a: str, b: str, *, limit: int = 10) -> Parting:
    """Where the transcripts ``a`` and ``b`` part, and up to ``limit`` envelopes each then has.
    Both are only read (``Session.peek``): a file load refuses is compared as far as it reads.

    Raises:
        OSError: a file cannot be read.
    """
    pa, pb = Session.peek(a), Session.peek(b)
    ea, eb = list(pa.envelopes), list(pb.envelopes)
    warnings = [f"{p.path}: {w}" for p in (pa, pb) for w in p.warnings]
    ids: dict[str, str] = {}
    k = 0
    meta_differs = False
    if ea and eb and ea[0].type == eb[0].type == "session-meta":
        meta_differs = canonical_json(ea[0].payload) != canonical_json(eb[0].payload)
        ids[ea[0].id] = eb[0].id
        k = 1
    while k < len(ea) and k < len(eb) and _same(ea[k], eb[k], ids):
        ids[ea[k].id] = eb[k].id
        k += 1

    def side(p: Any, envelopes: list[Envelope]) -> RunSide:
        lines = envelopes[-1].line if envelopes else 0
        return RunSide(str(p.path), lines, len(envelopes), [summary(e) for e in envelopes[k:k + limit]],
                       max(0, len(envelopes) - k), p.error)

    last = (ea[k - 1].line, eb[k - 1].line) if k else None
    return Parting(k, k == len(ea) == len(eb) and not meta_differs, meta_differs, last,
                   side(pa, ea), side(pb, eb), warnings)
