"""TranscriptSessionRepository against real Strands Agents, offline.

Strands' own FileSessionManager is the oracle: the same calls, or the same
agent runs with a scripted model and real tools, go through both, and each
must hand back the same messages and agent records and send the model the
same conversation.
"""

from __future__ import annotations

import copy
import json
import re
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("strands", reason="the strands extra is not installed")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from strands import Agent, tool  # noqa: E402
from strands.agent.conversation_manager import SlidingWindowConversationManager  # noqa: E402
from strands.session import FileSessionManager, RepositorySessionManager, SessionRepository  # noqa: E402
from strands.types.exceptions import SessionException  # noqa: E402
from strands.types.session import Session as StrandsSession  # noqa: E402
from strands.types.session import SessionAgent, SessionMessage, SessionType  # noqa: E402

from agent_transcript import INTERRUPTED, Message, Session, SessionLocked  # noqa: E402
from agent_transcript.integrations.strands import (  # noqa: E402
    EXTRA_KEY,
    UPDATE_FACT,
    TranscriptSessionRepository,
)

from ._helpers import assert_checks_and_loads, kill_9_when  # noqa: E402

SCRIPTED_MODEL = '''
import copy, json
from strands.models.model import Model


class ScriptedModel(Model):
    """A model that answers from a script and records what it was sent.

    A turn is a list of parts: a str is a text block, a (call id, tool, input)
    tuple a tool call, a dict a raw stream event (a guardrail's redaction, say).
    """

    def __init__(self, script):
        self.script = list(script)
        self.calls = []

    def update_config(self, **model_config):
        pass

    def get_config(self):
        return {}

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError
        yield {}

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        self.calls.append(copy.deepcopy(messages))
        yield {"messageStart": {"role": "assistant"}}
        stop = "end_turn"
        for part in self.script.pop(0):
            if isinstance(part, str):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": part}}}
                yield {"contentBlockStop": {}}
            elif isinstance(part, dict):
                yield part
            else:
                call_id, name, arguments = part
                stop = "tool_use"
                yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": call_id, "name": name}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
                yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}
        yield {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                            "metrics": {"latencyMs": 1}}}
'''
_model_module: dict[str, Any] = {}
exec(SCRIPTED_MODEL, _model_module)  # the same class in the child processes below
ScriptedModel = _model_module["ScriptedModel"]


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_script() -> list[list[Any]]:
    """Two calls in one response, the answer, then a second turn's answer."""
    return [[("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})],
            ["Sunny."], ["Still sunny."]]


_TRACKING_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME_KEYS = ("created_at", "updated_at", "timeToFirstByteMs", "execution_time")


def same_shape(value: Any) -> str:
    """A value as JSON, without what differs by design between two runs made alike:
    the tracking ids Strands draws at random and the times things were written."""
    def drop_times(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: drop_times(x) for k, x in v.items() if k not in _TIME_KEYS}
        if isinstance(v, list):
            return [drop_times(x) for x in v]
        return v
    text = json.dumps(drop_times(value), sort_keys=True)
    seen: dict[str, str] = {}
    return _TRACKING_ID.sub(lambda m: seen.setdefault(m.group(0), f"id-{len(seen)}"), text)


def stored(repo: SessionRepository, session_id: str = "chat-1", agent_id: str = "main") -> list[dict[str, Any]]:
    return [m.to_dict() for m in repo.list_messages(session_id, agent_id)]


def two_turns(manager: RepositorySessionManager, script: list[list[Any]] | None = None) -> tuple[Any, ...]:
    model = ScriptedModel(weather_script() if script is None else script)
    agent = Agent(model=model, tools=[weather], session_manager=manager, callback_handler=None, agent_id="main",
                  conversation_manager=SlidingWindowConversationManager(window_size=4))
    first = agent("weather in Paris and Rome?")
    agent.state.set("cities", ["Paris", "Rome"])
    second = agent("and now?")
    return str(first), str(second), model.calls, agent.messages


# -- the repository, run for run as Strands' own ------------------------------------


def test_it_is_a_session_repository(tmp_path: Path) -> None:
    repo = TranscriptSessionRepository(tmp_path / "s")
    assert isinstance(repo, SessionRepository)
    assert stat.S_IMODE((tmp_path / "s").stat().st_mode) == 0o700
    with pytest.raises(ValueError, match="durability"):
        TranscriptSessionRepository(tmp_path / "s", durability="sometimes")  # type: ignore[arg-type]


def test_agent_runs_see_what_they_see_over_the_file_session_manager(tmp_path: Path) -> None:
    oracle = FileSessionManager("chat-1", storage_dir=str(tmp_path / "file"))
    expected = two_turns(oracle)
    repo = TranscriptSessionRepository(tmp_path / "ours")
    got = two_turns(RepositorySessionManager("chat-1", repo))
    assert got[:2] == expected[:2] == ("Sunny.\n", "Still sunny.\n")
    assert same_shape(got[2]) == same_shape(expected[2])  # the model was sent the same messages
    assert same_shape(got[3]) == same_shape(expected[3])  # the agent holds the same ones
    assert same_shape(stored(repo)) == same_shape(stored(oracle))  # and the same are stored
    ours, theirs = repo.read_agent("chat-1", "main"), oracle.read_agent("chat-1", "main")
    assert ours is not None and theirs is not None
    assert ours.state == theirs.state == {"cities": ["Paris", "Rome"]}
    assert ours.conversation_manager_state == theirs.conversation_manager_state
    assert ours.conversation_manager_state["removed_message_count"] > 0  # the window slid
    assert same_shape(ours._internal_state) == same_shape(theirs._internal_state)
    messages = stored(repo)
    repo.close()
    assert ours.created_at == stored_agent_created_at(tmp_path / "ours" / "chat-1.jsonl")

    reopened = TranscriptSessionRepository(tmp_path / "ours")  # a new object: all from the file
    assert stored(reopened) == messages
    assert reopened.read_message("chat-1", "main", 1).to_dict() == messages[1]  # type: ignore[union-attr]
    assert reopened.read_message("chat-1", "main", 99) is None
    assert reopened.list_messages("chat-1", "main", limit=2, offset=1) == \
        oracle_paged(messages, limit=2, offset=1)
    session = reopened.read_session("chat-1")
    assert session is not None and (session.session_id, session.session_type) == ("chat-1", SessionType.AGENT)
    reopened.close()

    s = assert_checks_and_loads(tmp_path / "ours" / "chat-1.jsonl")
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    assert s.messages[1].tool_calls == [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}]
    assert s.messages[2:5] == [Message.tool("c1", "sunny in Paris"), Message.tool("c2", "sunny in Rome"),
                               Message.assistant("Sunny.")]
    assert s.messages[0] == Message.user("weather in Paris and Rome?")
    assert s.entries[3].extra[EXTRA_KEY] == {"part": 1}  # the second result of one Strands message
    assert [e.extra[EXTRA_KEY]["message"] for e in s.entries if "message" in e.extra[EXTRA_KEY]] == messages
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600


def stored_agent_created_at(path: Path) -> str:
    """The created_at of the agent's first record: every later one keeps it."""
    with Session.load(path) as s:
        facts = [f for e in s.events if e.type == "run-context" for f in e.payload["facts"]]
    assert len({f[1]["created_at"] for f in facts}) == 1 and len(facts) > 1
    return str(facts[0][1]["created_at"])


def oracle_paged(messages: list[dict[str, Any]], *, limit: int, offset: int) -> list[SessionMessage]:
    return [SessionMessage.from_dict(m) for m in messages[offset:offset + limit]]


# -- call for call: any sequence ---------------------------------------------------

BLOCKS: list[dict[str, Any]] = [
    {"role": "user", "content": [{"text": "hi"}]},
    {"role": "assistant", "content": [{"text": "Let me look."},
                                      {"toolUse": {"toolUseId": "k1", "name": "weather", "input": {"city": "Oslo"}}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "k1", "status": "success",
                                                 "content": [{"text": "cold"}, {"json": {"t": -3}}]}}]},
    {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s"}}},
                                      {"text": "Done. naïve ☃ \u2028"}]},
    {"role": "user", "content": [{"text": "look"}, {"image": {"format": "png", "source": {"bytes": b"\x89PNG\0"}}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "k9", "status": "error", "content": []}},
                                 {"text": "and this"}]},
]


@st.composite
def call_sequences(draw: Any) -> list[tuple[Any, ...]]:
    """Messages created, updated (redacted), read and listed, on two agents of one session."""
    steps: list[tuple[Any, ...]] = []
    next_id = {"a": 0, "b": 0}
    for n in range(draw(st.integers(1, 12))):
        agent = draw(st.sampled_from(["a", "b"]))
        kind = draw(st.sampled_from(["create", "create", "create", "update", "read", "list", "state"]))
        when = f"2026-01-01T00:00:{n:02d}+00:00"
        if kind == "create":
            steps.append(("create", agent, next_id[agent], draw(st.integers(0, len(BLOCKS) - 1)), when))
            next_id[agent] += 1
        elif kind == "update":
            steps.append(("update", agent, draw(st.integers(0, max(next_id[agent] - 1, 0))),
                          draw(st.sampled_from(["[redacted]", "[User input redacted.]"])), when))
        elif kind == "read":
            steps.append(("read", agent, draw(st.integers(0, max(next_id[agent], 0)))))
        elif kind == "list":
            steps.append(("list", agent, draw(st.none() | st.integers(0, 4)), draw(st.integers(0, 5))))
        else:
            steps.append(("state", agent, draw(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
                          when))
    return steps


def play(repo: SessionRepository, steps: list[tuple[Any, ...]]) -> list[Any]:
    seen: list[Any] = []
    repo.create_session(StrandsSession("s", SessionType.AGENT, created_at="t0", updated_at="t0"))
    for agent in ("a", "b"):
        repo.create_agent("s", SessionAgent(agent, {}, {"removed_message_count": 0}, created_at="t0", updated_at="t0"))
    for step in steps:
        kind, agent = step[0], step[1]
        if kind == "create":
            _, _, mid, pick, when = step
            repo.create_message("s", agent, SessionMessage(copy.deepcopy(BLOCKS[pick]),
                                                           mid, created_at=when, updated_at=when))
        elif kind == "update":
            _, _, mid, text, when = step
            old = repo.read_message("s", agent, mid)
            try:
                if old is None:
                    repo.update_message("s", agent, SessionMessage({"role": "user", "content": []}, mid))
                else:
                    repo.update_message("s", agent, SessionMessage(
                        old.message, mid, redact_message={"role": old.message["role"], "content": [{"text": text}]},
                        created_at="ignored", updated_at=when))
                seen.append("updated")
            except SessionException as e:
                seen.append(str(e))
        elif kind == "read":
            m = repo.read_message("s", agent, step[2])
            seen.append(None if m is None else m.to_dict())
        elif kind == "list":
            seen.append([m.to_dict() for m in repo.list_messages("s", agent, limit=step[2], offset=step[3])])
        else:
            _, _, state, when = step
            repo.update_agent("s", SessionAgent(agent, state, {"removed_message_count": 1}, updated_at=when))
    seen.append(everything(repo))
    return seen


def everything(repo: SessionRepository) -> list[Any]:
    """Both agents' messages, then their records (reading a record of a reopened
    transcript may answer a call left unanswered: see the resume tests)."""
    out: list[Any] = [[m.to_dict() for m in repo.list_messages("s", agent)] for agent in ("a", "b")]
    for agent in ("a", "b"):
        record = repo.read_agent("s", agent)
        out.append(None if record is None else record.to_dict())
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=call_sequences())
def test_any_sequence_of_calls_gives_what_the_file_session_manager_gives(
        tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]]) -> None:
    d = tmp_path_factory.mktemp("calls")
    # (the manager creates its own session: one the steps do not use)
    expected = play(FileSessionManager("unused", storage_dir=str(d / "file")), steps)
    with TranscriptSessionRepository(d / "ours") as ours:
        assert play(ours, steps) == expected
    with TranscriptSessionRepository(d / "ours") as reopened:
        assert everything(reopened) == expected[-1]
    with Session.load(d / "ours" / "s.jsonl") as s:  # (check runs on these files in the tests above)
        assert s.warnings == []



# -- redaction -------------------------------------------------------------------------

REDACTED = {"redactContent": {"redactUserContentMessage": "[User input redacted.]"}}


def test_a_guardrails_redaction_is_an_elision_and_reads_as_strands_own(tmp_path: Path) -> None:
    script: list[list[Any]] = [[REDACTED, "I cannot help with that."]]

    def run(manager: RepositorySessionManager) -> list[Any]:
        model = ScriptedModel(script)
        agent = Agent(model=model, session_manager=manager, callback_handler=None, agent_id="main")
        agent("my card is 4111 1111 1111 1111")
        return agent.messages

    oracle = FileSessionManager("chat-1", storage_dir=str(tmp_path / "file"))
    expected = run(oracle)
    with TranscriptSessionRepository(tmp_path / "ours") as repo:
        got = run(RepositorySessionManager("chat-1", repo))
        assert same_shape(got) == same_shape(expected)
        assert same_shape(stored(repo)) == same_shape(stored(oracle))
        first = repo.read_message("chat-1", "main", 0)
        assert first is not None and first.redact_message == {"role": "user", "content": [
            {"text": "[User input redacted.]"}], "tracking_id": first.message["tracking_id"]}
        messages = stored(repo)
    with TranscriptSessionRepository(tmp_path / "ours") as reopened:
        assert stored(reopened) == messages
        assert reopened.read_message("chat-1", "main", 0).to_message()["content"] == [  # type: ignore[union-attr]
            {"text": "[User input redacted.]"}]

    path = tmp_path / "ours" / "chat-1.jsonl"
    s = assert_checks_and_loads(path)
    assert s.messages[0] == Message.user("[User input redacted.]") and s.entries[0].elided
    kinds = [e.type for e in s.events]
    assert kinds.count("elision") == 1
    update, = [f for e in s.events if e.type == "run-context" for f in e.payload["facts"] if f[0] == UPDATE_FACT]
    assert update[1]["message"] == messages[0]
    # never a rewrite: the message's own line is still there as it was written, before the elision
    assert "4111 1111 1111 1111" in s.events[2].payload["content"]
    assert kinds.index("elision") > 2


def test_a_redaction_of_another_programs_elision_reads_as_its_stub(tmp_path: Path) -> None:
    with TranscriptSessionRepository(tmp_path) as repo:
        two_turns(RepositorySessionManager("chat-1", repo))
    with Session.load(tmp_path / "chat-1.jsonl") as s:
        s.append_elision([(s.message_ids[4], "[gone]")])
    with TranscriptSessionRepository(tmp_path) as repo:
        m = repo.read_message("chat-1", "main", 3)
    assert m is not None and m.to_message() == {"role": "assistant", "content": [{"text": "[gone]"}]}
    assert m.message["content"] == [{"text": "Sunny."}]  # the message as it was, kept


# -- names, locks and other programs' lines -------------------------------------------


@pytest.mark.parametrize("odd", ["", ".hidden", "a/b", "../x", "a\0b", "é", "a b", "x" * 201, None, 7])
def test_an_odd_session_id_is_refused_and_nothing_is_created(tmp_path: Path, odd: Any) -> None:
    repo = TranscriptSessionRepository(tmp_path)
    with pytest.raises(ValueError, match="a session id is 1 to 200 letters"):
        repo.create_session(StrandsSession(odd, SessionType.AGENT))
    with pytest.raises(ValueError, match="a session id is 1 to 200 letters"):
        repo.read_session(odd)
    with pytest.raises(ValueError, match="a session id is 1 to 200 letters"):
        RepositorySessionManager(odd, repo)
    assert list(tmp_path.iterdir()) == []
    assert repo.read_session("chat.1_A-2") is None and list(tmp_path.iterdir()) == []


def test_a_file_that_holds_another_session_is_refused(tmp_path: Path) -> None:
    with TranscriptSessionRepository(tmp_path) as repo:
        repo.create_session(StrandsSession("chat", SessionType.AGENT))
    (tmp_path / "chat.jsonl").rename(tmp_path / "Chat.jsonl")  # as a case-folding file system shows it
    before = (tmp_path / "Chat.jsonl").read_bytes()
    with TranscriptSessionRepository(tmp_path) as repo, pytest.raises(ValueError, match="holds session 'chat'"):
        repo.read_session("Chat")
    assert (tmp_path / "Chat.jsonl").read_bytes() == before


def test_a_session_is_created_once(tmp_path: Path) -> None:
    with TranscriptSessionRepository(tmp_path) as repo:
        repo.create_session(StrandsSession("s", SessionType.AGENT))
        with pytest.raises(SessionException, match="Session s already exists"):
            repo.create_session(StrandsSession("s", SessionType.AGENT))
        with pytest.raises(SessionException, match="Session t does not exist"):
            repo.create_agent("t", SessionAgent("a", {}, {}))
        with pytest.raises(SessionException, match="Agent a in session s does not exist"):
            repo.update_agent("s", SessionAgent("a", {}, {}))
        with pytest.raises(SessionException, match="Messages directory missing"):
            repo.list_messages("s", "a")
        with pytest.raises(ValueError, match="message id must be an integer"):
            repo.read_message("s", "a", "0")  # type: ignore[arg-type]
    with TranscriptSessionRepository(tmp_path) as repo, pytest.raises(SessionException, match="already exists"):
        repo.create_session(StrandsSession("s", SessionType.AGENT))


def test_an_empty_file_left_by_a_create_killed_early_is_no_session(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").touch()
    with TranscriptSessionRepository(tmp_path) as repo:
        assert repo.read_session("s") is None
        RepositorySessionManager("s", repo)  # creates it
    assert assert_checks_and_loads(tmp_path / "s.jsonl").meta[EXTRA_KEY]["session"]["session_id"] == "s"


def test_the_file_is_locked_while_the_repository_holds_it(tmp_path: Path) -> None:
    repo = TranscriptSessionRepository(tmp_path)
    two_turns(RepositorySessionManager("chat-1", repo))
    started = time.monotonic()
    with pytest.raises(SessionLocked):
        TranscriptSessionRepository(tmp_path).read_session("chat-1")
    assert time.monotonic() - started >= 5  # it waited for the holder, as the other adapters do
    # A holder that lets go meanwhile: the other repository reads the session once it is free.
    threading.Timer(0.3, repo.close_session, ("chat-1",)).start()
    with TranscriptSessionRepository(tmp_path) as other:
        record = other.read_session("chat-1")
        assert record is not None and record.session_id == "chat-1"
    repo.close_session("chat-1")
    with Session.load(tmp_path / "chat-1.jsonl") as s:
        assert len(s.messages) == 7
    assert len(stored(repo)) == 6  # reopened when next used (two tool lines are one message)
    repo.close()
    repo.close()


def test_lines_another_program_wrote_are_strands_messages(tmp_path: Path) -> None:
    with TranscriptSessionRepository(tmp_path) as repo:
        repo.create_session(StrandsSession("s", SessionType.AGENT))
        repo.create_agent("s", SessionAgent("main", {}, {}))
        repo.create_message("s", "main", SessionMessage({"role": "user", "content": [{"text": "hi"}]}, 0))
    with Session.load(tmp_path / "s.jsonl") as s:
        s.append_message(Message.assistant("Let me look.", [
            {"id": "k", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]))
        s.append_message(Message.tool("k", "cold"))
        s.append_message(Message.system("not a Strands message"))
        s.append_message(Message.user("thanks"))
    with TranscriptSessionRepository(tmp_path) as repo:
        listed = repo.list_messages("s", "main")
    assert [m.message_id for m in listed] == [0, 1, 2, 3]
    with Session.load(tmp_path / "s.jsonl") as s:  # a message's tracking id: its line's id
        ids = s.message_ids
    assert [m.message.get("tracking_id", "").replace("-", "") for m in listed] == ["", ids[1], ids[2], ids[4]]
    got = [{k: v for k, v in m.message.items() if k != "tracking_id"} for m in listed]
    assert got == [{"role": "user", "content": [{"text": "hi"}]},
                   {"role": "assistant", "content": [{"text": "Let me look."}, {"toolUse": {
                       "toolUseId": "k", "name": "weather", "input": {"city": "Oslo"}}}]},
                   {"role": "user", "content": [{"toolResult": {"toolUseId": "k", "status": "error",
                                                                "content": [{"text": "cold"}]}}]},
                   {"role": "user", "content": [{"text": "thanks"}]}]


# -- other processes -------------------------------------------------------------------

FIRST_TURN = SCRIPTED_MODEL + textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from strands import Agent, tool
    from strands.session import FileSessionManager, RepositorySessionManager
    from agent_transcript.integrations.strands import TranscriptSessionRepository

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        if city == "Hang":
            Path(sys.argv[3]).write_text("running")
            time.sleep(600)
        return f"sunny in {city}"

    script = [[("c1", "weather", {"city": "Paris"})], ["Sunny."], [("c9", "weather", {"city": "Hang"})]]
    if sys.argv[1] == "file":
        manager = FileSessionManager("chat-1", storage_dir=sys.argv[2])
    else:
        manager = RepositorySessionManager("chat-1", TranscriptSessionRepository(sys.argv[2]))
    agent = Agent(model=ScriptedModel(script), tools=[weather], session_manager=manager,
                  callback_handler=None, agent_id="main")
    agent.state.set("turns", 1)
    print(str(agent("weather in Paris?")).strip(), flush=True)
    if len(sys.argv) > 3:
        agent("and in Hang?")
''')


def next_run(manager: RepositorySessionManager, prompt: str, answer: str) -> tuple[list[Any], Agent]:
    model = ScriptedModel([[answer]])
    agent = Agent(model=model, tools=[weather], session_manager=manager, callback_handler=None, agent_id="main")
    agent(prompt)
    return model.calls[0], agent


def test_a_session_saved_by_another_process_is_continued(tmp_path: Path) -> None:
    for store in ("file", "ours"):
        r = subprocess.run([sys.executable, "-c", FIRST_TURN, store, str(tmp_path / store)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "Sunny."
    oracle = FileSessionManager("chat-1", storage_dir=str(tmp_path / "file"))
    expected, _ = next_run(oracle, "and now?", "Still sunny.")
    with TranscriptSessionRepository(tmp_path / "ours") as repo:
        sent, agent = next_run(RepositorySessionManager("chat-1", repo), "and now?", "Still sunny.")
        assert agent.state.get("turns") == 1
        assert same_shape(stored(repo)) == same_shape(stored(oracle))
    assert same_shape(sent) == same_shape(expected)
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert_checks_and_loads(tmp_path / "ours" / "chat-1.jsonl")


def interrupted_text(value: Any) -> str:
    """A value's shape, with the two answers to an interrupted call (Strands' and ours) made one."""
    return same_shape(value).replace(json.dumps(INTERRUPTED), '"Tool was interrupted."')


def test_a_kill_9_while_a_tool_runs_is_answered_once_and_the_agent_goes_on(tmp_path: Path) -> None:
    for store in ("file", "ours"):
        marker = tmp_path / f"{store}-tool-running"
        kill_9_when(marker, [sys.executable, "-c", FIRST_TURN, store, str(tmp_path / store), str(marker)])
    path = tmp_path / "ours" / "chat-1.jsonl"
    s = assert_checks_and_loads(path)
    # the first turn whole, and the second up to the call its tool was running
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [c.call_id for c in s.unanswered_tool_calls()] == ["c9"]

    # Strands' own store: its agent appends "Tool was interrupted." when the next prompt arrives.
    oracle = FileSessionManager("chat-1", storage_dir=str(tmp_path / "file"))
    expected, _ = next_run(oracle, "are you there?", "Yes.")
    # Ours: restoring the agent answers the call, once, in the file, and Strands adds no second answer.
    with TranscriptSessionRepository(tmp_path / "ours") as repo:
        sent, _ = next_run(RepositorySessionManager("chat-1", repo), "are you there?", "Yes.")
        assert interrupted_text(stored(repo)) == interrupted_text(stored(oracle))
    assert interrupted_text(sent) == interrupted_text(expected)
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user", "assistant", "user",
                                         "user"]
    assert sent[6]["content"] == [{"toolResult": {"toolUseId": "c9", "status": "error",
                                                  "content": [{"text": INTERRUPTED}]}}]

    with TranscriptSessionRepository(tmp_path / "ours") as repo:  # answered once: the next run adds none
        again, _ = next_run(RepositorySessionManager("chat-1", repo), "still?", "Still.")
    assert again[:len(sent)] == sent and [m["role"] for m in again[len(sent):]] == ["assistant", "user"]
    s = assert_checks_and_loads(path)
    assert s.unanswered_tool_calls() == []
    assert [m.content for m in s.messages if m.tool_call_id == "c9"] == [INTERRUPTED]
    assert [e.type for e in s.events].count("tool-settled") == 0  # no operation was dispatched to settle


@tool(context=True)
def wire(amount: int, tool_context: Any) -> str:
    """Send money; a person approves it first."""
    if tool_context.interrupt("approve", reason={"amount": amount}) != "yes":
        return "not sent"
    return f"sent {amount}"


def approved_by_a_second_agent(make_manager: Any) -> tuple[list[Any], list[Any], str]:
    """A run that stops for a person's approval, then (a new agent and manager,
    as a new process has) the run with the approval."""
    first = ScriptedModel([[("w1", "wire", {"amount": 5})]])
    agent = Agent(model=first, tools=[wire], session_manager=make_manager(), callback_handler=None, agent_id="main")
    result = agent("send 5")
    assert result.stop_reason == "interrupt"
    interrupt, = result.interrupts
    second = ScriptedModel([["Sent."]])
    agent = Agent(model=second, tools=[wire], session_manager=make_manager(), callback_handler=None, agent_id="main")
    done = agent([{"interruptResponse": {"interruptId": interrupt.id, "response": "yes"}}])
    return second.calls, agent.messages, str(done)


def test_a_call_waiting_for_an_interrupts_response_is_left_to_it(tmp_path: Path) -> None:
    expected = approved_by_a_second_agent(lambda: FileSessionManager("pay", storage_dir=str(tmp_path / "file")))
    repos: list[TranscriptSessionRepository] = []

    def ours() -> RepositorySessionManager:
        if repos:
            repos[-1].close()
        repos.append(TranscriptSessionRepository(tmp_path / "ours"))
        return RepositorySessionManager("pay", repos[-1])

    got = approved_by_a_second_agent(ours)
    repos[-1].close()
    assert got[2] == expected[2] == "Sent.\n"
    assert same_shape(got[0]) == same_shape(expected[0])
    assert same_shape(got[1]) == same_shape(expected[1])
    s = assert_checks_and_loads(tmp_path / "ours" / "pay.jsonl")
    assert s.unanswered_tool_calls() == []
    assert [m.content for m in s.messages if m.tool_call_id == "w1"] == ["sent 5"]


@pytest.mark.filterwarnings("ignore:graph has no max_node_executions:UserWarning")
def test_a_graphs_state_is_kept_as_strands_keeps_it(tmp_path: Path) -> None:
    from strands.multiagent import GraphBuilder

    def run(manager: RepositorySessionManager) -> Any:
        builder = GraphBuilder()
        builder.add_node(Agent(model=ScriptedModel([["draft"]]), callback_handler=None, name="writer"), "writer")
        builder.add_node(Agent(model=ScriptedModel([["done"]]), callback_handler=None, name="reviewer"), "reviewer")
        builder.add_edge("writer", "reviewer")
        builder.set_session_manager(manager)
        graph = builder.build()
        assert str(graph("write a haiku").status) == "Status.COMPLETED"
        return graph.id

    oracle = FileSessionManager("g", storage_dir=str(tmp_path / "file"))
    graph_id = run(oracle)
    with TranscriptSessionRepository(tmp_path / "ours") as repo:
        assert run(RepositorySessionManager("g", repo)) == graph_id
        state = repo.read_multi_agent("g", graph_id)
        assert state is not None and same_shape(state) == same_shape(oracle.read_multi_agent("g", graph_id))
        assert sorted(state["completed_nodes"]) == ["reviewer", "writer"]  # (a set, listed)
        assert repo.read_multi_agent("g", "other") is None
    with TranscriptSessionRepository(tmp_path / "ours") as reopened:
        assert reopened.read_multi_agent("g", graph_id) == state
    s = assert_checks_and_loads(tmp_path / "ours" / "g.jsonl")
    assert s.messages == []  # a graph's nodes keep no session of their own here


def test_what_a_read_hands_back_is_the_callers_own(tmp_path: Path) -> None:
    with TranscriptSessionRepository(tmp_path) as repo:
        repo.create_session(StrandsSession("s", SessionType.AGENT))
        repo.create_agent("s", SessionAgent("main", {"k": [1]}, {}))
        repo.create_message("s", "main", SessionMessage(copy.deepcopy(BLOCKS[4]), 0))
        before = stored(repo, "s")
        listed, = repo.list_messages("s", "main")
        listed.message["content"][1]["image"]["source"]["bytes"] = b"changed"
        listed.message["content"].append({"text": "more"})
        agent = repo.read_agent("s", "main")
        assert agent is not None
        agent.state["k"].append(2)
        assert stored(repo, "s") == before
        assert repo.read_agent("s", "main").state == {"k": [1]}  # type: ignore[union-attr]
        again, = repo.list_messages("s", "main")
        assert again.message["content"][1]["image"]["source"]["bytes"] == b"\x89PNG\0"


def test_an_update_of_an_answer_this_library_wrote_is_kept(tmp_path: Path) -> None:
    with TranscriptSessionRepository(tmp_path) as repo:
        repo.create_session(StrandsSession("s", SessionType.AGENT))
        repo.create_agent("s", SessionAgent("main", {}, {}))
        repo.create_message("s", "main", SessionMessage(copy.deepcopy(BLOCKS[1]), 0))
    with TranscriptSessionRepository(tmp_path) as repo:
        assert repo.read_agent("s", "main") is not None  # answers k1
        answer = repo.read_message("s", "main", 1)
        assert answer is not None and answer.message["content"][0]["toolResult"]["content"] == [
            {"text": INTERRUPTED}]
        answer.redact_message = {"role": "user", "content": [{"toolResult": {
            "toolUseId": "k1", "status": "error", "content": [{"text": "[redacted]"}]}}]}
        repo.update_message("s", "main", answer)
        updated = stored(repo, "s")
    with TranscriptSessionRepository(tmp_path) as repo:
        assert stored(repo, "s") == updated
        assert updated[1]["redact_message"]["content"][0]["toolResult"]["content"] == [{"text": "[redacted]"}]
    s = assert_checks_and_loads(tmp_path / "s.jsonl")
    assert s.messages[-1] == Message.tool("k1", "[redacted]") and s.entries[-1].elided
