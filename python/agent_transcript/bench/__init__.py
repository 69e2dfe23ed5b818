"""The bench: the performance targets, measured against plain-Python baselines in one run.

Lives here: the ``agent-transcript bench`` command (``.command``, reached
through ``main``), the baselines a careful user would write instead of
this package (``.baselines``) and the synthetic transcript generator
(``.generator``). ``baselines`` and ``generator`` import only the standard
library, so that ``benches/`` can load them by path without the native module.

May import: the standard library, the public API of ``agent_transcript`` and
the read model ``agent_transcript.inspect``. Never the command line nor a
private name of another package.
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the bench with ``argv``; returns the exit status (see ``.command``).

    Imported when called, so that ``agent_transcript.bench.baselines`` loads
    light (the bench's child processes import it).
    """
    from .command import main as run

    return run(argv)
