"""A line of 4 GiB or more is damage: load refuses it, peek skips it (issue 18).

The index keeps a line's length in 32 bits, so the longest line a transcript may
have is 4 GiB - 1 bytes. The file here is sparse (a hole of 4 GiB in the middle
of its second line), so nothing is written to the disk, and the reader measures
a line that long without holding it: but each load or peek still reads the 4 GiB
hole through the kernel, which takes tens of seconds on a busy 2-core machine.
So this runs in the long suite (``AT_LONG=1``, ``run_long.py``) only; the normal
suite has the core's tests of the same limit (``cargo test``: the bounded line
reader with small limits, the limit itself at 4 GiB - 1 and 4 GiB, and, with
``--ignored``, load, peek and the tail check over a made-up 4 GiB line).

Append refuses a line over the limit before writing it, with the same check
(``check_line_length`` in the core); building a 4 GiB payload to show it would
take 8 GiB of memory, so no test here does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_transcript import CorruptTranscript, Session

from rkit import LONG

pytestmark = pytest.mark.skipif(not LONG, reason="reads 2 x 4 GiB: the long suite (AT_LONG=1) only")

LIMIT = 2**32 - 1


def _envelope(id_: str, type_: str, payload: object) -> bytes:
    return json.dumps({"id": id_, "payload": payload, "ts": "2026-01-01T00:00:00.000000Z",
                       "type": type_, "v": 1}, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def test_a_line_of_4_gib_is_refused_by_load_and_skipped_by_peek(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    head = _envelope("m", "session-meta", {}) + b'{"id":"x","payload":"'
    tail = b'"}\n' + _envelope("u1", "message", {"content": "hi", "role": "user"})
    with open(path, "wb") as f:
        f.write(head)
        f.seek(LIMIT, os.SEEK_CUR)  # a hole: the second line is longer than LIMIT
        f.write(tail)
    size = path.stat().st_size
    assert path.stat().st_blocks * 512 < 1 << 20, "the file should be sparse"

    with pytest.raises(CorruptTranscript) as refused:
        Session.load(path)
    assert refused.value.line == 2
    assert "longer than 4294967295 bytes" in str(refused.value)
    assert path.stat().st_size == size, "load left the file as it was"

    peeked = Session.peek(path)
    assert peeked.error is None
    assert [e.line for e in peeked.envelopes] == [1, 3]
    assert len(peeked.warnings) == 1 and "line 2" in peeked.warnings[0]
    assert "longer than" in peeked.warnings[0]
