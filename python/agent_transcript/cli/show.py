"""``show PATH``: a transcript for a person (a header, then a block per envelope), or ``--json``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..inspect import Reading, check_report, compact
from ..message import Message
from .check import report_line
from .errors import CliError
from .reading import read
from .render import Renderer
from .style import Style, clip, colour_enabled, colour_option, escaped, human_bytes, json_text, local_time, plural, printable, sanitized, seconds, terminal_width

__all__ = ["cmd_show", "show_arguments", "envelope_json", "types_arg"]


def show_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``show``, added to ``p``."""
    p.add_argument("path", metavar="PATH")
    p.add_argument("--replayed", action="store_true", help="the messages the model would be sent next (compaction and elision applied); --type then filters by role")
    p.add_argument("--type", action="append", metavar="T", help="only envelopes of type T (repeat, or comma-separate)")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N envelopes (after --type)")
    p.add_argument("--full", action="store_true", help="whole contents, not excerpts")
    p.add_argument("--extras", action="store_true", help="each message's extras in full (a framework's stored item, say), not only their names")
    p.add_argument("--ids", action="store_true", help="each envelope's id (what fork --through takes)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    colour_option(p)


def envelope_json(env: Any) -> dict[str, Any]:
    return {"line": env.line, "id": env.id, "type": env.type, "ts": env.ts, "v": env.v, "payload": env.payload}


def _select(reading: Reading, types: list[str] | None, tail: int | None) -> list[int]:
    """Indices of the envelopes to print, in file order; found in the index, none decoded."""
    if types:
        chosen: Sequence[int] = sorted(set().union(*(reading.indices_of_type(t) for t in types)))
    else:
        chosen = range(len(reading))
    if tail is not None:
        chosen = chosen[-tail:] if tail > 0 else []
    return list(chosen)


def _stream_json(head: dict[str, Any], key: str, items: Iterable[Any]) -> None:
    """``head`` with ``key`` holding ``items``, written as ``write_json`` writes
    it (two-space indent), one item at a time: memory holds one item, never
    the list. Items are written in batches of about a MiB."""
    text = json_text({**head, key: []}, indent=2)
    opening = text[: text.rindex("[]")] + "["
    out = sys.stdout
    batch: list[str] = []
    size = 0
    first = True
    for item in items:
        if first:
            out.write(opening)
        piece = ("\n" if first else ",\n") + "    " + json_text(item, indent=2).replace("\n", "\n    ")
        first = False
        batch.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            out.write("".join(batch))
            batch, size = [], 0
    if first:
        out.write(text + "\n")  # no items: `[]`, as write_json writes it
        return
    batch.append("\n  ]\n}\n")
    out.write("".join(batch))


def types_arg(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for value in values:
        out.extend(t.strip() for t in value.split(",") if t.strip())
    return out


def _header(reading: Reading, s: Style, width: int) -> list[str]:
    out = [s(escaped(str(Path(reading.path))), "bold")]

    def row(label: str, value: str) -> None:
        out.append(f"  {s(label.ljust(9), 'dim')} {value}")

    meta = sanitized(reading.meta)
    if isinstance(meta, dict) and meta:
        text = "  ".join(f"{k}={v if isinstance(v, str) else compact(v)}" for k, v in meta.items())
        row("meta", clip(text, max(20, width - 12)))
    n = len(reading)
    row("size", f"{human_bytes(reading.size)} ({reading.size:,} bytes), {plural(reading.lines, 'line')}, {plural(n, 'envelope')}")
    written = sum(count for _, count in reading.role_counts())
    live = reading.live_len()
    if live is not None:
        row("messages", f"{written:,} written, {live:,} live (what the model is sent next)")
    else:
        row("messages", f"{written:,} written; " + s(f"replay stops: {printable(str(reading.refusal))}", "red"))
    if n:
        first, last = local_time(reading.event(0).ts), local_time(reading.event(n - 1).ts)
        if first and last:
            span = seconds((last - first).total_seconds())
            row("time", f"{first.strftime('%Y-%m-%d %H:%M:%S %Z')} -> {last.strftime('%Y-%m-%d %H:%M:%S %Z')} ({span})")
    grants, grants_line = reading.grants()
    if grants_line is not None:
        row("grants", clip(printable(compact(grants)), max(20, width - 30)) + s(f"  (line {grants_line})", "dim"))
    else:
        row("grants", s("none", "dim"))
    pending = reading.pending()
    if pending is None:
        row("pending", s("unknown: load refuses this file", "yellow"))
    elif pending:
        row("pending", s(plural(len(pending), "tool operation") + " never settled:", "yellow", "bold"))
        for op in pending:
            out.append(f"            {printable(f'{op.tool} {op.call_id}')} {s(op.state, 'yellow')} (line {reading.line_of(op.op_id)})")
    pairing = reading.pairing()
    if pairing is not None and pairing.unanswered:
        row("unanswered", s(plural(len(pairing.unanswered), "tool call") + " no tool message answers (a chat API refuses it):",
                            "yellow", "bold"))
        for c in pairing.unanswered:
            out.append(f"            {printable(f'{c.tool or chr(63)} {c.call_id}')} (line {c.line})")
    if pairing is not None and pairing.orphans:
        row("orphans", s(plural(len(pairing.orphans), "tool message") + " answering no call:", "yellow", "bold"))
        for o in pairing.orphans:
            out.append(f"            {printable(f'answers {o.tool_call_id}')} (line {o.line})")
    for warning in reading.warnings:
        row("warning", s(printable(warning), "yellow"))
    return out


def cmd_show(args: argparse.Namespace) -> int:
    """``show PATH``: the transcript for a person (or ``--json``)."""
    path: str = args.path
    types = types_arg(args.type)
    if args.tail is not None and args.tail < 0:
        raise CliError("--tail takes a number >= 0")
    reading = read(path)
    if args.replayed:
        return _show_replayed(reading, args, types)
    chosen = _select(reading, types, args.tail)
    if args.json:
        _stream_json(
            {
                "path": str(Path(path)),
                "size": reading.size,
                "meta": reading.meta,
                "grants": reading.grants()[0],
                "warnings": list(reading.warnings),
            },
            "envelopes",
            (envelope_json(reading.event(i)) for i in chosen),
        )
        return 0
    s = Style(colour_enabled(args.color, sys.stdout))
    width = terminal_width()
    out = _header(reading, s, width)
    out.append("")
    if types or args.tail is not None:
        out.append(s(f"showing {plural(len(chosen), 'envelope')} of {len(reading):,}", "dim"))
    sys.stdout.write("\n".join(out) + "\n")
    renderer = Renderer(s, width, full=args.full, reading=reading, extras=args.extras, ids=args.ids)
    for i in chosen:
        block = renderer.block_at(i)
        if block:
            sys.stdout.write("\n".join(block) + "\n")
    return 0


def _show_replayed(reading: Reading, args: argparse.Namespace, types: list[str] | None) -> int:
    """The messages load would hand back (the core's replay), found without loading."""
    if not reading.replayed:
        raise CliError(report_line(check_report(reading)) + "; there is no replay to show")
    torn_line = reading.tail.line if reading.tail.kind == "torn" else None
    live = reading.live()
    chosen = [k for k, m in enumerate(live) if not types or m.role in types]
    if args.tail is not None:
        chosen = chosen[-args.tail :] if args.tail > 0 else []
    if args.json:
        def messages() -> Iterable[dict[str, Any]]:
            for k in chosen:
                env = reading.event(live[k].index)
                message = Message.from_dict(reading.live_message(k))
                mid = env.id if live[k].part is None else f"{env.id}:{live[k].part}"
                yield {"id": mid, "line": env.line, **message.to_dict()}

        # Written a message at a time, as the envelopes are (the same bytes as
        # one json.dumps of the whole document).
        _stream_json(
            {
                "path": str(Path(reading.path)),
                "size": reading.size,
                "meta": reading.meta,
                "grants": reading.grants()[0],
                "torn_tail": None if torn_line is None else {"line": torn_line, "bytes": reading.tail.removed},
            },
            "messages",
            messages(),
        )
        return 0
    s = Style(colour_enabled(args.color, sys.stdout))
    renderer = Renderer(s, terminal_width(), full=args.full, reading=reading, extras=args.extras, ids=args.ids)
    written = sum(count for _, count in reading.role_counts())
    out = [
        s(escaped(str(Path(reading.path))), "bold"),
        s(
            f"  what the model would be sent next: {plural(len(live), 'message')} "
            f"(from {plural(written, 'message line')}), compactions, elisions and rewinds applied",
            "dim",
        ),
    ]
    if torn_line is not None:
        out.append(s(f"  line {torn_line} is a torn tail that load would remove; it is not in this replay", "yellow"))
    out.append("")
    for k in chosen:
        index = live[k].index
        env = reading.event(index)
        note = ""
        if live[k].summary:
            note = f"(the compaction summary, line {env.line})"
        elif live[k].part is not None:
            note = f"(message {live[k].part} of the compaction's replacement, line {env.line})"
        if live[k].elided_line is not None and not live[k].summary:
            note = " ".join(filter(None, [note, f"(content elided at line {live[k].elided_line})"]))
        mid = env.id if live[k].part is None else f"{env.id}:{live[k].part}"
        shown = _Shown(id=printable(mid), type="message", ts=env.ts, line=env.line)
        message = sanitized(Message.from_dict(reading.live_message(k)).to_dict())
        out.extend(renderer.message_lines_for(shown, message, index=index, replayed_note=note, later=False))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


@dataclass(frozen=True)
class _Shown:
    id: str
    type: str
    ts: str
    line: int
