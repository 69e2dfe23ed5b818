"""The Claude Code conversion fed a session's lines a batch at a time (``claude_code``
says what it makes of them).

An import feeds it a whole file and emits once. A live session's mirror feeds
it each batch as it comes: ``extend`` then writes only the groups of the new
lines, going on from the state the last emission ended in, when the lines
cannot have changed anything before them (the usual case: the chain grew at
its leaf, in time order); otherwise ``emit`` makes the whole conversation
again. Both give what an import of a file of the same lines gives.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from . import claude_code as cc
from ._emit import Emitter
from ._source import Line

__all__ = ["Conversion", "convert"]


def convert(lines: list[Line], emit: Emitter, warnings: list[str],
            full: Callable[[Line], dict[str, Any]]) -> dict[str, Any]:
    """Emit the replayed conversation of a Claude Code session (a whole file); returns
    the session-meta facts. ``lines`` hold what ``slim`` keeps; ``full`` reads a line's
    whole record."""
    conversion = Conversion(full)
    conversion.add(lines)
    return conversion.emit(emit, warnings)


class Conversion:
    """A Claude Code session's conversion. ``full`` reads a line's whole record (its
    ``record`` holds what ``claude_code.slim`` keeps, or all of it)."""

    def __init__(self, full: Callable[[Line], dict[str, Any]]) -> None:
        self.tree = cc._Tree(full)
        self._meta_records: list[dict[str, Any]] = []
        self._last_mode: Any = None
        # What extend needs, as of the last emission: its state, the leaf it
        # grew from and when that was, the message ids of every assistant record.
        self._run: cc._Run | None = None
        self._tip: str | None = None
        self._tip_when = ""
        self._message_ids: set[str] = set()
        self._segmented = False  # a compaction kept a segment: resume relinks the tree
        self._fresh: list[str] = []  # the chain records added since
        self._fresh_set: set[str] = set()
        self._fresh_ids: set[str] = set()  # their message ids
        self._reshaped = False  # one of them may change what was written before it

    def add(self, lines: Iterable[Line]) -> None:
        """Take in the next lines of the session."""
        lines = list(lines)
        for line in lines:
            r = line.record
            if r is None:
                continue
            kind = r.get("type")
            if kind == "permission-mode" and isinstance(r.get("permissionMode"), str):
                self._last_mode = r["permissionMode"]
            if kind not in cc.CHAIN:
                self._meta_records.append(r)
                if kind != "progress":  # a bridge in the chain
                    continue
            uid = r.get("uuid")
            if not isinstance(uid, str):
                continue
            if cc._is_boundary(r) and isinstance(cc._segment_of(r), dict):
                self._segmented = True
            if self._run is not None and not self._reshaped:
                self._reshaped = not self._grows(r, uid)
            self._fresh.append(uid)
            self._fresh_set.add(uid)
        self.tree.add(lines)

    def _grows(self, r: dict[str, Any], uid: str) -> bool:
        """Whether record ``r`` can only extend the chain the last emission wrote: a
        descendant of its leaf, later than it, on the main chain, neither a
        compaction nor another fragment of a message before it (a fragment of
        one among the new lines merges with it there, as in the whole file), and
        named as parent by no record before it."""
        m = r.get("message")
        mid = m.get("id") if r.get("type") == "assistant" and isinstance(m, dict) and isinstance(m.get("id"), str) \
            else None
        when = cc._when(r)
        parent = r.get("parentUuid")
        grows = (r.get("type") in cc.CHAIN and (parent == self._tip or parent in self._fresh_set)
                 and when is not None and when > self._tip_when and r.get("isSidechain") is not True
                 and not cc._is_boundary(r) and r.get("isCompactSummary") is not True
                 and uid not in self.tree.records and uid not in self._fresh_set and uid not in self.tree.named
                 and mid not in self._message_ids)
        if mid is not None:
            self._fresh_ids.add(mid)
        return grows

    def emit(self, emit: Emitter, warnings: list[str]) -> dict[str, Any]:
        """Emit the conversation of every line added so far; returns the session-meta facts."""
        self.tree.relink()
        info, self._run = cc._emit(self.tree, self._meta_records, emit, warnings)
        leaf = info.get("leaf")
        self._tip = leaf
        self._tip_when = (cc._when(self.tree.records[leaf]) or "") if leaf is not None else ""
        self._message_ids = {m for m in map(self.tree.msg_id, self.tree.records) if m is not None}
        self._fresh, self._fresh_set, self._fresh_ids, self._reshaped = [], set(), set(), False
        return info

    def extend(self) -> bool:
        """Write, with the emitter of the last emission, what the lines added since add
        to it; False (nothing written) when they may change what it wrote: call ``emit``.

        The new records hang from the last leaf; the new leaf is the latest of
        them, and the chain grows by the walk to it, with the parallel tool
        results the walk misses, found among the new records only (no other can
        be one). Every new record must be on it (else a branch was left)."""
        run, tree = self._run, self.tree
        if run is None or self._reshaped or self._segmented or run.left_over:
            return False
        fresh = self._fresh
        if fresh:
            leaf, best = fresh[0], ""
            for one in fresh:
                when = cc._when(tree.records[one]) or ""
                if when > best:
                    leaf, best = one, when
            path: list[str] = []
            at: str | None = leaf
            while at is not None and at in self._fresh_set:
                path.append(at)
                at = tree.written_parent[at]
            path.reverse()
            for one in fresh:
                tree.parent[one] = tree.written_parent[one]
            grown = tree._recover_parallel_results(path, set(path), fresh)
            if len(grown) != len(fresh):
                return False
            for one in grown:
                tree.line_of[one].status = "used"
            self._tip, self._tip_when = leaf, best
        else:
            grown = []
        run.unfinish()
        for g in cc._groups(tree, grown):
            run.group(g, grown)
        run.finish(self._last_mode)
        self._message_ids |= self._fresh_ids
        self._fresh, self._fresh_set, self._fresh_ids = [], set(), set()
        return True
