"""``diff A B``: where two transcripts part, and what each then has (``share.diff_runs``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..share import diff_runs
from .errors import CliError
from .reading import require_file
from .style import Style, colour_enabled, colour_option, escaped, write_json

__all__ = ["cmd_diff", "diff_arguments"]


def diff_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``diff``."""
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("-n", "--limit", type=int, default=10, metavar="N",
                   help="how many envelopes of each to show after the parting (default 10)")
    p.add_argument("--json", action="store_true", help="JSON instead of text")
    colour_option(p)


def _row(s: Style, e: dict[str, Any]) -> str:
    what = e["type"] + (f" {e['role']}" if e.get("role") else "")
    rest = []
    if e.get("tool_calls"):
        rest.append("calls " + ", ".join(e["tool_calls"]))
    if e.get("tool_call_id"):
        rest.append(f"for {e['tool_call_id']}")
    for key in ("tool", "outcome"):
        if e.get(key):
            rest.append(str(e[key]))
    if e.get("text"):
        rest.append(repr(e["text"][:80]))
    line = f"line {e['line']}"
    return f"    {s(line, 'dim')}  {s(what, 'bold')}  {escaped(' '.join(rest))}"


def cmd_diff(args: argparse.Namespace) -> int:
    """Exit 0 when the two are the same envelope for envelope, 1 when they part, 2 on bad input."""
    if args.limit < 0:
        raise CliError(f"--limit {args.limit}: not a count")
    for path in (args.a, args.b):
        require_file(path)
    parting = diff_runs(args.a, args.b, limit=args.limit)
    for side in (parting.a, parting.b):
        if side.error is not None:
            raise CliError(f"{side.path}: not a transcript: {side.error}")
    if args.json:
        write_json(parting.to_json())
        return 0 if parting.identical else 1
    s = Style(colour_enabled(args.color, sys.stdout))
    out = [f"A {escaped(parting.a.path)} ({parting.a.envelopes:,} envelopes)",
           f"B {escaped(parting.b.path)} ({parting.b.envelopes:,} envelopes)"]
    if parting.meta_differs:
        out.append(s("their session-metas differ", "yellow"))
    if parting.identical:
        out.append(s("the same, envelope for envelope", "green"))
    else:
        if parting.last_same is None:
            out.append("they part at their first line")
        else:
            la, lb = parting.last_same
            where = f"line {la}" if la == lb else f"line {la} of A, {lb} of B"
            out.append(f"the same through {where} ({parting.same:,} envelopes); then:")
        for name, side in (("A", parting.a), ("B", parting.b)):
            if not side.rest:
                out.append(f"  {name} has nothing more")
                continue
            out.append(f"  {name} has {side.rest:,} more envelope{'s' if side.rest != 1 else ''}:")
            out.extend(_row(s, e) for e in side.then)
            if side.rest > len(side.then):
                out.append(s(f"    … {side.rest - len(side.then):,} more", "dim"))
    for w in parting.warnings:
        out.append(s(f"warning: {escaped(w)}", "yellow"))
    sys.stdout.write("\n".join(out) + "\n")
    return 0 if parting.identical else 1
