"""TranscriptConversationStore and the message_history= helpers against the real
pydantic-ai, with its own FunctionModel and TestModel."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 11):
    pytest.skip("pydantic-ai-slim needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai import Agent  # noqa: E402

# ConversationStore is new in pydantic-ai 2.66; the message_history= helpers
# work (and are tested) with the versions before it too.
HAS_STORE = importlib.util.find_spec("pydantic_ai.conversation_store") is not None
needs_store = pytest.mark.skipif(not HAS_STORE, reason="pydantic-ai before 2.66 has no ConversationStore")
if HAS_STORE:
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationStore,
        InMemoryConversationStore,
    )

    from agent_transcript.integrations.pydantic_ai import TranscriptConversationStore

from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from agent_transcript import Message, Session  # noqa: E402
from agent_transcript.integrations.pydantic_ai import EXTRA_KEY, append_messages, load_messages  # noqa: E402

from ._helpers import assert_checks_and_loads, close_default_loop  # noqa: E402


def weather_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Two tool calls in one response, then an answer that counts the turns."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(p.part_kind == "tool-return" for p in last.parts):
        return ModelResponse(parts=[ThinkingPart("both are sunny"), TextPart("Sunny in both.")])
    turns = sum(isinstance(m, ModelRequest) and any(p.part_kind == "user-prompt" for p in m.parts)
                for m in messages)
    return ModelResponse(parts=[
        ToolCallPart("weather", {"city": "Paris"}, tool_call_id=f"c{turns}a"),
        ToolCallPart("weather", {"city": "Rome"}, tool_call_id=f"c{turns}b"),
    ])


def make_agent(model: Any = None) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model or FunctionModel(weather_model), system_prompt="You are terse.",
                                    instructions="Answer in one line.")

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return agent


async def turn(store: Any, cid: str, prompt: str, agent: Agent[None, str] | None = None) -> Any:
    conversation = await store.load(cid) or Conversation(conversation_id=cid)
    result = await (agent or make_agent()).run(prompt, conversation=conversation)
    await store.save(result)
    return result


@needs_store
def test_runs_through_the_store_reopened_and_continued_hold_what_pydantic_ai_holds(tmp_path: Path) -> None:
    folder = tmp_path / "conversations"

    async def go() -> None:
        first = await turn(TranscriptConversationStore(folder), "chat-1", "weather in Paris and Rome?")
        store = TranscriptConversationStore(folder)  # a new store object: everything comes from the files
        loaded = await store.load("chat-1")
        assert loaded is not None and loaded.messages == first.all_messages()
        assert loaded.usage == first.usage
        second = await turn(store, "chat-1", "and tomorrow?")
        assert len(second.all_messages()) == 8
        again = await TranscriptConversationStore(folder).load("chat-1")
        assert again is not None and again.messages == second.all_messages()
        entries = await TranscriptConversationStore(folder).load_entries("chat-1")
        assert entries is not None and [e.message for e in entries] == second.all_messages()
        assert [r.conversation_id for r in await store.list_conversations()] == ["chat-1"]

    asyncio.run(go())
    path = folder / "chat-1.jsonl"
    s = assert_checks_and_loads(path)
    roles = [m.role for m in s.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"] * 1 + \
        ["user", "assistant", "tool", "tool", "assistant"]
    assert s.messages[2].tool_calls == [
        {"id": "c1a", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
        {"id": "c1b", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Rome"}'}}]
    assert s.messages[3] == Message.tool("c1a", "sunny in Paris")
    assert s.messages[5] == Message.assistant("Sunny in both.")
    assert s.entries[5].extra["thinking"] == "both are sunny"
    assert s.pending_tool_operations() == []


@needs_store
def test_the_store_behaves_as_the_in_memory_store(tmp_path: Path) -> None:
    """The same calls on both stores: branch, fork, delete, conflicts, listing."""

    async def scenario(store: Any) -> list[Any]:
        seen: list[Any] = []
        first = await turn(store, "a", "hi")
        await turn(store, "a", "again")
        full = await store.load("a")
        assert full is not None
        seen.append(len(full.messages))
        branched = await store.branch("a", at=4, expected_revision=full.revision)
        seen.append(len(branched.messages))
        result = await make_agent().run("branch turn", conversation=branched)
        await store.save(result)
        now = await store.load("a")
        assert now is not None
        seen.append(len(now.messages))
        record = await store.read_record("a")
        assert record is not None
        seen.append(len(record.branches))
        back = await store.branch("a", from_entry=record.branches[0], expected_revision=now.revision)
        seen.append(len(back.messages))
        fork = await store.fork("a", at=4, new_conversation_id="b")
        seen.append(len(fork.messages))
        await store.save(await make_agent().run("fork turn", conversation=fork))
        b = await store.load("b")
        assert b is not None
        seen.append(len(b.messages))
        seen.append(sorted(r.conversation_id for r in await store.list_conversations()))
        with pytest.raises(ConversationConflict):
            await store.save(first)  # a stale revision
        with pytest.raises(ConversationConflict):
            await store.save(Conversation(conversation_id="a"))  # exists, not loaded
        await store.delete("a")
        seen.append(await store.load("a"))
        b_after = await store.load("b")  # the fork still reads: its entries are kept
        assert b_after is not None
        seen.append(len(b_after.messages))
        seen.append([r.conversation_id for r in await store.list_conversations()])
        recreated = await turn(store, "a", "fresh start")
        seen.append(len(recreated.all_messages()))
        return seen

    expected = asyncio.run(scenario(InMemoryConversationStore()))
    assert asyncio.run(scenario(TranscriptConversationStore(tmp_path))) == expected
    for path in sorted(tmp_path.glob("*.jsonl")):
        s = assert_checks_and_loads(path)
    reopened = TranscriptConversationStore(tmp_path)
    a = asyncio.run(reopened.load("a"))
    assert a is not None and len(a.messages) == expected[-1]
    with Session.load(tmp_path / "a.jsonl") as s:  # the transcript's live messages are the history
        assert len({e.extra[EXTRA_KEY]["entry"] for e in s.entries}) == len(a.messages)
    with Session.load(tmp_path / "b.jsonl") as s:
        assert [m.role for m in s.messages][:2] == ["system", "user"]


@needs_store
def test_odd_conversation_ids_get_a_safe_file_name(tmp_path: Path) -> None:
    store = TranscriptConversationStore(tmp_path)
    asyncio.run(turn(store, "../user 7/chat", "hi"))
    [path] = tmp_path.glob("*.jsonl")
    assert path.parent == tmp_path and path.name.startswith("_")
    loaded = asyncio.run(TranscriptConversationStore(tmp_path).load("../user 7/chat"))
    assert loaded is not None and loaded.conversation_id == "../user 7/chat"


def legacy_name(cid: str) -> str:
    """The file name earlier versions gave a conversation id that is no safe name."""
    return "c-" + hashlib.sha256(cid.encode()).hexdigest()[:32]


@needs_store
@pytest.mark.parametrize("first", ["unsafe", "squatter"])
def test_no_two_conversation_ids_share_a_transcript(tmp_path: Path, first: str) -> None:
    unsafe = "user 7/chat"
    squatter = legacy_name(unsafe)  # itself a safe name
    store = TranscriptConversationStore(tmp_path)
    assert store.transcript_path(unsafe) != store.transcript_path(squatter)
    order = [unsafe, squatter] if first == "unsafe" else [squatter, unsafe]

    async def go() -> None:
        for cid in order:
            await turn(store, cid, f"hello from {cid}")
        for cid in order:
            loaded = await TranscriptConversationStore(tmp_path).load(cid)
            assert loaded is not None and loaded.conversation_id == cid
            [prompt] = [p for p in loaded.messages[0].parts if isinstance(p, UserPromptPart)]
            assert prompt.content == f"hello from {cid}"

    asyncio.run(go())
    assert len(list(tmp_path.glob("*.jsonl"))) == 2


@needs_store
def test_a_transcript_named_the_earlier_way_is_still_found_and_continued(tmp_path: Path) -> None:
    cid = "user 7/chat"
    asyncio.run(turn(TranscriptConversationStore(tmp_path), cid, "hi"))
    [path] = tmp_path.glob("*.jsonl")
    path.rename(tmp_path / f"{legacy_name(cid)}.jsonl")  # as an earlier version left it
    store = TranscriptConversationStore(tmp_path)
    assert store.transcript_path(cid) == tmp_path / f"{legacy_name(cid)}.jsonl"
    assert store.transcript_path(legacy_name(cid)) == tmp_path / f"{legacy_name(cid)}.jsonl"
    result = asyncio.run(turn(store, cid, "again"))
    assert [p.name for p in tmp_path.glob("*.jsonl")] == [f"{legacy_name(cid)}.jsonl"]
    loaded = asyncio.run(TranscriptConversationStore(tmp_path).load(cid))
    assert loaded is not None and loaded.messages == result.all_messages()
    # The squatting id's file is that other conversation's: it finds nothing there.
    assert asyncio.run(store.load(legacy_name(cid))) is None


def test_the_message_history_path_reopened_and_continued(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    agent = make_agent()

    with Session.open(path) as s:
        assert load_messages(s) == []
        first = agent.run_sync("weather?", message_history=load_messages(s))
        append_messages(s, first.new_messages())
    with Session.open(path) as s:
        assert load_messages(s) == first.all_messages()
        second = agent.run_sync("and tomorrow?", message_history=load_messages(s))
        append_messages(s, second.new_messages())
    with Session.open(path) as s:
        assert load_messages(s) == second.all_messages()
    assert_checks_and_loads(path)


def test_test_model_calls_every_tool_through_both_paths(tmp_path: Path) -> None:
    agent = make_agent(TestModel())
    with Session.open(tmp_path / "h.jsonl") as s:
        r = agent.run_sync("go", message_history=load_messages(s))
        append_messages(s, r.new_messages())
        assert load_messages(s) == r.all_messages()
        assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert_checks_and_loads(tmp_path / "h.jsonl")
    close_default_loop()
    if HAS_STORE:
        result = asyncio.run(turn(TranscriptConversationStore(tmp_path / "store"), "t", "go", agent))
        loaded = asyncio.run(TranscriptConversationStore(tmp_path / "store").load("t"))
        assert loaded is not None and loaded.messages == result.all_messages()
        assert_checks_and_loads(tmp_path / "store" / "t.jsonl")


def test_chat_lines_another_program_wrote_become_model_messages(tmp_path: Path) -> None:
    with Session.create(tmp_path / "chat.jsonl") as s:
        s.append_message(Message.system("sys"))
        s.append_message(Message.user("hi"))
        s.append_message(Message.assistant(None, [{"id": "k", "type": "function",
                                                   "function": {"name": "weather", "arguments": "{}"}}]))
        s.append_message(Message.tool("k", "sunny"))
        messages = load_messages(s)
    assert [type(m).__name__ for m in messages] == ["ModelRequest", "ModelRequest", "ModelResponse", "ModelRequest"]
    assert messages[1] .parts[0] == UserPromptPart("hi", timestamp=messages[1].parts[0].timestamp)  # type: ignore[union-attr]
    tool_return = messages[3].parts[0]
    assert (tool_return.tool_name, tool_return.tool_call_id, tool_return.content) == ("weather", "k", "sunny")  # type: ignore[union-attr]


SAVE_IN_A_CHILD = textwrap.dedent("""
    import asyncio, sys
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.models.test import TestModel
    from agent_transcript.integrations.pydantic_ai import TranscriptConversationStore

    async def main():
        store = TranscriptConversationStore(sys.argv[1])
        agent = Agent(TestModel(custom_output_text="first answer"))
        r = await agent.run("hello", conversation=Conversation(conversation_id="p"))
        await store.save(r)

    asyncio.run(main())
""")


@needs_store
def test_a_conversation_saved_by_another_process_is_continued(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", SAVE_IN_A_CHILD, str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    store = TranscriptConversationStore(tmp_path)
    loaded = asyncio.run(store.load("p"))
    assert loaded is not None and len(loaded.messages) == 2
    agent: Agent[None, str] = Agent(TestModel(custom_output_text="second answer"))
    result = asyncio.run(agent.run("more", conversation=loaded))
    asyncio.run(store.save(result))
    again = asyncio.run(TranscriptConversationStore(tmp_path).load("p"))
    assert again is not None and again.messages == result.all_messages()
    assert again.messages[-1].parts[0].content == "second answer"  # type: ignore[union-attr]
    assert_checks_and_loads(tmp_path / "p.jsonl")
