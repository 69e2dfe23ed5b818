"""A writer of the soak (``test_soak.py``): appends until it is killed.

``python soak_writer.py KIND FOLDER INCARNATION [finish]``, KIND one of
``library`` (``Session`` itself), ``openai-agents`` (``TranscriptSession``) and
``pydantic-ai`` (``TranscriptConversationStore`` under a real ``Agent``). Each
line it prints is one ``write(2)`` made after what it names was acknowledged
(the append, ``add_items`` or ``save`` returned), so a SIGKILL never tears one:

    A <file> <id>         library: an envelope appended
    S <file>              library: a run settled (its last line written, closed)
    I <file> <text>       openai-agents: an item added
    P <file> <prompt>     pydantic-ai: a turn saved
    R                     loaded and resumed: the unanswered calls answered

With ``finish`` it resumes, settles what is open, prints ``R`` and exits 0.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from agent_transcript import Message, Session

END = "the run is over"


def say(*words: str) -> None:
    os.write(1, (" ".join(words) + "\n").encode())


def library(folder: Path, incarnation: int, finish: bool) -> None:
    """Runs ``lib-N.jsonl`` of tool-using turns; a run ends after 25 turns with END."""
    numbers = [int(m.group(1)) for p in folder.iterdir()
               if (m := re.fullmatch(r"lib-(\d+)\.jsonl(\.zst)?", p.name))]
    n = max(numbers, default=1)
    if (folder / f"lib-{n}.jsonl.zst").exists():  # settled, and archived since
        n += 1
    path = folder / f"lib-{n}.jsonl"
    # Session.open, not "load if it exists": a kill inside create (the file
    # made, its session-meta not yet written) leaves an empty file, which load
    # refuses and open takes as new.
    session = Session.open(path, {"agent": "soak", "model": "scripted"})
    if session.messages and session.messages[-1].content == END:
        session.close()
        n += 1
        path = folder / f"lib-{n}.jsonl"
        session = Session.open(path, {"agent": "soak", "model": "scripted"})
    # Resume as SPEC says: settle what was dispatched, answer what was asked.
    for mid in session.answer_unanswered_tool_calls():
        say("A", path.name, mid)
    for op in session.pending_tool_operations():  # its result written, its settle line lost
        say("A", path.name, session.resolve_tool_operation(op.op_id))
    say("R")
    turn = sum(m.role == "user" for m in session.messages)
    while not finish:
        turn += 1
        tag = f"{incarnation}.{turn}"
        say("A", path.name, session.append_message(Message.user(f"turn {tag}: look it up")))
        call = {"id": f"call-{tag}", "type": "function",
                "function": {"name": "lookup", "arguments": f'{{"q": "{tag}"}}'}}
        say("A", path.name, session.append_message(Message.assistant(None, tool_calls=[call])))
        op = session.append_tool_dispatched(f"call-{tag}", "lookup", {"q": tag})
        say("A", path.name, op)
        time.sleep(0.005)  # the tool runs: a kill here leaves the call unanswered
        say("A", path.name, session.append_message(Message.tool(f"call-{tag}", f"found {tag}")))
        say("A", path.name, session.append_tool_settled(op, "completed"))
        say("A", path.name, session.append_message(Message.assistant(f"answer {tag} " + "é" * (turn % 40))))
        time.sleep(0.01)  # a few runs a second: the readers' folder grows, but not without end
        if turn % 25 == 0:
            say("A", path.name, session.append_message(Message.user(END)))
            session.close()
            say("S", path.name)
            n += 1
            path = folder / f"lib-{n}.jsonl"
            session = Session.create(path, {"agent": "soak", "model": "scripted"})
    session.close()


def openai_agents(folder: Path, incarnation: int, finish: bool) -> None:
    from agent_transcript.integrations.openai_agents import TranscriptSession

    async def go() -> None:
        with TranscriptSession(folder / "oa-1.jsonl", session_id="soak") as session:
            say("R")
            seq = 0
            while not finish:
                seq += 1
                items: list[Any] = [{"role": "user", "content": f"{incarnation}:{seq}:q"}]
                if seq % 3 == 0:
                    items.append({"role": "assistant", "content": f"{incarnation}:{seq}:a"})
                await session.add_items(items)
                for item in items:
                    say("I", "oa-1.jsonl", item["content"])
                await asyncio.sleep(0.003)

    asyncio.run(go())


def pydantic_ai(folder: Path, incarnation: int, finish: bool) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    from agent_transcript.integrations.pydantic_ai import TranscriptConversationStore

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(p.part_kind == "tool-return" for p in last.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("lookup", {"q": "x"}, tool_call_id=f"c{len(messages)}")])

    agent: Agent[None, str] = Agent(FunctionModel(model))

    @agent.tool_plain
    async def lookup(q: str) -> str:
        """Looks something up, slowly enough to be killed in."""
        await asyncio.sleep(0.005)
        return f"found {q}"

    async def go() -> None:
        store = TranscriptConversationStore(folder)
        say("R")
        numbers = [int(m.group(1)) for p in folder.iterdir() if (m := re.fullmatch(r"pyd-(\d+)\.jsonl", p.name))]
        n, seq = max(numbers, default=1), 0
        while not finish:
            seq += 1
            prompt = f"{incarnation}:{seq}"
            conversation = await store.load(f"pyd-{n}")
            if conversation is not None and len(conversation.messages) >= 60:  # 20 turns: the next one
                n, conversation = n + 1, None
            conversation = conversation or Conversation(conversation_id=f"pyd-{n}")
            result = await agent.run(prompt, conversation=conversation, usage_limits=UsageLimits(request_limit=None))
            await store.save(result)
            say("P", f"pyd-{n}.jsonl", prompt)

    asyncio.run(go())


def main() -> None:
    kind, folder, incarnation = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    finish = sys.argv[4:] == ["finish"]
    try:
        {"library": library, "openai-agents": openai_agents, "pydantic-ai": pydantic_ai}[kind](
            folder, incarnation, finish)
    except BaseException as e:  # a writer must never fail: tell the parent, which fails the test
        os.write(2, f"{kind} failed: {type(e).__name__}: {e}\n".encode())
        os._exit(4)


if __name__ == "__main__":
    main()
