"""pydantic-ai runs journaled by TranscriptCapability: the call in the file before
its tool runs, each message once after the hand-over, and a run killed mid-tool
(a real SIGKILL) answered and continued with pydantic-ai's own FunctionModel."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 11):
    pytest.skip("pydantic-ai-slim needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")
if importlib.util.find_spec("pydantic_ai.conversation_store") is None:
    pytest.skip("TranscriptCapability needs pydantic-ai >= 2.66", allow_module_level=True)

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.conversation import Conversation  # noqa: E402
from pydantic_ai.conversation_store import InMemoryConversationStore  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from agent_transcript import INTERRUPTED, Session  # noqa: E402
from agent_transcript.integrations.pydantic_ai import (  # noqa: E402
    EXTRA_KEY,
    TranscriptCapability,
    TranscriptConversationStore,
    append_messages,
    load_messages,
)

from ._helpers import assert_checks_and_loads, child_env, kill_9_when  # noqa: E402


def every_call_answered(messages: list[ModelMessage]) -> bool:
    """What a strict chat API checks: each tool call answered, once, by a tool
    return after it, and no return that answers nothing."""
    open_calls: set[str] = set()
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                open_calls.add(p.tool_call_id)
            elif isinstance(p, ToolReturnPart):
                if p.tool_call_id not in open_calls:
                    return False
                open_calls.remove(p.tool_call_id)
    return not open_calls


def two_calls_then_text(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(p.part_kind == "tool-return" for p in last.parts):
        return ModelResponse(parts=[TextPart("Both looked at.")])
    return ModelResponse(parts=[TextPart("Looking."), ToolCallPart("look", {"city": "Paris"}, tool_call_id="p"),
                                ToolCallPart("look", {"city": "Rome"}, tool_call_id="r")])


SEEN: list[list[Any]] = []


def make_agent(path: Path) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(two_calls_then_text), system_prompt="Be brief.")

    @agent.tool_plain
    def look(city: str) -> str:
        """Look at a city (and at the transcript meanwhile)."""
        peek = Session.peek(path)
        SEEN.append([m.tool_calls for m in peek.messages if m.role == "assistant"])
        return f"looked at {city}"

    return agent


def test_the_store_path_writes_the_calls_before_the_tools_and_each_message_once(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    agent = make_agent(path)
    SEEN.clear()

    async def go() -> tuple[Any, Any, Any]:
        plain = InMemoryConversationStore()
        expected = await agent.run("look", conversation=Conversation(conversation_id="c"))
        await plain.save(expected)
        store = TranscriptConversationStore(tmp_path)
        result = await agent.run("look", conversation=Conversation(conversation_id="c"),
                                 capabilities=[TranscriptCapability(store)])
        entries = await store.save(result)
        again = await agent.run("again", conversation=await store.load("c"),
                                capabilities=[TranscriptCapability(store)])
        await store.save(again)
        return result, entries, again

    SEEN.clear()
    result, entries, again = asyncio.run(go())
    # Each tool saw the response that called it already in the file.
    calls = [c["id"] for c in SEEN[-1][-1]]
    assert calls == ["p", "r"] and len(SEEN) == 6
    s = assert_checks_and_loads(path)
    # One entry per message, once: the early lines were adopted by the save.
    own = [e.extra[EXTRA_KEY] for e in s.entries if "message" in e.extra.get(EXTRA_KEY, {})]
    assert [o["entry"] for o in own] == [e.id for e in entries] + [o["entry"] for o in own[len(entries):]]
    assert len(own) == len(again.all_messages())
    assert [e.type for e in s.events].count("rewind") == 0
    assert [e.type for e in s.events].count("tool-settled") == 4 and s.pending_tool_operations() == []
    loaded = asyncio.run(TranscriptConversationStore(tmp_path).load("c"))
    assert loaded is not None and loaded.messages == again.all_messages()
    assert every_call_answered(loaded.messages)


def test_the_message_history_path_writes_the_calls_early_and_each_message_once(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    agent = make_agent(path)
    SEEN.clear()
    with Session.open(path) as s:
        first = agent.run_sync("look", message_history=load_messages(s), capabilities=[TranscriptCapability(s)])
        ids = append_messages(s, first.new_messages())
        second = agent.run_sync("again", message_history=load_messages(s), capabilities=[TranscriptCapability(s)])
        append_messages(s, second.new_messages())
        assert load_messages(s) == second.all_messages()
    assert [c["id"] for c in SEEN[0][-1]] == ["p", "r"]
    s = assert_checks_and_loads(path)
    own = [e.extra[EXTRA_KEY]["entry"] for e in s.entries if "message" in e.extra.get(EXTRA_KEY, {})]
    assert own[:len(ids)] == ids and len(own) == len(second.all_messages())
    assert [e.type for e in s.events].count("message") == len(s.messages)  # nothing written twice
    assert s.pending_tool_operations() == [] and s.unanswered_tool_calls() == []


CHILD = textwrap.dedent("""
    import asyncio, sys, time
    from pathlib import Path
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from agent_transcript import Session
    from agent_transcript.integrations.pydantic_ai import (
        TranscriptCapability, TranscriptConversationStore, append_messages, load_messages)

    def model(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[TextPart("Hello.")])
        return ModelResponse(parts=[ToolCallPart("deploy", {"service": "api"}, tool_call_id="call_d")])

    agent = Agent(FunctionModel(model), system_prompt="Do it.")

    @agent.tool_plain
    def deploy(service: str) -> str:
        \"\"\"Deploy a service (takes a while).\"\"\"
        Path(sys.argv[3]).write_text("running")
        time.sleep(600)
        return "deployed"

    async def main():
        where, how = Path(sys.argv[1]), sys.argv[2]
        if how == "store":
            store = TranscriptConversationStore(where)
            r = await agent.run("hi", conversation=Conversation(conversation_id="ops"))
            await store.save(r)
            await agent.run("deploy the api", conversation=await store.load("ops"),
                            capabilities=[TranscriptCapability(store)])
        else:
            with Session.open(where) as s:
                r = await agent.run("hi", message_history=load_messages(s))
                append_messages(s, r.new_messages())
                await agent.run("deploy the api", message_history=load_messages(s),
                                capabilities=[TranscriptCapability(s)])

    asyncio.run(main())
""")


def resumed_model(sent: list[list[ModelMessage]]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(list(messages))
        return ModelResponse(parts=[TextPart("The deploy may not have run; I will check.")])
    return FunctionModel(model)


@pytest.mark.parametrize("how", ["store", "message_history"])
def test_a_run_killed_mid_tool_answered_then_continued(tmp_path: Path, how: str) -> None:
    where = tmp_path / "store" if how == "store" else tmp_path / "run.jsonl"
    marker = tmp_path / "tool-running"
    kill_9_when(marker, [sys.executable, "-c", CHILD, str(where), how, str(marker)], env=child_env())
    path = where / "ops.jsonl" if how == "store" else where
    with Session.load(path) as s:
        [call] = s.unanswered_tool_calls()  # the call is in the file, its operation pending
        assert (call.call_id, call.tool) == ("call_d", "deploy") and call.operation is not None
        assert call.operation.arguments == {"service": "api"}
        s.answer_unanswered_tool_calls()
    sent: list[list[ModelMessage]] = []
    agent: Agent[None, str] = Agent(resumed_model(sent), system_prompt="Do it.")

    async def resume() -> list[ModelMessage]:
        if how == "store":
            store = TranscriptConversationStore(where)
            conversation = await store.load("ops")
            assert conversation is not None
            r = await agent.run("did it deploy?", conversation=conversation, capabilities=[TranscriptCapability(store)])
            await store.save(r)
            loaded = await TranscriptConversationStore(where).load("ops")
            assert loaded is not None and loaded.messages == r.all_messages()
            return r.all_messages()
        with Session.open(where) as s:
            r = await agent.run("did it deploy?", message_history=load_messages(s),
                                capabilities=[TranscriptCapability(s)])
            append_messages(s, r.new_messages())
            assert load_messages(s) == r.all_messages()
            return r.all_messages()

    history = asyncio.run(resume())
    [messages] = sent
    assert every_call_answered(messages) and every_call_answered(history)
    calls = [p for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
    returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [c.tool_call_id for c in calls] == [r.tool_call_id for r in returns] == ["call_d"]
    assert (returns[0].tool_name, returns[0].content) == ("deploy", INTERRUPTED)
    s = assert_checks_and_loads(path)
    assert s.unanswered_tool_calls() == [] and s.pending_tool_operations() == []
