"""Free-threaded CPython: the canonical writer holds no borrowed list or dict
item (a list's items are taken as new references, a dict is walked inside its
critical section), so it is sound with the GIL off; the module still declares
``gil_used = true`` until a free-threaded interpreter has run this file.

On a GIL build, other threads change the lists and dicts being written only
at the switches the walk allows (a dict subclass's ``items()`` that yields):
what is written must still be one of the states they went through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent_transcript import canonical_json


@pytest.mark.skipif(not sysconfig.get_config_var("Py_GIL_DISABLED"),
                    reason="only a free-threaded interpreter can run without the GIL")
def test_importing_the_core_turns_the_gil_back_on() -> None:
    code = "import sys, agent_transcript._core; print(sys._is_gil_enabled())"
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, check=True, env=env)
    assert out.stdout.strip() == "True"


class Yielding(dict):  # type: ignore[type-arg]
    """A dict whose ``items()`` lets other threads run mid-walk."""

    def items(self) -> Any:
        time.sleep(0)
        return list(super().items())


@pytest.fixture
def fast_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("fast_switches")
def test_lists_and_dicts_changed_by_other_threads_while_written() -> None:
    words = [f"w{k}" for k in range(64)]
    shared_list: list[Any] = list(words)
    shared_dict: dict[str, Any] = {w: [w] for w in words}
    stop = threading.Event()

    def change(seed: int) -> None:
        k = seed
        while not stop.is_set():
            k = (k * 1103515245 + 12345) % 2**31
            w = words[k % 64]
            shared_list.append(w)
            try:
                shared_list.pop(k % len(shared_list))
            except (IndexError, ZeroDivisionError):
                pass  # another changer emptied it meanwhile
            if k % 3 == 0:
                shared_list[:] = shared_list[: len(shared_list) // 2] or [w]
            elif k % 3 == 1:
                shared_list.extend(words[: k % 64])
            shared_dict.pop(w, None)
            shared_dict[words[(k >> 7) % 64]] = [w, {"nested": w}]

    threads = [threading.Thread(target=change, args=(seed,)) for seed in (1, 2, 3)]
    for t in threads:
        t.start()
    try:
        written = 0
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            value = [Yielding(a=1), shared_list, Yielding(b=shared_dict), shared_list]
            got = json.loads(canonical_json(value))
            assert got[0] == {"a": 1}
            for items in (got[1], got[3]):
                assert set(items) <= set(words), items
            for key, item in got[2]["b"].items():
                assert key in words and item[0] in words, item
            written += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert written > 10
