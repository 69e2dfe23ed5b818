"""``ls --tokens``: each run's tokens beside its row, and the folder's total (``fleet.tokens``)."""

from __future__ import annotations

import sys
from typing import Any, Iterable

from ..fleet import TranscriptRow
from ..fleet.tokens import runs_tokens
from ..inspect.tokens import TokenCount, TokenTotals
from .prices import tokens_text
from .style import clip, escaped, human_bytes, json_text

__all__ = ["write_with_tokens"]


def _count(t: TokenTotals | None) -> dict[str, Any] | None:
    return None if t is None else {**t.total.to_json(), "responses": t.responses}


def write_with_tokens(rows: Iterable[TranscriptRow], as_json: bool) -> None:
    """The rows with ``tokens`` (the run's) and ``tokens_new`` (what it adds to the rows before
    it: a fork or a resumed session adds only its own responses); the text ends with the total."""
    listed = list(rows)
    total = TokenCount()
    out = sys.stdout
    if as_json:
        out.write("[")
    else:
        out.write(f"{'STATUS':<19} {'SIZE':>9} {'TOKENS':>40}  PATH\n")
    for i, (row, run) in enumerate(zip(listed, runs_tokens(str(r.path) for r in listed))):
        if run.new is not None:
            total += run.new.total
        if as_json:
            d = {**row.to_json(), "tokens": _count(run.own), "tokens_new": _count(run.new)}
            out.write(("\n  " if i == 0 else ",\n  ") + json_text(d))
        else:
            shown = "-" if run.own is None or not run.own.responses else tokens_text(run.own.total)
            name = str(row.path) if str(row.path).isprintable() else escaped(str(row.path))
            out.write(f"{row.status:<19} {human_bytes(row.size):>9} {clip(shown, 40):>40}  {name}\n")
    if as_json:
        out.write("\n]\n" if listed else "]\n")
    else:
        out.write(f"{'total':<19} {'':>9} {tokens_text(total):>40}  (each model response once)\n")
