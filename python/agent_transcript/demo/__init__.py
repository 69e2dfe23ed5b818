"""The demo: a scripted agent killed mid-tool-call, and the story of what happens next.

Lives here: the scripted agent that runs in a child process (``.agent``,
``python -m agent_transcript.demo.agent PATH``) and the narrated story
(``.story``: ``run``), which a front end calls with a
``Terminal``: what to print with, so that the demo needs nothing of it.

May import: the standard library, the public API of ``agent_transcript`` and
the read model ``agent_transcript.inspect``. Never the command line (it runs
the demo, not the other way round) nor a private name of another package.
"""

from __future__ import annotations

from .story import DemoError, Terminal, run

__all__ = ["run", "Terminal", "DemoError"]
