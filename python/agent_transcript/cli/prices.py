"""``--prices FILE``: what tokens cost, from a table the user gives (``inspect.tokens.PriceTable``)."""

from __future__ import annotations

import argparse

from ..inspect.tokens import PriceTable, PriceTableError, TokenCount, TokenTotals
from .errors import CliError
from .reading import describe_os_error

__all__ = ["prices_option", "prices_of", "token_rows", "tokens_text"]


def prices_option(p: argparse.ArgumentParser) -> None:
    """Add ``--prices FILE`` to a command's parser."""
    p.add_argument("--prices", metavar="FILE",
                   help='a JSON price table, per million tokens by model: {"MODEL": {"input": 3, "output": 15, '
                        '"cache_read": 0.3, "cache_creation": 3.75}} (a name ending in * is a prefix); none is shipped')


def prices_of(args: argparse.Namespace) -> PriceTable | None:
    """The table ``--prices`` names, or None.

    Raises:
        CliError: the file cannot be read or is not a price table.
    """
    path = getattr(args, "prices", None)
    if path is None:
        return None
    try:
        return PriceTable.load(path)
    except PriceTableError as exc:
        raise CliError(f"--prices {exc}") from None
    except OSError as exc:
        raise CliError("--prices " + describe_os_error(exc, path)) from None


def tokens_text(count: TokenCount) -> str:
    """``"1,200 in, 300 out, 5,000 cached"``: cached is read from and written to the cache."""
    cached = count.cache_read + count.cache_creation
    return f"{count.input:,} in, {count.output:,} out" + (f", {cached:,} cached" if cached else "")


def token_rows(totals: TokenTotals, prices: PriceTable | None) -> list[str]:
    """The lines ``stats`` prints of a run's tokens: the run's, then one per model (none when
    the transcript records no usage)."""
    if not totals.responses:
        return []
    rows = [f"{tokens_text(totals.total)} ({totals.responses:,} response{'s' if totals.responses != 1 else ''})"]
    cost = prices.cost(totals) if prices is not None else None
    for model, count in sorted(totals.by_model.items()):
        priced = ""
        if prices is not None:
            row = prices.price_of(model)
            if row is None:
                priced = "  (no price)"
            else:
                one = TokenTotals(count, 1, {model: count})
                priced = f"  ${prices.cost(one)['total']:,.4f}"
        rows.append(f"  {model}: {tokens_text(count)}{priced}")
    if cost is not None:
        rows.append(f"cost ${cost['total']:,.4f}" + (" (some models unpriced)" if cost["unpriced_models"] else ""))
    return rows
