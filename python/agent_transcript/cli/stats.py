"""``stats PATH``: counts and sizes (``agent_transcript.inspect.Stats``) and tokens
(``agent_transcript.inspect.tokens``), as text or ``--json``."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from ..inspect import compute_stats
from ..inspect.tokens import read_usage, token_totals
from .prices import prices_of, token_rows
from .reading import read
from .style import Style, clip, colour_enabled, escaped, human_bytes, plural, sanitized, seconds, write_json

__all__ = ["cmd_stats"]


def cmd_stats(args: argparse.Namespace) -> int:
    """``stats PATH``: counts and sizes."""
    prices = prices_of(args)
    stats = compute_stats(read(args.path))
    used = token_totals(read_usage(args.path))
    if args.json:
        write_json({**stats.to_json(), "tokens": used.to_json(prices)})
        return 0
    st = sanitized(stats.to_json())
    s = Style(colour_enabled(args.color, sys.stdout))
    out = [s(escaped(stats.path), "bold") + f"  {human_bytes(st['size'])} ({st['size']:,} bytes), {plural(st['lines'], 'line')}, {plural(st['envelopes'], 'envelope')}", ""]
    out.append(s(f"  {'type':<18}{'count':>8}{'bytes':>14}", "dim"))
    for name, t in sorted(st["types"].items(), key=lambda kv: -kv[1]["bytes"]):
        out.append(f"  {name:<18}{t['count']:>8,}{t['bytes']:>14,}")
    total_b = sum(t["bytes"] for t in st["types"].values())
    out.append(s(f"  {'total':<18}{st['envelopes']:>8,}{total_b:>14,}", "bold"))
    out.append("")

    def row(label: str, value: str) -> None:
        out.append(f"  {s(label.ljust(12), 'dim')} {value}")

    unknown = s("unknown: load refuses this file", "yellow")
    m = st["messages"]
    roles = ", ".join(f"{r} {n:,}" for r, n in m["by_role"].items())
    live = f"{m['live']:,} live" if m["live"] is not None else s(f"live unknown: {st['replay_error']}", "red")
    row("messages", f"{m['written']:,} written, {live}" + (f"  ({roles})" if roles else ""))
    if st["compactions"]:
        for i, c in enumerate(st["compactions"]):
            tb, ta = c["tokens_before"], c["tokens_after"]
            tokens = f"tokens {tb:,} -> {ta:,}" if isinstance(tb, int) and isinstance(ta, int) else "tokens ?"
            n = c["messages_replaced"]
            replaced = f", {plural(n, 'message')} replaced" if n is not None else ""
            if c["replacement"] is not None:
                replaced += f" by a replacement of {plural(c['replacement'], 'message')}"
            row("compactions" if i == 0 else "", f"line {c['line']}: {tokens}{replaced}" + (" [fallback]" if c["fallback"] else ""))
    else:
        row("compactions", "none")
    e = st["elisions"]
    if e["count"] and e["elided_bytes"] is not None:
        row("elisions", f"{e['count']:,} ({plural(e['items'], 'message')}: {e['elided_bytes']:,} bytes of content stubbed to {e['stub_bytes']:,})")
    elif e["count"]:
        row("elisions", f"{e['count']:,} ({plural(e['items'], 'message')} stubbed to {e['stub_bytes']:,} bytes)")
    else:
        row("elisions", "none")
    r = st["rewinds"]
    if r["count"] and r["messages_dropped"] is not None:
        row("rewinds", f"{r['count']:,} ({plural(r['messages_dropped'], 'message')} dropped)")
    elif r["count"]:
        row("rewinds", f"{r['count']:,}")
    else:
        row("rewinds", "none")
    if st["tools"]:
        row("tools", s(f"{'name':<16}{'calls':>6}{'ok':>5}{'failed':>7}{'unknown':>8}{'p50':>10}{'p95':>10}", "dim"))
        for name, t in sorted(st["tools"].items(), key=lambda kv: -kv[1]["calls"]):
            p50 = seconds(t["p50_s"]) if t["p50_s"] is not None else "-"
            p95 = seconds(t["p95_s"]) if t["p95_s"] is not None else "-"
            row("", f"{clip(name, 15):<16}{t['calls']:>6,}{t['completed']:>5,}{t['failed']:>7,}{t['outcome_unknown']:>8,}{p50:>10}{p95:>10}")
    else:
        row("tools", "none")
    def listed(label: str, items: list[dict[str, Any]] | None, shown: Callable[[dict[str, Any]], str]) -> None:
        if items is None:
            row(label, unknown)
        for i, item in enumerate(items or []):
            row(label if i == 0 else "", shown(item))
        if items == []:
            row(label, "none")

    listed("pending", st["pending"],
           lambda op: s(f"{op['tool']} {op['call_id']} {op['state']}", "yellow") + f" (line {op['line']}, op {op['op_id']})")
    listed("unanswered", st["unanswered_tool_calls"],
           lambda c: s(f"{c['tool'] or '?'} {c['call_id']}", "yellow") + f" (line {c['line']}, message {c['message_id']})")
    for i, o in enumerate(st["orphan_tool_messages"] or []):
        row("orphans" if i == 0 else "", s(f"tool message for {o['tool_call_id']}", "yellow") + f" (line {o['line']}, message {o['message_id']}) answers no call")
    for i, text in enumerate(token_rows(used, prices)):
        row("tokens" if i == 0 else "", text)
    a = st["artifacts"]
    if a["count"]:
        missing = f", {s(str(a['missing']) + ' missing', 'red')}" if a["missing"] else ""
        row("artifacts", f"{plural(a['files'], 'file')}, {a['bytes']:,} bytes{missing}")
    else:
        row("artifacts", "none")
    for w in st["warnings"]:
        row("warning", s(w, "yellow"))
    sys.stdout.write("\n".join(out) + "\n")
    return 0
