"""TranscriptSession against the real OpenAI Agents SDK, with its own ScriptedModel.

Every flow runs twice, once over the SDK's own SQLiteSession (file-backed) and
once over a transcript, and the model must be handed the same history by both.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import Agent, Runner, RunState, SQLiteSession, function_tool  # noqa: E402
from agents.memory import OpenAIResponsesCompactionSession, Session as SdkSession, SessionSettings  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agent_transcript import INTERRUPTED, Message, Session, SessionClosed, SessionLocked  # noqa: E402
from agent_transcript.integrations.openai_agents import (  # noqa: E402
    EXTRA_KEY,
    TranscriptRunHooks,
    TranscriptSession,
    item_to_message,
    message_to_items,
)

from ._helpers import (  # noqa: E402
    assert_checks_and_loads,
    calls_and_outputs_pair,
    child_env,
    close_default_loop,
    kill_9_when,
)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_script() -> list[Any]:
    return [
        [function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
        [assistant_message("It is sunny in Paris.")],
        [assistant_message("Still sunny.", item_id="msg-2")],
    ]


def agent_for(model: ScriptedModel, tools: list[Any] | None = None) -> Agent[Any]:
    return Agent(name="weather", instructions="Answer briefly.", model=model,
                 tools=[get_weather] if tools is None else tools)


def inputs(model: ScriptedModel) -> list[Any]:
    return [call.input for call in model.calls]


ITEMS: list[Any] = [
    {"role": "user", "content": "weather in Paris?"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\":\"Paris\"}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny in Paris"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "It is sunny.", "annotations": [], "logprobs": []}]},
    {"role": "user", "content": [{"type": "input_text", "text": "and tomorrow?"}]},
]


# -- the protocol, exactly as SQLiteSession --------------------------------------


def test_it_is_an_sdk_session(tmp_path: Path) -> None:
    with TranscriptSession(tmp_path / "run.jsonl") as s:
        assert isinstance(s, SdkSession)
        assert s.session_id == "run"
        assert s.session_settings == SessionSettings()
    with TranscriptSession(tmp_path / "other.jsonl", session_id="abc",
                           session_settings={"limit": 3}) as s:
        assert s.session_settings == SessionSettings(limit=3)
    with TranscriptSession(tmp_path / "other.jsonl") as s:
        assert s.session_id == "abc"  # the id the file was created with


def test_every_method_behaves_as_sqlite_session(tmp_path: Path) -> None:
    async def both(op: Any) -> tuple[Any, Any]:
        return await op(sqlite), await op(ours)

    async def go() -> None:
        for s in (sqlite, ours):
            assert await s.pop_item() is None
            assert await s.get_items() == []
            await s.add_items([])
            await s.add_items(ITEMS[:3])
            await s.add_items(ITEMS[3:])
        for limit in (None, 0, 1, 2, 5, 10, -1):
            a, b = await both(lambda s: s.get_items(limit))
            assert a == b, limit
        assert await ours.get_items(2) == ITEMS[-2:]
        for s in (sqlite, ours):
            s.session_settings = SessionSettings(limit=2)
        a, b = await both(lambda s: s.get_items())
        assert a == b == ITEMS[-2:]
        a, b = await both(lambda s: s.get_items(4))
        assert a == b == ITEMS[-4:]
        for s in (sqlite, ours):
            s.session_settings = SessionSettings()
        popped = [await both(lambda s: s.pop_item()) for _ in range(3)]
        assert [a for a, _ in popped] == [b for _, b in popped] == ITEMS[:-4:-1]
        a, b = await both(lambda s: s.get_items())
        assert a == b == ITEMS[:2]
        await sqlite.clear_session()
        await ours.clear_session()
        assert await ours.get_items() == await sqlite.get_items() == []
        assert await ours.pop_item() is None
        await ours.clear_session()  # on an empty session: nothing to write
        await ours.add_items(ITEMS[4:])
        assert await ours.get_items() == ITEMS[4:]

    sqlite = SQLiteSession("run", tmp_path / "run.db")
    ours = TranscriptSession(tmp_path / "run.jsonl")
    try:
        asyncio.run(go())
    finally:
        sqlite.close()
        ours.close()
    s = assert_checks_and_loads(tmp_path / "run.jsonl")
    types = [e.type for e in s.events]
    assert types.count("message") == len(ITEMS) + 1 and types.count("rewind") == 4
    assert s.messages == [item_to_message(ITEMS[4])]
    reopened = TranscriptSession(tmp_path / "run.jsonl")
    try:
        assert asyncio.run(reopened.get_items()) == ITEMS[4:]
    finally:
        reopened.close()


def test_one_item_is_one_message_line_with_the_item_in_its_extra(tmp_path: Path) -> None:
    with TranscriptSession(tmp_path / "run.jsonl") as s:
        asyncio.run(s.add_items(ITEMS))
    loaded = assert_checks_and_loads(tmp_path / "run.jsonl")
    assert [e.extra[EXTRA_KEY] for e in loaded.entries] == ITEMS
    assert loaded.messages == [
        Message.user("weather in Paris?"),
        Message.assistant(tool_calls=[{"id": "call_1", "type": "function",
                                       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]),
        Message.tool("call_1", "sunny in Paris"),
        Message.assistant("It is sunny."),
        Message.user("and tomorrow?"),
    ]


def test_the_projection_of_other_items() -> None:
    assert item_to_message({"role": "developer", "content": "be brief"}) == Message("system", "be brief")
    assert item_to_message({"role": "system", "content": "x"}).is_sticky is False
    image = item_to_message({"role": "user", "content": [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "https://example.invalid/a.png", "detail": "low"}]})
    assert image.content == [{"type": "text", "text": "what is this?"},
                             {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png",
                                                                 "detail": "low"}}]
    reasoning = item_to_message({"type": "reasoning", "id": "rs_1", "summary": [
        {"type": "summary_text", "text": "thinking"}], "encrypted_content": "xyz"})
    assert reasoning == Message("assistant", "thinking", name="openai-agents:reasoning")
    out = item_to_message({"type": "function_call_output", "call_id": "c", "output": [
        {"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]})
    assert out == Message.tool("c", "ab")
    custom = item_to_message({"type": "custom_tool_call", "call_id": "k", "name": "grep", "input": "foo"})
    assert custom.tool_calls == [{"id": "k", "type": "function", "function": {"name": "grep", "arguments": "foo"}}]
    assert item_to_message({"type": "custom_tool_call_output", "call_id": "k", "output": "bar"}) == \
        Message.tool("k", "bar")
    assert item_to_message({"type": "web_search_call", "id": "ws", "status": "completed"}) == \
        Message("assistant", None, name="openai-agents:web_search_call")
    assert message_to_items(Message.assistant("hi", [{"id": "c1", "type": "function", "function": {
        "name": "f", "arguments": "{}"}}])) == [
        {"role": "assistant", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]


def test_lines_another_program_wrote_are_items_too(tmp_path: Path) -> None:
    path = tmp_path / "foreign.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("hi"))
        s.append_message(Message.assistant("a", [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]))
    with TranscriptSession(path) as t:
        items = asyncio.run(t.get_items())
        assert items == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"},
                         {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                         {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"}]
        assert asyncio.run(t.pop_item()) == items[-1]  # the line goes, its other items come back
        assert asyncio.run(t.get_items()) == items[:-1]
    with TranscriptSession(path) as t:
        assert asyncio.run(t.get_items()) == items[:-1]
    assert_checks_and_loads(path)


def test_an_elision_another_program_wrote_is_what_the_model_is_sent(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TranscriptSession(path) as t:
        asyncio.run(t.add_items(ITEMS))
    with Session.load(path) as s:
        ids = s.message_ids
        s.append_elision([(ids[2], "[output elided]"), (ids[3], "[answer elided]"), (ids[4], "[elided]")])
    with TranscriptSession(path) as t:
        items = asyncio.run(t.get_items())
    assert items[:2] == ITEMS[:2]
    assert items[2] == {**ITEMS[2], "output": "[output elided]"}
    assert items[3] == {**ITEMS[3], "content": [{"type": "output_text", "text": "[answer elided]",
                                                 "annotations": []}]}
    assert items[4] == {**ITEMS[4], "content": [{"type": "input_text", "text": "[elided]"}]}
    assert_checks_and_loads(path)


def test_the_file_is_locked_while_the_session_is_open(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TranscriptSession(path):
        with pytest.raises(SessionLocked):
            TranscriptSession(path)
        with pytest.raises(SessionLocked):
            Session.load(path)
    TranscriptSession(path).close()


def test_concurrent_adds_keep_each_call_together_and_lose_nothing(tmp_path: Path) -> None:
    async def go(s: TranscriptSession) -> list[Any]:
        await asyncio.gather(*(s.add_items([{"role": "user", "content": f"{k}-a"},
                                            {"role": "user", "content": f"{k}-b"}]) for k in range(40)))
        return await s.get_items()

    with TranscriptSession(tmp_path / "run.jsonl") as s:
        items = asyncio.run(go(s))
    texts = [i["content"] for i in items]
    assert sorted(texts) == sorted(f"{k}-{x}" for k in range(40) for x in "ab")
    assert all(texts[i][:-1] == texts[i + 1][:-1] for i in range(0, len(texts), 2))
    loaded = assert_checks_and_loads(tmp_path / "run.jsonl")
    assert [e.extra[EXTRA_KEY] for e in loaded.entries] == items


def test_a_closed_session_refuses_writes(tmp_path: Path) -> None:
    s = TranscriptSession(tmp_path / "run.jsonl")
    asyncio.run(s.add_items(ITEMS[:1]))
    s.close()
    for call in (lambda: s.add_items(ITEMS[1:2]), lambda: s.add_items([]), s.pop_item, s.clear_session):
        with pytest.raises(SessionClosed):
            asyncio.run(call())
    assert asyncio.run(s.get_items()) == ITEMS[:1]


def test_a_write_is_finished_even_when_its_caller_is_cancelled(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    s = TranscriptSession(tmp_path / "run.jsonl")
    real = s.transcript.append_message

    def slow(*args: Any, **kwargs: Any) -> str:
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(s.transcript, "append_message", slow)

    async def go() -> None:
        task = asyncio.create_task(s.add_items(ITEMS))
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)
        task.cancel()  # twice: still held until the write is done
        with pytest.raises(asyncio.CancelledError):
            await task
        # the cancellation came out only once every item was written
        assert len(s.transcript.message_ids) == len(ITEMS)
        assert await s.get_items() == ITEMS

    asyncio.run(go())
    s.close()
    with Session.load(tmp_path / "run.jsonl") as loaded:
        assert [e.extra[EXTRA_KEY] for e in loaded.entries] == ITEMS


# -- runs ----------------------------------------------------------------------


async def two_turns(session: Any, model: ScriptedModel, **run: Any) -> list[str]:
    agent = agent_for(model)
    first = await Runner.run(agent, "weather in Paris?", session=session, **run)
    second = await Runner.run(agent, "and now?", session=session, **run)
    return [str(first.final_output), str(second.final_output)]


def test_a_run_with_a_tool_then_reopened_then_a_second_run_sees_what_sqlite_sees(tmp_path: Path) -> None:
    sqlite_model, our_model = ScriptedModel(weather_script()), ScriptedModel(weather_script())
    sqlite = SQLiteSession("run", tmp_path / "run.db")
    try:
        sqlite_out = asyncio.run(two_turns(sqlite, sqlite_model))
    finally:
        sqlite.close()

    path = tmp_path / "run.jsonl"

    async def ours() -> list[str]:
        agent = agent_for(our_model)
        with TranscriptSession(path) as s:
            first = await Runner.run(agent, "weather in Paris?", session=s, hooks=TranscriptRunHooks(s))
        with TranscriptSession(path) as s:  # a new object on the same file
            second = await Runner.run(agent, "and now?", session=s, hooks=TranscriptRunHooks(s))
        return [str(first.final_output), str(second.final_output)]

    assert asyncio.run(ours()) == sqlite_out == ["It is sunny in Paris.", "Still sunny."]
    assert inputs(our_model) == inputs(sqlite_model)
    our_model.assert_complete()
    s = assert_checks_and_loads(path)
    assert [e.type for e in s.events].count("tool-dispatched") == 1
    assert [e.type for e in s.events].count("tool-settled") == 1
    assert s.pending_tool_operations() == []
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert s.messages[1].tool_calls is not None and s.messages[2].tool_call_id == "call_1"


FIRST_RUN = textwrap.dedent("""
    import asyncio, sys
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call
    from agent_transcript.integrations.openai_agents import TranscriptRunHooks, TranscriptSession

    @function_tool
    def get_weather(city: str) -> str:
        \"\"\"The weather in a city.\"\"\"
        return f"sunny in {city}"

    model = ScriptedModel([[function_call("get_weather", {"city": "Paris"}, call_id="call_1")],
                           [assistant_message("It is sunny in Paris.")]])
    agent = Agent(name="weather", instructions="Answer briefly.", model=model, tools=[get_weather])

    async def main():
        with TranscriptSession(sys.argv[1]) as s:
            r = await Runner.run(agent, "weather in Paris?", session=s, hooks=TranscriptRunHooks(s))
        print(r.final_output)

    asyncio.run(main())
""")


def test_a_second_run_in_a_new_process_sees_what_sqlite_sees(tmp_path: Path) -> None:
    sqlite_model, our_model = ScriptedModel(weather_script()), ScriptedModel(weather_script()[2:])
    sqlite = SQLiteSession("run", tmp_path / "run.db")
    try:
        asyncio.run(two_turns(sqlite, sqlite_model))
    finally:
        sqlite.close()
    path = tmp_path / "run.jsonl"
    r = subprocess.run([sys.executable, "-c", FIRST_RUN, str(path)], capture_output=True, text=True,
                       timeout=120, env=child_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "It is sunny in Paris."

    async def second() -> str:
        with TranscriptSession(path) as s:
            out = await Runner.run(agent_for(our_model), "and now?", session=s)
        return str(out.final_output)

    assert asyncio.run(second()) == "Still sunny."
    assert inputs(our_model) == inputs(sqlite_model)[2:]
    assert_checks_and_loads(path)


def test_run_sync_and_run_streamed_see_what_sqlite_sees(tmp_path: Path) -> None:
    def flow(session: Any, model: ScriptedModel) -> list[str]:
        agent = agent_for(model)

        async def streamed() -> str:
            result = Runner.run_streamed(agent, "weather in Paris?", session=session)
            async for _ in result.stream_events():
                pass
            return str(result.final_output)

        first = asyncio.run(streamed())
        second = Runner.run_sync(agent, "and now?", session=session)
        close_default_loop()
        return [first, str(second.final_output)]

    sqlite_model, our_model = ScriptedModel(weather_script()), ScriptedModel(weather_script())
    sqlite = SQLiteSession("run", tmp_path / "run.db")
    try:
        expected = flow(sqlite, sqlite_model)
    finally:
        sqlite.close()
    with TranscriptSession(tmp_path / "run.jsonl") as s:
        assert flow(s, our_model) == expected == ["It is sunny in Paris.", "Still sunny."]
        assert asyncio.run(s.get_items())[-1]["id"] == "msg-2"
    assert inputs(our_model) == inputs(sqlite_model)
    assert [c.streamed for c in our_model.calls] == [True, True, False]
    assert_checks_and_loads(tmp_path / "run.jsonl")


@function_tool(needs_approval=True)
def wire_money(amount: int) -> str:
    """Send money; a person approves it first."""
    return f"sent {amount}"


def approval_script() -> list[Any]:
    return [[function_call("wire_money", {"amount": 5}, call_id="call_w")],
            [assistant_message("Sent.")]]


def test_an_approval_interrupt_is_resumed_from_the_state_saved_in_the_file(tmp_path: Path) -> None:
    async def with_sqlite() -> tuple[list[Any], str]:
        model = ScriptedModel(approval_script())
        agent = agent_for(model, [wire_money])
        s = SQLiteSession("run", tmp_path / "run.db")
        try:
            r = await Runner.run(agent, "send 5", session=s)
            state_json = r.to_state().to_json()
            state = await RunState.from_json(agent, state_json)
            state.approve(state.get_interruptions()[0])
            done = await Runner.run(agent, state, session=s)
            return [inputs(model), await s.get_items()], str(done.final_output)
        finally:
            s.close()

    path = tmp_path / "run.jsonl"

    async def with_transcript() -> tuple[list[Any], str]:
        first_model = ScriptedModel(approval_script()[:1])
        with TranscriptSession(path) as s:
            r = await Runner.run(agent_for(first_model, [wire_money]), "send 5", session=s,
                                 hooks=TranscriptRunHooks(s))
            assert r.interruptions
            await s.save_run_state(r.to_state())
        with Session.load(path) as loaded:  # the approval waits; nothing was dispatched yet
            assert loaded.pending_tool_operations() == []
        second_model = ScriptedModel(approval_script()[1:])
        agent = agent_for(second_model, [wire_money])  # as a new process would build it
        with TranscriptSession(path) as s:
            state = await s.load_run_state(agent)
            assert state is not None
            state.approve(state.get_interruptions()[0])
            done = await Runner.run(agent, state, session=s, hooks=TranscriptRunHooks(s))
            await s.clear_run_state()
            assert await s.load_run_state(agent) is None
            return [inputs(first_model) + inputs(second_model), await s.get_items()], str(done.final_output)

    assert asyncio.run(with_transcript()) == asyncio.run(with_sqlite())
    s = assert_checks_and_loads(path)
    assert s.pending_tool_operations() == []
    assert [e.type for e in s.events].count("tool-settled") == 1


TOOL_THAT_HANGS = textwrap.dedent("""
    import asyncio, sys, time
    from pathlib import Path
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call
    from agent_transcript.integrations.openai_agents import TranscriptRunHooks, TranscriptSession

    @function_tool
    def deploy(service: str) -> str:
        \"\"\"Deploy a service (takes a while).\"\"\"
        Path(sys.argv[2]).write_text("running")
        time.sleep(600)
        return "deployed"

    model = ScriptedModel([[assistant_message("Hello.")],
                           [function_call("deploy", {"service": "api"}, call_id="call_d")],
                           [assistant_message("Deployed.")]])
    agent = Agent(name="ops", instructions="Do it.", model=model, tools=[deploy])

    async def main():
        s = TranscriptSession(sys.argv[1])
        await Runner.run(agent, "hi", session=s, hooks=TranscriptRunHooks(s))
        await Runner.run(agent, "deploy the api", session=s, hooks=TranscriptRunHooks(s))

    asyncio.run(main())
""")


def test_a_kill_9_while_a_tool_runs_leaves_the_call_and_its_operation(tmp_path: Path) -> None:
    path, marker = tmp_path / "run.jsonl", tmp_path / "tool-running"
    kill_9_when(marker, [sys.executable, "-c", TOOL_THAT_HANGS, str(path), str(marker)], env=child_env())
    s = assert_checks_and_loads(path)
    items = [e.extra[EXTRA_KEY] for e in s.entries]  # everything added before the kill
    assert items[:3] == [{"role": "user", "content": "hi"}, items[1], {"role": "user", "content": "deploy the api"}]
    assert items[3:] == [{"type": "function_call", "id": "call_d", "call_id": "call_d", "name": "deploy",
                          "arguments": "{\"service\":\"api\"}"}]
    assert s.messages[:3] == [Message.user("hi"), Message.assistant("Hello."), Message.user("deploy the api")]
    [op] = s.pending_tool_operations()
    assert (op.call_id, op.tool, op.arguments, op.state) == ("call_d", "deploy", {"service": "api"}, "dispatched")
    [call] = s.unanswered_tool_calls()  # the call is in the conversation, not only in the operation
    assert (call.call_id, call.tool, call.message_id, call.operation) == ("call_d", "deploy", s.message_ids[3], op)
    with TranscriptSession(path) as t:  # and it opens as a session again, the history intact
        assert len(asyncio.run(t.get_items())) == 4


def test_a_run_killed_mid_tool_answered_then_resumed_by_the_sdk(tmp_path: Path) -> None:
    path, marker = tmp_path / "run.jsonl", tmp_path / "tool-running"
    kill_9_when(marker, [sys.executable, "-c", TOOL_THAT_HANGS, str(path), str(marker)], env=child_env())
    with Session.load(path) as s:
        [answer_id] = s.answer_unanswered_tool_calls()
        assert s.unanswered_tool_calls() == [] and s.pending_tool_operations() == []
        assert calls_and_outputs_pair(message_to_items_of(s))
    model = ScriptedModel([[assistant_message("The deploy may not have run; I will check.")]])
    agent = Agent(name="ops", instructions="Do it.", model=model, tools=[])

    async def resume() -> str:
        with TranscriptSession(path) as t:
            done = await Runner.run(agent, "did it deploy?", session=t, hooks=TranscriptRunHooks(t))
        return str(done.final_output)

    assert asyncio.run(resume()) == "The deploy may not have run; I will check."
    model.assert_complete()
    [sent] = inputs(model)
    assert calls_and_outputs_pair(sent)
    kinds = [(i.get("type"), i.get("call_id")) for i in sent]
    assert kinds[3:5] == [("function_call", "call_d"), ("function_call_output", "call_d")]
    assert sent[4]["output"] == INTERRUPTED and sent[-1] == {"role": "user", "content": "did it deploy?"}
    s = assert_checks_and_loads(path)
    assert s.unanswered_tool_calls() == [] and s.message_ids[4] == answer_id
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant", "tool", "user", "assistant"]


def message_to_items_of(s: Session) -> list[Any]:
    """The items a TranscriptSession would hand the SDK, read from a Session."""
    out: list[Any] = []
    for e in s.entries:
        out.extend([e.extra[EXTRA_KEY]] if EXTRA_KEY in e.extra else message_to_items(e.message))
    return out


SEEN_WHILE_RUNNING: list[list[Any]] = []


@function_tool
def look(city: str) -> str:
    """Look at a city (and at what the transcript holds meanwhile)."""
    peek = Session.peek(os.environ["AT_TEST_TRANSCRIPT"])
    SEEN_WHILE_RUNNING.append([e.payload.get(EXTRA_KEY) for e in peek.envelopes if e.type == "message"])
    return f"looked at {city}"


def parallel_script() -> list[Any]:
    return [
        [assistant_message("Looking at both.", item_id="msg-a"),
         function_call("look", {"city": "Paris"}, call_id="call_p"),
         function_call("look", {"city": "Rome"}, call_id="call_r")],
        [assistant_message("Both looked at.", item_id="msg-b")],
    ]


@pytest.mark.parametrize("streamed", [False, True])
def test_calls_are_in_the_file_before_their_tools_run_and_once_after_the_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool) -> None:
    async def run(session: Any, model: ScriptedModel, hooks: Any) -> tuple[str, list[Any]]:
        agent = agent_for(model, [look])
        if streamed:
            result = Runner.run_streamed(agent, "look at both", session=session, hooks=hooks)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, "look at both", session=session, hooks=hooks)
        return str(result.final_output), await session.get_items()

    path = tmp_path / "run.jsonl"
    monkeypatch.setenv("AT_TEST_TRANSCRIPT", str(path))
    sqlite_model, our_model = ScriptedModel(parallel_script()), ScriptedModel(parallel_script())
    sqlite = SQLiteSession("run", tmp_path / "run.db")
    try:
        expected = asyncio.run(run(sqlite, sqlite_model, None))
    finally:
        sqlite.close()
    SEEN_WHILE_RUNNING.clear()
    with TranscriptSession(path) as t:
        assert asyncio.run(run(t, our_model, TranscriptRunHooks(t))) == expected
    assert inputs(our_model) == inputs(sqlite_model)
    # Each tool saw the whole response, calls included, already in the file.
    assert len(SEEN_WHILE_RUNNING) == 2
    for seen in SEEN_WHILE_RUNNING:
        assert [i.get("call_id") or i.get("id") for i in seen] == [None, "msg-a", "call_p", "call_r"]
    s = assert_checks_and_loads(path)  # and each item is one line, once
    assert [e.extra[EXTRA_KEY] for e in s.entries] == expected[1]
    assert [e.type for e in s.events].count("message") == len(expected[1]) == 7
    assert calls_and_outputs_pair(expected[1]) and s.unanswered_tool_calls() == []


@function_tool(failure_error_function=None)
def boom() -> str:
    """A tool whose error ends the run."""
    raise RuntimeError("boom")


def test_an_item_written_early_by_a_failed_run_does_not_hide_a_later_one(tmp_path: Path) -> None:
    model = ScriptedModel([[assistant_message("Checking.", item_id="m1"), function_call("boom", {}, call_id="c1")],
                           [assistant_message("Checking.", item_id="m1")]])
    agent = agent_for(model, [boom])

    async def go(t: TranscriptSession) -> list[Any]:
        with pytest.raises(Exception, match="boom"):
            await Runner.run(agent, "first", session=t, hooks=TranscriptRunHooks(t))
        await Runner.run(agent, "second", session=t, hooks=TranscriptRunHooks(t))
        return await t.get_items()

    with TranscriptSession(tmp_path / "run.jsonl") as t:
        items = asyncio.run(go(t))
    # The failed run's response is in the file (the SDK never handed it over);
    # the second run's identical message is not taken for it.
    assert [i.get("content") if i.get("role") == "user" else i.get("call_id") or i.get("id") for i in items] == \
        ["first", "m1", "c1", "second", "m1"]


def test_the_early_write_and_the_sdk_hand_over_write_each_item_once(tmp_path: Path) -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}"}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}

    async def go(t: TranscriptSession) -> list[Any]:
        await t.add_items([ITEMS[0]])
        await t.write_model_output([reasoning, call])
        await t.write_model_output([call])  # again (a second tool of the response): nothing new
        # The SDK hands the turn over, the reasoning item's id dropped by its id policy.
        await t.add_items([{"type": "reasoning", "summary": []}, call, output])
        await t.write_model_output([call])  # a call the history holds is not written again
        return await t.get_items()

    with TranscriptSession(tmp_path / "run.jsonl") as t:
        assert asyncio.run(go(t)) == [ITEMS[0], reasoning, call, output]
    s = assert_checks_and_loads(tmp_path / "run.jsonl")
    assert [e.type for e in s.events].count("message") == 4


# -- compaction --------------------------------------------------------------------


class FakeResponses:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    async def compact(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return SimpleNamespace(usage=None, output=[
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"},
            {"role": "user", "content": "the summary so far"}])


def test_the_sdk_compaction_is_one_compaction_line_with_a_replacement(tmp_path: Path) -> None:
    async def compact(underlying: Any) -> tuple[list[Any], list[Any]]:
        fake = FakeResponses()
        client = SimpleNamespace(responses=fake)
        wrapped = OpenAIResponsesCompactionSession("run", underlying, client=client)  # type: ignore[arg-type]
        await wrapped.add_items(ITEMS)
        await wrapped.run_compaction({"force": True, "compaction_mode": "input"})
        return await wrapped.get_items(), fake.calls

    sqlite = SQLiteSession("run", tmp_path / "run.db")
    try:
        expected = asyncio.run(compact(sqlite))
    finally:
        sqlite.close()
    path = tmp_path / "run.jsonl"
    with TranscriptSession(path) as s:
        assert asyncio.run(compact(s)) == expected
        assert len(expected[0]) == 2
    loaded = assert_checks_and_loads(path)
    types = [e.type for e in loaded.events]
    assert types.count("compaction") == 1 and types.count("rewind") == 0
    compaction = next(e for e in loaded.events if e.type == "compaction")
    assert len(compaction.payload["replacement"]) == 2
    assert [e.extra[EXTRA_KEY] for e in loaded.entries] == expected[0]
    assert loaded.message_ids == [f"{compaction.id}:0", f"{compaction.id}:1"]
    with TranscriptSession(path) as s:
        assert asyncio.run(s.get_items()) == expected[0]
        asyncio.run(s.add_items(ITEMS[:1]))
        assert asyncio.run(s.get_items()) == [*expected[0], ITEMS[0]]
        assert asyncio.run(s.pop_item()) == ITEMS[0]
        assert asyncio.run(s.pop_item()) == expected[0][1]
        assert asyncio.run(s.get_items()) == expected[0][:1]
    assert_checks_and_loads(path)
