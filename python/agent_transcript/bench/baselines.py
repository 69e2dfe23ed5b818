"""Plain-Python baselines: what a user would write instead of this package.

These are the yardsticks of the performance targets (``agent-transcript bench``
and ``benches/``): a transcript loader, a peek and an append loop written the
way a careful user would write them, with the SAME semantics as
``Session.load`` / ``Session.peek`` / ``Session.append_message`` in SPEC.md:

* ``load`` -- "Load: repair, then replay": a leftover ``<path>.repair`` is
  deleted; the tail is examined as bytes (blank lines ignored) and a torn last
  line is cut off through a fsynced ``.repair`` file renamed over the original
  (a malformed line before it too: corrupt, file untouched); then every line is
  parsed, checked (object, non-empty string ``id``, string ``type`` and ``ts``,
  int ``v``, a ``payload``, no duplicate id, ``v == 1``), kept in ``events``,
  and replayed: messages, grants, compaction (sticky messages up to the cut,
  then the summary as a user message under the compaction's id, then the rest)
  and elision (content replaced, nothing else), composed in file order. The
  live messages come back as ``Message.to_dict()``-shaped dicts (extras
  dropped).
* ``peek`` -- every line parsed, bad ones skipped with a warning, messages
  in file order, no replay.
* ``UserAppender`` -- ``uuid4().hex``, ``datetime.now(timezone.utc)``,
  ``orjson.dumps(env, option=OPT_SORT_KEYS) + b"\\n"``, ``os.write`` to an
  ``O_APPEND`` fd.

One implementation, two JSON parsers: ``loads=stdlib_loads`` (``json``, per line)
or ``loads=orjson_loads`` (``orjson.loads``, per line). Where the two parsers
disagree the baselines inherit it: orjson reads an integer beyond 64 bits as a
float, and rejects ``1e400`` and lone-surrogate escapes, which ``json`` accepts.
Generated transcripts contain none of these.

Why this is inside the package rather than only in ``benches/``:
the ``bench`` command ships in the wheel and must measure against exactly these
baselines for a user who only pip-installed it. So this module is the single
copy: ``benches/baselines.py`` loads this very file by path. It therefore
imports nothing from the package (it runs without the native module) and needs
only the standard library; orjson is imported only when an orjson baseline is
asked for, and is never a dependency of the package.
"""

from __future__ import annotations

import importlib
import json
import os
import stat
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, BinaryIO, Callable

__all__ = [
    "BaselineCorrupt",
    "BaselineUnsupportedVersion",
    "Loaded",
    "Peeked",
    "UserAppender",
    "have_duckdb",
    "have_orjson",
    "load",
    "load_orjson",
    "load_stdlib",
    "orjson_dumps",
    "orjson_loads",
    "peek",
    "peek_orjson",
    "peek_stdlib",
    "read_json_duckdb",
    "stdlib_dumps",
    "stdlib_loads",
]

Loads = Callable[[bytes], Any]
Dumps = Callable[[Any], bytes]

TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_BLANK = b" \t\r"          # a blank line holds only these (and its \n)
_BLANK_NL = b" \t\r\n"


class BaselineCorrupt(ValueError):
    """The baseline's CorruptTranscript: damage that no crash produces.

    Attributes:
        line: the 1-based line number, or None.
    """

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line


class BaselineUnsupportedVersion(BaselineCorrupt):
    """The baseline's UnsupportedVersion: an envelope whose ``v`` is not 1."""


# --------------------------------------------------------------------- parsers

def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# One decoder, made once: json.loads(s, parse_constant=...) would build a new
# decoder per call, and no user who cares about speed writes that.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def stdlib_loads(raw: bytes) -> Any:
    """``json`` per line: strict UTF-8 (a line cut mid-character is not JSON), no NaN."""
    return _DECODER.decode(raw.decode("utf-8"))


def stdlib_dumps(value: Any) -> bytes:
    """The canonical line body with ``json`` (what a user without orjson writes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def have_orjson() -> bool:
    """True when orjson can be imported (it is a benchmark-only dependency)."""
    try:
        importlib.import_module("orjson")
    except ImportError:
        return False
    return True


def _orjson() -> Any:
    return importlib.import_module("orjson")


def orjson_loads(raw: bytes) -> Any:
    """``orjson.loads`` (resolved on first use; bound directly by ``load_orjson``)."""
    return _orjson().loads(raw)


def orjson_dumps(value: Any) -> bytes:
    """``orjson.dumps(value, option=orjson.OPT_SORT_KEYS)``."""
    mod = _orjson()
    out: bytes = mod.dumps(value, option=mod.OPT_SORT_KEYS)
    return out


# ------------------------------------------------------------------- messages

def _message(payload: Any, line: int) -> dict[str, Any]:
    """``Message.from_dict(payload).to_dict()``: role and content, the rest when set."""
    if type(payload) is not dict or type(payload.get("role")) is not str:
        raise BaselineCorrupt("a message payload needs an object with a string 'role'", line)
    m = {"role": payload["role"], "content": payload.get("content")}
    for key in ("name", "tool_calls", "tool_call_id"):
        value = payload.get(key)
        if value is not None:
            m[key] = value
    if payload.get("sticky"):
        m["sticky"] = True
    if payload.get("sysprompt"):
        m["sysprompt"] = True
    depth = payload.get("depth")
    if depth is not None:
        m["depth"] = depth
    return m


def is_sticky(m: dict[str, Any]) -> bool:
    """``Message.is_sticky`` on a message dict: sticky, sysprompt or a depth."""
    return bool(m.get("sticky") or m.get("sysprompt") or m.get("depth") is not None)


# ----------------------------------------------------------------------- tail

def _last_nonblank_lines(f: BinaryIO, size: int, count: int) -> list[tuple[int, bytes]]:
    """Up to ``count`` last non-blank lines as ``(offset, bytes)``, last first.

    Reads backwards from the end, so only the tail of the file is read.
    """
    start, buf, block = size, b"", 1 << 16
    while True:
        found: list[tuple[int, bytes]] = []
        pieces = buf.split(b"\n")
        end = size
        for i in range(len(pieces) - 1, -1, -1):
            piece = pieces[i]
            offset = end - len(piece)
            if i == 0 and start > 0:
                break                      # may be the cut-off end of a longer line
            if piece.strip(_BLANK):
                found.append((offset, piece))
                if len(found) == count:
                    return found
            end = offset - 1               # skip the \n before this piece
        if start == 0:
            return found
        step = min(block, start)
        start -= step
        f.seek(start)
        buf = f.read(step) + buf
        block *= 2


def _is_json(raw: bytes, loads: Loads) -> bool:
    try:
        loads(raw)
    except ValueError:                     # JSONDecodeError and UnicodeDecodeError both are
        return False
    except RecursionError:
        return False
    return True


def _line_number(f: BinaryIO, offset: int) -> int:
    """The 1-based number of the line starting at ``offset``."""
    f.seek(0)
    n, left = 1, offset
    while left:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        n += chunk.count(b"\n")
        left -= len(chunk)
    return n


def _fsync_dir(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _repair(path: str, f: BinaryIO, keep: int, size: int) -> str:
    """Copy the first ``keep`` bytes to ``<path>.repair``, fsync, rename over ``path``."""
    mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
    tmp = path + ".repair"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)                # O_CREAT's mode is filtered by the umask
        f.seek(0)
        left, newlines = keep, 0
        while left:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                raise OSError(f"{path} shrank while being repaired")
            newlines += chunk.count(b"\n")
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            left -= len(chunk)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.rename(tmp, path)
    _fsync_dir(path)
    return (f"removed a torn last line (line {newlines + 1}, {size - keep} bytes) "
            f"from {os.path.basename(path)}")


def check_tail(path: str, loads: Loads) -> tuple[int, int] | None:
    """What load's tail check would cut: ``(keep, size)``, or None for a whole tail.

    Raises:
        BaselineCorrupt: the last non-blank line and the one before it are both malformed.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        lines = _last_nonblank_lines(f, size, 2)
        if not lines or _is_json(lines[0][1], loads):
            return None
        if len(lines) > 1 and not _is_json(lines[1][1], loads):
            raise BaselineCorrupt("the last two lines are malformed", _line_number(f, lines[1][0]))
        return lines[0][0], size


# ----------------------------------------------------------------------- load

@dataclass
class Loaded:
    """What the baseline load hands back (Session.load's state, as plain data).

    Attributes:
        meta: the session-meta payload.
        messages: the live messages as ``Message.to_dict()`` dicts.
        message_ids: parallel to ``messages``.
        events: ``(line, envelope dict)`` for every envelope, in file order.
        grants: the last grants snapshot, or None.
        warnings: what the load had to do (a removed torn tail).
    """

    meta: Any
    messages: list[dict[str, Any]]
    message_ids: list[str]
    events: list[tuple[int, dict[str, Any]]]
    grants: Any
    warnings: list[str] = field(default_factory=list)


def _envelope(env: Any, line: int) -> dict[str, Any]:
    if type(env) is not dict:
        raise BaselineCorrupt("an envelope must be a JSON object", line)
    id_, type_, ts, v = env.get("id"), env.get("type"), env.get("ts"), env.get("v")
    if type(id_) is not str or not id_:
        raise BaselineCorrupt("an envelope needs a non-empty string 'id'", line)
    if type(type_) is not str or type(ts) is not str:
        raise BaselineCorrupt("an envelope needs a string 'type' and 'ts'", line)
    if type(v) is not int:
        raise BaselineCorrupt("an envelope needs an int 'v'", line)
    if "payload" not in env:
        raise BaselineCorrupt("an envelope needs a 'payload'", line)
    if v != 1:
        raise BaselineUnsupportedVersion(f"unsupported transcript version {v}", line)
    return env


def load(path: str | os.PathLike[str], loads: Loads = stdlib_loads) -> Loaded:
    """SPEC "Load: repair, then replay", in plain Python, with ``loads`` per line.

    Raises:
        FileNotFoundError: no such file.
        BaselineCorrupt: damage (with ``.line`` where there is one).
        BaselineUnsupportedVersion: an envelope with ``v`` other than 1.
    """
    path = os.fspath(path)
    try:
        os.unlink(path + ".repair")
    except FileNotFoundError:
        pass
    warnings: list[str] = []
    cut = check_tail(path, loads)
    if cut is not None:
        keep, size = cut
        with open(path, "rb") as f:
            warnings.append(_repair(path, f, keep, size))

    meta: Any = None
    messages: list[dict[str, Any]] = []
    ids: list[str] = []
    where: dict[str, int] = {}             # live id -> index in messages
    events: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    grants: Any = None
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip(_BLANK_NL):
                continue
            try:
                parsed = loads(raw)
            except (ValueError, RecursionError):
                raise BaselineCorrupt("not a whole JSON value", lineno) from None
            env = _envelope(parsed, lineno)
            id_, type_, payload = env["id"], env["type"], env["payload"]
            if id_ in seen:
                raise BaselineCorrupt(f"duplicate id {id_!r}", lineno)
            seen.add(id_)
            if not events:
                if type_ != "session-meta":
                    raise BaselineCorrupt("the first line is not a session-meta", lineno)
                meta = payload
            events.append((lineno, env))

            if type_ == "message":
                where[id_] = len(messages)
                messages.append(_message(payload, lineno))
                ids.append(id_)
            elif type_ == "grants":
                if type(payload) is not dict or "grants" not in payload:
                    raise BaselineCorrupt("a grants payload needs 'grants'", lineno)
                grants = payload["grants"]
            elif type_ == "compaction":
                target = payload.get("replaces-through-id") if type(payload) is dict else None
                i = where.get(target) if type(target) is str else None
                if i is None:
                    raise BaselineCorrupt(f"compaction names no live message: {target!r}", lineno)
                kept = [k for k in range(i + 1) if is_sticky(messages[k])]
                messages = ([messages[k] for k in kept]
                            + [{"role": "user", "content": payload.get("summary")}]
                            + messages[i + 1:])
                ids = [ids[k] for k in kept] + [id_] + ids[i + 1:]
                where = {m: k for k, m in enumerate(ids)}
            elif type_ == "elision":
                items = payload.get("items") if type(payload) is dict else None
                if type(items) is not list:
                    raise BaselineCorrupt("an elision payload needs a list of 'items'", lineno)
                for item in items:
                    target = item.get("id") if type(item) is dict else None
                    i = where.get(target) if type(target) is str else None
                    if i is None or "stub" not in item:
                        raise BaselineCorrupt(f"elision names no live message: {target!r}", lineno)
                    messages[i] = {**messages[i], "content": item["stub"]}
    if not events:
        raise BaselineCorrupt("empty transcript: no session-meta line")
    return Loaded(meta, messages, ids, events, grants, warnings)


def load_stdlib(path: str | os.PathLike[str]) -> Loaded:
    """``baseline_stdlib``: ``load`` with ``json`` per line."""
    return load(path, stdlib_loads)


def load_orjson(path: str | os.PathLike[str]) -> Loaded:
    """``baseline_orjson``: ``load`` with ``orjson.loads`` per line."""
    return load(path, _orjson().loads)


# ----------------------------------------------------------------------- peek

@dataclass
class Peeked:
    """What the baseline peek hands back (``Peek``'s fields, as plain data)."""

    path: str
    size: int
    meta: Any
    envelopes: list[tuple[int, dict[str, Any]]]
    messages: list[dict[str, Any]]
    warnings: list[str]
    error: str | None


_NOT_JSON = object()


def peek(path: str | os.PathLike[str], loads: Loads = stdlib_loads) -> Peeked:
    """Every line that parses, in file order, no replay; a bad line is skipped with a warning.

    ``error`` is set (and the rest empty) when there is nothing to read: no
    file, an empty one, or a first line that is not a session-meta.
    """
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return Peeked(path, 0, {}, [], [], [], "no such file")
    envelopes: list[tuple[int, dict[str, Any]]] = []
    messages: list[dict[str, Any]] = []
    warnings: list[str] = []
    with f:
        size = os.fstat(f.fileno()).st_size
        for lineno, raw in enumerate(f, 1):
            if not raw.strip(_BLANK_NL):
                continue
            try:
                parsed = loads(raw)
            except (ValueError, RecursionError):
                parsed = _NOT_JSON
            try:
                if parsed is _NOT_JSON:
                    raise BaselineCorrupt("not a whole JSON value", lineno)
                env = _envelope(parsed, lineno)
            except BaselineCorrupt as e:
                if not envelopes:
                    return Peeked(path, size, {}, [], [], [], f"{e} (no session-meta first)")
                warnings.append(f"{e}: skipped")
                continue
            if not envelopes and env["type"] != "session-meta":
                return Peeked(path, size, {}, [], [], [], f"line {lineno}: not a session-meta")
            envelopes.append((lineno, env))
            if env["type"] == "message":
                try:
                    messages.append(_message(env["payload"], lineno))
                except BaselineCorrupt as e:
                    warnings.append(f"{e}: not a message")
    if not envelopes:
        return Peeked(path, size, {}, [], [], [], "empty transcript")
    return Peeked(path, size, envelopes[0][1]["payload"], envelopes, messages, warnings, None)


def peek_stdlib(path: str | os.PathLike[str]) -> Peeked:
    """The stdlib peek baseline."""
    return peek(path, stdlib_loads)


def peek_orjson(path: str | os.PathLike[str]) -> Peeked:
    """The orjson peek baseline."""
    return peek(path, _orjson().loads)


# --------------------------------------------------------------------- append

class UserAppender:
    """The append loop a user would write: one ``os.write`` per line to an O_APPEND fd.

    ``dumps`` defaults to ``orjson.dumps(env, option=orjson.OPT_SORT_KEYS)``;
    pass ``stdlib_dumps`` where orjson is not installed.
    """

    def __init__(self, path: str | os.PathLike[str], dumps: Dumps | None = None) -> None:
        if dumps is None:
            mod = _orjson()
            option = mod.OPT_SORT_KEYS

            def sorted_dumps(value: Any) -> bytes:
                out: bytes = mod.dumps(value, option=option)
                return out
            dumps = sorted_dumps
        self._dumps = dumps
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def append_message(self, message: dict[str, Any], extra: dict[str, Any] | None = None) -> str:
        """Write one message envelope; returns its id."""
        id_ = uuid.uuid4().hex
        env = {
            "id": id_,
            "payload": {**extra, **message} if extra else message,
            "ts": datetime.now(timezone.utc).strftime(TS_FORMAT),
            "type": "message",
            "v": 1,
        }
        os.write(self.fd, self._dumps(env) + b"\n")
        return id_

    def close(self) -> None:
        """Close the fd (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> UserAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------- DuckDB

def have_duckdb() -> bool:
    """Whether DuckDB can be imported (the DuckDB row is skipped otherwise)."""
    try:
        importlib.import_module("duckdb")
    except ImportError:
        return False
    return True


def read_json_duckdb(path: str | os.PathLike[str]) -> int:
    """DuckDB's ``read_json`` of the whole file into a table (all its threads);
    returns the rows read. Not a loader with load's semantics (no repair, no
    replay, no strictness): the yardstick issue 15 names for raw JSONL speed."""
    duckdb = importlib.import_module("duckdb")
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")  # it would write to stdout
        con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, format = 'newline_delimited')",
                    [os.fspath(path)])
        return int(con.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        con.close()
