"""``bench ...``: hands its arguments to ``agent_transcript.bench.main``."""

from __future__ import annotations

import importlib

from .errors import CliError

__all__ = ["cmd_bench"]


def cmd_bench(argv: list[str]) -> int:
    """``bench ...``: hands its arguments to ``agent_transcript.bench.main``.

    Imported when asked for: an install without the bench (or what it needs) says so in one line.
    """
    try:
        bench = importlib.import_module("agent_transcript.bench")
    except ModuleNotFoundError as exc:
        if exc.name in ("agent_transcript.bench",):
            raise CliError("bench is not available: this install has no agent_transcript.bench module") from None
        raise CliError(f"bench needs {exc.name}, which is not installed") from None
    result = bench.main(argv)
    return int(result or 0)
