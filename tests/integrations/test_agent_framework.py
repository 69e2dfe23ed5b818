"""TranscriptHistoryProvider against the real Microsoft Agent Framework, offline.

The framework's own FileHistoryProvider is the oracle: the same calls, or the
same agent runs with a scripted chat client, go through both, and each must
hand back the same history and send the model the same messages.
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
    pytest.skip("agent-framework-core needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("agent_framework", reason="the agent-framework extra is not installed")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from agent_framework import (  # noqa: E402
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FileHistoryProvider,
    FunctionInvocationLayer,
    HistoryProvider,
    Message as AfMessage,
    tool,
)

from agent_transcript import INTERRUPTED, Message, Session, SessionLocked  # noqa: E402
from agent_transcript.integrations.agent_framework import (  # noqa: E402
    EXTRA_KEY,
    TranscriptHistoryProvider,
    chat_to_message,
    transcript_name,
)

from ._helpers import assert_checks_and_loads, kill_9_when  # noqa: E402

# The FileHistoryProvider is experimental; the framework says so in a warning.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[FILE_HISTORY\] FileHistoryProvider is experimental:FutureWarning")

SCRIPTED_CLIENT = '''
from agent_framework import BaseChatClient, ChatMiddlewareLayer, ChatResponse, FunctionInvocationLayer


class ScriptedClient(FunctionInvocationLayer, ChatMiddlewareLayer, BaseChatClient):
    """A chat client that answers from a script and records what it was sent."""

    def __init__(self, script):
        super().__init__()
        self.script = list(script)
        self.calls = []

    async def _inner_get_response(self, *, messages, stream, options, **kwargs):
        self.calls.append([m.to_dict() for m in messages])
        return ChatResponse(messages=[self.script.pop(0)])
'''
_client_module: dict[str, Any] = {}
exec(SCRIPTED_CLIENT, _client_module)  # the same class in the child processes below
ScriptedClient = _client_module["ScriptedClient"]


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def call(call_id: str, city: str) -> Content:
    return Content.from_function_call(call_id, "weather", arguments={"city": city})


def weather_script() -> list[AfMessage]:
    """Two calls in one response, the answer, then a second turn's answer."""
    return [AfMessage("assistant", [call("c1", "Paris"), call("c2", "Rome")]),
            AfMessage("assistant", [Content.from_text_reasoning(text="both sunny"), Content.from_text("Sunny.")]),
            AfMessage("assistant", ["Still sunny."])]


_RANDOM_ID = re.compile(r"af-call-[0-9a-f]{32}")


def same_shape(value: Any) -> str:
    """A history as JSON, with what differs by design between two runs made
    alike: the ids the framework draws at random, and which provider loaded it."""
    text = json.dumps(value, sort_keys=True)
    seen: dict[str, str] = {}
    text = _RANDOM_ID.sub(lambda m: seen.setdefault(m.group(0), f"id-{len(seen)}"), text)
    return (text.replace('"TranscriptHistoryProvider"', '"FileHistoryProvider"')
            .replace(f'"{TranscriptHistoryProvider.DEFAULT_SOURCE_ID}"', f'"{FileHistoryProvider.DEFAULT_SOURCE_ID}"'))


def dicts(messages: list[AfMessage]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


async def two_turns(provider: HistoryProvider, *, per_call: bool) -> tuple[Any, ...]:
    client = ScriptedClient(weather_script())
    agent = Agent(client, instructions="Answer briefly.", tools=[weather], context_providers=[provider],
                  require_per_service_call_history_persistence=per_call)
    session = agent.create_session(session_id="chat-1")
    first = await agent.run("weather in Paris and Rome?", session=session)
    second = await agent.run("and now?", session=session)
    history = await provider.get_messages("chat-1")
    return first.text, second.text, client.calls, dicts(history)


# -- the provider, call for call as the framework's ---------------------------------


def test_it_is_a_history_provider_that_keeps_its_options(tmp_path: Path) -> None:
    p = TranscriptHistoryProvider(tmp_path / "h", source_id="mine", store_inputs=False, skip_excluded=True)
    assert isinstance(p, HistoryProvider)
    assert (p.source_id, p.store_inputs, p.load_messages, p.skip_excluded) == ("mine", False, True, True)
    assert TranscriptHistoryProvider(tmp_path / "h").source_id == "agent_transcript"
    assert stat.S_IMODE((tmp_path / "h").stat().st_mode) == 0o700
    with pytest.raises(ValueError):
        TranscriptHistoryProvider(tmp_path / "h", durability="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("per_call", [False, True], ids=["saved-after-the-run", "saved-after-each-model-call"])
def test_agent_runs_see_what_they_see_over_the_file_history_provider(tmp_path: Path, per_call: bool) -> None:
    expected = asyncio.run(two_turns(FileHistoryProvider(tmp_path / "file"), per_call=per_call))
    with TranscriptHistoryProvider(tmp_path / "ours") as ours:
        got = asyncio.run(two_turns(ours, per_call=per_call))
    assert got[:2] == expected[:2] == ("Sunny.", "Still sunny.")
    assert same_shape(got[2]) == same_shape(expected[2])  # the model was sent the same messages
    assert same_shape(got[3]) == same_shape(expected[3])  # and the stored history is the same
    reopened = TranscriptHistoryProvider(tmp_path / "ours")  # a new object: all from the file
    assert dicts(asyncio.run(reopened.get_messages("chat-1"))) == got[3]
    reopened.close()

    s = assert_checks_and_loads(tmp_path / "ours" / "chat-1.jsonl")
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    assert s.messages[1].tool_calls == [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}]
    assert s.messages[2:5] == [Message.tool("c1", "sunny in Paris"), Message.tool("c2", "sunny in Rome"),
                               Message.assistant("Sunny.")]
    assert s.entries[4].extra["thinking"] == "both sunny"
    assert s.entries[3].extra[EXTRA_KEY] == {"part": 1}  # the second result of one tool message
    assert [e.extra[EXTRA_KEY]["message"] for e in s.entries if "message" in e.extra[EXTRA_KEY]] == got[3]
    assert s.meta == {EXTRA_KEY: {"session-id": "chat-1", "source-id": "agent_transcript"}}
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600


POOL = [
    AfMessage("system", ["You are terse."]),
    AfMessage("user", ["hi"]),
    AfMessage("user", ["hi"], message_id="u-1"),
    AfMessage("assistant", ["Hello."], message_id="a-1"),
    AfMessage("assistant", [Content.from_text("Let me look."), call("k1", "Oslo")]),
    AfMessage("tool", [Content.from_function_result("k1", result="cold in Oslo")]),
    AfMessage("tool", [Content.from_function_result("k2", result={"temp": -3, "sky": "clear"})]),
    AfMessage("user", ["look", Content.from_uri("https://example.com/a.png", media_type="image/png")]),
    AfMessage("assistant", [Content.from_text_reasoning(text="hmm"), Content.from_text("Done.")],
              additional_properties={"note": "kept"}),
    AfMessage("user", ["naïve ☃ \u2028"], author_name="ann"),
]


@st.composite
def call_sequences(draw: Any) -> list[tuple[str, Any]]:
    """Saves and reads on two sessions: new messages, and replays of the
    history's tail (what the framework does when it hands back what it loaded)."""
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 8))):
        sid = draw(st.sampled_from(["s1", "S/2 ü"]))
        kind = draw(st.sampled_from(["save", "save", "replay", "get"]))
        if kind == "save":
            steps.append(("save", (sid, draw(st.lists(st.integers(0, len(POOL) - 1), min_size=0, max_size=4)))))
        elif kind == "replay":
            steps.append(("replay", (sid, draw(st.integers(0, 6)), draw(st.lists(st.integers(0, len(POOL) - 1),
                                                                                  max_size=2)))))
        else:
            steps.append(("get", sid))
    return steps


async def play(provider: HistoryProvider, steps: list[tuple[str, Any]]) -> list[Any]:
    seen: list[Any] = []
    for kind, arg in steps:
        if kind == "save":
            sid, picks = arg
            await provider.save_messages(sid, [POOL[i] for i in picks])
        elif kind == "replay":
            sid, n, picks = arg
            stored = await provider.get_messages(sid)
            await provider.save_messages(sid, stored[len(stored) - min(n, len(stored)):] + [POOL[i] for i in picks])
        else:
            seen.append(dicts(await provider.get_messages(arg)))
    seen.append([dicts(await provider.get_messages(sid)) for sid in ("s1", "S/2 ü")])
    return seen


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=call_sequences())
def test_any_sequence_of_saves_and_reads_gives_what_the_file_history_provider_gives(
        tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, Any]]) -> None:
    d = tmp_path_factory.mktemp("calls")
    expected = asyncio.run(play(FileHistoryProvider(d / "file"), steps))
    with TranscriptHistoryProvider(d / "ours") as ours:
        assert asyncio.run(play(ours, steps)) == expected
    with TranscriptHistoryProvider(d / "ours") as reopened:
        assert [dicts(asyncio.run(reopened.get_messages(sid))) for sid in ("s1", "S/2 ü")] == expected[-1]
    for path in (d / "ours").glob("*.jsonl"):
        with Session.load(path) as s:  # (check runs on these files in the tests above)
            assert s.warnings == []


def test_reading_a_session_never_saved_gives_nothing_and_creates_nothing(tmp_path: Path) -> None:
    with TranscriptHistoryProvider(tmp_path) as p:
        assert asyncio.run(p.get_messages("nobody")) == []
        assert asyncio.run(p.get_messages(None)) == []
        asyncio.run(p.save_messages("nobody", []))
    assert list(tmp_path.iterdir()) == []


def test_skip_excluded_leaves_out_what_a_compaction_marked(tmp_path: Path) -> None:
    marked = AfMessage("user", ["old"], additional_properties={"_excluded": True})
    for cls in (FileHistoryProvider, TranscriptHistoryProvider):
        p = cls(tmp_path / cls.__name__, skip_excluded=True)
        asyncio.run(p.save_messages("s", [marked, AfMessage("user", ["new"])]))
        assert [m.text for m in asyncio.run(p.get_messages("s"))] == ["new"]
        if isinstance(p, TranscriptHistoryProvider):
            p.close()


# -- file names ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=120), st.text(alphabet="aA~-_.0sh256c/", max_size=90)),
                min_size=2, max_size=6, unique=True))
def test_distinct_session_ids_get_distinct_safe_names_on_any_file_system(ids: list[str]) -> None:
    names = [transcript_name(i) for i in ids]
    folded = {n.casefold() for n in names}
    assert len(folded) == len(ids)  # distinct even where case is folded
    for n in names:
        assert n and len(n) + len(".jsonl") <= 255 and n.isascii()
        assert "/" not in n and "\0" not in n and not n.startswith(".") and n == n.lower()
    # an encoded name, taken as an id, is not a name of its own (no id is named like another's encoding)
    for i, n in zip(ids, names):
        assert transcript_name(n) != n or n == i


def test_names_for_odd_ids() -> None:
    assert transcript_name("chat-1") == "chat-1"
    assert transcript_name("Chat-1") != transcript_name("chat-1")
    assert transcript_name("../etc/passwd").startswith("~")
    assert transcript_name(None) == "~-none" != transcript_name("~-none")
    long_one = transcript_name("x" * 500)
    assert long_one.startswith("~sha256-") and transcript_name("x" * 501) != long_one


def test_an_odd_session_id_is_one_file_in_the_folder(tmp_path: Path) -> None:
    with TranscriptHistoryProvider(tmp_path) as p:
        asyncio.run(p.save_messages("../user 7/Chat", [AfMessage("user", ["hi"])]))
        asyncio.run(p.save_messages(None, [AfMessage("user", ["no id"])]))
    names = sorted(x.name for x in tmp_path.iterdir())
    assert names == sorted([transcript_name("../user 7/Chat") + ".jsonl", "~-none.jsonl"])
    with TranscriptHistoryProvider(tmp_path) as p:
        assert [m.text for m in asyncio.run(p.get_messages("../user 7/Chat"))] == ["hi"]
        assert [m.text for m in asyncio.run(p.get_messages(None))] == ["no id"]


# -- the file ------------------------------------------------------------------------


def test_the_file_is_locked_while_the_provider_holds_it(tmp_path: Path) -> None:
    p = TranscriptHistoryProvider(tmp_path)
    asyncio.run(p.save_messages("s", [AfMessage("user", ["hi"])]))
    with pytest.raises(SessionLocked):
        Session.load(tmp_path / "s.jsonl")
    p.close_session("s")
    with Session.load(tmp_path / "s.jsonl") as s:  # let go; and the provider waits for it meanwhile
        assert s.messages == [Message.user("hi")]
    asyncio.run(p.save_messages("s", [AfMessage("assistant", ["hello"])]))
    p.close()
    p.close()
    assert [m.role for m in assert_checks_and_loads(tmp_path / "s.jsonl").messages] == ["user", "assistant"]


def test_a_torn_last_line_is_repaired_where_the_file_history_provider_cannot_read(tmp_path: Path) -> None:
    history = [AfMessage("user", ["hi"]), AfMessage("assistant", ["Hello."])]
    theirs = FileHistoryProvider(tmp_path / "file")
    asyncio.run(theirs.save_messages("s", history))
    with TranscriptHistoryProvider(tmp_path / "ours") as ours:
        asyncio.run(ours.save_messages("s", history))
    for path in (tmp_path / "file" / "s.jsonl", tmp_path / "ours" / "s.jsonl"):
        with path.open("ab") as f:
            f.write(b'{"id":"x","type":"message","payload":{"role":"us')  # a write cut short
    with pytest.raises(ValueError, match="Failed to deserialize history line 3"):
        asyncio.run(theirs.get_messages("s"))
    with TranscriptHistoryProvider(tmp_path / "ours") as ours:
        assert dicts(asyncio.run(ours.get_messages("s"))) == dicts(history)
        asyncio.run(ours.save_messages("s", [AfMessage("user", ["more"])]))
    assert len(assert_checks_and_loads(tmp_path / "ours" / "s.jsonl").messages) == 3


def test_lines_another_program_wrote_are_framework_messages(tmp_path: Path) -> None:
    with Session.create(tmp_path / "s.jsonl") as s:
        s.append_message(Message.system("Be brief."))
        s.append_message(Message.user("weather?"))
        s.append_message(Message.assistant(None, [{"id": "k", "type": "function",
                                                   "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]))
        s.append_message(Message.tool("k", "cold"))
        elided = s.append_message(Message.assistant("a very long answer"))
        s.append_elision([(elided, "[elided]")])
    with TranscriptHistoryProvider(tmp_path) as p:
        got = asyncio.run(p.get_messages("s"))
    assert [m.role for m in got] == ["system", "user", "assistant", "tool", "assistant"]
    fc, = got[2].contents
    assert (fc.type, fc.call_id, fc.name, fc.parse_arguments()) == ("function_call", "k", "weather", {"city": "Oslo"})
    fr, = got[3].contents
    assert (fr.type, fr.call_id, fr.result) == ("function_result", "k", "cold")
    assert got[4].text == "[elided]"
    assert chat_to_message(Message.user("hi")).to_dict() == AfMessage("user", ["hi"]).to_dict()


def test_an_elided_line_of_a_framework_message_reads_as_its_stub(tmp_path: Path) -> None:
    with TranscriptHistoryProvider(tmp_path) as p:
        asyncio.run(p.save_messages("s", [AfMessage("user", ["hi"]), AfMessage("assistant", ["secret"])]))
        p.close_session("s")
    with Session.load(tmp_path / "s.jsonl") as s:
        s.append_elision([(s.message_ids[1], "[redacted]")])
    with TranscriptHistoryProvider(tmp_path) as p:
        assert [m.text for m in asyncio.run(p.get_messages("s"))] == ["hi", "[redacted]"]


def test_a_message_cut_short_by_another_program_reads_as_what_is_live(tmp_path: Path) -> None:
    results = AfMessage("tool", [Content.from_function_result("c1", result="sunny in Paris"),
                                 Content.from_function_result("c2", result="sunny in Rome")])
    with TranscriptHistoryProvider(tmp_path) as p:
        asyncio.run(p.save_messages("s", [AfMessage("assistant", [call("c1", "Paris"), call("c2", "Rome")]),
                                          results]))
        assert dicts(asyncio.run(p.get_messages("s")))[1] == results.to_dict()
    with Session.load(tmp_path / "s.jsonl") as s:
        assert [m.tool_call_id for m in s.messages] == [None, "c1", "c2"]
        s.append_rewind(s.message_ids[1])  # the answer to c2 is undone; the one to c1 stays
    with TranscriptHistoryProvider(tmp_path) as p:
        got = asyncio.run(p.get_messages("s"))
    assert [(c.type, c.call_id, c.result) for c in got[1].contents] == [("function_result", "c1", "sunny in Paris")]


# -- other processes -------------------------------------------------------------------

FIRST_TURN = SCRIPTED_CLIENT + textwrap.dedent('''
    import asyncio, os, sys, time
    from pathlib import Path
    from agent_framework import Agent, AgentSession, Content, Message, tool
    from agent_transcript.integrations.agent_framework import TranscriptHistoryProvider

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        if city == "Hang":
            Path(sys.argv[2]).write_text("running")
            time.sleep(600)
        return f"sunny in {city}"

    script = [Message("assistant", [Content.from_function_call("c1", "weather", arguments={"city": "Paris"})]),
              Message("assistant", ["Sunny."]),
              Message("assistant", [Content.from_function_call("c9", "weather", arguments={"city": "Hang"})])]

    async def main():
        provider = TranscriptHistoryProvider(sys.argv[1])
        agent = Agent(ScriptedClient(script), instructions="Answer briefly.", tools=[weather],
                      context_providers=[provider], require_per_service_call_history_persistence=True)
        session = AgentSession(session_id="chat-1")
        print((await agent.run("weather in Paris?", session=session)).text, flush=True)
        if len(sys.argv) > 2:
            await agent.run("and in Hang?", session=session)

    asyncio.run(main())
''')


def test_a_session_saved_by_another_process_is_continued(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", FIRST_TURN, str(tmp_path / "ours")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Sunny."
    script = weather_script()
    expected = asyncio.run(two_turns(FileHistoryProvider(tmp_path / "file"), per_call=True))

    async def second() -> tuple[Any, ...]:
        client = ScriptedClient(script[2:])
        with TranscriptHistoryProvider(tmp_path / "ours") as p:
            agent = Agent(client, instructions="Answer briefly.", tools=[weather], context_providers=[p])
            out = await agent.run("and now?", session=agent.create_session(session_id="chat-1"))
            return out.text, client.calls, dicts(await p.get_messages("chat-1"))

    text, calls, history = asyncio.run(second())
    assert text == "Still sunny."
    # The first turn had one call where the oracle's had two; the second turn's
    # request is the first turn's history, then the new prompt, as the oracle's is.
    assert [m["role"] for m in calls[0]] == ["user", "assistant", "tool", "assistant", "user"]
    assert [m["role"] for m in history] == [m["role"] for m in expected[3]][:1] + ["assistant", "tool", "assistant",
                                                                                      "user", "assistant"]
    assert_checks_and_loads(tmp_path / "ours" / "chat-1.jsonl")


def test_a_kill_9_while_a_tool_runs_loses_nothing_that_was_saved(tmp_path: Path) -> None:
    folder, marker = tmp_path / "ours", tmp_path / "tool-running"
    kill_9_when(marker, [sys.executable, "-c", FIRST_TURN, str(folder), str(marker)])
    s = assert_checks_and_loads(folder / "chat-1.jsonl")
    # the first run whole, and the second up to the call its tool was running
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert s.messages[4] == Message.user("and in Hang?")
    assert s.messages[5].tool_calls is not None and s.messages[5].tool_calls[0]["id"] == "c9"
    with TranscriptHistoryProvider(folder) as provider:
        history = asyncio.run(provider.get_messages("chat-1"))
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert history[-1].contents[0].call_id == "c9"
    assert [e.extra[EXTRA_KEY]["message"] for e in s.entries] == dicts(history)

    # The next run answers the call the kill left hanging, once, in the file,
    # and the model is sent a conversation in which every call is answered.
    async def next_run(prompt: str, answer: str) -> list[Any]:
        client = ScriptedClient([AfMessage("assistant", [answer])])
        with TranscriptHistoryProvider(folder) as provider:
            agent = Agent(client, tools=[weather], context_providers=[provider],
                          require_per_service_call_history_persistence=True)
            await agent.run(prompt, session=agent.create_session(session_id="chat-1"))
        return client.calls[0]

    sent = asyncio.run(next_run("are you there?", "Yes."))
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "user"]
    assert sent[6]["contents"][0]["call_id"] == "c9" and sent[6]["contents"][0]["result"] == INTERRUPTED
    again = asyncio.run(next_run("still?", "Still."))  # answered once: the next run adds no answer
    assert [m["role"] for m in again] == [m["role"] for m in sent] + ["assistant", "user"]
    s = assert_checks_and_loads(folder / "chat-1.jsonl")
    assert s.unanswered_tool_calls() == []
    assert [m.content for m in s.messages if m.tool_call_id == "c9"] == [INTERRUPTED]



@tool(approval_mode="always_require")
def wire(amount: int) -> str:
    """Send money; a person approves it first."""
    return f"sent {amount}"


async def approved_in_a_second_process(make_provider: Any) -> tuple[list[Any], list[Any], str]:
    """A run that stops for an approval, then (a new provider object, as a new
    process has) a run with the approval."""
    script = [AfMessage("assistant", [Content.from_function_call("w1", "wire", arguments={"amount": 5})]),
              AfMessage("assistant", ["Sent."])]
    first = ScriptedClient(script[:1])
    provider = make_provider()
    agent = Agent(first, tools=[wire], context_providers=[provider])
    session = agent.create_session(session_id="pay")
    result = await agent.run("send 5", session=session)
    [request] = result.user_input_requests
    saved = session.to_dict()  # what the application keeps between the two requests
    if hasattr(provider, "close"):
        provider.close()
    second = ScriptedClient(script[1:])
    provider = make_provider()
    agent = Agent(second, tools=[wire], context_providers=[provider])
    done = await agent.run(AfMessage("user", [request.to_function_approval_response(True)]),
                           session=AgentSession.from_dict(saved))
    history = dicts(await provider.get_messages("pay"))
    if hasattr(provider, "close"):
        provider.close()
    return second.calls, history, done.text


def test_a_call_waiting_for_approval_is_left_to_the_approval(tmp_path: Path) -> None:
    expected = asyncio.run(approved_in_a_second_process(lambda: FileHistoryProvider(tmp_path / "file")))
    got = asyncio.run(approved_in_a_second_process(lambda: TranscriptHistoryProvider(tmp_path / "ours")))
    assert got[2] == expected[2] == "Sent."
    assert same_shape(got[0]) == same_shape(expected[0])
    assert same_shape(got[1]) == same_shape(expected[1])
    s = assert_checks_and_loads(tmp_path / "ours" / "pay.jsonl")
    assert s.unanswered_tool_calls() == []
    assert [m.content for m in s.messages if m.tool_call_id == "w1"] == ["sent 5"]
