"""A deterministic mutation fuzzer over load, its repair, peek and the tail check.

``python fuzz.py DIR CASES SEED`` mutates real transcripts (made through the
public API, every envelope type, plus torn and corrupt fixtures) with byte and
bit flips, truncations, splices, duplicated/dropped/swapped lines and JSON-aware
edits, and for every input checks that:

* nothing but ``CorruptTranscript``/``UnsupportedVersion`` escapes ``load``, and
  nothing at all escapes ``peek`` (no panic, no other exception; an abort or a
  hang is caught by the parent, which finds the input in ``DIR/current.bin``);
* ``_core.tail_check`` follows SPEC's load step 2 (only a last line that begins
  with ``{`` at its first byte is ever ``torn``; a malformed one that does not is
  ``damaged``) and agrees with what load did: ``whole``/``empty`` leave the
  file as it was, ``torn`` cuts it to exactly ``keep`` bytes with one warning
  naming the line, ``corrupt`` and ``damaged`` raise ``CorruptTranscript`` at
  that line with the file untouched; but a file whose first non-blank line is not a whole
  session-meta (nor the lone torn one of an unfinished create) is refused and
  never written, whatever its tail;
* a loaded file reads as Python's ``json`` reads it, line by line (strict UTF-8,
  no NaN), every envelope well formed, ids unique, payloads equal; peek agrees;
  and an append then a reload work;
* a ``CorruptTranscript`` at line N comes after N-1 lines that Python reads as
  envelopes.

(cargo-fuzz needs ``cargo install cargo-fuzz``, which this machine does not
have; atheris installs but cannot see coverage inside the Rust extension
without rebuilding it instrumented. A seeded mutation fuzzer runs everywhere
and replays exactly.)

The run is CASES inputs drawn from SEED, the same inputs on any machine however
fast. Prints one JSON line of counts; a failing input is saved as ``DIR/fail-N.bin``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_transcript import (  # noqa: E402
    CorruptTranscript,
    Message,
    Session,
    UnsupportedVersion,
    _core,
)
from rkit import realistic_transcript, same_json  # noqa: E402

INTERESTING_BYTES = b'\x00\n\r \t"\\{}[],:0-.eE+\x7f\x80\xbf\xc0\xc3\xe2\xed\xf0\xf4\xff'
INTERESTING_TOKENS = [
    b"1e999", b"1e308", b"-0", b"NaN", b"Infinity", b"-Infinity", b"9" * 4301, b"9" * 4300, b"1.5", b"01", b"1.", b".5",
    b"true", b"null", b'""', b"[]", b"{}", b'"\\ud800"', b'"\\udc00\\ud800"', b'"\\uZZZZ"',
    b'"\\u00"', b'"\xed\xa0\x80"', b'"\xc3"', b"[" * 600 + b"]" * 600, b"[" * 511 + b"]" * 511,
    b'{"a":1,"a":2}', b"1" * 4300, b'"\\/"', b"2", b"1.0", b"-1", b"12345678901234567890123",
]


def seeds(folder: Path) -> list[bytes]:
    out = [realistic_transcript(folder / "realistic.jsonl") and (folder / "realistic.jsonl").read_bytes()]
    p = folder / "small.jsonl"
    with Session.create(p, {"m": [1, 2.5, None, "ü"]}) as s:
        a = s.append_message(Message.system("sys"))
        b = s.append_message(Message.user("hi 🚀"))
        c = s.append_message(Message.assistant("yo", [{"id": "c1", "type": "function",
                                                      "function": {"name": "f", "arguments": "{}"}}]))
        op = s.append_tool_dispatched("c1", "f", "{}")
        t = s.append_message(Message.tool("c1", "result"))
        s.append_tool_settled(op, "failed", error={"why": "x"})
        s.append_elision([(t, "stub"), (b, "stub2")])
        comp = s.append_compaction("sum", c, 10, 2)
        s.append_elision([(comp, "stub3")])
        s.append_compaction("sum2", comp, 3, 1, True)
        s.append_grants(["g"])
        s.append_run_context([("n", "t"), ("n2", "t")], [("k", {"v": 1})])
        s.append_tool_dispatched("c2", "g", {"x": 1})
        last = s.append_message(Message.user("last"), {"item": {"k": 1}})
        rk = s.append_compaction("sum3", last, 5, 2, replacement=[
            Message(role="user", content="r0", sticky=True), (Message.assistant("r1"), {"x": [1]})])
        s.append_elision([(f"{rk}:1", "stub4")])
        s.append_rewind(f"{rk}:1")
        s.append_compaction("sum4", f"{rk}:1", 2, 1, replacement=[])
        s.append_rewind(None)
        s.append_message(Message.user("again"))
        del a
    small = p.read_bytes()
    unknown = (b'{"id":"u1","payload":[1],"ts":"t","type":"from-the-future","v":1}\n')
    lines = small.splitlines(keepends=True)
    out += [
        small,
        small + unknown,
        small + b"\n \t\r\n\n",
        small[:-1],  # whole last line without its newline
        small + lines[3][:20],  # torn tail
        small + lines[3][:20] + b"\n" + lines[4][:10],  # two malformed lines: corrupt
        small.replace(b"\n", b"\r\n"),
        small.replace(b'"v":1', b'"v":2', 1),
        b"".join(lines[:1] + lines[1:3] * 2),  # duplicate ids
        lines[0],
        b"",
        # Found by this fuzzer: malformed last lines that do not begin with `{`.
        b" {", b"\r{", b'\t{"id', small + b' {"id"',
    ]
    return out


def strict_loads(line: bytes) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(name)

    return json.loads(line.decode("utf-8"), parse_constant=no_constants)


def oracle_envelope(line: bytes) -> Any:
    """Python's reading of one line as an envelope; raises if it is not one."""
    env = strict_loads(line)
    if not isinstance(env, dict):
        raise ValueError("not an object")
    if not (isinstance(env.get("id"), str) and env["id"]):
        raise ValueError("id")
    if not isinstance(env.get("type"), str) or not isinstance(env.get("ts"), str):
        raise ValueError("type/ts")
    if type(env.get("v")) is not int or "payload" not in env:
        raise ValueError("v/payload")
    return env


FIELDS = frozenset(("role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth"))


def oracle_replay(envs: list[Any]) -> list[tuple[str, Message, dict[str, Any]]]:
    """SPEC's replay of envelopes load accepted: ``(id, message, extra)`` per live message."""
    live: list[tuple[str, Message, dict[str, Any]]] = []

    def at(mid: Any) -> int:
        ids = [i for i, _, _ in live]
        if mid not in ids:
            raise Failure(f"load accepted a line naming {mid!r}, which is not live")
        return ids.index(mid)

    def entry(mid: str, p: dict[str, Any]) -> tuple[str, Message, dict[str, Any]]:
        return mid, Message.from_dict(p), {k: v for k, v in p.items() if k not in FIELDS}

    for env in envs:
        t, p = env["type"], env["payload"]
        if t == "message":
            live.append(entry(env["id"], p))
        elif t == "compaction":
            i = at(p["replaces-through-id"])
            if "replacement" in p:
                put = [entry(f"{env['id']}:{k}", q) for k, q in enumerate(p["replacement"])]
            else:
                put = [(env["id"], Message.user(p["summary"]) if "summary" in p else Message("user"), {})]
            live = [x for x in live[: i + 1] if x[1].is_sticky] + put + live[i + 1:]
        elif t == "elision":
            for item in p["items"]:
                j = at(item["id"])
                mid, m, extra = live[j]
                live[j] = (mid, dataclasses.replace(m, content=item["stub"]), extra)
        elif t == "rewind":
            live = [] if p["through-id"] is None else live[: at(p["through-id"]) + 1]
    return live


def head_kind(data: bytes) -> str:
    """``"meta"``: the first non-blank line is a whole session-meta (as Python's
    json reads it, any ``v``); ``"torn-meta"``: the file's only line is torn, no
    ``\n``, and begins as this library's lines do; ``"blank"``; else ``"other"``."""
    lines = nonblank_lines(data)
    if not lines:
        return "blank"
    number, first = lines[0]
    try:
        env = oracle_envelope(first)
    except (ValueError, RecursionError):
        ended = data.count(b"\n") >= number
        start = b'{"id":"' + b"0" * 32 + b'","payload":'
        looks = all((c in b"0123456789abcdef") if w == ord("0") and 7 <= i < 39 else c == w
                    for i, (c, w) in enumerate(zip(first, start)))
        return "torn-meta" if not ended and looks else "other"
    return "meta" if env["type"] == "session-meta" else "other"


def last_line(data: bytes) -> tuple[int, int] | None:
    """``(offset, number)`` of the last non-blank line, or None."""
    offset = 0
    found = None
    for n, line in enumerate(data.split(b"\n"), 1):
        if line.strip(b" \t\r"):
            found = (offset, n)
        offset += len(line) + 1
    return found


def check_tail_rule(data: bytes, kind: str, keep: int, tline: int) -> None:
    """SPEC's load step 2: a torn last line begins with ``{`` at its first byte;
    any other malformed last line is damage."""
    last = last_line(data)
    begins = last is not None and data[last[0]:last[0] + 1] == b"{"
    if kind == "torn" and not (begins and last is not None and (keep, tline) == last):
        raise Failure(f"torn at line {tline} (keep {keep}), but the last line {last} "
                      f"{'begins' if begins else 'does not begin'} with '{{'")
    if kind == "damaged" and (begins or last is None or tline != last[1]):
        raise Failure(f"damaged at line {tline}, but the last line is {last}, begins with '{{': {begins}")
    if kind in ("empty", "whole", "corrupt") and not (last is None) == (kind == "empty"):
        raise Failure(f"tail {kind}, but the last non-blank line is {last}")


def nonblank_lines(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    for n, line in enumerate(data.split(b"\n"), 1):
        if line.strip(b" \t\r"):
            out.append((n, line))
    return out


class Mutator:
    def __init__(self, rng: random.Random, pool: list[bytes]) -> None:
        self.rng = rng
        self.pool = pool

    def __call__(self, data: bytes) -> bytes:
        for _ in range(self.rng.choice([1, 1, 1, 2, 3, 5])):
            data = self.rng.choice(self.ops)(self, bytearray(data))
        return bytes(data)

    def pos(self, data: bytearray) -> int:
        return self.rng.randrange(len(data) + 1)

    def flip_bit(self, d: bytearray) -> bytearray:
        if d:
            i = self.rng.randrange(len(d))
            d[i] ^= 1 << self.rng.randrange(8)
        return d

    def set_byte(self, d: bytearray) -> bytearray:
        if d:
            d[self.rng.randrange(len(d))] = self.rng.choice(INTERESTING_BYTES)
        return d

    def insert_bytes(self, d: bytearray) -> bytearray:
        i = self.pos(d)
        d[i:i] = bytes(self.rng.choice(INTERESTING_BYTES) for _ in range(self.rng.randrange(1, 4)))
        return d

    def truncate(self, d: bytearray) -> bytearray:
        return d[: self.pos(d)]

    def delete_range(self, d: bytearray) -> bytearray:
        i = self.pos(d)
        del d[i: i + self.rng.randrange(1, 64)]
        return d

    def duplicate_range(self, d: bytearray) -> bytearray:
        i = self.pos(d)
        j = min(len(d), i + self.rng.randrange(1, 200))
        d[j:j] = d[i:j]
        return d

    def splice(self, d: bytearray) -> bytearray:
        other = self.rng.choice(self.pool)
        if not other:
            return d
        a = self.rng.randrange(len(other))
        piece = other[a: a + self.rng.randrange(1, 400)]
        i = self.pos(d)
        if self.rng.random() < 0.5:
            return d[:i] + piece
        d[i:i] = piece
        return d

    def _lines(self, d: bytearray) -> list[bytes]:
        return bytes(d).split(b"\n")

    def duplicate_line(self, d: bytearray) -> bytearray:
        ls = self._lines(d)
        i = self.rng.randrange(len(ls))
        ls.insert(self.rng.randrange(len(ls) + 1), ls[i])
        return bytearray(b"\n".join(ls))

    def drop_line(self, d: bytearray) -> bytearray:
        ls = self._lines(d)
        del ls[self.rng.randrange(len(ls))]
        return bytearray(b"\n".join(ls))

    def swap_lines(self, d: bytearray) -> bytearray:
        ls = self._lines(d)
        i, j = self.rng.randrange(len(ls)), self.rng.randrange(len(ls))
        ls[i], ls[j] = ls[j], ls[i]
        return bytearray(b"\n".join(ls))

    def replace_token(self, d: bytearray) -> bytearray:
        # A value after a ':' or '[' or ',' replaced by an interesting token.
        starts = [i + 1 for i, b in enumerate(d) if b in b":[,"]
        if not starts:
            return d
        i = self.rng.choice(starts)
        j = i
        while j < len(d) and d[j] not in b",]}\n":
            j += 1
        d[i:j] = self.rng.choice(INTERESTING_TOKENS)
        return d

    def envelope_edit(self, d: bytearray) -> bytearray:
        edits = [(b'"v":1', [b'"v":2', b'"v":1.0', b'"v":true', b'"v":"1"', b'"v":-1', b'"v":10']),
                 (b'"type":"message"', [b'"type":"session-meta"', b'"type":"compaction"',
                                        b'"type":"elision"', b'"type":1']),
                 (b'"id":"', [b'"id":"x', b'"id":"', b'"xid":"', b'"id":1,"y":"']),
                 (b'"payload":', [b'"payload":null,"p":', b'"payload":[],"p":', b'"pay":']),
                 (b'"role":"', [b'"role":1,"r":"', b'"rol":"']),
                 (b'"replaces-through-id":"', [b'"replaces-through-id":"zz', b'"x":"']),
                 (b'"through-id":', [b'"through-id":null,"x":', b'"through-id":"zz","x":', b'"x":']),
                 (b'"replacement":[', [b'"replacement":[],"x":[', b'"replacement":[{"role":"u"},',
                                       b'"replacement":null,"x":[', b'"x":[']),
                 (b'"type":"compaction"', [b'"type":"rewind"']),
                 (b':1"', [b':0"', b':9"', b':01"', b'"']),
                 (b'"sticky":true', [b'"sticky":0']), (b'"op-id":"', [b'"op-id":"q'])]
        old, news = self.rng.choice(edits)
        at = [i for i in range(len(d)) if d.startswith(old, i)]
        if at:
            i = self.rng.choice(at)
            d[i: i + len(old)] = self.rng.choice(news)
        return d

    ops = [flip_bit, set_byte, insert_bytes, truncate, delete_range, duplicate_range, splice,
           duplicate_line, drop_line, swap_lines, replace_token, replace_token, envelope_edit,
           envelope_edit]


class Failure(Exception):
    pass


def check(path: Path, data: bytes, counts: dict[str, int], tails: dict[str, int]) -> None:
    repair = path.with_name(path.name + ".repair")
    if repair.exists():
        repair.unlink()
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        kind, keep, tline, removed, _, _ = _core.tail_check(fd)
    finally:
        os.close(fd)
    tails[kind] = tails.get(kind, 0) + 1
    check_tail_rule(data, kind, keep, tline)
    peeked = Session.peek(path)
    if peeked.error is None:
        list(peeked.envelopes)  # decode every line peek says parsed
        list(peeked.messages)
    try:
        with Session.load(path) as s:
            events = [(e.id, e.type, e.payload, e.line) for e in s.events]
            warnings = s.warnings
            s.messages, s.message_ids, s.grants, s.pending_tool_operations()  # noqa: B018
            live = [(e.id, e.message, e.extra) for e in s.entries]
            if [m for _, m, _ in live] != s.messages or [i for i, _, _ in live] != s.message_ids:
                raise Failure("entries are not parallel to messages")
            appended = s.append_message(Message.user("after fuzz ✓"))
        outcome, error = "loaded", None
    except UnsupportedVersion as e:
        outcome, error = "unsupported", e
    except CorruptTranscript as e:
        outcome, error = "corrupt", e
    after = path.read_bytes() if outcome != "loaded" else None

    head = head_kind(data)
    if head == "other" or (head == "meta" and error is not None
                           and error.line == nonblank_lines(data)[0][0]):
        # Not a transcript (or one from the future, or a first line Python's json
        # reads and the core does not: a float out of range, nesting over 512):
        # refused before anything is written.
        if outcome == "loaded" or after != data:
            raise Failure(f"the first line is not a session-meta, but load: {outcome}, "
                          f"file {'unchanged' if after == data else 'changed'}")
        return
    if kind in ("whole", "empty"):
        if outcome != "loaded" and after != data:
            raise Failure(f"tail {kind} but load changed the file ({outcome})")
        if kind == "empty" and outcome == "loaded":
            raise Failure("tail empty but load loaded")
    elif kind == "torn":
        if outcome != "loaded" and after != data[:keep]:
            raise Failure("tail torn but the file is not its good prefix")
    elif kind in ("corrupt", "damaged"):
        if outcome != "corrupt" or after != data or getattr(error, "line", None) != tline:
            raise Failure(f"tail corrupt at {tline} but load: {outcome} {error!r}")

    if outcome == "loaded":
        good = data[:keep] if kind == "torn" else data
        if kind == "torn":
            if len(warnings) != 1 or f"line {tline}," not in warnings[0]:
                raise Failure(f"torn at {tline}, warnings {warnings}")
        elif warnings:
            raise Failure(f"no repair, but warnings {warnings}")
        lines = nonblank_lines(good)
        if len(lines) != len(events):
            raise Failure(f"{len(lines)} lines, {len(events)} events")
        ids = set()
        for (number, line), (eid, etype, payload, eline) in zip(lines, events):
            try:
                env = oracle_envelope(line)
            except (ValueError, RecursionError) as e:
                raise Failure(f"load accepted line {number}, Python's json does not: {e}") from None
            if env["v"] != 1 or number != eline or env["id"] != eid or env["type"] != etype:
                raise Failure(f"line {number}: envelope differs")
            if not same_json(env["payload"], payload):
                raise Failure(f"line {number}: payload differs from Python's json")
            if eid in ids:
                raise Failure(f"duplicate id {eid!r} loaded")
            ids.add(eid)
        expected = oracle_replay([oracle_envelope(text) for _, text in lines])
        if expected != live:
            raise Failure(f"replayed {live!r}, SPEC's rules give {expected!r}")
        again = Session.peek(path)
        if again.error is not None or again.warnings or len(again.envelopes) != len(events) + 1:
            raise Failure(f"peek after load disagrees: {again.error} {again.warnings}")
        with Session.load(path) as s:
            if s.warnings or s.events[-1].id != appended or len(s.events) != len(events) + 1:
                raise Failure("reload after append differs")
        counts["repaired" if kind == "torn" else "loaded"] += 1
    else:
        line = getattr(error, "line", None)
        good = data[:keep] if kind == "torn" else data
        if line is not None and kind not in ("corrupt", "damaged"):
            for number, text in nonblank_lines(good):
                if number >= line:
                    break
                try:
                    oracle_envelope(text)
                except (ValueError, RecursionError) as e:
                    raise Failure(f"load passed line {number} (failed at {line}); Python: {e}") from None
        counts[("repaired+" if kind == "torn" else "") + outcome] += 1


def main() -> None:
    folder, cases, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    folder.mkdir(parents=True, exist_ok=True)
    pool = seeds(folder / "seeds")
    rng = random.Random(seed)
    mutate = Mutator(rng, pool)
    counts: dict[str, int] = {k: 0 for k in ("loaded", "repaired", "corrupt", "unsupported",
                                              "repaired+corrupt", "repaired+unsupported")}
    tails: dict[str, int] = {}
    failures: list[str] = []
    path = folder / "case.jsonl"
    current = folder / "current.bin"
    started = time.monotonic()
    last_report = started
    execs = 0
    for execs in range(1, cases + 1):
        base = rng.choice(pool[1:]) if rng.random() < 0.85 else pool[0]
        data = mutate(base) if rng.random() < 0.97 else base
        current.write_bytes(data)
        try:
            check(path, data, counts, tails)
        except BaseException as e:  # noqa: BLE001 - a panic is a BaseException: report it
            if isinstance(e, KeyboardInterrupt):
                raise
            saved = folder / f"fail-{len(failures)}.bin"
            saved.write_bytes(data)
            why = e.args[0] if isinstance(e, Failure) else traceback.format_exc(limit=4)
            failures.append(f"{saved}: {type(e).__name__}: {why}")
            if len(failures) >= 20:
                break
        now = time.monotonic()
        if now - last_report > 5:
            print(json.dumps({"progress": execs}), flush=True)
            last_report = now
    print(json.dumps({"executions": execs, "seconds": round(time.monotonic() - started, 1),
                      "counts": counts, "tails": tails, "failures": failures}), flush=True)


if __name__ == "__main__":
    main()
