"""File names of 249 to 255 bytes, legal everywhere, too long for ``<name>.repair``.

``create`` and appends work on such a name; ``load``, ``open`` and the CLI's
``repair`` must too, on a clean file, on one with a torn tail (the repair file
must fit in a name) and with a leftover repair file. Where ``<name>.repair``
does not fit, the repair file is ``<the name's first bytes>.<16 hex digits of
its digest>.repair`` (README, "The file").
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_transcript import Message, Session

from ._helpers import meta, msg, write

LENGTHS = [248, 249, 250, 254, 255]


def long_name(length: int, unit: str = "x") -> str:
    """A ``.jsonl`` name of exactly ``length`` bytes, of ``unit`` characters."""
    body = length - len(".jsonl")
    width = len(unit.encode())
    name = unit * (body // width) + "y" * (body % width) + ".jsonl"
    assert len(name.encode()) == length
    return name


def repair_name(name: str) -> str:
    """The repair file's name, as the README says it is."""
    if len((name + ".repair").encode()) <= 255:
        return name + ".repair"
    data = name.encode()
    prefix = data[: 255 - len(".0123456789abcdef.repair")].decode("utf-8", "ignore")
    return f"{prefix}.{hashlib.sha256(data).hexdigest()[:16]}.repair"


@pytest.mark.parametrize("unit", ["x", "日"], ids=["ascii", "three-byte characters"])
@pytest.mark.parametrize("length", LENGTHS)
def test_a_long_name_loads_repairs_and_opens(fast_tmp: Path, length: int, unit: str) -> None:
    p = fast_tmp / long_name(length, unit)
    with Session.create(p, {"long": length}) as s:
        mid = s.append_message(Message.user("hi"))
    with Session.load(p) as s:
        assert s.message_ids == [mid]
    with Session.open(p) as s:
        assert s.message_ids == [mid]
    good = p.read_bytes()
    # A torn tail: the repair file must have a name that fits.
    with open(p, "ab") as f:
        f.write(b'{"id":"torn","pay')
    with Session.load(p) as s:
        assert s.message_ids == [mid] and len(s.warnings) == 1
    assert p.read_bytes() == good
    assert sorted(os.listdir(fast_tmp)) == [p.name]


@pytest.mark.parametrize("length", LENGTHS)
def test_a_leftover_repair_file_of_a_long_name_is_deleted(fast_tmp: Path, length: int) -> None:
    p = fast_tmp / long_name(length)
    write(p, meta(), msg("m1"))
    leftover = fast_tmp / repair_name(p.name)
    leftover.write_bytes(meta())
    with Session.load(p) as s:
        assert s.message_ids == ["m1"]
    assert not leftover.exists()


def test_two_long_names_alike_but_for_their_end_have_their_own_repair_files(fast_tmp: Path) -> None:
    a = fast_tmp / long_name(255)
    b = fast_tmp / (a.name[:-7] + "b.jsonl")
    assert a.name[:240] == b.name[:240] and a != b
    assert repair_name(a.name) != repair_name(b.name)
    for p in (a, b):
        write(p, meta(), msg("m1"), b'{"id":"to')
    (fast_tmp / repair_name(b.name)).write_bytes(b"left over by b's crash")
    with Session.load(a) as s:
        assert s.message_ids == ["m1"]
    assert (fast_tmp / repair_name(b.name)).exists()  # not a's to delete
    with Session.load(b) as s:
        assert s.message_ids == ["m1"]
    assert sorted(os.listdir(fast_tmp)) == sorted([a.name, b.name])


def test_the_cli_repairs_a_long_name(fast_tmp: Path) -> None:
    p = fast_tmp / long_name(255)
    write(p, meta(), msg("m1"), b'{"id":"torn"')
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "repair", str(p)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert p.read_bytes() == meta() + msg("m1")
