"""The records as a page carries them: the file's own lines, and the notes of what replay says.

The cards are drawn in the browser by the shipped script (``render.js``),
with DOM calls only, from each record's JSON line. What Python adds is what
the browser cannot know from the lines of one page: what replay did later to
a record (settled, elided, compacted away, dropped by a rewind, still
pending), what a compaction or rewind replaced, the original an elision
stubbed, the line of an operation or a section elsewhere in the file, an
artifact's check. ``Annotator`` gives those notes a page at a time, in
file order, remembering only a bounded state between pages (the last grants
line, the last run-context sections by name, a capped outline), and
The lines
are put in the page as bytes (``island_bytes`` makes them safe inside a
``<script type=application/json>``), so html costs about a copy of the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..inspect.paths import artifacts_folder, open_stored_artifact
from ..inspect import Reading, content_text
from ..inspect.tokens import TokenTotals

__all__ = ["anchor", "ArtifactCheck", "check_artifact", "Outline", "Annotator", "island_bytes",
           "short_line", "shorten", "size_text", "CUT_KEY"]

#: At most this much of one text is put in the page; the rest is said, with its line.
MAX_BLOCK = 256 * 1024
#: A line longer than this is put in the page shortened (its long strings cut at MAX_BLOCK).
BIG_LINE = 1 << 20
#: How many replaced messages the cut lists one by one.
CUT_LIST = 60
EXCERPT_CHARS = 160
#: How many of those are decoded for an excerpt when they are not on the page.
EXCERPTS = 12
#: The key of a string cut short in a shortened line (the script shows the rest's size).
CUT_KEY = "\x00agent-transcript-cut"

_SAFE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_PLAIN_LINE = re.compile(rb'\{"id":"[A-Za-z0-9_.:-]{1,128}","')
#: How a canonical line of this library starts: {"id":"<its 32 hex digits>", a plain id
#: (one match is the cheapest test of a record's head: it is made for every record).
_CANONICAL_LINE = re.compile(rb'\{"id":"[A-Za-z0-9]{32}",')


def anchor(envelope_id: str) -> str:
    """The permalink of an envelope: ``e-<id>``, or a digest of an id that is not
    a plain word (the same on every rendering of the file)."""
    if _SAFE_ID.fullmatch(envelope_id):
        return "e-" + envelope_id
    return "e-x" + hashlib.sha256(envelope_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def size_text(n: int) -> str:
    """A byte count for a person."""
    if n < 1024:
        return f"{n:,} B"
    if n < 1024 * 1024:
        return f"{n / 1024:,.1f} KB"
    return f"{n / (1024 * 1024):,.1f} MB"


def _seconds(d: float) -> str:
    return f"{d * 1000:.0f} ms" if d < 1 else f"{d:.2f} s"


def island_bytes(data: bytes) -> bytes:
    """JSON lines made safe inside ``<script type=application/json>``: every ``<``
    (only ever inside a JSON string) as ``\\u003c``, so nothing can end or
    re-open the element; a raw CR (only ever whitespace between tokens) as a
    space, since the HTML parser would make it a newline. (U+2028/2029 need no
    escape here: the element is data, never run, and JSON.parse takes them.)"""
    if b"<" in data:
        data = data.replace(b"<", b"\\u003c")
    if b"\r" in data:
        data = data.replace(b"\r", b" ")
    return data


def shorten(value: Any) -> Any:
    """``value`` with every string longer than MAX_BLOCK cut (as ``{CUT_KEY: start, "bytes": size}``)."""
    if isinstance(value, str):
        if len(value) <= MAX_BLOCK:
            return value
        return {CUT_KEY: value[:MAX_BLOCK], "bytes": len(value.encode("utf-8", "surrogatepass"))}
    if isinstance(value, list):
        return [shorten(v) for v in value]
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    return value


def short_line(reading: Reading, i: int) -> bytes:
    """Envelope ``i`` as one JSON line whose strings longer than MAX_BLOCK are cut
    (each as ``{CUT_KEY: start, "bytes": whole size}``), for a line too big for a page."""
    e = reading.event(i)
    env = {"id": e.id, "payload": shorten(e.payload), "ts": e.ts, "type": e.type, "v": e.v}
    return json.dumps(env, ensure_ascii=True, separators=(",", ":")).encode()


def damaged_line(raw: bytes) -> bytes:
    """A line that is not an envelope, as a JSON string the script shows as text."""
    return json.dumps(raw[:MAX_BLOCK].decode("utf-8", "replace"), ensure_ascii=True).encode()


@dataclass(frozen=True)
class ArtifactCheck:
    """What was found of an artifact beside the transcript: ``ok``, ``missing``,
    ``mismatch`` (its digest is not the recorded one) or ``invalid`` (a name that
    is not a plain file name)."""

    status: str
    path: str | None
    actual: str | None = None


def check_artifact(transcript_path: str, art: dict[str, Any]) -> ArtifactCheck:
    """Look for the artifact ``art`` (a tool-settled's ``artifact``) in ``<stem>.artifacts/``
    and compare its SHA-256 with the recorded digest, reading it a chunk at a time."""
    name = art.get("file")
    if not isinstance(name, str) or not name or name in (".", "..") or any(c in name for c in "/\\\x00"):
        return ArtifactCheck("invalid", None)
    path = os.path.join(artifacts_folder(transcript_path), name)
    h = hashlib.sha256()
    fd = open_stored_artifact(transcript_path, name)  # a FIFO there would hang the page
    if fd is None:
        return ArtifactCheck("missing", path)
    try:
        with os.fdopen(fd, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return ArtifactCheck("missing", path)
    actual = "sha256:" + h.hexdigest()
    recorded = art.get("digest")
    return ArtifactCheck("ok" if recorded in (None, actual) else "mismatch", path, actual)


@dataclass
class Outline:
    """The turns, compactions and rewinds met (capped)."""

    LIMIT = 3000
    items: list[tuple[str, str, str, int]] = field(default_factory=list)  # kind, anchor, label, line
    more: int = 0

    def add(self, kind: str, anchor_: str, label: str, line: int) -> None:
        if len(self.items) < self.LIMIT:
            self.items.append((kind, anchor_, label, line))
        else:
            self.more += 1

    @property
    def full(self) -> bool:
        return len(self.items) >= self.LIMIT


def _excerpt(content: Any) -> str:
    return (content_text(content) or "").strip().replace("\n", " ")[:EXCERPT_CHARS]


class Annotator:
    """The notes of the records of a reading, a page at a time and in file order.

    Args:
        reading: the file as the read model sees it.
        transcript_path: where the transcript is, to find its artifacts.
        artifact_href: the address of an artifact file, given its basename and
            where it was found (None: no link).
        tokens: the run's tokens (``inspect.tokens``), for each message's note.
    """

    def __init__(
        self,
        reading: Reading,
        *,
        transcript_path: str | None = None,
        artifact_href: Callable[[str, str | None], str | None] | None = None,
        tokens: TokenTotals | None = None,
    ) -> None:
        self.reading = reading
        # Each message's tokens by its line: [input, output, cache read, cache write].
        self.tokens: dict[int, list[int]] = {}
        for message_id, count in (tokens.by_message.items() if tokens is not None else ()):
            at = reading.line_of(message_id)
            if at is not None:
                self.tokens[at] = [count.input, count.output, count.cache_read, count.cache_creation]
        self.t = reading.transcript
        self.path = transcript_path or reading.path
        self.artifact_href = artifact_href
        self.pending = {op.op_id: op.state for op in reading.pending() or []}
        # The live calls no tool message answers, and the tool messages that
        # answer no call, by the line they are on (Session's pairing).
        pairing = reading.pairing()
        self.unanswered: dict[int, list[str]] = {}
        self.orphans: set[int] = set()
        if pairing is not None:
            for c in pairing.unanswered:
                self.unanswered.setdefault(c.line, []).append(c.call_id)
            self.orphans.update(o.line for o in pairing.orphans)
        self.grants_at = reading.grants_index()
        self.last_grants: int | None = None
        self.sections: dict[str, tuple[str, int]] = {}
        self.outline = Outline()

    def seen_grants(self, index: int) -> None:
        """Grants line ``index`` came before the page being started (serve's pages)."""
        self.last_grants = index

    def start(self) -> dict[str, Any]:
        """The state a page starts in: the grants in force."""
        if self.last_grants is None:
            return {}
        p = self.reading.payload(self.last_grants)
        return {"grants": p.get("grants") if isinstance(p, dict) else None,
                "grants_line": self.reading.line_number(self.last_grants)}

    def page(self, items: list[tuple[int, int, str, bytes | None]]) -> dict[str, dict[str, Any]]:
        """The notes of the records ``(index, line, type, head)`` of one page, by line
        number (``head``: the start of its line, when known: a canonical line says
        there whether its id is a plain word and whether a settle has an artifact)."""
        r, t = self.reading, self.t
        notes: dict[str, dict[str, Any]] = {}

        def n(line: int) -> dict[str, Any]:
            return notes.setdefault(str(line), {})

        settles: list[tuple[int, int]] = []
        contexts: list[tuple[int, int]] = []
        users: list[tuple[int, int]] = []
        outline: list[tuple[int, str, str, str]] = []
        plain, canonical = _PLAIN_LINE.match, _CANONICAL_LINE.match
        line_number = t.line_number if t is not None else None
        later = t.later if t is not None else None
        role = r.index.role if r.index is not None else None
        want_users = not self.outline.full
        for i, line, ty, head in items:
            if head is None or canonical(head) is None and plain(head) is None:
                eid = r.envelope_id(i)
                if not _SAFE_ID.fullmatch(eid):
                    n(line)["a"] = anchor(eid)
            if ty == "message":
                if later is not None and line_number is not None:
                    _, el, comp, rw = later(i, None)
                    if el is not None or comp is not None or rw is not None:
                        note = n(line)
                        if el is not None:
                            note["elided"] = line_number(el)
                        if comp is not None:
                            note["compacted"] = line_number(comp)
                        if rw is not None:
                            note["rewound"] = line_number(rw)
                if line in self.unanswered:
                    n(line)["unanswered"] = self.unanswered[line]
                if line in self.orphans:
                    n(line)["orphan"] = True
                if line in self.tokens:
                    n(line)["tokens"] = self.tokens[line]
                if want_users and role is not None and role(i) == "user":
                    users.append((i, line))
            elif ty == "tool-dispatched":
                if later is not None and line_number is not None:
                    settled = later(i, None)[0]
                    if settled is not None:
                        n(line)["settled"] = line_number(settled)
                    else:
                        n(line)["pending"] = self.pending.get(r.envelope_id(i), "dispatched")
            elif ty == "tool-settled":
                # The script finds its dispatch on the page; what only Python can say is an
                # artifact's check (a canonical line's payload starts with it, when it has one).
                if head is None or not head.startswith(b'{"id":"') or b'"payload":{"artifact":' in head:
                    settles.append((i, line))
            elif ty == "grants":
                self.last_grants = i
                if i == self.grants_at:
                    n(line)["last"] = True
            elif ty == "compaction":
                label = self._compaction(i, line, n(line), items[0][1])
                outline.append((line, "compaction", self._anchor(i), label))
            elif ty == "elision":
                self._elision(i, n(line), items[0][1])
            elif ty == "rewind":
                self._rewind(i, n(line), items[0][1])
                outline.append((line, "rewind", self._anchor(i), "rewind"))
            elif ty == "run-context":
                contexts.append((i, line))
        refusal = r.refusal
        if refusal is not None and refusal.line is not None and items and items[0][1] <= refusal.line <= items[-1][1]:
            n(refusal.line)["refusal"] = refusal.reason
        if settles:
            got = r.payload_fields([i for i, _ in settles], ["op-id", "artifact"])
            for (i, line), f in zip(settles, got):
                op = f.get("op-id")
                op_line = r.line_of(op) if isinstance(op, str) else None
                if op_line is not None:
                    n(line)["op"] = op_line
                art = f.get("artifact")
                if isinstance(art, dict):
                    n(line)["artifact"] = self._artifact(art)
        if contexts:
            got = r.payload_fields([i for i, _ in contexts], ["sections"])
            for (i, line), f in zip(contexts, got):
                self._sections(line, f.get("sections"), n)
        if users:
            got = r.payload_fields([i for i, _ in users], ["content"])
            for (i, line), f in zip(users, got):
                outline.append((line, "turn", self._anchor(i), (content_text(f.get("content")) or "")[:80]))
        for line, kind, a, label in sorted(outline):
            self.outline.add(kind, a, label, line)
        return {k: v for k, v in notes.items() if v}

    def _anchor(self, i: int) -> str:
        return anchor(self.reading.envelope_id(i))

    def _artifact(self, art: dict[str, Any]) -> dict[str, Any]:
        found = check_artifact(self.path, art) if self.path else ArtifactCheck("missing", None)
        out: dict[str, Any] = {"status": found.status}
        if found.actual:
            out["actual"] = found.actual
        if self.artifact_href is not None and found.status in ("ok", "mismatch"):
            href = self.artifact_href(str(art.get("file")), found.path)
            if href:
                out["href"] = href
        return out

    def _rows(self, pairs: list[tuple[int, int | None]], page_from: int) -> list[list[Any]]:
        """``[line, role, excerpt]`` of the first CUT_LIST messages ``(index, part)``: the
        role from the index; an excerpt decoded for the first few that are not on this
        page (from line ``page_from`` on: the script has those) and not tool results."""
        r, t = self.reading, self.t
        assert t is not None
        rows: list[list[Any]] = []
        decode: list[tuple[int, int]] = []
        for j, part in pairs[:CUT_LIST]:
            line = t.line_number(j)
            role = "replacement" if part is not None else (t.role(j) or "")
            rows.append([line, role, ""])
            if part is None and line < page_from and role != "tool" and len(decode) < EXCERPTS:
                decode.append((len(rows) - 1, j))
        if decode:
            for (k, _), f in zip(decode, r.payload_fields([j for _, j in decode], ["content"])):
                rows[k][2] = _excerpt(f.get("content"))
        return rows

    def _compaction(self, i: int, line: int, note: dict[str, Any], page_from: int) -> str:
        r, t = self.reading, self.t
        f = r.payload_fields([i], ["tokens-before", "tokens-after", "replaces-through-id"])[0]
        through = f.get("replaces-through-id")
        if isinstance(through, str):
            at = r.message_line(through)
            if at is not None:
                note["through"] = at
        if t is not None:
            replaced, kept, replacement = t.compaction_effect(i)
            replaced = sorted(replaced, key=lambda jp: (t.line_number(jp[0]), jp[1] or 0))
            note["replaced"] = self._rows(replaced, page_from)
            note["replaced_n"] = len(replaced)
            if replaced:
                note["span"] = [t.line_number(replaced[0][0]), t.line_number(replaced[-1][0])]
            note["kept"] = [t.line_number(j) for j, _ in kept[:CUT_LIST]]
            if replacement:
                parts = []
                for k in range(replacement):
                    later = t.later(i, k)
                    parts.append([None if a is None else t.line_number(a) for a in later[1:]])
                note["parts"] = parts
                eid = r.envelope_id(i)
                if not _SAFE_ID.fullmatch(f"{eid}:0"):
                    note["pa"] = [anchor(f"{eid}:{k}") for k in range(replacement)]
        return f"compaction {f.get('tokens-before')}→{f.get('tokens-after')}"

    def _elision(self, i: int, note: dict[str, Any], page_from: int) -> None:
        """The messages elision ``i`` stubbed: ``[line, role, on this page, size]``.
        Nothing is decoded: the script shows the original of a message on this page
        (from line ``page_from`` on) from its own line, and links to any other."""
        r, t = self.reading, self.t
        if t is None:
            return
        f = r.payload_fields([i], ["items"])[0]
        raw_items = f.get("items")
        ids = [it.get("id") if isinstance(it, dict) else None for it in raw_items] if isinstance(raw_items, list) else []
        items: list[list[Any]] = []
        for eid in ids:
            found = t.resolve(eid) if isinstance(eid, str) else None
            if found is None:
                items.append([None, "", False, None])
                continue
            j, part = found
            line = t.line_number(j)
            here = part is None and line >= page_from and t.type_name(j) == "message"
            role = "replacement" if part is not None else (t.role(j) or "")
            items.append([line, role, here, None])
        note["items"] = items

    def _rewind(self, i: int, note: dict[str, Any], page_from: int) -> None:
        r, t = self.reading, self.t
        f = r.payload_fields([i], ["through-id"])[0]
        through = f.get("through-id")
        if isinstance(through, str):
            at = r.message_line(through)
            if at is not None:
                note["through"] = at
        if t is not None:
            dropped = t.rewind_effect(i)
            note["dropped"] = self._rows(dropped, page_from)
            note["dropped_n"] = len(dropped)

    def _sections(self, line: int, sections: Any, n: Callable[[int], dict[str, Any]]) -> None:
        out: list[list[Any]] = []
        for sec in sections if isinstance(sections, list) else []:
            if not isinstance(sec, dict):
                out.append([])
                continue
            name, digest_ = str(sec.get("name")), str(sec.get("digest"))
            prev = self.sections.get(name)
            if "text" in sec:
                status = "new" if prev is None else ("unchanged" if prev[0] == digest_ else "changed")
                out.append([status, prev[1] if prev is not None else None, None])
                self.sections[name] = (digest_, line)
            else:
                at = self.reading.section_line(digest_)
                out.append([None, None, at or (prev[1] if prev else None)])
                if len(self.sections) < 1000:
                    self.sections.setdefault(name, (digest_, at or line))
        if out:
            n(line)["sections"] = out
