"""Tokens of many runs: each run's, and a folder's total with each model response counted once.

A fork shares its source's ids line for line and a resumed Claude Code session
repeats the responses it resumes: the folder's total counts each response
(``inspect.tokens.Usage.key``) once, in the order the runs are given; each
run's ``new`` is what it adds to the runs before it, so the ``new`` of all
runs add up to the folder's total.

``token_columns`` gives an export's tables (``fleet.export``) the same counts:
each message's and each run's tokens as Arrow columns, looked up in
``TokenTotals`` (nothing of the usage rules is read again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from ..inspect.tokens import TokenCount, TokenTotals, read_usage, token_totals

__all__ = ["RunTokens", "runs_tokens", "TOKEN_COLUMNS", "token_columns"]

#: The columns of tokens an export adds to ``messages`` (the message's) and to
#: ``sessions`` (the run's), each ``int64``, null where no usage is recorded.
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


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


def token_columns(pa: Any, table: Any, name: str, runs: Mapping[str, TokenTotals]) -> Any:
    """``table``, an export's ``sessions`` or ``messages`` table of pyarrow, with
    ``TOKEN_COLUMNS`` added: each row's counts from ``runs`` (a run's totals by its
    ``session`` text), null where none is recorded. A message is found by its
    session and envelope id; a run that records no usage has null totals."""
    import pyarrow.compute as pc

    found: dict[str, TokenCount] = {}
    if name == "sessions":
        found = {session: t.total for session, t in runs.items() if t.responses}
        keys = table.column("session")
    else:
        # Two runs may hold the same message (a fork shares its source's ids): the key is both.
        found = {f"{session}\0{mid}": count for session, t in runs.items() for mid, count in t.by_message.items()}
        keys = pc.binary_join_element_wise(table.column("session"), table.column("id"),
                                            pa.scalar("\0", pa.large_string())) if found else None
    if not found:
        return _added(table, [pa.nulls(table.num_rows, pa.int64())] * len(TOKEN_COLUMNS))
    where = pc.index_in(keys, value_set=pa.array(list(found), pa.large_string()))
    counts = list(found.values())
    return _added(table, [pc.take(pa.array([getattr(c, kind) for c in counts], pa.int64()), where)
                          for kind in ("input", "output", "cache_read", "cache_creation")])


def _added(table: Any, columns: list[Any]) -> Any:
    for column_name, column in zip(TOKEN_COLUMNS, columns):
        table = table.append_column(column_name, column)
    return table
