"""``TranscriptCapability``: a pydantic-ai run's messages and tool calls in the
transcript while the run goes on, not only when it is saved.

The public name is ``agent_transcript.integrations.pydantic_ai.TranscriptCapability``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
from pydantic_ai.messages import ModelMessage, ToolCallPart

from agent_transcript import Session, digest

from ._aio import write_off_loop
from ._pydantic_ai_history import append_messages
from ._pydantic_ai_store import TranscriptConversationStore


@dataclasses.dataclass
class TranscriptCapability(AbstractCapability[Any]):
    """Writes a run's messages before each tool runs, and a ``tool-dispatched`` /
    ``tool-settled`` line around each tool call.

    pydantic-ai hands its messages over only after the run
    (``store.save(result)``, or ``result.new_messages()``), so a process killed
    while a tool runs would leave nothing of that run. With this capability the
    request and the response that called the tool are in the transcript before
    the tool starts, and the call's operation is pending there; when the run's
    messages are handed over, those already written are not written again.

    Pass the target the run's history goes to::

        agent.run(prompt, conversation=c, capabilities=[TranscriptCapability(store)])
        agent.run(prompt, message_history=load_messages(s), capabilities=[TranscriptCapability(s)])

    Args:
        target: a ``TranscriptConversationStore`` (the run's conversation
            id names the transcript) or an open ``agent_transcript.Session``
            (the ``message_history=`` path; hand the messages over with
            ``append_messages``).
        idempotency: what the dispatch lines say about running a tool again.
    """

    target: Session | TranscriptConversationStore
    idempotency: str = "unknown"
    _start: int = dataclasses.field(default=0, init=False, repr=False)
    _written: int = dataclasses.field(default=0, init=False, repr=False)
    _writing: asyncio.Future[None] | None = dataclasses.field(default=None, init=False, repr=False)

    async def for_run(self, ctx: Any) -> TranscriptCapability:
        return TranscriptCapability(self.target, self.idempotency)  # each run counts its own messages

    async def before_run(self, ctx: Any) -> None:
        self._start = len(ctx.messages)  # what the run was given; its own messages follow

    async def wrap_tool_execute(self, ctx: Any, *, call: ToolCallPart, tool_def: Any, args: Any,
                                handler: Callable[[Any], Any]) -> Any:
        pending: list[ModelMessage] = list(ctx.messages[self._start + self._written:])
        if pending:
            self._written += len(pending)
            self._writing = asyncio.ensure_future(write_off_loop(
                functools.partial(self._write_early, ctx, pending)))
        if self._writing is not None:
            # Tools of one response start together: none runs before its call is in the file.
            await asyncio.shield(self._writing)
        op_id: str = await write_off_loop(functools.partial(
            self._in_transcript, ctx, lambda s: s.append_tool_dispatched(
                call.tool_call_id, call.tool_name, call.args if call.args is not None else {},
                idempotency=self.idempotency)))
        t0 = time.monotonic()
        try:
            result = await handler(args)
        except (ApprovalRequired, CallDeferred) as e:
            await self._settle(ctx, op_id, "failed", reason=f"deferred ({type(e).__name__}): the tool did not run")
            raise
        except Exception as e:
            await self._settle(ctx, op_id, "failed", duration=round(time.monotonic() - t0, 6),
                               error=f"{type(e).__name__}: {e}")
            raise
        await self._settle(ctx, op_id, "completed", duration=round(time.monotonic() - t0, 6),
                           result_digest=digest(result if isinstance(result, str) else repr(result)))
        return result

    async def _settle(self, ctx: Any, op_id: str, outcome: str, **details: Any) -> None:
        await write_off_loop(functools.partial(
            self._in_transcript, ctx, lambda s: s.append_tool_settled(op_id, outcome, **details)))

    def _write_early(self, ctx: Any, messages: list[ModelMessage]) -> None:
        if isinstance(self.target, Session):
            append_messages(self.target, messages, early=True)
        else:
            self.target._write_early(ctx.conversation_id, messages)

    def _in_transcript(self, ctx: Any, fn: Callable[..., Any], *args: Any) -> Any:
        if isinstance(self.target, Session):
            return fn(self.target, *args)
        return self.target._in_transcript(ctx.conversation_id, fn, *args)
