"""The command line, ``agent-transcript`` (and ``python -m agent_transcript``).

Lives here: the parser and the exit status of every outcome (``.app``),
one module per command (``.show``, ``.check``, ``.repair``,
``.stats``, ``.follow``, ``.demo``, ``.bench``, ``.html``, ``.serve``), the terminal
renderer (``.render``), its style and text helpers (``.style``), and
how a command opens the file it is given (``.reading``).

May import: the standard library, the public API of ``agent_transcript``
(its ``__all__`` and public modules), the read model ``agent_transcript.inspect``,
and the public names of the other front ends it runs (``demo``, ``bench``).
Never a private name of another package (``_core``, ``_storage``, ...).
"""

from __future__ import annotations

import sys
from typing import Sequence

from .errors import CliError

__all__ = ["main", "CliError"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    The commands are imported here, not when the package is: a Ctrl-C while
    they load is exit 130 like one anywhere else, never a traceback. ``grep``
    imports only its own: a search of gigabytes does not wait on the others.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["grep"]:
            from .grep import main as grep

            return grep(args[1:])
        from .app import main as run
    except KeyboardInterrupt:
        return 130
    return run(args)
