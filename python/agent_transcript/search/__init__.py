"""Search transcripts: ``grep(pattern, *paths)`` yields a ``Hit`` for each
string of a transcript whose decoded text matches, and an ``Unsearchable``
for each file or folder that could not be searched. The command line's
``agent-transcript grep`` and ``serve``'s search box are built on it.

The search itself is the read model's (``agent_transcript.inspect.search``);
this package is its public name.
"""

from __future__ import annotations

from ..inspect.search import SEARCHED_TYPES, Hit, Unsearchable, grep, transcript_paths

__all__ = ["Hit", "Unsearchable", "SEARCHED_TYPES", "grep", "transcript_paths"]
