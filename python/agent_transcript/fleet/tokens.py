"""Tokens of many runs: each run's, and a folder's total with each model response counted once.

A fork shares its source's ids line for line and a resumed Claude Code session
repeats the responses it resumes: the folder's total counts each response
(``inspect.tokens.Usage.key``) once, in the order the runs are given; each
run's ``new`` is what it adds to the runs before it, so the ``new`` of all
runs add up to the folder's total.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from ..inspect.tokens import TokenTotals, read_usage, token_totals

__all__ = ["RunTokens", "runs_tokens"]


@dataclass(frozen=True)
class RunTokens:
    """One run's tokens (``own``) and what it adds to the runs before it (``new``); None when
    the file cannot be read."""

    path: str
    own: TokenTotals | None
    new: TokenTotals | None


def runs_tokens(paths: Iterable[str]) -> Iterator[RunTokens]:
    """The tokens of each transcript in ``paths``, in order (see the module's docstring)."""
    seen: set[str] = set()
    for path in paths:
        try:
            usages = read_usage(path)
        except OSError:
            yield RunTokens(path, None, None)
            continue
        yield RunTokens(path, token_totals(usages), token_totals(usages, seen))
