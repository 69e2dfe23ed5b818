"""pydantic-ai's ``ConversationStore`` over a folder of transcripts, and the
``message_history=`` path over one.

Switch an agent's conversation store with one line::

    store = TranscriptConversationStore("conversations/")   # was: InMemoryConversationStore()
    conversation = await store.load(cid) or Conversation(conversation_id=cid)
    result = await agent.run("hello", conversation=conversation)
    await store.save(result)

Each conversation is one transcript in the folder. Each pydantic-ai message is
kept whole (its JSON, exactly as ``ModelMessagesTypeAdapter`` writes it) in the
``pydantic-ai`` extra of the first message line that stands for it, and
projected as OpenAI chat messages for everything else that reads the file: a
response is one assistant message (its text, its tool calls; its thinking in a
``thinking`` extra), a request one message per part (system prompt, user
prompt, one ``tool`` message per tool return). The store's record (head, usage,
deferred tool requests, scope, revision) is a run-context line after the
messages it points at, so a save that is killed halfway leaves the record it
had. A transcript's live messages are always its conversation's history: a
branch appends a rewind, then the branch's messages.

For any pydantic-ai version, ``load_messages`` and ``append_messages``
carry the plain ``message_history=`` path over a ``agent_transcript.Session``.

pydantic-ai hands a run's messages over only when the run is done. Give the
run a ``TranscriptCapability`` (over the store or the session) and the
messages that called a tool are in the transcript before the tool runs, with
the call's ``tool-dispatched`` line: a process killed mid-tool leaves the call
there, ``Session.answer_unanswered_tool_calls`` answers it, and the next load
sends the call with its answer. The hand-over then adopts what was written
early instead of writing it again.

Needs the ``pydantic-ai`` extra: ``pip install "agent-transcript[pydantic-ai]"``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ._pydantic_ai_history import EXTRA_KEY, append_messages, load_messages, message_to_chat

__all__ = [
    "TranscriptConversationStore",
    "TranscriptCapability",
    "load_messages",
    "append_messages",
    "message_to_chat",
    "EXTRA_KEY",
    "RECORD_KEY",
]

if importlib.util.find_spec("pydantic_ai.conversation_store") is not None:
    from ._pydantic_ai_journal import TranscriptCapability
    from ._pydantic_ai_store import RECORD_KEY, TranscriptConversationStore
else:  # pragma: no cover - pydantic-ai before 2.66: the message_history= helpers only
    RECORD_KEY = "pydantic-ai.record"

    def __getattr__(name: str) -> Any:
        if name in ("TranscriptConversationStore", "TranscriptCapability"):
            raise ImportError(f"{name} needs pydantic-ai >= 2.66 (its ConversationStore); "
                              "load_messages and append_messages work with this version")
        raise AttributeError(name)
