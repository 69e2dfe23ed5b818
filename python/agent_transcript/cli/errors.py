"""The command line's one error: bad input or a refused operation."""

from __future__ import annotations

__all__ = ["PROG", "CliError"]

PROG = "agent-transcript"


class CliError(Exception):
    """Bad input or a refused operation: one line on stderr, and an exit status (2)."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status
