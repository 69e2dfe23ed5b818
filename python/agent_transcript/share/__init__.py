"""A run made ready to share: as Markdown (``.markdown``).

May import: the standard library, the public API of ``agent_transcript``, the
read model ``agent_transcript.inspect``.
Never the command line or another front end.
"""

from __future__ import annotations

from .markdown import fence, to_markdown

__all__ = ["to_markdown", "fence"]
