"""TranscriptSessionService against real Google ADK, offline.

ADK's own services are the oracles: InMemorySessionService, and the
SqliteSessionService that ``adk web`` keeps sessions in. The same calls, or the
same Runner runs with a scripted model, go through each, and each must hand
back the same sessions and send the model the same requests.
"""

from __future__ import annotations

import asyncio
import json
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 11):
    pytest.skip("google-adk needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("google.adk", reason="the google-adk extra is not installed")

from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from google.adk.errors.already_exists_error import AlreadyExistsError  # noqa: E402
from google.adk.errors.session_not_found_error import SessionNotFoundError  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions, EventCompaction  # noqa: E402
from google.adk.sessions import BaseSessionService, InMemorySessionService  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.genai import types  # noqa: E402

from agent_transcript import INTERRUPTED, Message, Session, SessionLocked  # noqa: E402
from agent_transcript.integrations.google_adk import (  # noqa: E402
    EXTRA_KEY,
    TranscriptSessionService,
    event_to_messages,
)

from ._helpers import assert_checks_and_loads, kill_9_when  # noqa: E402

SCRIPTED_MODEL = '''
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types


class ScriptedLlm(BaseLlm):
    """A model that answers from a script and records the contents it was sent."""

    script: list = []
    requests: list = []

    async def generate_content_async(self, llm_request, stream=False):
        self.requests.append([c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents])
        yield self.script.pop(0)


def call(name, **args):
    return LlmResponse(content=types.Content(role="model", parts=[types.Part.from_function_call(name=name, args=args)]))


def say(text):
    return LlmResponse(content=types.Content(role="model", parts=[types.Part.from_text(text=text)]))


def user(text):
    return types.Content(role="user", parts=[types.Part.from_text(text=text)])


async def turn(runner, session_id, text, user_id="ann"):
    out = []
    async for event in runner.run_async(user_id=user_id, session_id=session_id, new_message=user(text)):
        if event.content and event.content.parts and event.content.parts[0].text:
            out.append(event.content.parts[0].text)
    return out
'''
_model_module: dict[str, Any] = {}
exec(SCRIPTED_MODEL, _model_module)  # the same classes in the child processes below
ScriptedLlm, call, say, turn = (_model_module[k] for k in ("ScriptedLlm", "call", "say", "turn"))
LlmAgent, Runner = _model_module["LlmAgent"], _model_module["Runner"]


def weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"sky": f"sunny in {city}"}


_RANDOM = re.compile(r"(adk-|e-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def same_shape(value: Any) -> Any:
    """A value as JSON, with the ids ADK draws at random numbered in order of
    appearance and the clock's readings left out."""
    text = json.dumps(value, sort_keys=True, default=str)
    seen: dict[str, str] = {}
    text = _RANDOM.sub(lambda m: seen.setdefault(m.group(0), f"id-{len(seen)}"), text)
    return re.sub(r'"(timestamp|last_update_time)": [0-9.e+]+', r'"\1": 0', text)


def dump(session: Any) -> dict[str, Any]:
    d: dict[str, Any] = session.model_dump(mode="json", exclude_none=True)
    return d


async def two_turns(service: BaseSessionService) -> tuple[Any, ...]:
    model = ScriptedLlm(model="scripted", script=[call("weather", city="Paris"), say("Sunny."), say("Still sunny.")],
                        requests=[])
    agent = LlmAgent(name="helper", model=model, tools=[weather], output_key="last_answer")
    runner = Runner(app_name="weather", agent=agent, session_service=service)
    s = await service.create_session(app_name="weather", user_id="ann", session_id="chat-1",
                                     state={"app:units": "metric", "user:name": "Ann", "mood": "calm",
                                            "temp:scratch": 1})
    first = await turn(runner, s.id, "weather in Paris?")
    second = await turn(runner, s.id, "and now?")
    got = await service.get_session(app_name="weather", user_id="ann", session_id="chat-1")
    listed = await service.list_sessions(app_name="weather", user_id="ann")
    return first, second, model.requests, dump(got), [dump(x) for x in listed.sessions]


def oracles(tmp_path: Path) -> list[BaseSessionService]:
    return [InMemorySessionService(), SqliteSessionService(str(tmp_path / "adk.db"))]


# -- real runs, as ADK's own services give them ------------------------------------------


def test_it_is_a_session_service_that_keeps_its_folder_private(tmp_path: Path) -> None:
    service = TranscriptSessionService(tmp_path / "s")
    assert isinstance(service, BaseSessionService)
    assert stat.S_IMODE((tmp_path / "s").stat().st_mode) == 0o700
    with pytest.raises(ValueError):
        TranscriptSessionService(tmp_path / "s", durability="sometimes")  # type: ignore[arg-type]


def test_runner_runs_see_what_they_see_over_adks_own_services(tmp_path: Path) -> None:
    with TranscriptSessionService(tmp_path / "ours") as ours:
        got = asyncio.run(two_turns(ours))
    assert got[:2] == (["Sunny."], ["Still sunny."])
    for oracle in oracles(tmp_path):
        expected = asyncio.run(two_turns(oracle))
        assert same_shape(got[2]) == same_shape(expected[2])  # the model was sent the same requests
        assert same_shape(got[3]) == same_shape(expected[3])  # get_session: the same events and state
        assert same_shape(got[4]) == same_shape(expected[4])  # list_sessions: the same
    assert got[3]["state"] == {"app:units": "metric", "user:name": "Ann", "mood": "calm", "last_answer": "Still sunny."}

    with TranscriptSessionService(tmp_path / "ours") as reopened:  # a new object: all from the files
        again = asyncio.run(reopened.get_session(app_name="weather", user_id="ann", session_id="chat-1"))
    assert again is not None and dump(again) == got[3]

    s = assert_checks_and_loads(tmp_path / "ours" / "weather" / "ann" / "chat-1.jsonl")
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    call_id = s.messages[1].tool_calls[0]["id"]  # type: ignore[index]
    assert s.messages[1].tool_calls == [{"id": call_id, "type": "function",
                                         "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]
    assert s.messages[2] == Message.tool(call_id, '{"sky": "sunny in Paris"}')
    assert [m.content for m in s.messages] == ["weather in Paris?", None, '{"sky": "sunny in Paris"}', "Sunny.",
                                               "and now?", "Still sunny."]
    assert [e.extra[EXTRA_KEY]["event"] for e in s.entries] == got[3]["events"]
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600
    for folder in (tmp_path / "ours" / "weather", tmp_path / "ours" / "weather" / "ann"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


# -- the service, call for call as ADK's ------------------------------------------------

CONTENTS = [
    None,
    types.Content(role="user", parts=[types.Part.from_text(text="hi ☃")]),
    types.Content(role="model", parts=[types.Part(text="hmm", thought=True), types.Part.from_text(text="Hello.")]),
    types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(id="k1", name="f", args={"x": 1})),
                                       types.Part(function_call=types.FunctionCall(id="k2", name="g", args={}))]),
    types.Content(role="user", parts=[
        types.Part(function_response=types.FunctionResponse(id="k1", name="f", response={"r": [1, 2]})),
        types.Part(function_response=types.FunctionResponse(id="k2", name="g", response={"error": "no"}))]),
    types.Content(role="user", parts=[types.Part.from_bytes(data=b"\x89PNG", mime_type="image/png"),
                                      types.Part.from_text(text="look")]),
]
DELTAS = [{}, {"a": 1}, {"a": None, "b": [1, {"c": "d"}]}, {"app:v": 2, "user:w": "x", "temp:t": 3, "s": True}]
#: The other fields of an event, and of its actions: every one comes back as it went in.
OTHERS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({"branch": "root.helper", "custom_metadata": {"k": [1, 2.5, None, "ü"]}, "model_version": "m-1",
      "turn_complete": True, "isolation_scope": "scope"},
     {"transfer_to_agent": "other", "escalate": True, "skip_summarization": True}),
    ({"error_code": "E42", "error_message": "boom", "finish_reason": types.FinishReason.STOP,
      "usage_metadata": types.GenerateContentResponseUsageMetadata(prompt_token_count=3, total_token_count=5)},
     {"artifact_delta": {"notes.txt": 2}, "end_of_agent": True}),
    ({"long_running_tool_ids": {"k2"}, "interrupted": True, "avg_logprobs": -0.25, "output": {"x": [1]}},
     {"agent_state": {"step": 3}, "transfer_reason": "because"}),
]


#: (app, user, session): "s1 " is "s1", as ADK strips a session id.
PLACES = [("app", "ann", "s1"), ("app", "ann", "s1 "), ("app", "ann", "S 2/ü"), ("app", "../c", ".."),
          ("Other App/x", "Bob", "s1")]


@st.composite
def call_sequences(draw: Any) -> list[tuple[Any, ...]]:
    """Creates, appends, reads, lists and deletes on two apps and three users."""
    steps: list[tuple[Any, ...]] = []
    clock = 1000.0
    for k in range(draw(st.integers(1, 14))):
        where = draw(st.sampled_from(PLACES))
        kind = draw(st.sampled_from(["create", "append", "append", "append", "get", "list", "delete", "user"]))
        if kind == "create":
            steps.append(("create", where, draw(st.sampled_from(DELTAS))))
        elif kind == "append":
            clock += draw(st.sampled_from([0.0, 0.5, 1.0]))
            steps.append(("append", where, k, clock, draw(st.integers(0, len(CONTENTS) - 1)),
                          draw(st.sampled_from(DELTAS)), draw(st.sampled_from([None, "inv-1", "inv-2"])),
                          draw(st.integers(0, len(OTHERS) - 1))))
        elif kind == "get":
            steps.append(("get", where, draw(st.sampled_from([None, 0, 1, 3])),
                          draw(st.sampled_from([None, 1000.5, 1002.0]))))
        elif kind == "list":
            steps.append(("list", where[0], draw(st.sampled_from([None, where[1]]))))
        else:
            steps.append((kind, where))
    return steps


async def play(service: BaseSessionService, steps: list[tuple[Any, ...]]) -> list[Any]:
    seen: list[Any] = []
    for step in steps:
        kind, where = step[0], step[1]
        try:
            if kind == "create":
                s = await service.create_session(app_name=where[0], user_id=where[1], session_id=where[2],
                                                 state=dict(step[2]))
                seen.append(("created", s.id, s.state, s.events))
            elif kind == "append":
                _, _, k, clock, content, delta, invocation, other = step
                fields, actions = OTHERS[other]
                s = await service.get_session(app_name=where[0], user_id=where[1], session_id=where[2])
                if s is None:
                    seen.append("no session")
                    continue
                event = Event(id=f"ev-{k}", invocation_id=invocation or f"inv-{k}", author="helper",
                              timestamp=clock, content=CONTENTS[content], **fields,
                              actions=EventActions(state_delta=dict(delta), **actions))
                await service.append_event(s, event)
                seen.append(("appended", s.state, [e.model_dump(mode="json", exclude_none=True) for e in s.events]))
            elif kind == "get":
                config = None if step[2] is None and step[3] is None else GetSessionConfig(
                    num_recent_events=step[2], after_timestamp=step[3])
                s = await service.get_session(app_name=where[0], user_id=where[1], session_id=where[2], config=config)
                seen.append(None if s is None else (s.id, s.state, [dump(e) for e in s.events]))
            elif kind == "list":
                listed = await service.list_sessions(app_name=step[1], user_id=step[2])
                seen.append([(x.id, x.user_id, x.state, x.events) for x in listed.sessions])
            elif kind == "delete":
                await service.delete_session(app_name=where[0], user_id=where[1], session_id=where[2])
            else:
                seen.append(await service.get_user_state(app_name=where[0], user_id=where[1]))
        except (AlreadyExistsError, SessionNotFoundError) as e:
            seen.append(type(e).__name__)
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=call_sequences())
@example(steps=[("create", PLACES[0], {}), ("append", PLACES[0], 1, 1000.0, 1, {}, None, 0),
                ("append", PLACES[0], 2, 1000.0, 2, {}, None, 0), ("get", PLACES[0], 3, None)])  # fewer than asked
def test_any_sequence_of_calls_gives_what_the_in_memory_service_gives(
        tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]]) -> None:
    d = tmp_path_factory.mktemp("calls")
    oracle = InMemorySessionService()
    expected = asyncio.run(play(oracle, steps))
    with TranscriptSessionService(d / "ours") as ours:
        assert asyncio.run(play(ours, steps)) == expected
    # Reopened, everything comes from the files; and the calls left without a
    # response are answered (none is long-running here: those stay open).
    reads = [s for s in steps if s[0] in ("list", "user")] + [("get", w, None, None) for w in {s[1] for s in steps}]
    with TranscriptSessionService(d / "ours") as reopened:
        got = asyncio.run(play(reopened, reads))
    assert [without_answers(x) for x in got] == asyncio.run(play(oracle, reads))
    for path in (d / "ours").rglob("*.jsonl"):
        with Session.load(path) as s:
            assert s.warnings == []


def without_answers(read: Any) -> Any:
    """A read with the events that answer interrupted calls taken out, after
    checking that each answers calls made, unanswered, before it."""
    if not (isinstance(read, tuple) and len(read) == 3 and isinstance(read[2], list)):
        return read
    kept: list[Any] = []
    for event in read[2]:
        responses = [p.get("function_response") for p in (event.get("content") or {}).get("parts", [])]
        if responses and all(r and r["response"] == {"result": INTERRUPTED} for r in responses):
            made = [p["function_call"]["id"] for e in kept for p in (e.get("content") or {}).get("parts", [])
                    if "function_call" in p]
            assert {r["id"] for r in responses} <= set(made)
            assert not event["actions"]["state_delta"] and event["content"]["role"] == "user"
        else:
            kept.append(event)
    return (read[0], read[1], kept)


# -- ids and files -------------------------------------------------------------------------


def test_odd_ids_are_files_inside_the_folder(tmp_path: Path) -> None:
    async def go(service: TranscriptSessionService) -> Any:
        s = await service.create_session(app_name="../app", user_id="/etc", session_id="../../x")
        await service.append_event(s, Event(author="user", content=CONTENTS[1]))
        return await service.get_session(app_name="../app", user_id="/etc", session_id="../../x")

    with TranscriptSessionService(tmp_path / "f") as service:
        s = asyncio.run(go(service))
        with pytest.raises(TypeError, match="session_id must be a str"):
            asyncio.run(service.get_session(app_name="a", user_id="u", session_id=7))  # type: ignore[arg-type]
    assert s is not None and [e.content for e in s.events] == [CONTENTS[1]]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].is_relative_to(tmp_path / "f")
    assert all(not part.startswith(".") for part in files[0].relative_to(tmp_path / "f").parts)


def test_a_create_killed_before_its_first_line_left_no_session(tmp_path: Path) -> None:
    with TranscriptSessionService(tmp_path) as service:
        path = service.transcript_path("a", "u", "s")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)  # what a kill inside create_session leaves: the file, no line
        assert asyncio.run(service.get_session(app_name="a", user_id="u", session_id="s")) is None
        assert asyncio.run(service.list_sessions(app_name="a", user_id="u")).sessions == []
        s = asyncio.run(service.create_session(app_name="a", user_id="u", session_id="s"))
        asyncio.run(service.append_event(s, Event(author="user", content=CONTENTS[1])))
        got = asyncio.run(service.get_session(app_name="a", user_id="u", session_id="s"))
    assert got is not None and [e.content for e in got.events] == [CONTENTS[1]]


def test_a_session_is_locked_while_the_service_holds_it(tmp_path: Path) -> None:
    service = TranscriptSessionService(tmp_path)
    s = asyncio.run(service.create_session(app_name="a", user_id="u", session_id="s"))
    with pytest.raises(SessionLocked):
        Session.load(tmp_path / "a" / "u" / "s.jsonl")
    service.close_session(app_name="a", user_id="u", session_id="s")
    with Session.load(tmp_path / "a" / "u" / "s.jsonl") as held:
        assert held.messages == []
    asyncio.run(service.append_event(s, Event(author="user", content=CONTENTS[1])))
    with pytest.raises(AlreadyExistsError):
        asyncio.run(service.create_session(app_name="a", user_id="u", session_id="s"))
    service.close()
    service.close()
    assert [m.role for m in assert_checks_and_loads(tmp_path / "a" / "u" / "s.jsonl").messages] == ["user"]


def test_events_project_onto_chat_messages() -> None:
    def rows(content: types.Content | None) -> list[tuple[Message, dict[str, Any]]]:
        return event_to_messages(Event(author="x", content=content).model_dump(mode="json", exclude_none=True))

    assert rows(None) == []
    assert rows(CONTENTS[2]) == [(Message.assistant("Hello."), {"thinking": "hmm"})]
    assert [m.tool_call_id for m, _ in rows(CONTENTS[4])] == ["k1", "k2"]
    assert rows(CONTENTS[5]) == [(Message.user("[inline_data: image/png]look"), {})]


# -- rewind and compaction -------------------------------------------------------------------


async def rewound(service: BaseSessionService) -> tuple[Any, ...]:
    model = ScriptedLlm(model="scripted", script=[say("One."), say("Two."), say("Three.")], requests=[])
    runner = Runner(app_name="app", agent=LlmAgent(name="helper", model=model, output_key="said"),
                    session_service=service)
    await service.create_session(app_name="app", user_id="ann", session_id="s")
    await turn(runner, "s", "first")
    await turn(runner, "s", "second")
    s = await service.get_session(app_name="app", user_id="ann", session_id="s")
    assert s is not None
    await runner.rewind_async(user_id="ann", session_id="s", rewind_before_invocation_id=s.events[-1].invocation_id)
    await turn(runner, "s", "again")
    got = await service.get_session(app_name="app", user_id="ann", session_id="s")
    return model.requests, dump(got)


def test_a_rewind_is_the_transcripts_rewind(tmp_path: Path) -> None:
    expected = asyncio.run(rewound(InMemorySessionService()))
    with TranscriptSessionService(tmp_path) as ours:
        got = asyncio.run(rewound(ours))
    assert same_shape(got) == same_shape(expected)
    assert got[1]["state"] == {"said": "Three."}
    s = assert_checks_and_loads(tmp_path / "app" / "ann" / "s.jsonl")
    assert [m.content for m in s.messages] == ["first", "One.", "again", "Three."]  # what the model was sent
    assert [e.type for e in s.events].count("rewind") == 1


def test_a_compaction_is_the_transcripts_compaction(tmp_path: Path) -> None:
    async def go(service: BaseSessionService) -> Any:
        s = await service.create_session(app_name="app", user_id="ann", session_id="s")
        for k, text in enumerate(["a", "b", "c", "d"]):
            role = "user" if k % 2 == 0 else "model"
            await service.append_event(s, Event(id=f"e{k}", invocation_id=f"i{k // 2}", author=role,
                                                timestamp=100.0 + k,
                                                content=types.Content(role=role, parts=[types.Part(text=text)])))
        summary = types.Content(role="model", parts=[types.Part(text="a and b, briefly")])
        await service.append_event(s, Event(id="c", invocation_id="i9", author="user", timestamp=104.0, actions=EventActions(
            compaction=EventCompaction(start_timestamp=100.0, end_timestamp=101.0, compacted_content=summary))))
        return dump(await service.get_session(app_name="app", user_id="ann", session_id="s"))

    expected = asyncio.run(go(InMemorySessionService()))
    with TranscriptSessionService(tmp_path) as ours:
        assert asyncio.run(go(ours)) == expected
    s = assert_checks_and_loads(tmp_path / "app" / "ann" / "s.jsonl")
    assert s.messages == [Message.user("a and b, briefly"), Message.user("c"), Message.assistant("d")]


# -- other processes ------------------------------------------------------------------------

RUN = SCRIPTED_MODEL + textwrap.dedent('''
    import asyncio, sys, time
    from pathlib import Path
    from agent_transcript.integrations.google_adk import TranscriptSessionService

    def weather(city: str) -> dict:
        """The weather in a city."""
        if city == "Hang":
            Path(sys.argv[2]).write_text("running")
            time.sleep(600)
        return {"sky": f"sunny in {city}"}

    async def main():
        service = TranscriptSessionService(sys.argv[1])
        model = ScriptedLlm(model="scripted", script=[call("weather", city="Paris"), say("Sunny."),
                                                      call("weather", city="Hang")])
        runner = Runner(app_name="weather", agent=LlmAgent(name="helper", model=model, tools=[weather]),
                        session_service=service)
        await service.create_session(app_name="weather", user_id="ann", session_id="chat-1", state={"user:n": 1})
        print(await turn(runner, "chat-1", "weather in Paris?"), flush=True)
        if len(sys.argv) > 2:
            await turn(runner, "chat-1", "and in Hang?")

    asyncio.run(main())
''')


def test_a_session_written_by_another_process_is_continued(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['Sunny.']"

    async def second() -> tuple[Any, ...]:
        model = ScriptedLlm(model="scripted", script=[say("Still sunny.")], requests=[])
        with TranscriptSessionService(tmp_path) as service:
            runner = Runner(app_name="weather", agent=LlmAgent(name="helper", model=model, tools=[weather]),
                            session_service=service)
            out = await turn(runner, "chat-1", "and now?")
            return out, model.requests, await service.get_session(app_name="weather", user_id="ann",
                                                                   session_id="chat-1")

    out, requests, s = asyncio.run(second())
    assert out == ["Still sunny."]
    assert [c["role"] for c in requests[0]] == ["user", "model", "user", "model", "user"]
    assert s.state == {"user:n": 1} and len(s.events) == 6
    assert_checks_and_loads(tmp_path / "weather" / "ann" / "chat-1.jsonl")


def test_a_run_killed_mid_tool_is_continued_by_the_next_runner(tmp_path: Path) -> None:
    marker = tmp_path / "tool-running"
    kill_9_when(marker, [sys.executable, "-c", RUN, str(tmp_path / "f"), str(marker)])
    path = tmp_path / "f" / "weather" / "ann" / "chat-1.jsonl"
    s = assert_checks_and_loads(path)  # the call is there, and nothing answers it
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    [hanging] = s.unanswered_tool_calls()
    assert hanging.tool == "weather" and json.loads(hanging.arguments) == {"city": "Hang"}

    async def next_run(prompt: str, answer: str) -> tuple[list[Any], Any]:
        model = ScriptedLlm(model="scripted", script=[say(answer)], requests=[])
        with TranscriptSessionService(tmp_path / "f") as service:
            runner = Runner(app_name="weather", agent=LlmAgent(name="helper", model=model, tools=[weather]),
                            session_service=service)
            assert await turn(runner, "chat-1", prompt) == [answer]
            return model.requests[0], await service.get_session(app_name="weather", user_id="ann",
                                                                session_id="chat-1")

    sent, session = asyncio.run(next_run("are you there?", "Yes."))
    # The model is sent the call, then its answer (it was interrupted), then the new prompt.
    assert [c["role"] for c in sent] == ["user", "model", "user", "model", "user", "model", "user", "user"]
    assert sent[5]["parts"][0]["function_call"]["name"] == "weather"
    response = sent[6]["parts"][0]["function_response"]
    assert (response["name"], response["response"]) == ("weather", {"result": INTERRUPTED})
    answer = session.events[6]
    assert answer.content.role == "user" and answer.author == "helper"
    assert answer.invocation_id == session.events[5].invocation_id

    again, _ = asyncio.run(next_run("still?", "Still."))  # answered once: the next run adds no answer
    assert [c["role"] for c in again] == [c["role"] for c in sent] + ["model", "user"]
    s = assert_checks_and_loads(path)
    assert s.unanswered_tool_calls() == []
    assert [m.content for m in s.messages if m.tool_call_id == hanging.call_id] == [INTERRUPTED]
    assert [m.content for m in s.messages][-5:] == [INTERRUPTED, "are you there?", "Yes.", "still?", "Still."]
