"""An append indexes its line from what the writer knows, not by reading it back.

``append_message`` and ``append_messages`` write a Message's payload from its
fields and hand replay the envelope the writer knows it wrote (id, role,
sticky, tool_call_id) instead of parsing the line again. The guarantees under
test:

* whatever is appended, the session's state equals what ``load`` rebuilds from
  the file, and every line reads back as the message (and extras) appended
  (a property test, odd roles and ids included);
* what a reader would refuse is still refused before a byte is written (a role
  that is not a str, an int past the reader's 4300 digits even when Python's
  own limit was raised);
* ``append_messages`` is one ``write(2)`` per call, ``append_message`` one per
  message (counted with strace, when there is one);
* the deleted/replaced-file check still fires when another process deletes or
  renames over the transcript between appends, and asks for the link count and
  the size alone (asking for the times made every next write stamp the inode).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session, SessionBroken

from ._helpers import lines, python

text = st.text(max_size=12)
role = st.one_of(st.sampled_from(["user", "assistant", "tool", "system", "developer", "tööl",
                                  "us\"er", "\ud800"]), text)
call_id = st.one_of(st.none(), text, st.integers(-5, 5), st.just("\udc00x"))
content = st.one_of(st.none(), text, st.lists(st.dictionaries(st.sampled_from(["type", "text"]), text,
                                                              max_size=2), max_size=2))
message = st.builds(
    Message, role=role, content=content, name=st.one_of(st.none(), text),
    tool_calls=st.one_of(st.none(), st.just([{"id": "c1", "type": "function",
                                              "function": {"name": "f", "arguments": "{}"}}])),
    tool_call_id=call_id, sticky=st.booleans(), sysprompt=st.booleans(),
    depth=st.one_of(st.none(), st.integers(0, 3)))
extra = st.one_of(st.none(), st.dictionaries(st.sampled_from(["finish-reason", "role", "x"]), text,
                                             max_size=2))
# Each step: one append_message, or one append_messages of a batch.
steps = st.lists(st.one_of(st.tuples(st.just("one"), message, extra),
                           st.tuples(st.just("many"), st.lists(st.one_of(message,
                                                                         st.tuples(message, extra)),
                                                               max_size=5))), max_size=8)


def state(s: Session) -> Any:
    return (s.message_ids, s.messages, [(e.id, e.message, e.extra, e.line, e.elided) for e in s.entries],
            [(e.id, e.type, e.line, e.payload) for e in s.events],
            [(p.op_id, p.state, p.result_message_id) for p in s.pending_tool_operations()])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_the_session_after_appends_is_what_load_reads_back(fast_tmp: Path, steps: list[Any]) -> None:
    path = fast_tmp / "t.jsonl"
    if path.exists():
        path.unlink()
    want: list[dict[str, Any]] = []
    with Session.create(path) as s:
        # A dispatched call, so that a tool message's call id is matched up.
        s.append_tool_dispatched("c1", "f", {})
        for step in steps:
            if step[0] == "one":
                _, m, x = step
                ids = [s.append_message(m, x)]
                items = [(m, x)]
            else:
                items = [i if isinstance(i, tuple) else (i, None) for i in step[1]]
                ids = s.append_messages(step[1])
            assert len(ids) == len(items) == len(set(ids))
            for m, x in items:
                payload = {k: v for k, v in (x or {}).items() if k not in ("role",)}
                payload.update(m.to_dict())
                want.append(payload)
        live = state(s)
    written = [json.loads(b) for b in lines(path)[2:]]
    assert [w["payload"] for w in written] == want
    assert all(w["type"] == "message" and w["v"] == 1 for w in written)
    with Session.load(path) as r:
        assert state(r) == live
        assert r.warnings == []


def test_a_role_that_is_not_a_str_is_refused_before_a_byte_is_written(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with Session.create(path) as s:
        s.append_message(Message.user("first"))
        before = path.read_bytes()
        for bad in (5, None, ["user"]):
            with pytest.raises(ValueError):
                s.append_message(Message(role=bad))  # type: ignore[arg-type]
            with pytest.raises(ValueError):
                s.append_messages([Message.user("ok"), Message(role=bad)])  # type: ignore[arg-type]
            assert path.read_bytes() == before
        s.append_message(Message.user("still fine"))
    with Session.load(path) as r:
        assert [m.content for m in r.messages] == ["first", "still fine"]


def test_an_int_past_the_readers_digits_is_refused_whatever_pythons_limit(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with Session.create(path) as s:
            before = path.read_bytes()
            with pytest.raises(ValueError):
                s.append_message(Message.user([10**4300]))
            with pytest.raises(ValueError):
                s.append_messages([Message.user([-(10**4300)])])
            assert path.read_bytes() == before
            s.append_message(Message.user([10**4300 - 1]))
    finally:
        sys.set_int_max_str_digits(limit)
    with Session.load(path) as r:
        assert r.messages[0].content == [10**4300 - 1]


WRITES_CHILD = r"""
import sys
from agent_transcript import Message, Session
s = Session.load(sys.argv[1])
for k in range(3):
    s.append_message(Message.user(f"one {k}"))
batch = [Message.user("a"), (Message.assistant("b"), {"finish-reason": "stop"}),
         Message.tool("c1", "r" * 70_000), (Message.user("d"), None)]
s.append_messages(batch)
s.append_messages(batch * 40)
s.close()
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_one_write_per_append_and_per_append_messages(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    Session.create(path).close()
    trace = tmp_path / "trace"
    done = subprocess.run(["strace", "-f", "-qq", "-e", "trace=write,writev,pwrite64,pwritev,pwritev2",
                           "-s", "12", "-o", str(trace), sys.executable, "-c", WRITES_CHILD, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    ours = [x for x in trace.read_text().splitlines() if '"{\\"id\\":' in x]
    # Three append_message calls, two append_messages calls: five write(2)s,
    # each of the whole lines (strace shows the byte count it returned).
    assert len(ours) == 5, ours
    sizes = [int(x.rsplit("=", 1)[1]) for x in ours]
    assert sizes[3] > 70_000 and sizes[4] == 40 * sizes[3], sizes
    with Session.load(path) as r:
        assert len(r.messages) == 3 + 4 + 160


CHECKS_CHILD = r"""
import os, sys
from agent_transcript import Message, Session
s = Session.load(sys.argv[1])
os.write(2, b"<appends>")
for k in range(3):
    s.append_message(Message.user(f"one {k}"))
s.append_message(Message.user("with an extra"), {"finish-reason": "stop"})
s.append_messages([Message.user("a"), Message.user("b")])
os.write(2, b"</appends>")
s.close()
"""


@pytest.mark.skipif(sys.platform != "linux" or shutil.which("strace") is None,
                    reason="needs Linux's statx and strace")
def test_the_check_after_each_append_asks_for_the_link_count_and_size_alone(tmp_path: Path) -> None:
    """On Linux 6.13 and later, a file system with multigrain timestamps
    stamps an inode at a write's fine-grained time only once someone has read
    its times; the fstat after each append read them, so every append's write
    also stamped and journalled the inode (1.33 us against 0.90 for a write
    and the narrow check, C loop). Between the appends' first and last line:
    one statx each, for nlink and size, and no fstat."""
    path = tmp_path / "t.jsonl"
    Session.create(path).close()
    trace = tmp_path / "trace"
    done = subprocess.run(["strace", "-f", "-qq", "-e", "trace=write,statx,fstat,newfstatat",
                           "-s", "12", "-o", str(trace), sys.executable, "-c", CHECKS_CHILD, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    calls = trace.read_text().splitlines()
    first = next(i for i, c in enumerate(calls) if "<appends>" in c)
    last = next(i for i, c in enumerate(calls) if "</appends>" in c)
    between = [c.split(None, 1)[1] for c in calls[first + 1:last]]  # without the pid
    writes = [c for c in between if c.startswith("write(") and '"{\\"id\\":' in c]
    checks = [c for c in between if not c.startswith("write(")]
    assert len(writes) == 5, between
    assert len(checks) == 5 and all(
        c.startswith("statx(") and ", STATX_NLINK|STATX_SIZE, " in c for c in checks), between
    with Session.load(path) as r:
        assert len(r.messages) == 6


@pytest.mark.parametrize("how", ["rm", "mv"])
def test_a_transcript_another_process_deletes_or_replaces_refuses_the_next_append(
        tmp_path: Path, how: str) -> None:
    path = tmp_path / "t.jsonl"
    other = tmp_path / "other.jsonl"
    Session.create(other, {"other": True}).close()
    with Session.create(path) as s:
        ids = [s.append_message(Message.user("kept"))]
        ids += s.append_messages([Message.user("kept too")])
        cmd = ["rm", str(path)] if how == "rm" else ["mv", str(other), str(path)]
        subprocess.run(cmd, check=True)
        with pytest.raises(SessionBroken):
            s.append_message(Message.user("into the void"))
        with pytest.raises(SessionBroken):
            s.append_messages([Message.user("nor this")])
        with pytest.raises(SessionBroken):
            s.append_message(Message.user("nor this"))
        assert s.message_ids == ids  # reading goes on through the open file
    if how == "mv":
        with Session.load(path) as r:
            assert r.meta == {"other": True} and r.messages == []
    else:
        assert not path.exists()


def test_a_process_that_renames_the_transcript_away_does_not_stop_appends(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    moved = tmp_path / "moved.jsonl"
    with Session.create(path) as s:
        ids = [s.append_message(Message.user("before"))]
        subprocess.run(["mv", str(path), str(moved)], check=True)
        ids.append(s.append_message(Message.user("after")))
        ids += s.append_messages([Message.user("and more")])
    with Session.load(moved) as r:
        assert r.message_ids == ids


def test_the_returned_id_is_the_id_of_the_line_written(tmp_path: Path) -> None:
    # From a fresh interpreter: the id the fast path returns is the one it wrote.
    path = tmp_path / "t.jsonl"
    Session.create(path).close()
    done = python("import sys\nfrom agent_transcript import Message, Session\n"
                  "with Session.load(sys.argv[1]) as s: print(s.append_message(Message.user('x')))",
                  str(path))
    assert done.returncode == 0, done.stderr
    assert json.loads(lines(path)[-1])["id"] == done.stdout.strip()
    assert os.path.getsize(path) > 0
