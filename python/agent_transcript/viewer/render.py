"""The HTML renderer: one envelope as one escaped fragment (an ``<article>``), over the read model.

Over a :class:`~agent_transcript.inspect.Reading` (``html`` and ``serve``'s
pages) :meth:`Renderer.fragment_at` renders envelope ``i`` with what replay
says about it (settled, elided, compacted away, dropped by a rewind, still
pending); streamed (``serve``'s live follow) :meth:`Renderer.fragment`
renders an envelope as it comes. Envelopes are rendered in file order and
only a bounded amount is remembered between them (the grants in force, the
last run-context sections by name, a window of message excerpts for the
compaction cut), so memory does not grow with the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import Envelope, PendingToolOperation
from ..inspect import Reading, content_size, content_text, tool_call_parts
from .markup import markdown, text

__all__ = ["Renderer", "anchor", "ArtifactCheck", "check_artifact", "Outline"]

#: Text longer than this (in characters) or with more lines is folded, its size said.
FOLD_CHARS = 1200
FOLD_LINES = 14
#: At most this much of one block is put in the page; the rest is said, with its line.
MAX_BLOCK = 256 * 1024
#: The raw JSON of a record is cut here (the whole line is in the file, at the line named).
MAX_RAW = 16 * 1024
#: Markdown is rendered for texts up to this size; longer ones are shown as they are.
MAX_MARKDOWN = 64 * 1024
#: How many messages' excerpts are kept for the compaction cut and rewinds.
EXCERPT_WINDOW = 4000
EXCERPT_CHARS = 160
#: How much of a record's text goes into a folder's search chunk.
SEARCH_CHARS = 600
#: How many replaced messages the cut lists one by one.
CUT_LIST = 60

_MESSAGE_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth"}
_SAFE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


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


def _json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=(", ", ": ") if indent is None else None)


def _chip(label: str, cls: str, title: str = "") -> str:
    t = f' title="{text(title)}"' if title else ""
    return f'<span class="chip {cls}"{t}>{text(label)}</span>'


def _line_link(line: int | None, label: str | None = None) -> str:
    if line is None:
        return ""
    return f'<a class=lref href="#L{line}">{text(label or f"line {line}")}</a>'


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
    base, _ = os.path.splitext(transcript_path)
    if transcript_path.endswith(".jsonl"):
        base = transcript_path[: -len(".jsonl")]
    path = os.path.join(base + ".artifacts", name)
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return ArtifactCheck("missing", path)
    actual = "sha256:" + h.hexdigest()
    recorded = art.get("digest")
    return ArtifactCheck("ok" if recorded in (None, actual) else "mismatch", path, actual)


@dataclass
class Outline:
    """The turns, compactions, rewinds and errors met while rendering (capped)."""

    LIMIT = 3000
    items: list[tuple[str, str, str, int]] = field(default_factory=list)  # kind, anchor, label, line
    more: int = 0

    def add(self, kind: str, anchor_: str, label: str, line: int) -> None:
        if len(self.items) < self.LIMIT:
            self.items.append((kind, anchor_, label, line))
        else:
            self.more += 1


class Renderer:
    """Turns envelopes into HTML fragments, in file order.

    Args:
        reading: the file as the read model sees it (None when streaming).
        artifact_href: the address of an artifact file, given its basename and
            where it was looked for (None: no link).
        transcript_path: where the transcript is, to find its artifacts.
    """

    def __init__(
        self,
        reading: Reading | None,
        *,
        transcript_path: str | None = None,
        artifact_href: Callable[[str, str | None], str | None] | None = None,
    ) -> None:
        self.reading = reading
        self.replayed = reading is not None and reading.replayed
        self.path = transcript_path or (reading.path if reading is not None else None)
        self.artifact_href = artifact_href
        self.outline = Outline()
        self.grants: Any = None
        self.grants_line: int | None = None
        self.sections: dict[str, tuple[str, int]] = {}
        self.excerpts: OrderedDict[str, tuple[int, str, str]] = OrderedDict()  # id -> (line, role, excerpt)
        self.call_tools: OrderedDict[str, str] = OrderedDict()
        self.pending: dict[str, PendingToolOperation] = {}
        #: The last rendered record's text for search (its content, else its raw line's start).
        self.search_text = ""
        self._message_text = ""
        if reading is not None and reading.replayed:
            self.pending = {op.op_id: op for op in reading.pending() or []}

    # -- pieces

    def _remember(self, env_id: str, line: int, role: str, content: Any) -> None:
        excerpt = (content_text(content) or "").strip().replace("\n", " ")[:EXCERPT_CHARS]
        self.excerpts[env_id] = (line, role, excerpt)
        if len(self.excerpts) > EXCERPT_WINDOW:
            self.excerpts.popitem(last=False)

    def _block(self, value: str, *, md: bool = False, line: int | None = None, cls: str = "") -> str:
        """A text block: Markdown or preformatted, folded when long, cut at MAX_BLOCK."""
        size = len(value.encode("utf-8", "surrogatepass"))
        cut = ""
        if len(value) > MAX_BLOCK:
            value = value[:MAX_BLOCK]
            cut = f'<p class=cut-note>… {size_text(size - len(value.encode("utf-8", "surrogatepass")))} more not shown here{"; the whole text is line " + str(line) + " of the file" if line else ""}.</p>'
        if md and len(value) <= MAX_MARKDOWN:
            body = f'<div class="md {cls}">{markdown(value)}</div>'
        else:
            body = f'<pre class="txt {cls}">{text(value)}</pre>'
        lines = value.count("\n") + 1
        if len(value) > FOLD_CHARS or lines > FOLD_LINES:
            return f'<details class=fold><summary>{lines:,} lines, {size_text(size)}</summary>{body}{cut}</details>'
        return body + cut

    def _raw(self, env: Envelope) -> str:
        # One line, as in the file (the C encoder: an indented dump is several times slower).
        raw = json.dumps({"id": env.id, "payload": env.payload, "ts": env.ts, "type": env.type, "v": env.v}, ensure_ascii=False, separators=(",", ":"))
        self.search_text = raw[:SEARCH_CHARS]
        more = ""
        if len(raw) > MAX_RAW:
            more = f"\n… {len(raw) - MAX_RAW:,} more characters (line {env.line} of the file)"
            raw = raw[:MAX_RAW]
        return f"<details class=raw><summary>raw JSON</summary><pre>{text(raw + more)}</pre></details>"

    def _head(self, env: Envelope, kind: str, chips: list[str]) -> str:
        a = anchor(str(env.id))
        return (
            f'<header><a class=ln id="L{env.line}" href="#{text(a)}" title="permalink to line {env.line}">{env.line}</a>'
            f'<span class=kind>{text(kind)}</span>'
            f'<time datetime="{text(env.ts)}">{text(env.ts)}</time>'
            + "".join(chips)
            + "</header>"
        )

    def _article(self, env: Envelope, classes: str, data: dict[str, str], head: str, body: str) -> str:
        attrs = "".join(f' data-{k}="{text(v)}"' for k, v in data.items())
        return (
            f'<article class="rec {classes}" id="{text(anchor(str(env.id)))}" data-line="{env.line}" '
            f'data-type="{text(env.type)}"{attrs} tabindex="-1">{head}<div class=body>{body}</div>{self._raw(env)}</article>\n'
        )

    # -- the fragment

    def fragment_at(self, index: int) -> str:
        """Envelope ``index`` of the reading, rendered with what replay says of it."""
        if self.reading is None:
            raise ValueError("fragment_at needs a reading")
        return self._render(self.reading.event(index), index)

    def fragment(self, env: Envelope) -> str:
        """``env`` rendered as it comes (nothing replay knows is said)."""
        return self._render(env, None)

    def _render(self, env: Envelope, index: int | None) -> str:
        name = "_" + str(env.type).replace("-", "_")
        handler = getattr(self, name, None) if env.type in _KNOWN else None
        p = env.payload
        self._message_text = ""
        try:
            out: str = handler(env, p if isinstance(p, dict) else {}, index) if handler else self._unknown(env, p, index)
        except (TypeError, ValueError, AttributeError, KeyError):
            out = self._unknown(env, p, index)
        if self._message_text:
            self.search_text = self._message_text
        refusal = self.reading.refusal if self.reading is not None else None
        if index is not None and refusal is not None and refusal.line == env.line:
            out = out.replace('<div class=body>', f'<div class=body><p class="refusal">load refuses this line: {text(refusal.reason)}</p>', 1)
        return out

    def _session_meta(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        rows = "".join(f"<tr><th>{text(k)}</th><td>{text(v if isinstance(v, str) else _json(v))}</td></tr>" for k, v in p.items())
        return self._article(env, "k-meta", {}, self._head(env, "session-meta", []), f"<table class=kv>{rows}</table>")

    def _message(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        role = str(p.get("role", "?"))
        chips: list[str] = []
        data = {"role": role}
        for flag in ("sysprompt", "sticky"):
            if p.get(flag):
                chips.append(_chip(flag, "flag"))
        if p.get("depth") is not None:
            chips.append(_chip(f"depth {p['depth']}", "flag"))
        if p.get("name"):
            chips.append(_chip(f"name {p['name']}", "flag"))
        extras = {k: v for k, v in p.items() if k not in _MESSAGE_KEYS}
        folded_extras: list[str] = []
        for k, v in extras.items():
            shown = v if isinstance(v, str) else _json(v)
            if len(shown) <= 60 and "\n" not in shown and len(chips) < 12:
                chips.append(_chip(f"{k}={shown}", "extra"))
            else:  # reasoning, a framework's own item, ...: folded, its size said
                folded_extras.append(
                    f'<details class="fold extra"><summary>{text(k)}, {size_text(len(shown.encode("utf-8", "surrogatepass")))}</summary>'
                    f'<pre class=txt>{text((shown if isinstance(v, str) else _json(v, indent=1))[:MAX_BLOCK])}</pre></details>'
                )
        classes = f"k-message r-{re.sub(r'[^a-z0-9-]', '', role.lower())[:20] or 'x'}"
        if self.reading is not None and index is not None:
            later = self.reading.later(index)
            if later.elided_line:
                chips.append(f'<a class="chip gone" href="#L{later.elided_line}">elided at line {later.elided_line}: the model sees the stub</a>')
            if later.compacted_line:
                chips.append(f'<a class="chip gone" href="#L{later.compacted_line}">compacted away at line {later.compacted_line}</a>')
                classes += " replaced"
            rewound = later.rewound_line
            if rewound:
                chips.append(f'<a class="chip gone" href="#L{rewound}">dropped by the rewind at line {rewound}: no longer sent</a>')
                classes += " rewound"
        body: list[str] = []
        call_id = p.get("tool_call_id")
        if call_id is not None:
            tool = self.call_tools.get(str(call_id))
            data["call"] = str(call_id)
            if tool:
                data["tool"] = tool
            body.append(f'<p class=answers>result of <a class=callref data-call="{text(call_id)}">{text(tool or "?")} <code>{text(call_id)}</code></a></p>')
        content = p.get("content")
        t = content_text(content)
        if t is None:
            if not p.get("tool_calls"):
                body.append("<p class=none>(no content)</p>")
        else:
            body.append(self._block(t, md=role in ("user", "assistant", "system") and isinstance(content, (str, list)), line=env.line))
        body.extend(folded_extras)
        calls = p.get("tool_calls")
        if isinstance(calls, list) and calls:
            items = []
            tools = []
            for call in calls:
                cid, tname, args = tool_call_parts(call)
                self.call_tools[cid] = tname
                if len(self.call_tools) > EXCERPT_WINDOW:
                    self.call_tools.popitem(last=False)
                tools.append(tname)
                items.append(
                    f'<li class=call data-call="{text(cid)}"><span class=tool>{text(tname)}</span> <code class=cid>{text(cid)}</code>'
                    f'<span class=state></span>{self._block(args, cls="args")}</li>'
                )
            data["tool"] = " ".join(tools)
            body.append(f"<ul class=calls>{''.join(items)}</ul>")
        self._remember(str(env.id), env.line, role, content)
        self._message_text = (t or "")[:SEARCH_CHARS] + " " + str(data.get("tool", ""))
        if role == "user":
            self.outline.add("turn", anchor(str(env.id)), (t or "")[:80], env.line)
        return self._article(env, classes, data, self._head(env, role, chips), "".join(body))

    def _grants(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        snapshot = p.get("grants")
        chips = []
        if self.reading is not None and index is not None and self.reading.grants_index() == index:
            chips.append(_chip("in force at the end (the last snapshot)", "ok"))
        prev = self.grants_line
        self.grants, self.grants_line = snapshot, env.line
        body = self._block(_json(snapshot, indent=1))
        if prev is not None:
            body = f"<p>replaces the snapshot of {_line_link(prev)}</p>" + body
        return self._article(env, "k-grants", {}, self._head(env, "grants", chips), body)

    def _compaction(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        before, after = p.get("tokens-before"), p.get("tokens-after")
        chips = []
        if isinstance(before, int) and isinstance(after, int):
            pct = f" (−{100 - 100 * after // before}%)" if before > 0 and after <= before else ""
            chips.append(_chip(f"tokens {before:,} → {after:,}{pct}", "tokens"))
        if p.get("fallback"):
            chips.append(_chip("fallback: hard-trimmed, no summary model", "bad"))
        has_replacement = isinstance(p.get("replacement"), list)
        if has_replacement:
            chips.append(_chip("with replacement", "flag"))
        through = p.get("replaces-through-id")
        through_line = self.reading.message_line(through) if self.reading is not None and isinstance(through, str) else None
        if through_line is None and isinstance(through, str) and through in self.excerpts:
            through_line = self.excerpts[through][0]
        effect = self.reading.compaction_effect(index) if self.reading is not None and index is not None else None
        replaced_html = []
        if effect is not None:
            lines = effect.replaced
            span = f"lines {lines[0]}–{lines[-1]}" if len(lines) > 1 else (f"line {lines[0]}" if lines else "nothing")
            by_line = {v[0]: v for v in self.excerpts.values()}
            items = []
            for ln in lines[:CUT_LIST]:
                got = by_line.get(ln)
                role, ex = (got[1], got[2]) if got else ("", "")
                items.append(f'<li><a class=lref href="#L{ln}">line {ln}</a> <span class=role>{text(role)}</span> {text(ex)}</li>')
            if len(lines) > CUT_LIST:
                items.append(f"<li>… and {len(lines) - CUT_LIST:,} more</li>")
            replaced_html.append(f"<h4>replaced: {len(lines):,} message{'s' if len(lines) != 1 else ''} ({span})</h4><ol class=replaced-list>{''.join(items)}</ol>")
            if effect.kept:
                kept = ", ".join(_line_link(k) for k in effect.kept[:CUT_LIST])
                replaced_html.append(f"<p class=kept>kept (sticky): {kept}</p>")
        else:
            replaced_html.append(f"<h4>replaced: everything live through {_line_link(through_line) or text(through)}</h4>")
        sent = "<h4>what the model is sent after the cut</h4>"
        if has_replacement:
            reps = []
            for k, m in enumerate(p["replacement"]):
                m = m if isinstance(m, dict) else {}
                role = str(m.get("role", "?"))
                later_bits = ""
                if self.reading is not None and index is not None:
                    lt = self.reading.later(index, k)
                    for what_, at_line in (("elided", lt.elided_line), ("compacted away", lt.compacted_line), ("dropped by the rewind", lt.rewound_line)):
                        if at_line:
                            later_bits += f' <a class="chip gone" href="#L{at_line}">{what_} at line {at_line}</a>'
                reps.append(f'<div class="repl r-{text(role)}" id="{text(anchor(f"{env.id}:{k}"))}"><span class=role>{text(role)}</span> <code>{text(f"{env.id}:{k}")}</code>{later_bits}'
                            f'{self._block(content_text(m.get("content")) or "(no content)")}</div>')
            sent += "<p>the replacement messages, in place of the summary (which is recorded but not sent):</p>" + "".join(reps)
            sent += f'<details class=fold><summary>the recorded summary</summary>{self._block(str(p.get("summary", "")), md=True)}</details>'
        else:
            sent += "<p>the sticky messages kept, then this summary as a user message, then what follows:</p>" + self._block(str(p.get("summary", "")), md=True, cls="summary")
        body = f'<div class=cut-grid><div class=cut-sent>{sent}</div><div class=cut-replaced>{"".join(replaced_html)}</div></div>'
        self.outline.add("compaction", anchor(str(env.id)), f"compaction {before}→{after}", env.line)
        return self._article(env, "k-compaction cut", {}, self._head(env, "compaction — the cut", chips), body)

    def _elision(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        items = p.get("items") if isinstance(p.get("items"), list) else []
        assert isinstance(items, list)
        rows = []
        effect = self.reading.elision_effect(index) if self.replayed and self.reading is not None and index is not None else None
        if effect is not None:
            for (target, before), item in zip(effect, items):
                stub = item.get("stub") if isinstance(item, dict) else None
                line = self.reading.line_number(target) if self.reading is not None else None
                original = content_text(before.get("content")) or ""
                size = content_size(before.get("content"))
                rows.append(
                    f'<li>{_line_link(line)} <span class=role>{text(before.get("role", ""))}</span> '
                    f'<div class=stub>stub the model sees: {self._block(stub if isinstance(stub, str) else _json(stub))}</div>'
                    f'<details class=original><summary>the original, {size_text(size)}</summary>{self._block(original)}</details></li>'
                )
        else:
            for item in items:
                if isinstance(item, dict):
                    iid = item.get("id")
                    got = self.excerpts.get(iid) if isinstance(iid, str) else None
                    stub = item.get("stub")
                    rows.append(f'<li>{_line_link(got[0]) if got else text(iid)} stub: {self._block(stub if isinstance(stub, str) else _json(stub))}</li>')
        return self._article(env, "k-elision", {}, self._head(env, "elision", [_chip(f"{len(items)} item{'s' if len(items) != 1 else ''}", "flag")]), f"<ul class=elided>{''.join(rows)}</ul>")

    def _rewind(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        through = p.get("through-id")
        through_line: int | None
        if through is None:
            what = "<p>empties the live list: every earlier message is dropped from what the model is sent</p>"
            through_line = 0
        else:
            through_line = (self.reading.message_line(through) if self.reading is not None and isinstance(through, str) else None) or (
                self.excerpts[through][0] if isinstance(through, str) and through in self.excerpts else None
            )
            what = f"<p>keeps the live messages through {_line_link(through_line) or text(through)} and drops every live message after it</p>"
        effect = self.reading.rewind_effect(index) if self.reading is not None and index is not None else None
        if effect is not None:
            by_line = {v[0]: v for v in self.excerpts.values()}
            lis = "".join(
                f'<li><a class=lref href="#L{ln}">line {ln}</a> <span class=role>{text(by_line[ln][1] if ln in by_line else "")}</span> {text(by_line[ln][2] if ln in by_line else "")}</li>'
                for ln in effect.dropped[:CUT_LIST]
            )
            more = f"<li>… and {len(effect.dropped) - CUT_LIST:,} more</li>" if len(effect.dropped) > CUT_LIST else ""
            n = len(effect.dropped)
            what += f"<h4>dropped: {n:,} message{'s' if n != 1 else ''}</h4><ol class=replaced-list>{lis}{more}</ol>"
        else:
            dropped = [v for v in self.excerpts.values() if through_line is not None and v[0] > through_line]
            if dropped:
                lis = "".join(f'<li><a class=lref href="#L{ln}">line {ln}</a> <span class=role>{text(role)}</span> {text(ex)}</li>' for ln, role, ex in dropped[:CUT_LIST])
                what += f"<h4>messages written after it (the ones still live are dropped)</h4><ol class=replaced-list>{lis}</ol>"
        self.outline.add("rewind", anchor(str(env.id)), "rewind", env.line)
        return self._article(env, "k-rewind", {}, self._head(env, "rewind", []), what)

    def _tool_dispatched(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        tool = str(p.get("tool"))
        call_id = str(p.get("call-id"))
        chips = []
        classes = "k-dispatch"
        state = ""
        if self.reading is not None and index is not None:
            settled = self.reading.later(index).settled_line
            if settled is not None:
                chips.append(f'<a class="chip ok" href="#L{settled}">settled at line {settled}</a>')
            elif self.replayed:
                op = self.pending.get(str(env.id))
                state = op.state if op is not None else "dispatched"
                chips.append(_chip(f"{state}: never settled", "pending bad", "result-persisted: its result is in the file; dispatched: it may or may not have run"))
                classes += " pending"
        else:
            chips.append(_chip("dispatched", "state"))
        for key in ("round", "idempotency"):
            if p.get(key) is not None:
                chips.append(_chip(f"{key} {p[key]}", "flag"))
        args = p.get("arguments")
        grants = ""
        if self.grants_line is not None:
            granted = self.grants.get(tool) if isinstance(self.grants, dict) else None
            g = f" ({text(tool)}: {text(granted if isinstance(granted, str) else _json(granted))})" if granted is not None else f" ({text(tool)} not in it)"
            grants = f"<p class=grants-in-force>grants in force: {_line_link(self.grants_line, f'snapshot of line {self.grants_line}')}{g}</p>"
        else:
            grants = "<p class=grants-in-force>grants in force: none recorded yet</p>"
        body = (
            f'<p><span class=tool>{text(tool)}</span> <code class=cid>{text(call_id)}</code> op <code>{text(env.id)}</code>'
            f'{" run " + text(p["run-id"]) if p.get("run-id") else ""}</p>'
            + self._block(args if isinstance(args, str) else _json(args), cls="args")
            + grants
        )
        data = {"call": call_id, "tool": tool, "op": str(env.id)}
        if state:
            data["state"] = state
        return self._article(env, classes, data, self._head(env, "tool dispatched", chips), body)

    def _tool_settled(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        outcome = str(p.get("outcome"))
        cls = {"completed": "ok", "failed": "bad", "outcome-unknown": "warn"}.get(outcome, "bad")
        chips = [_chip(outcome, f"state {cls}")]
        duration = p.get("duration")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            chips.append(_chip(_seconds(float(duration)), "dur"))
        op_id = p.get("op-id")
        data = {"op": str(op_id), "state": outcome}
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            data["duration"] = _seconds(float(duration))
        if outcome != "completed":
            data["error"] = "1"
        body = []
        op_line = self.reading.line_of(op_id) if self.reading is not None and isinstance(op_id, str) else None
        body.append(f"<p>settles op <code>{text(op_id)}</code>{' dispatched at ' + _line_link(op_line) if op_line else ''}</p>")
        for key in ("reason", "error"):
            if p.get(key) is not None:
                v = p[key]
                body.append(f"<p class={key}><b>{key}</b> {text(v if isinstance(v, str) else _json(v))}</p>")
        if p.get("result-digest"):
            body.append(f"<p class=digest>result {text(p['result-digest'])}</p>")
        art = p.get("artifact")
        if isinstance(art, dict):
            body.append(self._artifact(art))
        classes = "k-settle" + (" error" if outcome != "completed" else "")
        return self._article(env, classes, data, self._head(env, "tool settled", chips), "".join(body))

    def _artifact(self, art: dict[str, Any]) -> str:
        found = check_artifact(self.path, art) if self.path else ArtifactCheck("missing", None)
        name = str(art.get("file"))
        chip = {"ok": _chip("digest matches", "ok"), "missing": _chip("missing", "bad"),
                "mismatch": _chip("digest does not match", "bad", f"found {found.actual}"), "invalid": _chip("not a plain file name", "bad")}[found.status]
        href = self.artifact_href(name, found.path) if self.artifact_href is not None and found.status in ("ok", "mismatch") else None
        link = f'<a class=artifact href="{text(href)}">{text(name)}</a>' if href else f"<code>{text(name)}</code>"
        size = art.get("bytes")
        bits = [f"{size_text(size)}" if isinstance(size, int) else ""]
        if isinstance(art.get("elided-chars"), int):
            bits.append(f"{art['elided-chars']:,} chars kept out of the conversation")
        return (f'<div class="artifact-box {found.status}">artifact {link} {chip} {text(", ".join(b for b in bits if b))}'
                f'<div class=digest>{text(art.get("digest", ""))}</div></div>')

    def _run_context(self, env: Envelope, p: dict[str, Any], index: int | None) -> str:
        facts = p.get("facts") if isinstance(p.get("facts"), list) else []
        assert isinstance(facts, list)
        rows = "".join(
            f"<tr><th>{text(f[0])}</th><td>{text(f[1] if isinstance(f[1], str) else _json(f[1]))}</td></tr>" if isinstance(f, list) and len(f) == 2 else f"<tr><td colspan=2>{text(_json(f))}</td></tr>"
            for f in facts
        )
        secs = []
        sections = p.get("sections")
        for sec in sections if isinstance(sections, list) else []:
            if not isinstance(sec, dict):
                continue
            name, digest_ = str(sec.get("name")), str(sec.get("digest"))
            prev = self.sections.get(name)
            if "text" in sec:
                status = "new" if prev is None else ("unchanged" if prev[0] == digest_ else "changed")
                since = f" since {_line_link(prev[1])}" if prev is not None else ""
                self.sections[name] = (digest_, env.line)
                secs.append(f'<div class="section {status}"><b>{text(name)}</b> {_chip(status, "flag")}{since} <span class=digest>{text(digest_)}</span>{self._block(str(sec.get("text")), md=True)}</div>')
            else:
                line = self.reading.section_line(digest_) if self.reading is not None else (prev[1] if prev else None)
                secs.append(f'<div class="section unchanged"><b>{text(name)}</b> {_chip("unchanged", "flag")} text at {_line_link(line) or text(sec.get("rendered-in"))}</div>')
                if len(self.sections) < 1000:
                    self.sections.setdefault(name, (digest_, line or env.line))
        body = (f"<table class=kv>{rows}</table>" if rows else "") + "".join(secs)
        return self._article(env, "k-context", {}, self._head(env, "run-context", []), body)

    def _unknown(self, env: Envelope, p: Any, index: int | None) -> str:
        body = "<p class=none>a type this version does not know; kept as it is</p>" + self._block(_json(p, indent=1))
        return self._article(env, "k-unknown", {}, self._head(env, str(env.type), []), body)


_KNOWN = {"session-meta", "message", "grants", "compaction", "elision", "tool-dispatched", "tool-settled", "run-context", "rewind"}
