"""A live Claude Code session mirrored into a transcript, a batch of lines at a time.

Each batch is written as an import writes a file: every line, byte for byte,
in a ``source-line`` envelope (the batch in one ``write(2)``), and the
conversation the Claude Code importer makes of all the lines so far. The
importer's conversion (``_conversion.Conversion``) keeps what the lines say
across batches and goes on from where it was when they only extend the chain;
what it emits is compared with what it emitted before, and only the
difference is written: the new envelopes when the conversation went on, or a
rewind to where the two part and the new envelopes from there when a later
line changed what came before (another fragment of a streamed assistant
message, a rewind of the session, a compaction). The messages a mirror
replays to are those an import of a file of the same lines replays to.

A source line's ``status`` is what the conversion made of it when it came.
Reopened, a mirror converts the lines its transcript holds and carries on;
the conversation written by a batch a crash cut short is written again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from .. import Session
from ._conversion import Conversion
from ._emit import Emitter
from ._source import (SOURCE_LINE, Ids, Line, importer_meta, parse_line, source_line_bytes, source_line_payload,
                      strict_json)

__all__ = ["Mirror", "entry_line", "entry_of"]

Envelope = tuple[str, str, str, Any]  # (type, id, ts, payload), as the Emitter gives them


def entry_line(entry: Any) -> bytes:
    """A record as a JSONL line (without its ``\\n``), as Claude Code writes one: compact
    JSON, non-ASCII as it is (escaped only where it is a lone surrogate, which UTF-8 cannot carry).

    Raises:
        TypeError: ``entry`` is not a dict, or holds what JSON cannot (a set, bytes).
        ValueError: it holds NaN or an infinity, or nests too deep.
    """
    if not isinstance(entry, dict):
        raise TypeError(f"an entry is a dict, not {type(entry).__name__}")
    try:
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        raise ValueError("the entry nests too deep to be a JSON line") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(entry, separators=(",", ":"), allow_nan=False).encode("ascii")


def entry_of(raw: bytes) -> Any:
    """The record a line holds (as ``json.loads`` reads it).

    Raises:
        ValueError: the line is not JSON.
    """
    return strict_json(raw)


class _PlaceIds(Ids):
    """Ids that name an envelope's place in the conversion's output: the same lines
    give the same ids, so two conversions compare envelope by envelope."""

    def next(self, kind: str) -> str:
        self.used += 1
        return f"{kind}:{self.used}"


def _live_after(envelopes: Iterable[Envelope]) -> list[tuple[str, Any]]:
    """The live messages (id, payload) replay has after ``envelopes``, as the Emitter keeps them."""
    live: list[tuple[str, Any]] = []
    for type_, id_, _, payload in envelopes:
        if type_ == "message":
            live.append((id_, payload))
        elif type_ == "compaction":
            replacement = payload.get("replacement")
            live = ([(f"{id_}:{k}", item) for k, item in enumerate(replacement)] if replacement is not None
                    else [(id_, {"role": "user", "content": payload["summary"]})])
        elif type_ == "rewind":
            through = payload["through-id"]
            live = live[:next(i + 1 for i, (m, _) in enumerate(live) if m == through)] if through else []
    return live


def _payload(entry: Any) -> dict[str, Any]:
    """A live entry of a transcript as the payload it was written from."""
    return {**entry.extra, **entry.message.to_dict()}


class Mirror:
    """The transcript at ``path`` mirroring one Claude Code session: open it with
    ``open``, feed it lines with ``append``. Not thread-safe: one caller at a time."""

    def __init__(self, session: Session) -> None:
        # Use open().
        self.session = session
        self.raws: list[bytes] = []  # the lines, in order
        self._size = 0  # their bytes, as a file of them
        self._conversion = Conversion(lambda line: line.record or {})
        self._emit: Emitter | None = None  # the one the conversion last wrote with
        self._written: list[Envelope] = []  # what the conversion emitted for the lines written so far
        self._live: list[tuple[str, Any]] = []  # its live messages, (id, payload): the transcript's
        self._ids: dict[str, str] = {}  # an id of the conversion's -> the transcript's envelope id
        self._settled: set[str] = set()  # the transcript's settled operations

    @classmethod
    def open(cls, path: str | os.PathLike[str], meta: dict[str, Any], *,
             durability: Literal["flush", "fsync"] = "flush") -> Mirror:
        """Open (or create) the mirror at ``path``, locked as any transcript is, and
        convert the lines it holds. A new one's session-meta is ``meta`` with the
        ``format`` and the ``importer``, as an import's.

        Raises:
            SessionLocked: another session holds ``path``.
            CorruptTranscript: ``path`` is not a transcript.
        """
        meta = {**meta, "format": "claude-code", "importer": importer_meta()}
        session = Session.open(path, meta, durability=durability)
        try:
            mirror = cls(session)
            mirror._resume()
            return mirror
        except BaseException:
            session.close()
            raise

    @property
    def path(self) -> Path:
        """The transcript."""
        return self.session.path

    def close(self) -> None:
        """Close the transcript (idempotent)."""
        self.session.close()

    def append(self, raws: Sequence[bytes], events: Iterable[tuple[str, Any]] = ()) -> None:
        """Mirror the next lines of the session (each without its ``\\n``), with ``events``
        (``(type, payload)`` envelopes of the caller's) in the same ``write(2)``; then
        the conversation they change.

        On an error the mirror may hold lines its transcript does not: close it, and open it again.
        """
        if not raws:
            return
        lines = self._parse(raws)
        self._conversion.add(lines)
        converted, live = self._convert()
        rows = [(SOURCE_LINE, source_line_payload(line, raw)) for line, raw in zip(lines, raws)]
        self.session.append_events([*rows, *events])
        self.raws.extend(raws)
        self._sync(converted, live)

    # -- converting ------------------------------------------------------------------

    def _parse(self, raws: Sequence[bytes]) -> list[Line]:
        lines: list[Line] = []
        for raw in raws:
            lines.append(parse_line(len(self.raws) + len(lines) + 1, self._size, raw, []))
            self._size += len(raw) + 1
        return lines

    def _convert(self) -> tuple[list[Envelope], list[tuple[str, Any]]]:
        """The conversion of every line so far: the last one extended when the new
        lines allow, else made again."""
        if self._emit is None or not self._conversion.extend():
            self._emit = Emitter(_PlaceIds(""))
            self._conversion.emit(self._emit, [])
        return self._emit.out, _live_after(self._emit.out)

    def _sync(self, converted: list[Envelope], live: list[tuple[str, Any]]) -> None:
        """Write what ``converted`` (the conversion of every line) adds to what was written."""
        old = self._written
        same = 0
        while same < len(old) and same < len(converted) and old[same] == converted[same]:
            same += 1
        rows: list[tuple[str, Any, str | None]] = []
        if same < len(old):
            # A later line changed what was written: back to where the two part.
            kept = _live_after(converted[:same])
            if kept != self._live[:len(kept)]:  # a compaction or rewind since: back to the start
                same, kept = 0, []
            if len(kept) < len(self._live):
                rows.append(("rewind", {"through-id": self._ids[kept[-1][0]] if kept else None}, None))
        self._write(rows, converted[same:])
        self._written, self._live = list(converted), live  # a copy: extend() goes on writing the list
        self._match_grants(converted)

    def _match_grants(self, converted: list[Envelope]) -> None:
        """Write the conversion's last grants if the transcript's last are others (those
        were written before a part now undone, or a crash cut their batch short)."""
        grants = next((payload for type_, _, _, payload in reversed(converted) if type_ == "grants"), None)
        if grants is not None and grants != self._grants:
            self._flush([("grants", grants, None)])

    @property
    def _grants(self) -> Any:
        """The transcript's last grants payload."""
        snapshot = self.session.grants
        return None if snapshot is None else {"grants": snapshot}

    def _write(self, rows: list[tuple[str, Any, str | None]], envelopes: Iterable[Envelope]) -> None:
        """Write ``envelopes``, their ids mapped to the transcript's, as few writes as
        they allow (an envelope that names another of the same write waits for the next)."""
        pending: set[str] = set()
        for type_, id_, _, payload in envelopes:
            named = _named(type_, payload)
            if named is not None and named in pending:
                self._flush(rows)
                pending.clear()
            if type_ == "tool-settled":
                op = self._ids.get(payload["op-id"])
                if op is None or op in self._settled:
                    continue  # its dispatch was never written, or it was settled before a rewind
                self._settled.add(op)
                payload = {**payload, "op-id": op}
            elif type_ == "compaction":
                payload = {**payload, "replaces-through-id": self._ids[payload["replaces-through-id"]]}
            elif type_ == "rewind" and payload["through-id"] is not None:
                payload = {"through-id": self._ids[payload["through-id"]]}
            rows.append((type_, payload, id_))
            pending.add(id_)
            if type_ == "compaction" and payload.get("replacement") is not None:
                pending.update(f"{id_}:{k}" for k in range(len(payload["replacement"])))
        self._flush(rows)

    def _flush(self, rows: list[tuple[str, Any, str | None]]) -> None:
        if not rows:
            return
        got = self.session.append_events([(type_, payload) for type_, payload, _ in rows])
        for (type_, payload, id_), written in zip(rows, got):
            if id_ is None:
                continue
            self._ids[id_] = written
            if type_ == "compaction" and payload.get("replacement") is not None:
                for k in range(len(payload["replacement"])):
                    self._ids[f"{id_}:{k}"] = f"{written}:{k}"
        rows.clear()

    # -- reopening ---------------------------------------------------------------------

    def _resume(self) -> None:
        """Convert the lines the transcript holds, and match what it replays to with
        that conversion: written again from where they part (a crash cut a batch's
        conversation short)."""
        session = self.session
        raws = [source_line_bytes(e.payload) for e in session.events
                if e.type == SOURCE_LINE and isinstance(e.payload, dict)]
        if not raws:
            return
        lines = self._parse(raws)
        self.raws = raws
        self._conversion.add(lines)
        converted, live = self._convert()
        entries = session.entries
        same = 0
        while same < len(entries) and same < len(live) and _payload(entries[same]) == live[same][1]:
            same += 1
        for k in range(same):
            self._ids[live[k][0]] = entries[k].id
        calls: dict[str, str] = {}  # call id -> the transcript's last operation for it
        for event in session.events:
            if event.type == "tool-dispatched" and isinstance(event.payload, dict):
                calls[str(event.payload.get("call-id"))] = event.id
            elif event.type == "tool-settled" and isinstance(event.payload, dict):
                self._settled.add(str(event.payload.get("op-id")))
        for type_, id_, _, payload in converted:
            if type_ == "tool-dispatched" and payload["call-id"] in calls:
                self._ids[id_] = calls[payload["call-id"]]
        self._written, self._live = list(converted), live
        if not same == len(entries) == len(live):
            rows: list[tuple[str, Any, str | None]] = []
            if same < len(entries):
                rows.append(("rewind", {"through-id": entries[same - 1].id if same else None}, None))
            # The rest as the plain messages they are (their operations are the run's
            # record, not the conversation: those a crash cut short stay unwritten).
            self._write(rows, [("message", id_, "", payload) for id_, payload in live[same:]])
        self._match_grants(converted)


def _named(type_: str, payload: Any) -> str | None:
    """The id of the conversion's that an envelope names, if any."""
    if type_ == "tool-settled":
        return str(payload["op-id"])
    if type_ == "compaction":
        return str(payload["replaces-through-id"])
    if type_ == "rewind":
        return payload["through-id"] if isinstance(payload["through-id"], str) else None
    return None
