"""The envelopes an import derives, in replay order, with the live message list
tracked as replay will rebuild it (so rewinds and compactions name live ids)."""

from __future__ import annotations

from typing import Any, Callable

from .. import canonical_json, digest
from ._source import EPOCH_TS, Ids

__all__ = ["Emitter"]


class Emitter:
    """Hands each ``(type, id, ts, payload)`` envelope to ``sink`` (or collects it in
    ``out``) and mirrors replay's live list."""

    def __init__(self, ids: Ids, sink: Callable[[str, str, str, Any], object] | None = None) -> None:
        self.ids = ids
        self.out: list[tuple[str, str, str, Any]] = []  # kept only without a sink
        self._sink = sink
        self.first_ts: str | None = None
        self.message_count = 0
        self.ts = EPOCH_TS
        self.live: list[str] = []
        self.calls: dict[str, str] = {}  # call id -> op id, for the calls of live assistant messages
        self.settled: set[str] = set()
        self._call_message: dict[str, str] = {}
        self.granted: Any = None  # the last grants snapshot written
        self._facts: list[list[Any]] | None = None

    def at(self, ts: str | None) -> str:
        if ts is not None:
            self.ts = ts
        return self.ts

    def envelope(self, type_: str, payload: Any, ts: str | None = None, kind: str = "env") -> str:
        id_ = self.ids.next(kind)
        when = self.at(ts)
        if self.first_ts is None:
            self.first_ts = when
        if self._sink is None:
            self.out.append((type_, id_, when, payload))
        else:
            self._sink(type_, id_, when, payload)
        return id_

    def message(self, payload: dict[str, Any], ts: str | None = None) -> str:
        id_ = self.envelope("message", payload, ts, "msg")
        self.live.append(id_)
        self.message_count += 1
        return id_

    def dispatch(self, call_id: str, tool: str, arguments: Any, *, run_id: str | None,
                 round_: int | None, ts: str | None = None) -> str:
        payload = {
            "call-id": call_id,
            "tool": tool,
            "arguments": arguments,
            "arguments-digest": digest(canonical_json(arguments)),
            "idempotency": "unknown",
            "run-id": run_id,
            "round": round_,
        }
        op = self.envelope("tool-dispatched", payload, ts, "op")
        self.calls[call_id] = op
        self._call_message[call_id] = self.live[-1] if self.live else ""
        return op

    def settle(self, call_id: str, outcome: str, ts: str | None = None, **fields: Any) -> bool:
        """A tool-settled for the live call ``call_id``; False when there is none (or it is settled)."""
        op = self.calls.get(call_id)
        if op is None or op in self.settled:
            return False
        payload: dict[str, Any] = {"op-id": op, "outcome": outcome}
        for key, value in fields.items():
            if value is not None:
                payload[key.replace("_", "-")] = value
        self.envelope("tool-settled", payload, ts, "settle")
        self.settled.add(op)
        return True

    def pending_calls(self) -> list[str]:
        return [c for c, op in self.calls.items() if op not in self.settled]

    def compaction(self, summary: str, tokens_before: int, tokens_after: int, *, fallback: bool = False,
                   replacement: list[dict[str, Any]] | None = None, ts: str | None = None) -> str:
        """Everything live is replaced: by ``summary`` or by ``replacement``. With nothing live, a
        replacement is written as plain messages and a summary as a user message."""
        if not self.live:
            if replacement is None:
                self.message({"role": "user", "content": summary}, ts)
            else:
                for item in replacement:
                    self.message(item, ts)
            return self.live[-1] if self.live else ""
        payload: dict[str, Any] = {
            "summary": summary,
            "replaces-through-id": self.live[-1],
            "tokens-before": tokens_before,
            "tokens-after": tokens_after,
            "fallback": fallback,
        }
        if replacement is not None:
            payload["replacement"] = replacement
        id_ = self.envelope("compaction", payload, ts, "cmp")
        self.live = [f"{id_}:{k}" for k in range(len(replacement))] if replacement is not None else [id_]
        self.calls = {}
        return id_

    def rewind(self, keep: int, ts: str | None = None) -> None:
        """Keep the first ``keep`` live messages; drop the rest (nothing written if nothing drops)."""
        if keep >= len(self.live):
            return
        through = self.live[keep - 1] if keep > 0 else None
        self.envelope("rewind", {"through-id": through}, ts, "rew")
        self.live = self.live[:keep]
        kept = set(self.live)
        self.calls = {c: op for c, op in self.calls.items() if self._call_message.get(c) in kept}

    def grants(self, snapshot: Any, ts: str | None = None) -> None:
        if snapshot != self.granted:
            self.granted = snapshot
            self.envelope("grants", {"grants": snapshot}, ts, "grants")

    def facts(self, facts: list[list[Any]], ts: str | None = None) -> None:
        if facts != self._facts:
            self._facts = facts
            self.envelope("run-context", {"facts": facts, "sections": []}, ts, "ctx")
