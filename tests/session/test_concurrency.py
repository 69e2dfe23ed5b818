"""Every method is safe from any thread: eight threads appending at once."""

from __future__ import annotations

import threading
from pathlib import Path

from agent_transcript import Message, Session

from ._helpers import parsed

THREADS = 8
EACH = 250


def test_eight_threads_appending_at_once(tmp_path: Path) -> None:
    p = tmp_path / "run.jsonl"
    s = Session.create(p)
    barrier = threading.Barrier(THREADS)
    ids: list[list[str]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            barrier.wait()
            for i in range(EACH):
                # Sizes vary so lines straddle buffer boundaries if anything buffers.
                ids[k].append(s.append_message(Message.user(f"{k}:{i}:" + "ß" * ((i * 37 + k) % 300)),
                                               extra={"thread": k, "i": i}))
                if i % 50 == 0:
                    s.message_ids    # readers interleave with the writers
                    s.append_grants({"thread": k, "i": i})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    live_ids = s.message_ids
    s.close()

    everything = [i for per in ids for i in per]
    assert len(set(everything)) == THREADS * EACH
    with Session.load(p) as t:
        assert t.warnings == []
        assert t.message_ids == live_ids
        assert sorted(t.message_ids) == sorted(everything), "every id exactly once"
        position = {i: n for n, i in enumerate(t.message_ids)}
        for k in range(THREADS):
            assert [position[i] for i in ids[k]] == sorted(position[i] for i in ids[k]), f"thread {k} order"
        for m, i in zip(t.messages, t.message_ids):
            k, n, _ = m.content.split(":", 2)
            assert ids[int(k)][int(n)] == i
    lines = parsed(p)
    assert len(lines) == 1 + THREADS * EACH + THREADS * (EACH // 50)
    assert all(e["payload"]["i"] == int(e["payload"]["content"].split(":")[1])
               for e in lines if e["type"] == "message")
