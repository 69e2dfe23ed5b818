"""Drop-in history stores for the frameworks agents are built with.

* ``openai_agents``: ``TranscriptSession``, the OpenAI Agents SDK's ``Session``
  protocol over one transcript, with ``TranscriptRunHooks`` (tool dispatch and
  settle lines) and ``RunState`` save and restore in the same file
  (extra ``agent-transcript[openai-agents]``).
* ``pydantic_ai``: ``TranscriptConversationStore``, pydantic-ai's
  ``ConversationStore`` over a folder of transcripts, and helpers for the plain
  ``message_history=`` path (extra ``agent-transcript[pydantic-ai]``).
* ``agent_framework``: ``TranscriptHistoryProvider``, the Microsoft Agent
  Framework's ``HistoryProvider`` over a folder of transcripts, one per session
  (extra ``agent-transcript[agent-framework]``).
* ``claude_agent_sdk``: ``TranscriptSessionStore``, the Claude Agent SDK's
  ``SessionStore`` over a folder of transcripts, one per session key, each
  holding Claude Code's lines and the conversation the importer makes of them
  (extra ``agent-transcript[claude-agent-sdk]``).
* ``google_adk``: ``TranscriptSessionService``, Google ADK's
  ``BaseSessionService`` over a folder of transcripts, one per session
  (extra ``agent-transcript[google-adk]``).
* ``strands``: ``TranscriptSessionRepository``, Strands Agents'
  ``SessionRepository`` over a folder of transcripts, one per session, used
  through Strands' ``RepositorySessionManager`` (extra ``agent-transcript[strands]``).

Each module imports its framework when it is imported; ``import agent_transcript``
imports none of them. They are built on the public API only (names importable
from ``agent_transcript``), like any other program that writes a transcript.
"""
