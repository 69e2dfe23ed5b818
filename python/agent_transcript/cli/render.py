"""The terminal renderer: an envelope as a readable block of lines (``show`` and ``follow``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, NamedTuple

from ..envelope import Envelope
from ..inspect import Later, Reading, compact, content_text, tool_call_parts
from ..inspect import excerpt as core_excerpt
from .style import CANONICAL_TS, Style, clip, line_span, local_time, plural, printable, sanitized, seconds

__all__ = ["Renderer"]


class _View:
    """An envelope as it is shown: every string in it printable."""

    __slots__ = ("id", "type", "ts", "v", "payload", "line", "excerpt", "as_is")

    def __init__(self, id: str, type: str, ts: str, v: Any, payload: Any, line: int,
                 excerpt: tuple[list[str], int, int] | None = None, as_is: bool = False) -> None:
        self.id, self.type, self.ts, self.v, self.payload, self.line = id, type, ts, v, payload, line
        #: A message's content excerpt, built by the core in place of its content.
        self.excerpt = excerpt
        #: The payload is the line's own (nothing in it had to be made printable).
        self.as_is = as_is

    @classmethod
    def of(cls, env: Any, *, native: bool = True, as_is: bool = False,
           excerpt: tuple[list[str], int, int] | None = None) -> _View:
        """``env`` made printable; ``as_is``: the core found nothing in its line
        to make printable, so it is shown as it is, not copied."""
        payload = env.payload
        if native and as_is:
            return cls(str(env.id), str(env.type), str(env.ts), env.v, payload, env.line, excerpt, True)
        if native and env.type == "message" and type(payload) is dict and isinstance(payload.get("content"), str):
            # A message's text is made printable where its excerpt is built
            # (Renderer._wrap), not copied here first: only the rest is.
            content = payload["content"]
            payload = sanitized({k: v for k, v in payload.items() if k != "content"})
            payload["content"] = content
        else:
            payload = sanitized(payload)
        return cls(printable(str(env.id)), printable(str(env.type)), printable(str(env.ts)), env.v, payload, env.line,
                   excerpt)


class _Dispatched(NamedTuple):
    """What a settle shows of its dispatch: its tool and call id (made
    printable), its time and its line."""

    tool: Any
    call_id: Any
    ts: Any
    line: int


def _dispatched(env: Envelope, *, as_is: bool) -> _Dispatched:
    """``env`` (a tool-dispatched envelope) as its settle shows it."""
    p: Any = env.payload if isinstance(env.payload, dict) else {}
    if p and not as_is:
        p = sanitized(p)
    return _Dispatched(p.get("tool", "?"), p.get("call-id"), env.ts, env.line)


def _calls(payload: dict[str, Any]) -> list[Any]:
    calls = payload.get("tool_calls")
    return calls if isinstance(calls, list) else []


class Renderer:
    """Turns envelopes into readable blocks.

    Over a ``agent_transcript.inspect.Reading`` (``show``),
    ``block_at`` renders envelope ``i`` and finds what its block needs in
    the reading — a settle's dispatch, the tool a call went to, what replay
    did at a compaction or an elision, what later lines did to it — decoding
    only those envelopes. Streaming (``follow``), ``block`` renders each
    envelope as it comes and remembers the little it needs to join later ones
    up (dispatches, tool calls, message and section lines); what only replay
    knows is not shown there.
    """

    INDENT = "      "
    #: Envelopes read as ``show`` reads them (``Reading.shown``: a message's
    #: excerpt built as its line is decoded); False decodes each envelope
    #: whole (what the tests hold the first to).
    native = True
    #: How far back (in envelopes) to look for the message that made a tool call.
    CALL_LOOKBACK = 200

    def __init__(
        self,
        style: Style,
        width: int,
        *,
        full: bool = False,
        reading: Reading | None = None,
        extras: bool = False,
        ids: bool = False,
    ) -> None:
        self.s = style
        self.width = width
        self.full = full
        #: Show a message's extras (a framework's stored item can be a
        #: kilobyte of JSON), else only their names; show each envelope's id.
        self.extras = extras
        self.ids = ids
        self._unpaired_found: tuple[dict[str, set[int]], set[str]] | None = None
        self.reading = reading
        self.replayed = reading is not None and reading.replayed
        self.dispatches: dict[str, Envelope] = {}
        self.message_lines: dict[str, int] = {}
        self.call_tools: dict[str, str] = {}
        self.section_lines: dict[str, int] = {}
        self.last_day: str | None = None
        self.handlers: dict[str, Callable[[_View, Envelope, int | None], list[str]]] = {}
        #: The columns an excerpt's line has.
        self.avail = max(20, width - len(self.INDENT))
        #: The dispatches shown lately, for their settles (_dispatch_of).
        self.recent_dispatches: dict[str, tuple[int, _Dispatched]] = {}
        #: The calls (id, tool) of the assistant messages shown lately (_recent).
        self.recent_calls: dict[int, list[tuple[str, str]]] = {}
        #: A UTC hour's local offset and zone, a UTC minute's (day, zone,
        #: hour:minute) in local time (_clock).
        self.hours: dict[str, tuple[timedelta, str]] = {}
        self.minutes: dict[str, tuple[str, str, str]] = {}

    # -- text helpers

    def _wrap(self, text: str, *, max_lines: int = 8) -> list[str]:
        """The excerpt of ``text`` (made printable), wrapped to the width: at most
        ``max_lines`` lines and a line saying how many more (every line with
        ``full``). The core builds it (``_core.excerpt``)."""
        return self._excerpt_lines(core_excerpt(text, self.INDENT, self.avail, None if self.full else max_lines),
                                   max_lines)

    def _excerpt_lines(self, found: tuple[list[str], int, int], max_lines: int) -> list[str]:
        """The core's excerpt ``(lines, total, chars)`` as ``_wrap`` shows it."""
        lines, total, chars = found
        if not self.full and total > max_lines:
            more = f"… {plural(total - max_lines, 'more line')} ({chars:,} chars; --full shows all)"
            lines.append(self.INDENT + self.s(more, "dim"))
        return lines

    def _field(self, label: str, value: str) -> str:
        return f"{self.INDENT}{self.s(label, 'dim')} {value}"

    def _one_line(self, value: str) -> str:
        if self.full:
            return value
        return clip(value, max(20, self.width - len(self.INDENT) - 12))

    def _head(self, env: Any, kind_style: tuple[str, ...], detail: str) -> list[str]:
        out: list[str] = []
        shown = self._clock(env.ts)
        if shown is not None:
            day, zone, clock = shown
            if day != self.last_day:
                self.last_day = day
                out.append(self.s(f"── {day} ({zone}) ──", "dim"))
        else:
            clock = clip(str(env.ts), 12).ljust(12)
        number = self.s(f"{env.line:>5}", "dim")
        kind = self.s(env.type, *kind_style)
        if self.ids:
            kind += "  " + self.s(printable(str(env.id)), "dim")
        out.append(f"{number} {self.s(clock, 'dim')}  {kind}{'  ' + detail if detail else ''}")
        return out

    def _clock(self, ts: Any) -> tuple[str, str, str] | None:
        """``ts`` in local time as a block's head shows it: its day, its zone's
        name and its clock (to the millisecond); None where it is not a time.

        Asking the zone rules (``astimezone``) costs more than the rest of a
        head, so a UTC hour whose every time has the same local zone, a whole
        number of minutes off UTC, is asked once, and each of its minutes once
        more cheaply: a time shows as its own seconds after its minute's.
        """
        canonical = isinstance(ts, str) and CANONICAL_TS(ts)
        if canonical:
            minute = self.minutes.get(ts[:16])
            if minute is not None:
                day, zone, hour_minute = minute
                return day, zone, f"{hour_minute}:{ts[17:19]}.{ts[20:23]}"
            hour = self.hours.get(ts[:13])
            if hour is not None:
                offset, zone = hour
                try:
                    local = datetime.fromisoformat(ts[:-1]) + offset
                except (ValueError, OverflowError):
                    return None  # as local_time
                return self._minute_of(ts, local, zone)
        when = local_time(ts)
        if when is None:
            return None
        zone = when.strftime("%Z")
        if canonical and when.year >= 1000:
            self._keep_hour(ts[:13], when, zone)
            return self._minute_of(ts, when.replace(tzinfo=None), zone)
        day = when.strftime("%Y-%m-%d")  # %Y pads no year below 1000 here
        return day, zone, f"{when.hour:02d}:{when.minute:02d}:{when.second:02d}.{when.microsecond // 1000:03d}"

    def _minute_of(self, ts: str, when: datetime, zone: str) -> tuple[str, str, str]:
        """The head's (day, zone, clock) of ``ts`` at local time ``when`` (of a
        year of four digits); its minute kept when its hour is."""
        day = f"{when.year}-{when.month:02d}-{when.day:02d}"
        hour_minute = f"{when.hour:02d}:{when.minute:02d}"
        if ts[:13] in self.hours:
            if len(self.minutes) >= 4096:
                self.minutes.clear()
            self.minutes[ts[:16]] = (day, zone, hour_minute)
        return day, zone, f"{hour_minute}:{when.second:02d}.{when.microsecond // 1000:03d}"

    def _keep_hour(self, hour: str, when: datetime, zone: str) -> None:
        """Keep the local zone of UTC ``hour`` if all of it has that of ``when``."""
        offset = when.utcoffset()
        if offset is None or offset.total_seconds() % 60 != 0:
            return
        for end in (f"{hour}:00:00.000000Z", f"{hour}:59:59.999999Z"):
            t = local_time(end)
            if t is None or t.utcoffset() != offset or t.strftime("%Z") != zone:
                return
        if len(self.hours) >= 4096:
            self.hours.clear()
        self.hours[hour] = (offset, zone)

    # -- lookups: what a block needs from elsewhere in the file

    def _dispatch_of(self, op_id: Any) -> _Dispatched | None:
        """What a settle shows of the tool-dispatched envelope of operation
        ``op_id``; None when there is none."""
        if not isinstance(op_id, str):
            return None
        if op_id in self.dispatches:
            return _dispatched(self.dispatches[op_id], as_is=False)
        r = self.reading
        at = None if r is None else r.index_of(op_id)
        if r is None or at is None or r.type_name(at) != "tool-dispatched":
            return None
        kept = self.recent_dispatches.pop(op_id, None)
        if kept is not None and kept[0] == at:
            return kept[1]
        if self.native:
            # Not kept: a reading's operation is settled once, and a whole
            # file's dispatches would fill memory (follow keeps them: _remember).
            env, as_is, _ = r.shown(at, self.INDENT, self.avail, None)
            return _dispatched(env, as_is=as_is)
        env = r.event(at)
        self.dispatches[op_id] = env
        return _dispatched(env, as_is=False)

    def _tool_of_call(self, call_id: str, index: int | None) -> str | None:
        """The tool the assistant message before envelope ``index`` called as ``call_id``."""
        if call_id in self.call_tools:
            return self.call_tools[call_id]
        r = self.reading
        if r is None or index is None:
            return None
        for j in range(index - 1, max(-1, index - 1 - self.CALL_LOOKBACK), -1):
            if r.role(j) != "assistant":
                continue
            calls = self.recent_calls.get(j)
            if calls is None:
                p = r.payload(j)
                calls = [tool_call_parts(call)[:2] for call in _calls(p if isinstance(p, dict) else {})]
            for cid, name in calls:
                self.call_tools.setdefault(cid, name)
            if call_id in self.call_tools:
                return self.call_tools[call_id]
        return None

    def _line_of(self, envelope_id: Any) -> int | None:
        """The line of the message ``envelope_id`` (what a compaction or a rewind
        names): its envelope's, or its compaction's for a replacement message."""
        if not isinstance(envelope_id, str):
            return None
        if envelope_id in self.message_lines:
            return self.message_lines[envelope_id]
        return None if self.reading is None else self.reading.message_line(envelope_id)

    def _section_line(self, digest: Any) -> int | None:
        """The line carrying the text of the run-context section ``digest``."""
        if not isinstance(digest, str):
            return None
        if digest in self.section_lines:
            return self.section_lines[digest]
        return None if self.reading is None else self.reading.section_line(digest)

    def _later(self, index: int | None, part: int | None = None) -> Later:
        """What replay did later to envelope ``index`` (or to that message of its
        replacement): the settle of a dispatch, the first elision of a message,
        the compaction that replaced it, the rewind that dropped it."""
        return Later() if self.reading is None else self.reading.later(index, part)

    def _pending_state(self, op_id: str) -> str | None:
        """The state load reports for pending operation ``op_id``, or None."""
        ops = self.reading.pending() if self.reading is not None else None
        for op in ops or ():
            if op.op_id == op_id:
                return op.state
        return None

    # -- the block

    def block_at(self, index: int) -> list[str]:
        """The lines that show envelope ``index`` of the reading."""
        if self.reading is None:
            raise ValueError("block_at needs a reading")
        if not self.native:
            return self._render(self.reading.event(index), index)
        env, as_is, excerpt = self.reading.shown(index, self.INDENT, self.avail, None if self.full else 8)
        return self._render(env, index, as_is, excerpt)

    def block(self, env: Envelope, *, show: bool = True) -> list[str]:
        """The lines that show ``env``, streamed (none when ``show`` is False).

        What later blocks need of it is remembered either way.
        """
        self._remember(env)
        return self._render(env, None) if show else []

    def _remember(self, env: Envelope) -> None:
        p = env.payload if isinstance(env.payload, dict) else {}
        if env.type == "message":
            self.message_lines[env.id] = env.line
            for call in _calls(p):
                call_id, name, _ = tool_call_parts(call)
                self.call_tools[call_id] = name
        elif env.type == "compaction":
            replacement = p.get("replacement")
            for k in range(len(replacement) if isinstance(replacement, list) else 0):
                self.message_lines[f"{env.id}:{k}"] = env.line
        elif env.type == "tool-dispatched":
            self.dispatches[env.id] = env
        elif env.type == "run-context":
            for sec in p["sections"] if isinstance(p.get("sections"), list) else []:
                if isinstance(sec, dict) and "text" in sec and isinstance(sec.get("digest"), str):
                    self.section_lines.setdefault(sec["digest"], env.line)

    def _render(self, env: Envelope, index: int | None, as_is: bool = False,
                excerpt: tuple[list[str], int, int] | None = None) -> list[str]:
        handler = self.handlers.get(env.type)
        if handler is None:
            handler = getattr(self, "_" + env.type.replace("-", "_")) if env.type in _KNOWN else self._unknown
            self.handlers[env.type] = handler
        lines = handler(_View.of(env, native=self.native, as_is=as_is, excerpt=excerpt), env, index)
        refusal = self.reading.refusal if self.reading is not None else None
        if index is not None and refusal is not None and refusal.line == env.line:
            lines.append(self._field("!!", self.s(f"load refuses this: {printable(refusal.reason)}", "red", "bold")))
        return lines

    def _session_meta(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        out = self._head(v, ("bold",), "")
        payload = v.payload
        if isinstance(payload, dict):
            for key, value in payload.items():
                text = value if isinstance(value, str) else compact(value)
                out.append(self._field(f"{key}:", self._one_line(text)))
        else:
            out.append(self._field("meta:", self._one_line(compact(payload))))
        return out

    def _message(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        return self.message_lines_for(v, v.payload if isinstance(v.payload, dict) else {}, index=index,
                                      excerpt=v.excerpt, as_is=v.as_is)

    def _recent_dispatch(self, op_id: str, index: int, shown: _Dispatched) -> None:
        """Keep what the settle of dispatch ``index`` will show of it (a settle
        comes soon after its dispatch: the last 4,096 are kept)."""
        kept = self.recent_dispatches
        kept[op_id] = (index, shown)
        if len(kept) > 4096:
            del kept[next(iter(kept))]

    def _recent(self, index: int, calls: list[tuple[str, str]]) -> None:
        """Keep the calls (id, tool) of message ``index``, shown as it is in the
        file, for the tool messages after it (``_tool_of_call``), as long as
        they may look back to it."""
        kept = self.recent_calls
        kept[index] = calls
        while (oldest := next(iter(kept))) < index - self.CALL_LOOKBACK:
            del kept[oldest]

    def message_lines_for(
        self,
        env: Any,
        p: dict[str, Any],
        *,
        index: int | None = None,
        replayed_note: str = "",
        later: bool = True,
        excerpt: tuple[list[str], int, int] | None = None,
        as_is: bool = False,
    ) -> list[str]:
        """The block of one message payload ``p`` (also used for ``--replayed``).

        ``index`` is its envelope index in the reading (to find the tool a
        call went to); ``later`` adds what later lines did to it; ``excerpt`` is
        the core's excerpt of its content, which ``p`` then lacks; ``as_is``:
        ``p`` is envelope ``index``'s payload as it is in the file, so its calls
        are kept for the tool messages after it.
        """
        role = str(p.get("role", "?"))
        bits = [self.s(role, *_ROLE_STYLE.get(role, ("bold",)))]
        if p.get("name"):
            bits.append(f"name={p['name']}")
        if p.get("tool_call_id"):
            tool = self._tool_of_call(str(p["tool_call_id"]), index)
            bits.append(f"answers {p['tool_call_id']}" + (f" ({printable(tool)})" if tool else ""))
        if role == "tool" and env.id in self._unpaired()[1]:
            bits.append(self.s("(answers no call)", "yellow"))
        flags = [f for f in ("sysprompt", "sticky") if p.get(f)]
        if p.get("depth") is not None:
            flags.append(f"depth={p['depth']}")
        if flags:
            bits.append(self.s("[" + ", ".join(flags) + "]", "magenta"))
        bits.extend(self._extras(p))
        if replayed_note:
            bits.append(self.s(replayed_note, "yellow"))
        if later:
            bits.extend(self._fate(self._later(index)))
        out = self._head(env, ("cyan",), "  ".join(bits))
        text = None if excerpt is not None else content_text(p.get("content"))
        if excerpt is not None:  # the core's, of the content it kept out of p
            out.extend(self._excerpt_lines(excerpt, 8))
        elif text is None:
            if not p.get("tool_calls"):
                out.append(self.INDENT + self.s("(no content)", "dim"))
        else:
            out.extend(self._wrap(text))
        calls = [tool_call_parts(call) for call in _calls(p)]
        unanswered = self._unpaired()[0].get(env.id, ()) if calls else ()
        for k, (call_id, name, args) in enumerate(calls):
            mark = "  " + self.s("unanswered", "yellow", "bold") if k in unanswered else ""
            out.append(f"{self.INDENT}{self.s('->', 'yellow')} {self.s(name, 'bold')} {self._one_line(args)}  {self.s(call_id, 'dim')}{mark}")
        if as_is and calls and index is not None:
            self._recent(index, [(call_id, name) for call_id, name, _ in calls])
        return out

    def _extras(self, p: dict[str, Any]) -> list[str]:
        """A message's extras as head bits: each ``key=value`` with ``extras``,
        else their names only."""
        keys = [k for k in p if k not in _MESSAGE_KEYS]
        if not keys:
            return []
        if not self.extras:
            return [self.s(clip(f"+{', '.join(keys)}", 40), "dim")]
        return [self.s(f"{k}={p[k] if isinstance(p[k], str) else compact(p[k])}", "dim") for k in keys]

    def _unpaired(self) -> tuple[dict[str, set[int]], set[str]]:
        """The unanswered calls (message id -> their places in its
        ``tool_calls``) and the ids of the tool messages that answer no call,
        of the reading's live conversation (none without a replay)."""
        found = self._unpaired_found
        if found is None:
            pairing = None if self.reading is None else self.reading.pairing()
            calls: dict[str, set[int]] = {}
            for c in pairing.unanswered if pairing is not None else ():
                calls.setdefault(c.message_id, set()).add(c.index)
            found = (calls, {o.message_id for o in pairing.orphans} if pairing is not None else set())
            self._unpaired_found = found
        return found

    def _fate(self, done: Later) -> list[str]:
        """What later lines did to a message, as notes."""
        notes = []
        if done.elided_line:
            notes.append(self.s(f"(elided at line {done.elided_line})", "yellow"))
        if done.compacted_line:
            notes.append(self.s(f"(compacted away at line {done.compacted_line})", "yellow"))
        if done.rewound_line:
            notes.append(self.s(f"(rewound at line {done.rewound_line})", "yellow"))
        return notes

    def _grants(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        out = self._head(v, ("green",), "snapshot (the last one wins)")
        snapshot = v.payload.get("grants") if isinstance(v.payload, dict) else v.payload
        out.extend(self._wrap(compact(snapshot), max_lines=4))
        return out

    def _compaction(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        before, after = p.get("tokens-before"), p.get("tokens-after")
        detail = f"tokens {before:,} -> {after:,}" if isinstance(before, int) and isinstance(after, int) else ""
        if p.get("fallback"):
            detail += "  " + self.s("[fallback: hard-trimmed, no summary model]", "red")
        out = self._head(v, ("magenta", "bold"), detail)
        through = raw.payload.get("replaces-through-id") if isinstance(raw.payload, dict) else None
        through_line = self._line_of(through)
        effect = None if self.reading is None or index is None else self.reading.compaction_effect(index)
        if effect is not None:
            what = plural(len(effect.replaced), "message")
            if effect.replaced:
                what += f" ({line_span(sorted(set(effect.replaced)))})"
            out.append(self._field("replaced", what + (f", through line {through_line}" if through_line else "")))
            if effect.kept:
                out.append(self._field("kept", f"{plural(len(effect.kept), 'sticky message')} ({line_span(sorted(set(effect.kept)))})"))
        else:
            where = f"line {through_line}" if through_line else str(p.get("replaces-through-id"))
            out.append(self._field("replaced", f"through {where}"))
        replacement = p.get("replacement")
        if isinstance(replacement, list):
            out.append(self._field("put in", f"{plural(len(replacement), 'message')} in place of the summary"
                                   + (":" if replacement else "")))
            for k, m in enumerate(replacement):
                out.extend(self._replacement_message(v, m, k, index))
            out.append(self._field("summary", self.s("(recorded, not replayed)", "dim")))
        else:
            out.append(self._field("summary", "").rstrip())
        out.extend(self._wrap(str(p.get("summary", "")), max_lines=4))
        return out

    def _replacement_message(self, v: _View, m: Any, k: int, index: int | None) -> list[str]:
        """One message of a compaction's replacement: ``:k``, its role, flags and
        extras, its content on one line, and what later lines did to it."""
        p = m if isinstance(m, dict) else {}
        role = str(p.get("role", "?"))
        bits = [self.s(f":{k}", "dim"), self.s(role, *_ROLE_STYLE.get(role, ("bold",)))]
        flags = [f for f in ("sysprompt", "sticky") if p.get(f)]
        if p.get("depth") is not None:
            flags.append(f"depth={p['depth']}")
        if flags:
            bits.append(self.s("[" + ", ".join(flags) + "]", "magenta"))
        bits.extend(self._extras(p))
        if index is not None:
            bits.extend(self._fate(self._later(index, k)))
        text = content_text(p.get("content"))
        body = [self.INDENT + "  " + self._one_line(" ".join(text.split()))] if text else []
        return [self.INDENT + "  ".join(bits)] + body

    def _rewind(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        through = raw.payload.get("through-id") if isinstance(raw.payload, dict) else None
        if through is None:
            detail = "to the start: every live message dropped"
        else:
            line = self._line_of(through)
            detail = f"through line {line}" if line else f"through {printable(str(through))}"
        out = self._head(v, ("magenta", "bold"), detail)
        effect = None if self.reading is None or index is None else self.reading.rewind_effect(index)
        if effect is not None:
            what = plural(len(effect.dropped), "message")
            if effect.dropped:
                what += f" ({line_span(sorted(set(effect.dropped)))})"
            out.append(self._field("dropped", what + "; the lines stay in the file"))
        return out

    def _elision(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        items = v.payload.get("items") if isinstance(v.payload, dict) else None
        items = items if isinstance(items, list) else []
        out = self._head(v, ("magenta",), plural(len(items), "item"))
        if self.reading is not None and self.replayed and index is not None:
            # What each message was just before, without decoding its content.
            rows = self.reading.elision_rows(index, decoded=not self.native)
            for (target, role, call, size), item in zip(rows, items):
                who = printable(str(role)) + (f" {printable(str(call))}" if call else "")
                stub = item.get("stub") if isinstance(item, dict) else None
                out.append(
                    self._field(
                        f"line {self.reading.line_number(target)}",
                        f"{who}: {size:,} bytes of content -> stub {self._one_line(compact(stub))}",
                    )
                )
        else:
            for item in items:
                if isinstance(item, dict):
                    out.append(self._field(str(item.get("id")), f"-> stub {self._one_line(compact(item.get('stub')))}"))
        return out

    def _tool_dispatched(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        bits = [self.s(str(p.get("tool")), "bold"), self.s(str(p.get("call-id")), "dim")]
        if p.get("round") is not None:
            bits.append(f"round {p['round']}")
        if p.get("idempotency") is not None:
            bits.append(f"idempotency={p['idempotency']}")
        out = self._head(v, ("yellow",), "  ".join(bits))
        args = p.get("arguments")
        out.append(self._field("arguments", self._one_line(args if isinstance(args, str) else compact(args))))
        out.append(self._field("op", self.s(v.id, "dim") + (f"  run {p['run-id']}" if p.get("run-id") else "")))
        if self.native and index is not None and self.reading is not None:
            self._recent_dispatch(raw.id, index, _Dispatched(p.get("tool", "?"), p.get("call-id"), raw.ts, raw.line))
        settled_line = self._later(index).settled_line
        if settled_line is not None:
            out.append(self._field("settled", f"at line {settled_line}"))
        elif self.replayed and index is not None:
            # Load's own answer: pending, and whether its result is in the file.
            if self._pending_state(raw.id) == "result-persisted":
                what = "never settled, but its result is in the file (result-persisted: it completed)"
            else:
                what = "never settled, and no result: it may or may not have run (dispatched)"
            out.append(self._field("!!", self.s(what, "red", "bold")))
        return out

    def _tool_settled(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        op_id = raw.payload.get("op-id") if isinstance(raw.payload, dict) else None
        op = self._dispatch_of(op_id)
        outcome = str(p.get("outcome"))
        style = {"completed": ("green",), "failed": ("red", "bold"), "outcome-unknown": ("yellow", "bold")}.get(outcome, ("red",))
        bits = [self.s(str("?" if op is None else op.tool), "bold"), self.s(outcome, *style)]
        duration = p.get("duration")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            bits.append(seconds(float(duration)))
        out = self._head(v, ("yellow",), "  ".join(bits))
        if op is not None:
            lag = ""
            took = _between(op.ts, v.ts)
            if took is not None:
                lag = f", {seconds(took)} later"
            out.append(self._field("dispatched", f"at line {op.line} ({op.call_id}){lag}"))
        elif self.reading is None or self.replayed:
            out.append(self._field("!!", self.s(f"settles {p.get('op-id')!r}, which this file never dispatched", "red")))
        for key in ("reason", "error"):
            if p.get(key) is not None:
                value = p[key]
                out.append(self._field(key, self._one_line(value if isinstance(value, str) else compact(value))))
        art = p.get("artifact")
        if isinstance(art, dict):
            size = art.get("bytes")
            elided = art.get("elided-chars")
            desc = f"{art.get('file')}"
            if isinstance(size, int):
                desc += f"  {size:,} bytes"
            if isinstance(elided, int):
                desc += f", {elided:,} chars kept out of the conversation"
            out.append(self._field("artifact", desc))
        if p.get("result-digest"):
            out.append(self._field("result", self.s(str(p["result-digest"]), "dim")))
        return out

    def _run_context(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        p = v.payload if isinstance(v.payload, dict) else {}
        sections: list[Any] = p["sections"] if isinstance(p.get("sections"), list) else []
        out = self._head(v, ("blue",), "")
        facts: list[Any] = p["facts"] if isinstance(p.get("facts"), list) else []
        if facts:
            shown = []
            for fact in facts:
                if isinstance(fact, list) and len(fact) == 2:
                    value = fact[1] if isinstance(fact[1], str) else compact(fact[1])
                    shown.append(f"{fact[0]}={value}")
                else:
                    shown.append(compact(fact))
            out.append(self._field("facts", self._one_line("  ".join(shown))))
        raw_sections = raw.payload.get("sections") if isinstance(raw.payload, dict) else None
        for k, sec in enumerate(sections):
            if not isinstance(sec, dict):
                continue
            name = sec.get("name")
            if "text" in sec:
                text = str(sec.get("text"))
                out.append(self._field("section", f"{self.s(str(name), 'bold')}: {len(text):,} chars"))
                if self.full:
                    out.extend(self._wrap(text))
            else:
                raw_sec = raw_sections[k] if isinstance(raw_sections, list) and k < len(raw_sections) else {}
                line = self._section_line(raw_sec.get("digest") if isinstance(raw_sec, dict) else None)
                where = f"line {line}" if line else f"envelope {sec.get('rendered-in')}"
                out.append(self._field("section", f"{self.s(str(name), 'bold')}: unchanged, text at {where}"))
        return out

    def _unknown(self, v: _View, raw: Envelope, index: int | None) -> list[str]:
        out = self._head(v, ("red",), self.s("(a type this version does not know; kept as it is)", "dim"))
        out.extend(self._wrap(compact(v.payload), max_lines=3))
        return out


def _between(ts0: Any, ts1: Any) -> float | None:
    """The seconds from ``ts0`` to ``ts1``; None unless both are local times."""
    if (isinstance(ts0, str) and isinstance(ts1, str) and CANONICAL_TS(ts0) and CANONICAL_TS(ts1)
            and "1000" < ts0[:4] < "9999" and "1000" < ts1[:4] < "9999"):
        # Years no zone's offset takes out of range: their difference is UTC's.
        try:
            return (datetime.fromisoformat(ts1[:-1]) - datetime.fromisoformat(ts0[:-1])).total_seconds()
        except ValueError:
            return None
    t0, t1 = local_time(ts0), local_time(ts1)
    return None if t0 is None or t1 is None else (t1 - t0).total_seconds()


_KNOWN = {"session-meta", "message", "grants", "compaction", "elision", "tool-dispatched", "tool-settled", "run-context",
          "rewind"}
_MESSAGE_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth"}
_ROLE_STYLE = {
    "system": ("magenta", "bold"),
    "user": ("green", "bold"),
    "assistant": ("cyan", "bold"),
    "tool": ("yellow", "bold"),
}
