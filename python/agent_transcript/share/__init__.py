"""A run made ready to share: as Markdown (``.markdown``), and where two runs part (``.diff``).

May import: the standard library, the public API of ``agent_transcript``, the
read model ``agent_transcript.inspect``.
Never the command line or another front end.
"""

from __future__ import annotations

from .diff import Parting, RunSide, diff_runs
from .markdown import fence, to_markdown

__all__ = ["to_markdown", "fence", "diff_runs", "Parting", "RunSide"]
