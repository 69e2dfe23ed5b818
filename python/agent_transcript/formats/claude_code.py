"""Claude Code sessions (``~/.claude/projects/<project>/<session>.jsonl``) as transcripts.

The conversation is the one ``claude --resume`` rebuilds: the records of type
user, assistant, attachment and system form a tree through ``parentUuid``
(legacy ``progress`` records bridged over); the leaf is the latest
non-sidechain record by timestamp (the first on a tie); the active branch is
the walk from it to its root, with the parallel tool results the single-parent
walk misses recovered (streamed fragments sharing a ``message.id``). The title
is the last custom title, else the last AI title, else the last ``summary``
whose ``leafUuid`` is on the active branch (else the last ``summary``). Each
``compact_boundary`` starts a segment; the segment before it is the chain of its
``logicalParentUuid``; the summary record after it becomes a compaction. A
compaction that kept some messages (``compactMetadata.preservedSegment``) is
relinked as resume relinks it: the kept messages come after the compaction
(their only place in the file), and what it replaced before it.
A branch not taken (a rewind, an edited prompt) is written where it left the
active branch, as the messages it had (``"branch-not-taken": true`` in their
extras, no tool operations) followed by a rewind back to the fork: the file
says what happened, replay gives what Claude Code resumes with. Its lines keep
the status ``off-branch``.

Chain records become OpenAI-chat messages: assistant fragments merged by
``message.id`` (text, ``tool_use`` as ``tool_calls``, thinking kept in the
extras), user records split into one ``tool`` message per ``tool_result`` and a
user message for the rest, ``local_command`` system records as user messages.
Attachments, other system records, API-error assistants and every non-chain
record are kept only as source lines.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from ._emit import Emitter
from ._source import Line, to_ts

__all__ = ["looks_like", "slim"]

CHAIN = frozenset(("user", "assistant", "attachment", "system"))
META_TYPES = frozenset((
    "summary", "custom-title", "ai-title", "file-history-snapshot", "permission-mode", "last-prompt",
    "queue-operation", "attribution-snapshot", "content-replacement", "tag", "agent-name", "mode",
    "worktree-state", "pr-link", "progress",
))
_REJECTED = ("The user doesn't want to proceed with this tool use", "User rejected")
_INTERRUPTED = "[Request interrupted by user for tool use]"


_SLIM_KEYS = ("type", "uuid", "parentUuid", "logicalParentUuid", "timestamp", "isSidechain", "subtype",
              "isCompactSummary", "isApiErrorMessage", "sessionId", "cwd", "version", "gitBranch",
              "summary", "customTitle", "aiTitle", "permissionMode", "leafUuid", "compactMetadata")
_HAS_RESULTS = "\0tool-results"


def slim(record: dict[str, Any]) -> dict[str, Any]:
    """What the chain walk reads of a record (the rest is read again when its message is written)."""
    out = {k: record[k] for k in _SLIM_KEYS if k in record}
    m = record.get("message")
    if record.get("type") == "assistant" and isinstance(m, dict) and isinstance(m.get("id"), str):
        out["message"] = {"id": m["id"]}
    elif record.get("type") == "user" and _tool_results(record):
        out[_HAS_RESULTS] = True
    return out


def looks_like(record: dict[str, Any]) -> bool:
    """Whether one parsed source line is a Claude Code record."""
    kind = record.get("type")
    if kind in CHAIN:
        return "parentUuid" in record or "sessionId" in record or "uuid" in record and "message" in record
    return kind in META_TYPES and ("sessionId" in record or "leafUuid" in record or "messageId" in record
                                   or "uuid" in record or "permissionMode" in record)


def _when(record: dict[str, Any]) -> str | None:
    value = record.get("timestamp")
    if not isinstance(value, str):
        return None
    # The envelope ts sorts as the instant does: compare it as text (exact to the
    # microsecond, as Claude Code's Date.parse is to the millisecond).
    return to_ts(value, "") or None


class _Tree:
    """The chain records by uuid (a repeated uuid: the later value, the first position),
    built a batch of lines at a time (``add``); ``relink`` then gives the tree
    resume reads."""

    def __init__(self, full: Callable[[Line], dict[str, Any]]) -> None:
        self._full = full
        self.records: dict[str, dict[str, Any]] = {}
        self.line_of: dict[str, Line] = {}
        # The tree as written, for the history before a compaction; resume reads
        # the relinked one (``parent``, made by ``relink``).
        self.written_parent: dict[str, str | None] = {}
        self.parent: dict[str, str | None] = {}
        self._by_message: dict[str, list[str]] | None = None
        self._results_by_parent: dict[str, list[str]] | None = None
        self._bridge: dict[str, str | None] = {}
        self._status: dict[str, str] = {}  # what reading made of each chain line, before any walk
        self.named: set[str] = set()  # every parentUuid a record names
        self.pruned: set[str] = set()
        self.preserved: set[str] = set()

    def add(self, lines: Iterable[Line]) -> None:
        """Take in the next lines of the session."""
        bridge = self._bridge
        for line in lines:
            r = line.record
            if r is None:
                continue
            uid = r.get("uuid")
            if not isinstance(uid, str):
                continue
            p = r.get("parentUuid")
            p = p if isinstance(p, str) else None
            if p is not None:
                self.named.add(p)
            if p is not None and p in bridge:
                p = bridge[p]
            if r.get("type") == "progress":
                bridge[uid] = p
                continue
            if r.get("type") not in CHAIN:
                continue
            if uid in self.line_of:
                self.line_of[uid].status = "superseded"
            self.records[uid] = r
            self.line_of[uid] = line
            self._status[uid] = line.status
            self.written_parent[uid] = p
        self._by_message = self._results_by_parent = None

    def relink(self) -> None:
        """The tree resume reads, from the tree as written: every line's status
        back to what reading made of it, then the preserved segment relinked."""
        for uid, line in self.line_of.items():
            line.status = self._status[uid]
        self.parent = dict(self.written_parent)
        self.pruned = set()
        self.preserved = set()
        self._relink_preserved_segment()

    def _relink_preserved_segment(self) -> None:
        """What ``claude --resume`` does to the tree of a compaction that kept a
        segment (``compactMetadata.preservedSegment = {headUuid, anchorUuid,
        tailUuid}``): the kept records, written before the boundary, are linked
        after its summary (the head to the anchor, the anchor's other children
        to the tail), and every record before the last boundary that was not
        kept leaves the tree. A segment on an earlier boundary than the last
        (stale) only prunes; a tail that does not lead back to the head changes
        nothing."""
        boundaries = [u for u, r in self.records.items() if _is_boundary(r)]
        with_segment = [u for u in boundaries if isinstance(_segment_of(self.records[u]), dict)]
        if not with_segment:
            return
        last = boundaries[-1]
        if with_segment[-1] == last:
            seg = _segment_of(self.records[last])
            head, anchor, tail = seg.get("headUuid"), seg.get("anchorUuid"), seg.get("tailUuid")
            kept: list[str] = []
            uid = tail if isinstance(tail, str) else None
            while uid is not None and uid in self.records and uid not in kept:
                kept.append(uid)
                if uid == head:
                    break
                uid = self.parent[uid]
            if not kept or kept[-1] != head or not isinstance(anchor, str) or anchor not in self.records:
                return
            self.preserved = set(kept)
            for u, p in self.parent.items():
                if p == anchor and u != head:
                    self.parent[u] = kept[0]  # the tail
            self.parent[head] = anchor
        for u in self.records:
            if u == last:
                break
            if u not in self.preserved:
                self.pruned.add(u)

    def full(self, uid: str) -> dict[str, Any]:
        """The whole record of ``uid``, read again from its line."""
        return self._full(self.line_of[uid])

    def msg_id(self, uid: str) -> str | None:
        r = self.records[uid]
        m = r.get("message")
        if r.get("type") == "assistant" and isinstance(m, dict) and isinstance(m.get("id"), str):
            return str(m["id"])
        return None

    def leaf(self) -> str | None:
        all_side = all(r.get("isSidechain") is True for r in self.records.values())
        best: str | None = None
        best_when = ""
        for uid, r in self.records.items():
            if (r.get("isSidechain") is True and not all_side) or uid in self.pruned:
                continue
            when = _when(r)
            if when is not None and when > best_when:
                best, best_when = uid, when
        return best

    def walk(self, leaf: str) -> list[str]:
        """The chain resume rebuilds from ``leaf`` (in the relinked tree)."""
        chain: list[str] = []
        seen: set[str] = set()
        uid: str | None = leaf
        while uid is not None and uid in self.records and uid not in seen and uid not in self.pruned:
            seen.add(uid)
            chain.append(uid)
            uid = self.parent[uid]
        chain.reverse()
        return self._recover_parallel_results(chain, seen)

    def walk_written(self, leaf: str) -> list[str]:
        """The chain before a compaction, as written: the records a compaction
        replaced (those it kept are left out: they come after it)."""
        chain: list[str] = []
        seen: set[str] = set()
        uid: str | None = leaf
        while uid is not None and uid in self.records and uid not in seen:
            seen.add(uid)
            if uid not in self.preserved:
                chain.append(uid)
            uid = self.written_parent[uid]
        chain.reverse()
        return self._recover_parallel_results(chain, seen)

    def _recover_parallel_results(self, chain: list[str], seen: set[str],
                                  among: Iterable[str] | None = None) -> list[str]:
        # One line per streamed content block: N parallel tool_use blocks are N
        # assistant lines sharing a message.id, each tool_result a child of its
        # own one; the walk keeps one branch, this puts the others back.
        assistants = [u for u in chain if self.records[u].get("type") == "assistant"]
        anchor: dict[str, str] = {}
        for u in assistants:
            mid = self.msg_id(u)
            if mid is not None:
                anchor[mid] = u
        if not anchor:
            return chain
        # The records the siblings and results are looked for among: all of them, or
        # the ones that can be (only those a chain grew by, see _conversion).
        siblings, results_by_parent = self._indexes() if among is None else self._indexes_of(among)
        insert: dict[str, list[str]] = {}
        done: set[str] = set()
        for u in assistants:
            mid = self.msg_id(u)
            if mid is None or mid in done:
                continue
            done.add(mid)
            group = siblings.get(mid, [])
            sibs = [s for s in group if s not in seen]
            trs = [t for m in group for t in results_by_parent.get(m, []) if t not in seen]
            if not sibs and not trs:
                continue
            key = self._sort_key
            sibs.sort(key=key)
            trs.sort(key=key)
            seen.update(sibs)
            seen.update(trs)
            insert[anchor[mid]] = sibs + trs
        if not insert:
            return chain
        out: list[str] = []
        for u in chain:
            out.append(u)
            out.extend(insert.get(u, ()))
        return out

    def _indexes(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The assistant records by ``message.id`` and the tool-result records by parent,
        in map order: built once (every segment's walk uses them)."""
        if self._by_message is None or self._results_by_parent is None:
            self._by_message, self._results_by_parent = self._indexes_of(self.records)
        return self._by_message, self._results_by_parent

    def _indexes_of(self, uids: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        siblings: dict[str, list[str]] = {}
        results_by_parent: dict[str, list[str]] = {}
        for u in uids:
            r = self.records[u]
            mid = self.msg_id(u)
            if mid is not None:
                siblings.setdefault(mid, []).append(u)
            elif r.get("type") == "user" and (r.get(_HAS_RESULTS) or _tool_results(r)):
                p = self.parent[u]
                if p is not None:
                    results_by_parent.setdefault(p, []).append(u)
        return siblings, results_by_parent

    def _sort_key(self, uid: str) -> tuple[bool, str]:
        when = _when(self.records[uid])
        return (False, when) if when is not None else (True, "")


def _tool_results(record: dict[str, Any]) -> list[dict[str, Any]]:
    m = record.get("message")
    content = m.get("content") if isinstance(m, dict) else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def _is_boundary(record: dict[str, Any]) -> bool:
    return record.get("type") == "system" and record.get("subtype") == "compact_boundary"


def _segment_of(record: dict[str, Any]) -> Any:
    """A boundary's ``compactMetadata.preservedSegment`` (None if it has none)."""
    cm = record.get("compactMetadata")
    return cm.get("preservedSegment") if isinstance(cm, dict) else None


def _segments(tree: _Tree, leaf: str) -> list[list[str]]:
    segments = [tree.walk(leaf)]
    followed: set[str] = set()
    while segments[0]:
        first = tree.records[segments[0][0]]
        logical = first.get("logicalParentUuid")
        if not _is_boundary(first) or not isinstance(logical, str) or logical not in tree.records:
            break
        if logical in followed:
            break
        followed.add(logical)
        # What the compaction replaced: resume has pruned it, the file keeps it.
        segments.insert(0, tree.walk_written(logical))
    return segments


def _part(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "image":
        src = block.get("source")
        if isinstance(src, dict) and src.get("type") == "base64":
            return {"type": "image_url", "image_url": {"url": f"data:{src.get('media_type')};base64,{src.get('data')}"}}
        if isinstance(src, dict) and src.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": src.get("url")}}
    return None


def _result_content(block: dict[str, Any]) -> Any:
    content = block.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            part = _part(b) if isinstance(b, dict) else None
            parts.append(part if part is not None else b)
        return parts
    return content


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


class _Group:
    def __init__(self, kind: str, uid: str, record: dict[str, Any]) -> None:
        self.kind = kind  # user | assistant | tool | summary
        self.uids = [uid]
        self.records = [record]
        self.mid: str | None = None
        self.blocks: list[Any] = []
        self.content: Any = None
        self.block: dict[str, Any] = {}


def _groups(tree: _Tree, segment: list[str]) -> list[_Group]:
    groups: list[_Group] = []
    for i, uid in enumerate(segment):
        kind = tree.records[uid].get("type")
        if kind == "attachment":
            continue  # rendered by Claude Code at request time, not a message of its own
        r = tree.full(uid)
        m = r.get("message")
        m = m if isinstance(m, dict) else {}
        if kind == "system":
            if r.get("subtype") == "local_command":
                g = _Group("user", uid, r)
                g.content = r.get("content", "")
                groups.append(g)
            continue
        if kind == "assistant":
            if r.get("isApiErrorMessage") is True:
                continue
            content = m.get("content")
            blocks = content if isinstance(content, list) else ([{"type": "text", "text": content}]
                                                                if isinstance(content, str) else [])
            mid = m.get("id") if isinstance(m.get("id"), str) else None
            target = None
            if mid is not None:
                for g in reversed(groups):
                    if g.kind == "assistant" and g.mid == mid:
                        target = g
                        break
                    if g.kind not in ("assistant", "tool"):
                        break
            if target is None:
                target = _Group("assistant", uid, r)
                target.mid = mid
                groups.append(target)
            else:
                target.uids.append(uid)
                target.records.append(r)
            target.blocks.extend(blocks)
            continue
        if kind != "user":
            continue  # attachments: rendered by Claude Code at request time, not a message of their own
        content = m.get("content")
        if r.get("isCompactSummary") is True and i > 0 and _is_boundary(tree.records[segment[i - 1]]):
            g = _Group("summary", uid, r)
            g.content = content
            groups.append(g)
            continue
        if isinstance(content, list):
            rest = []
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    g = _Group("tool", uid, r)
                    g.block = b
                    groups.append(g)
                else:
                    rest.append(b)
            if rest:
                g = _Group("user", uid, r)
                g.content = rest
                groups.append(g)
        elif content is not None:
            g = _Group("user", uid, r)
            g.content = content
            groups.append(g)
    return groups


def _user_content(content: Any) -> tuple[Any, list[Any]]:
    if not isinstance(content, list):
        return content, []
    parts, dropped = [], []
    for b in content:
        part = _part(b) if isinstance(b, dict) else None
        if part is None:
            dropped.append(b)
        else:
            parts.append(part)
    return parts, dropped


def _provenance(tree: _Tree, g: _Group) -> dict[str, Any]:
    return {"uuids": g.uids, "lines": [tree.line_of[u].number for u in g.uids]}


def _extra_flags(record: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    return {k: record[k] for k in keys if k in record}


def _emit(tree: _Tree, meta_records: list[dict[str, Any]], emit: Emitter,
          warnings: list[str]) -> tuple[dict[str, Any], _Run | None]:
    info: dict[str, Any] = {}
    titles: dict[str, Any] = {}
    summaries: list[tuple[str, Any]] = []  # (title, leafUuid)
    last_mode: Any = None
    for r in meta_records:
        kind = r.get("type")
        if kind == "summary" and isinstance(r.get("summary"), str):
            titles["summary"] = r["summary"]
            summaries.append((r["summary"], r.get("leafUuid")))
        elif kind == "custom-title" and isinstance(r.get("customTitle"), str):
            titles["custom"] = r["customTitle"]
        elif kind == "ai-title" and isinstance(r.get("aiTitle"), str):
            titles["ai"] = r["aiTitle"]
        elif kind == "permission-mode" and isinstance(r.get("permissionMode"), str):
            last_mode = r["permissionMode"]
    title = titles.get("custom") or titles.get("ai") or titles.get("summary")
    if title is not None:
        info["title"] = title
    for r in tree.records.values():
        for key, name in (("sessionId", "session-id"), ("cwd", "cwd"), ("gitBranch", "git-branch")):
            if name not in info and isinstance(r.get(key), str):
                info[name] = r[key]
        if isinstance(r.get("version"), str):
            info["version"] = r["version"]
    leaf = tree.leaf()
    if leaf is None:
        return info, None
    info["leaf"] = leaf
    segments = _segments(tree, leaf)
    # A summary names the leaf it summarises: the title is the last one whose leaf is on
    # the active branch (one naming another branch, or another session's record, loses).
    on_branch = {u for segment in segments for u in segment}
    named = [text for text, leaf_uuid in summaries if isinstance(leaf_uuid, str) and leaf_uuid in on_branch]
    if named and not (titles.get("custom") or titles.get("ai")):
        info["title"] = named[-1]
    for segment in segments:
        for uid in segment:
            tree.line_of[uid].status = "used"
    for uid, line in tree.line_of.items():
        if line.status != "used" and line.status != "superseded":
            line.status = "sidechain" if tree.records[uid].get("isSidechain") is True else "off-branch"

    active = {u for segment in segments for u in segment}
    run = _Run(tree, emit, warnings, info, _not_taken(tree, active))
    for index, segment in enumerate(segments):
        groups = _groups(tree, segment)
        if index > 0 and (not groups or groups[0].kind != "summary"):
            # A boundary with no summary after it: resume starts from the boundary.
            first = tree.records[segment[0]]
            emit.rewind(0, to_ts(first.get("timestamp"), emit.ts))
            run.answered = set()
        for g in groups:
            run.group(g, segment)
    run.finish(last_mode)
    return info, run


class _Run:
    """The conversation written a group at a time: what it carries from one group to
    the next (kept after the last, so that a chain that only grew goes on from it)."""

    def __init__(self, tree: _Tree, emit: Emitter, warnings: list[str], info: dict[str, Any],
                 not_taken: dict[str, list[list[str]]]) -> None:
        self.tree, self.emit, self.warnings, self.info, self.not_taken = tree, emit, warnings, info, not_taken
        self.facts: dict[str, Any] = {}
        self.mode: Any = None
        self.run_id: str | None = None
        self.round_ = -1
        self.seen_mids: set[str] = set()
        self.answered: set[str] = set()
        self.left_over = False  # branches not taken were written after the last group
        self.before_grants: tuple[int, int, Any, str | None] | None = None

    def group(self, g: _Group, segment: list[str]) -> None:
        """Write one group of the active chain (of ``segment``)."""
        tree, emit, warnings = self.tree, self.emit, self.warnings
        _branches_before(tree, emit, g, self.not_taken)
        r = g.records[0]
        ts = to_ts(r.get("timestamp"), emit.ts)
        for key, name in (("cwd", "cwd"), ("version", "version"), ("gitBranch", "git-branch")):
            if isinstance(r.get(key), str):
                self.facts[name] = r[key]
        if g.kind == "summary":
            boundary = tree.full(segment[0])
            cm = boundary.get("compactMetadata")
            cm = cm if isinstance(cm, dict) else {}
            before: int = cm["preTokens"] if isinstance(cm.get("preTokens"), int) else 0
            after: int = cm["postTokens"] if isinstance(cm.get("postTokens"), int) else 0
            extra = {"claude-code": {**_provenance(tree, g), "isCompactSummary": True}}
            if isinstance(g.content, str):
                emit.compaction(g.content, before, after, ts=ts)
            else:
                parts, _ = _user_content(g.content)
                emit.compaction(_text_of(g.content), before, after, ts=ts,
                                replacement=[{**extra, "role": "user", "content": parts}])
            self.answered = set()
            return
        if g.kind == "user":
            if isinstance(r.get("permissionMode"), str) and r["permissionMode"] != self.mode:
                self.mode = r["permissionMode"]
                emit.grants({"claude-code": {"permission-mode": self.mode}}, ts)
            said, dropped = _user_content(g.content)
            cc = {**_provenance(tree, g), **_extra_flags(r, ("isMeta", "promptId", "isCompactSummary"))}
            if dropped:
                cc["blocks-dropped"] = dropped
            emit_facts(emit, self.facts, ts)
            emit.message({"claude-code": cc, "role": "user", "content": said}, ts)
            if not r.get("isMeta"):
                self.run_id = r.get("promptId") if isinstance(r.get("promptId"), str) else g.uids[0]
                self.round_ = -1
                self.seen_mids = set()
            return
        if g.kind == "assistant":
            mapped = _assistant_payload(tree, g)
            if mapped is None:
                return  # thinking-only or whitespace-only: Claude Code drops it on resume
            payload, calls = mapped
            model = payload["claude-code"].get("model")
            if isinstance(model, str) and model != "<synthetic>":
                self.facts["model"] = model
                self.info["model"] = model
            emit_facts(emit, self.facts, ts)
            emit.message(payload, ts)
            if g.mid is None or g.mid not in self.seen_mids:
                self.round_ += 1
                if g.mid is not None:
                    self.seen_mids.add(g.mid)
            for b in calls:
                arguments = b.get("input", {})
                emit.dispatch(b["id"], str(b.get("name", "")), arguments, run_id=self.run_id,
                              round_=max(self.round_, 0), ts=ts)
            return
        # a tool result
        b = g.block
        call = b.get("tool_use_id")
        content = _result_content(b)
        cc = {**_provenance(tree, g)}
        if "is_error" in b:
            cc["is_error"] = b["is_error"]
        if not isinstance(call, str) or call not in emit.calls or call in self.answered:
            why = "duplicate" if call in self.answered else "orphan"
            warnings.append(f"line {tree.line_of[g.uids[0]].number}: a tool_result for "
                            f"{call!r} answers no live call ({why}); imported as a user message")
            cc[f"{why}-tool-result"] = call
            emit.message({"claude-code": cc, "role": "user", "content": content}, ts)
            return
        self.answered.add(call)
        emit.message({"claude-code": cc, "role": "tool", "tool_call_id": call, "content": content}, ts)
        outcome, reason, error = "completed", None, None
        if b.get("is_error") is True:
            outcome = "failed"
            text = _text_of(content)
            tur = r.get("toolUseResult")
            if any(s in text for s in _REJECTED):
                reason = "rejected-by-user"
            elif _INTERRUPTED in text or (isinstance(tur, dict) and tur.get("interrupted") is True):
                reason = "interrupted"
            else:
                error = text or None
        emit.settle(call, outcome, ts, reason=reason, duration=_duration(r.get("toolUseResult")), error=error)

    def finish(self, last_mode: Any) -> None:
        """What comes after the last group: the branches not taken left from it, and
        the last permission mode when it is not the one in force."""
        self.left_over = bool(self.not_taken)
        for paths in self.not_taken.values():  # left from the active branch's last record
            _emit_not_taken(self.tree, self.emit, paths)
        self.not_taken = {}
        emit = self.emit
        self.before_grants = (emit.ids.used, len(emit.out), emit.granted, emit.first_ts)
        if last_mode is not None and last_mode != self.mode:
            emit.grants({"claude-code": {"permission-mode": last_mode}})

    def unfinish(self) -> None:
        """Take back the last permission mode ``finish`` wrote, to write more groups."""
        if self.before_grants is not None:
            used, written, snapshot, first_ts = self.before_grants
            self.emit.ids.used, self.emit.granted, self.emit.first_ts = used, snapshot, first_ts
            del self.emit.out[written:]
            self.before_grants = None


#: What ``claude --resume`` sets in the ``usage`` of an assistant message a
#: compaction kept (``compactMetadata.preservedSegment``).
_ZEROED_USAGE = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}


def _assistant_payload(tree: _Tree, g: _Group) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """An assistant group as a message payload and its tool_use blocks; None for one
    with neither text nor calls (thinking only), which Claude Code drops on resume."""
    texts, calls, thinking, dropped = [], [], [], []
    for b in g.blocks:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            texts.append(b.get("text", ""))
        elif kind == "tool_use" and isinstance(b.get("id"), str):
            calls.append(b)
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(b)
        else:
            dropped.append(b)
    if not calls and not "".join(str(t) for t in texts).strip():
        return None
    content: Any
    if len(texts) == 1:
        content = texts[0]
    elif texts:
        content = [{"type": "text", "text": t} for t in texts]
    else:
        content = None
    m = g.records[0].get("message")
    m = m if isinstance(m, dict) else {}
    cc = {**_provenance(tree, g)}
    for key, name in (("id", "message-id"), ("model", "model"), ("stop_reason", "stop-reason")):
        if m.get(key) is not None:
            cc[name] = m[key]
    if thinking:
        cc["thinking"] = thinking
    if dropped:
        cc["blocks-dropped"] = dropped
    if any(u in tree.preserved for u in g.uids):
        # A message a compaction kept: resume zeroes its token counts (they
        # counted the context before the compaction), and so do its extras.
        usage = m.get("usage")
        cc["usage"] = {**(usage if isinstance(usage, dict) else {}), **_ZEROED_USAGE}
    payload: dict[str, Any] = {"claude-code": cc, "role": "assistant", "content": content}
    if calls:
        payload["tool_calls"] = [
            {"id": b["id"], "type": "function",
             "function": {"name": str(b.get("name", "")),
                          "arguments": json.dumps(b.get("input", {}), ensure_ascii=False, separators=(",", ":"))}}
            for b in calls
        ]
    return payload, calls


def _not_taken(tree: _Tree, active: set[str]) -> dict[str, list[list[str]]]:
    """The branches not taken, by the active record they leave from: for each dead end
    (a non-sidechain record off the active branch with no child off it), the path
    from that record's fork point down to it, oldest dead end first."""
    dead = {u for u, r in tree.records.items()
            if u not in active and r.get("isSidechain") is not True and tree.line_of[u].status == "off-branch"}
    has_dead_child = {tree.parent[u] for u in dead}
    out: dict[str, list[list[str]]] = {}
    ends = sorted((u for u in dead if u not in has_dead_child), key=tree._sort_key)
    for end in ends:
        path: list[str] = []
        uid: str | None = end
        seen: set[str] = set()
        while uid is not None and uid in dead and uid not in seen:
            seen.add(uid)
            path.append(uid)
            uid = tree.parent[uid]
        if uid is not None and uid in active:
            path.reverse()
            out.setdefault(uid, []).append(path)
    return out


def _branches_before(tree: _Tree, emit: Emitter, g: _Group, not_taken: dict[str, list[list[str]]]) -> None:
    """The branches that left from the records before ``g`` (its parents), written now:
    after everything they share with the active branch, before the rest of it."""
    if not not_taken:
        return
    for uid in g.uids:
        parent = tree.parent.get(uid)
        if parent is not None and parent in not_taken:
            _emit_not_taken(tree, emit, not_taken.pop(parent))


def _emit_not_taken(tree: _Tree, emit: Emitter, paths: list[list[str]]) -> None:
    """Each branch not taken as the messages it had, then a rewind back to where it left:
    the file says what happened, replay says what Claude Code resumes with. No tool
    operations: those calls are not the run's."""
    keep = len(emit.live)
    for path in paths:
        calls: set[str] = set()
        for g in _groups(tree, path):
            r = g.records[0]
            ts = to_ts(r.get("timestamp"), emit.ts)
            cc: dict[str, Any] = {**_provenance(tree, g), "branch-not-taken": True}
            if g.kind == "assistant":
                mapped = _assistant_payload(tree, g)
                if mapped is None:
                    continue
                payload, blocks = mapped
                payload["claude-code"]["branch-not-taken"] = True
                calls.update(b["id"] for b in blocks)
                emit.message(payload, ts)
            elif g.kind == "tool" and g.block.get("tool_use_id") in calls:
                calls.discard(str(g.block.get("tool_use_id")))
                emit.message({"claude-code": cc, "role": "tool", "tool_call_id": g.block["tool_use_id"],
                              "content": _result_content(g.block)}, ts)
            elif g.kind == "tool":
                emit.message({"claude-code": cc, "role": "user", "content": _result_content(g.block)}, ts)
            elif g.kind == "user":
                said, _ = _user_content(g.content)
                emit.message({"claude-code": cc, "role": "user", "content": said}, ts)
        emit.rewind(keep)


def emit_facts(emit: Emitter, facts: dict[str, Any], ts: str) -> None:
    emit.facts([[k, facts[k]] for k in ("cwd", "version", "git-branch", "model") if k in facts], ts)


def _duration(result: Any) -> float | None:
    if not isinstance(result, dict):
        return None
    for key, scale in (("durationMs", 1000.0), ("totalDurationMs", 1000.0), ("durationSeconds", 1.0)):
        value = result.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value / scale
    return None
