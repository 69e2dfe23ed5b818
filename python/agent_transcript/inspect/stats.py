"""Counts and sizes of a transcript: what ``stats`` prints, as plain data.

Counts and bytes come from the index; what replay did (live messages, what
each compaction replaced, what each elision stubbed, what each rewind dropped,
pending operations) from the core's replay, and is None when load refuses the
file. Only compactions, elisions, tool lines and what they name are decoded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..artifacts import artifacts_folder
from .check import orphans_json, unanswered_json
from .reader import Reading
from .values import content_size

__all__ = [
    "Stats",
    "TypeTotal",
    "MessageCounts",
    "CompactionStats",
    "ElisionStats",
    "RewindStats",
    "ToolStats",
    "PendingStats",
    "ArtifactStats",
    "compute_stats",
]


@dataclass(frozen=True)
class TypeTotal:
    """The envelopes of one type: how many, and their bytes (lines included)."""

    count: int
    bytes: int


@dataclass(frozen=True)
class MessageCounts:
    """Message lines written, messages live (None: load refuses the file), lines per role."""

    written: int
    live: int | None
    by_role: dict[str, int]


@dataclass(frozen=True)
class CompactionStats:
    """One compaction: where, its token counts as written, how many messages it
    replaced (None: load refuses the file), and how many its replacement put in
    (None: it has none, its summary went in)."""

    line: int
    id: str
    tokens_before: Any
    tokens_after: Any
    fallback: bool
    messages_replaced: int | None
    replacement: int | None = None


@dataclass(frozen=True)
class RewindStats:
    """Every rewind together: lines, and the live messages they dropped (None: refused)."""

    count: int
    messages_dropped: int | None


@dataclass(frozen=True)
class ElisionStats:
    """Every elision together: lines, items, content bytes stubbed (None: refused) and stub bytes."""

    count: int
    items: int
    elided_bytes: int | None
    stub_bytes: int


@dataclass
class ToolStats:
    """One tool: calls dispatched, settles per outcome, and the settles' duration percentiles."""

    calls: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {"completed": 0, "failed": 0, "outcome_unknown": 0})
    p50_s: float | None = None
    p95_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls}
        for outcome, n in self.outcomes.items():  # an outcome named "calls" adds to it, as it always did
            out[outcome] = out.get(outcome, 0) + n
        out["p50_s"] = self.p50_s
        out["p95_s"] = self.p95_s
        return out


@dataclass(frozen=True)
class PendingStats:
    """A pending tool operation, with the line it was dispatched on."""

    op_id: str
    call_id: Any
    tool: Any
    state: str
    line: int | None
    dispatched_ts: str
    result_message_id: str | None


@dataclass(frozen=True)
class ArtifactStats:
    """Settles naming an artifact, distinct files, their bytes, and files not there."""

    count: int
    files: int
    bytes: int
    missing: int


@dataclass(frozen=True)
class Stats:
    """Everything ``stats`` reports; ``to_json`` is the object ``stats --json`` prints."""

    path: str
    size: int
    lines: int
    envelopes: int
    types: dict[str, TypeTotal]
    messages: MessageCounts
    replay_error: str | None
    compactions: list[CompactionStats]
    elisions: ElisionStats
    rewinds: RewindStats
    tools: dict[str, ToolStats]
    pending: list[PendingStats] | None
    # The live tool calls no tool message answers, and the live tool messages
    # that answer no call (None when load refuses the file).
    unanswered: list[dict[str, Any]] | None
    orphans: list[dict[str, Any]] | None
    artifacts: ArtifactStats
    grants: Any
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        """The documented JSON object of ``stats --json``."""
        return {
            "path": self.path,
            "size": self.size,
            "lines": self.lines,
            "envelopes": self.envelopes,
            "types": {name: {"count": t.count, "bytes": t.bytes} for name, t in self.types.items()},
            "messages": {"written": self.messages.written, "live": self.messages.live, "by_role": dict(self.messages.by_role)},
            "replay_error": self.replay_error,
            "compactions": [
                {
                    "line": c.line,
                    "id": c.id,
                    "tokens_before": c.tokens_before,
                    "tokens_after": c.tokens_after,
                    "fallback": c.fallback,
                    "messages_replaced": c.messages_replaced,
                    "replacement": c.replacement,
                }
                for c in self.compactions
            ],
            "elisions": {
                "count": self.elisions.count,
                "items": self.elisions.items,
                "elided_bytes": self.elisions.elided_bytes,
                "stub_bytes": self.elisions.stub_bytes,
            },
            "rewinds": {"count": self.rewinds.count, "messages_dropped": self.rewinds.messages_dropped},
            "tools": {name: t.to_json() for name, t in self.tools.items()},
            "pending": None
            if self.pending is None
            else [
                {
                    "op_id": op.op_id,
                    "call_id": op.call_id,
                    "tool": op.tool,
                    "state": op.state,
                    "line": op.line,
                    "dispatched_ts": op.dispatched_ts,
                    "result_message_id": op.result_message_id,
                }
                for op in self.pending
            ],
            "unanswered_tool_calls": self.unanswered,
            "orphan_tool_messages": self.orphans,
            "artifacts": {"count": self.artifacts.count, "files": self.artifacts.files, "bytes": self.artifacts.bytes, "missing": self.artifacts.missing},
            "grants": self.grants,
            "warnings": list(self.warnings),
        }


def _replacement_size(payload: dict[str, Any]) -> int | None:
    """How many messages a compaction's replacement lists, as written (a file load refuses)."""
    replacement = payload.get("replacement")
    return len(replacement) if isinstance(replacement, list) else None


def _percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(p * len(ordered))))
    return ordered[rank - 1]


def _fields_in_chunks(reading: Reading, indices: list[int], keys: list[str], chunk: int = 4096) -> Iterator[dict[str, Any]]:
    """``reading.payload_fields`` of ``indices``, asked for a chunk at a time so
    that memory holds one chunk's lines, not every one's."""
    for start in range(0, len(indices), chunk):
        yield from reading.payload_fields(indices[start : start + chunk], keys)


def compute_stats(reading: Reading) -> Stats:
    """Everything ``stats`` reports about ``reading`` (see the module docstring)."""
    replayed = reading.replayed
    types = {name: TypeTotal(count, size) for name, count, size in reading.type_totals()}
    roles = dict(reading.role_counts())
    compactions: list[CompactionStats] = []
    for i in reading.indices_of_type("compaction"):
        env = reading.event(i)
        p = env.payload if isinstance(env.payload, dict) else {}
        effect = reading.compaction_effect(i)
        compactions.append(
            CompactionStats(
                line=env.line,
                id=env.id,
                tokens_before=p.get("tokens-before"),
                tokens_after=p.get("tokens-after"),
                fallback=bool(p.get("fallback")),
                messages_replaced=None if effect is None else len(effect.replaced),
                replacement=_replacement_size(p) if effect is None else effect.replacement,
            )
        )
    elision_at = reading.indices_of_type("elision")
    elided_items = 0
    elided_bytes: int | None = 0 if replayed else None
    stub_bytes = 0
    # Replay's own record of what each message held just before, measured in the core.
    elided_sizes = reading.elided_sizes(elision_at)
    for i, sizes in zip(elision_at, elided_sizes):
        payload = reading.payload(i)
        items = payload.get("items") if isinstance(payload, dict) else None
        items = items if isinstance(items, list) else []
        elided_items += len(items)
        stub_bytes += sum(content_size(item.get("stub")) for item in items if isinstance(item, dict))
        if elided_bytes is not None:
            if any(size is None for size in sizes):  # not a string: decoded and measured here
                sizes = [content_size(before.get("content")) for _, before in reading.elision_effect(i)]
            elided_bytes += sum(size or 0 for size in sizes)
    rewind_at = reading.indices_of_type("rewind")
    dropped: int | None = 0 if replayed else None
    for i in rewind_at:
        done = reading.rewind_effect(i)
        if dropped is not None and done is not None:
            dropped += len(done.dropped)
    dispatches = reading.indices_of_type("tool-dispatched")
    settles = reading.indices_of_type("tool-settled")
    dispatch_fields = _fields_in_chunks(reading, dispatches, ["tool"])
    settle_fields = _fields_in_chunks(reading, settles, ["op-id", "outcome", "duration", "artifact"])
    dispatch_set = set(dispatches)
    # A settle names its dispatch by id: load's id table finds it, else (a file
    # load refuses) the dispatches' ids are read. Only dispatches before it count.
    tool_of: dict[Any, Any] = {}
    tools: dict[str, ToolStats] = {}
    durations: dict[str, list[float]] = {}
    art_count = 0
    art_bytes = 0
    art_missing = 0
    art_dir = artifacts_folder(reading.path)  # run.jsonl -> run.artifacts/
    seen_art: set[str] = set()
    for i in sorted(dispatches + settles):
        if i in dispatch_set:
            p = next(dispatch_fields)
            tool_of[i if replayed else reading.envelope_id(i)] = p.get("tool", "?")
            name = str(p.get("tool"))
            tools.setdefault(name, ToolStats()).calls += 1
            continue
        p = next(settle_fields)
        op_id = str(p.get("op-id"))
        name = str(tool_of.get(reading.index_of(op_id) if replayed else op_id, "?"))
        row = tools.setdefault(name, ToolStats())
        outcome = str(p.get("outcome")).replace("-", "_")
        row.outcomes[outcome] = row.outcomes.get(outcome, 0) + 1
        d = p.get("duration")
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            durations.setdefault(name, []).append(float(d))
        art = p.get("artifact")
        if isinstance(art, dict):
            art_count += 1
            if isinstance(art.get("bytes"), int):
                art_bytes += art["bytes"]
            f = art.get("file")
            if isinstance(f, str) and f not in seen_art:
                seen_art.add(f)
                if "/" in f or f in ("", ".", "..") or not (art_dir / f).is_file():
                    art_missing += 1
    for name, row in tools.items():
        ds = durations.get(name, [])
        row.p50_s = _percentile(ds, 0.50)
        row.p95_s = _percentile(ds, 0.95)
    ops = reading.pending()
    pending = None
    if ops is not None:
        pending = [
            PendingStats(op.op_id, op.call_id, op.tool, op.state, reading.line_of(op.op_id), op.dispatched_ts, op.result_message_id)
            for op in ops
        ]
    pairing = reading.pairing()
    return Stats(
        path=str(Path(reading.path)),
        size=reading.size,
        lines=reading.lines,
        envelopes=len(reading),
        types=types,
        messages=MessageCounts(sum(roles.values()), reading.live_len(), roles),
        replay_error=None if reading.refusal is None else str(reading.refusal),
        compactions=compactions,
        elisions=ElisionStats(len(elision_at), elided_items, elided_bytes, stub_bytes),
        rewinds=RewindStats(len(rewind_at), dropped),
        tools=tools,
        pending=pending,
        unanswered=None if pairing is None else unanswered_json(pairing.unanswered),
        orphans=None if pairing is None else orphans_json(pairing.orphans),
        artifacts=ArtifactStats(art_count, len(seen_art), art_bytes, art_missing),
        grants=reading.grants()[0],
        warnings=list(reading.warnings),
    )
