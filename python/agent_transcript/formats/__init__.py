"""Other tools' transcripts, imported: Claude Code sessions and Codex rollouts.

Lives here: format detection (``detect_format``), the importers
(``import_transcript``, one source file or a folder of them, incremental)
and ``source_lines``, which gives an imported transcript's source back
byte for byte. An imported transcript replays to the conversation the source
tool rebuilds on resume (``.claude_code``, ``.codex`` say how), in
OpenAI chat shape, with every call as a ``tool-dispatched`` (and a
``tool-settled`` where the source shows its result); its session-meta says
where it came from (``source``: path, sha256, bytes, lines) and what the
session was (cwd, model, version); every source line is kept, in order, in a
``source-line`` envelope (``{"line", "status", "text"}``, ``"base64"`` for a
line that is not UTF-8, ``"damage"`` for one that is not a whole record), an
unknown type to replay. Ids and timestamps are derived from the source:
importing the same bytes twice writes the same bytes.

May import: the standard library, the public API of ``agent_transcript``
(the names in its ``__all__``) and ``inspect`` (whose ``sources`` is the core's
importer: most files are converted there, byte for byte as here). Never a private module of
another package, never a front end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Iterator

from ..inspect.paths import open_regular_file, read_regular_file
from ..inspect.sources import decompress, decompressed_head, is_compressed
from . import _conversion, claude_code, codex
from ._emit import Emitter
from ._source import (
    EPOCH_TS,
    SOURCE_LINE,
    Destination,
    Ids,
    ImportResult,
    Line,
    Records,
    UnknownFormat,
    as_folder_import,
    envelope_line,
    importer_meta,
    iter_source_lines,
    json_or_none,
    raw_lines,
    read_source,
    source_line_payload,
    strict_json,
)

__all__ = [
    "FORMATS",
    "SOURCE_LINE",
    "ImportResult",
    "UnknownFormat",
    "describe",
    "detect_format",
    "import_transcript",
    "source_lines",
]

#: The source formats, as ``--from`` names them.
FORMATS = ("claude-code", "codex")
_NAMES = {"claude-code": "a Claude Code session", "codex": "a Codex rollout"}
_SCAN_LINES = 50
_MAX_WARNINGS_IN_META = 100


def describe(source_format: str) -> str:
    """``"a Claude Code session"`` or ``"a Codex rollout"``."""
    return _NAMES.get(source_format, source_format)


def _detect(records: list[dict[str, Any]]) -> str | None:
    for i, r in enumerate(records):
        if r.get("type") == "session-meta" and "v" in r and "payload" in r:
            return None  # already a transcript
        if codex.looks_like(r, i == 0):
            return "codex"
        if claude_code.looks_like(r):
            return "claude-code"
    return None


def detect_format(path: str | os.PathLike[str]) -> str | None:
    """``"claude-code"``, ``"codex"``, or None when ``path`` is neither (read from its first lines).

    Raises:
        OSError: the file cannot be read.
    """
    records: list[dict[str, Any]] = []
    # A FIFO or a device is refused, never opened for reading (that would wait
    # for a writer, or read forever).
    head = read_regular_file(Path(path), lambda f: b"" if is_compressed(path) else f.read(1 << 20))
    if is_compressed(path):
        try:
            head = decompressed_head(Path(path), 1 << 20)
        except ValueError:
            return None
    for raw in head.split(b"\n")[:_SCAN_LINES]:
        try:
            value = strict_json(raw)
        except ValueError:
            continue
        # A "type" that is no string (a list, an object) is no record of either
        # format, and would not even be hashable for the tests below.
        if isinstance(value, dict) and isinstance(value.get("type", ""), str):
            records.append(value)
    found = _detect(records)
    if (found is None and not is_compressed(path) and head.lstrip().startswith(b"{") and b'"items"' in head
            and b'"session"' in head):
        if codex.g0_lines(Path(path), []) is not None:
            return "codex"
    return found


def source_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """Every line of the source an imported transcript came from, byte for byte and in
    order, blank and damaged lines included, each without its ``\\n``.

    Raises:
        OSError: ``path`` cannot be read.
    """
    return iter_source_lines(Path(path))


def import_transcript(src: str | os.PathLike[str], dest: str | os.PathLike[str], *,
                      source_format: str | None = None, force: bool = False) -> list[ImportResult]:
    """Import ``src`` (a Claude Code session or Codex rollout, or a folder of them) into ``dest``.

    A file becomes the transcript ``dest``; a folder becomes the folder
    ``dest``, its tree mirrored (each source's name with ``.jsonl``), every
    file of a known format imported and every other skipped; a source whose
    transcript there was imported from the same bytes is skipped (an
    incremental import), one imported from other bytes re-imported. A Claude
    Code subagent file found with its session is linked to it both ways, in the
    session-metas (``source.parent`` and ``subagents``: see ``_subagent_links``);
    one imported alone names its parent too (``source.parent`` without
    ``transcript``). The destination is written to a temporary name beside it and renamed into place.

    Args:
        source_format: ``"claude-code"`` or ``"codex"``; None detects it from the content.
        force: replace an existing destination (atomically); without it one is never overwritten.

    Returns:
        One result per source file imported or skipped, in path order.

    Raises:
        UnknownFormat: the file is neither format (or not ``source_format``), or the folder holds none.
        FileExistsError: ``dest`` exists (and ``force`` is not set).
        ValueError: ``source_format`` is not one of ``FORMATS``.
        OSError: a file cannot be read or written.
    """
    if source_format is not None and source_format not in FORMATS:
        raise ValueError(f"source_format must be one of {', '.join(FORMATS)}, not {source_format!r}")
    source, target = Path(src), Path(dest)
    # Worked on as absolute paths, so that a chdir meanwhile (another thread's)
    # moves neither the source, the destination nor its temporary file; the
    # results name them as the caller did.
    here_source, here_target = source.absolute(), target.absolute()
    if source.is_dir():
        done = as_folder_import(lambda: _import_folder(here_source, here_target, source_format, force))
        return [dataclasses.replace(r, source=source / r.source.relative_to(here_source),
                                    dest=target / r.dest.relative_to(here_target)) for r in done]
    links = _lone_subagent_links(here_source) if source_format in (None, "claude-code") else None
    return [dataclasses.replace(_import_file(here_source, here_target, source_format, force, links),
                                source=source, dest=target)]


def _import_folder(source: Path, target: Path, source_format: str | None, force: bool) -> list[ImportResult]:
    found: list[tuple[Path, str]] = []
    # A source's name on what cannot be read (a FIFO, a file without read
    # permission) is told, not passed over: the import would look complete.
    refused: list[tuple[Path, str]] = []
    for path in sorted(p for p in source.rglob("*") if _is_source_name(p) and not p.is_dir()):
        if is_compressed(path) and _plain(path).is_file():
            continue  # Codex reads the plain rollout when both are there
        try:
            fmt = detect_format(path)
        except OSError as e:
            if path.exists():  # not a link to nothing: that is no source
                refused.append((path, e.strerror or str(e)))
            continue
        if fmt is not None and (source_format is None or fmt == source_format):
            found.append((path, fmt))
    if not found:
        what = describe(source_format) if source_format else "a Claude Code session or Codex rollout"
        unread = f" ({len(refused)} could not be read: {refused[0][0]}: {refused[0][1]})" if refused else ""
        raise UnknownFormat(f"{source}: no file in this folder is {what}{unread}")
    if target.exists() and not target.is_dir():
        raise FileExistsError(17, "the destination of a folder import is a file", str(target))
    def dest_of(path: Path) -> Path:
        return (target / _plain(path).relative_to(source)).with_suffix(".jsonl")

    related = _subagent_links(found, dest_of)
    results = []
    for path, fmt in found:
        dest = dest_of(path)
        links = related.get(path, {})
        previous_meta = _imported_meta(dest)
        previous = previous_meta.get("source") if previous_meta is not None else None
        if isinstance(previous, dict) and previous.get("path") == str(path.resolve()):
            _, sha, _, _ = _digest_only(path)
            archive = previous.get("archive")
            same_links = (previous.get("parent") == links.get("parent")
                          and previous_meta is not None and previous_meta.get("subagents") == links.get("subagents"))
            if same_links and (archive.get("sha256") if isinstance(archive, dict) else previous.get("sha256")) == sha:
                results.append(ImportResult(path, dest, fmt, [], skipped=True))
                continue
            results.append(_import_file(path, dest, fmt, True, links))
        else:
            results.append(_import_file(path, dest, fmt, force, links))
    results.extend(ImportResult(path, dest_of(path), "", refused=why) for path, why in refused)
    return sorted(results, key=lambda r: r.source)


def _subagent_links(found: list[tuple[Path, str]], dest_of: Callable[[Path], Path]) -> dict[Path, dict[str, Any]]:
    """What a folder import links: each Claude Code subagent file (``agent-<agentId>.jsonl``,
    under ``<sessionId>/subagents/``, or beside the session file in the older layout)
    to its parent session, and the parent to its subagents, by source path.

    A subagent's ``source.parent`` is ``{"agent-id", "session-id", "transcript"}`` (the
    parent's transcript, relative to the subagent's), plus ``"call-id"`` (the ``Task``
    call that spawned it: the sidecar ``agent-<agentId>.meta.json``'s ``toolUseId``, else
    the tool result whose ``toolUseResult.agentId`` names it) and what the sidecar says
    (``agent-type``, ``description``, ``spawn-depth``, ``worktree-path``). The parent's
    session-meta gets ``"subagents"``: ``[{"agent-id", "transcript", "call-id"}]``.
    """
    claude = {path for path, fmt in found if fmt == "claude-code"}
    children: dict[Path, list[tuple[Path, str, dict[str, Any]]]] = {}
    for path in sorted(claude):
        name = _plain(path).name
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        agent_id = name[len("agent-"):-len(".jsonl")]
        parent = _parent_session(path)
        if parent is None or parent not in claude or parent == path:
            continue
        sidecar = _sidecar(path)
        children.setdefault(parent, []).append((path, agent_id, sidecar))
    links: dict[Path, dict[str, Any]] = {}
    for parent, kids in children.items():
        calls = _spawning_calls(parent, {agent_id for _, agent_id, _ in kids})
        listed = []
        for path, agent_id, sidecar in kids:
            call = sidecar.get("toolUseId") if isinstance(sidecar.get("toolUseId"), str) else calls.get(agent_id)
            up = os.path.relpath(dest_of(parent), dest_of(path).parent)
            link: dict[str, Any] = {"agent-id": agent_id, "session-id": _plain(parent).stem,
                                    "transcript": Path(up).as_posix()}
            for key, name in (("agentType", "agent-type"), ("description", "description"),
                              ("spawnDepth", "spawn-depth"), ("worktreePath", "worktree-path")):
                if key in sidecar:
                    link[name] = sidecar[key]
            entry: dict[str, Any] = {"agent-id": agent_id,
                                     "transcript": dest_of(path).relative_to(dest_of(parent).parent).as_posix()}
            if call is not None:
                link["call-id"] = call
                entry["call-id"] = call
            links.setdefault(path, {})["parent"] = link
            listed.append(entry)
        links.setdefault(parent, {})["subagents"] = listed
    return links


def _lone_subagent_links(path: Path) -> dict[str, Any] | None:
    """What an import of ``path`` alone links: a Claude Code subagent file to its
    parent session, as a folder import does (``source.parent``: see
    ``_subagent_links``) but for ``transcript``, since where the parent's own
    import is, if it has one, is not this import's to know. None for any other file."""
    name = _plain(path).name
    if not (name.startswith("agent-") and name.endswith(".jsonl")):
        return None
    try:
        if detect_format(path) != "claude-code":
            return None
    except OSError:
        return None  # the import itself says why it cannot read it
    parent = _parent_session(path)
    if parent is None or parent == path:
        return None
    link = _subagent_links([(path, "claude-code"), (parent, "claude-code")], lambda p: p).get(path, {}).get("parent")
    if link is None:
        return None
    link.pop("transcript", None)
    return {"parent": link}


def _parent_session(path: Path) -> Path | None:
    """The session file a subagent file belongs to: ``<sessionId>.jsonl`` beside the
    ``<sessionId>/`` folder holding ``subagents/``; in the older layout (the subagent
    file beside the session files), the one its records' ``sessionId`` names."""
    for folder in path.parents:
        if folder.name == "subagents":
            return folder.parent.with_name(folder.parent.name + ".jsonl")
    try:
        head = read_regular_file(path, lambda f: f.read(1 << 16))
    except OSError:
        return None
    for raw in head.split(b"\n")[:_SCAN_LINES]:
        try:
            record = strict_json(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("sessionId"), str) and record["sessionId"]:
            name = record["sessionId"] + ".jsonl"
            return path.with_name(name) if "/" not in name and name not in (".jsonl", "..jsonl") else None
    return None


def _sidecar(path: Path) -> dict[str, Any]:
    """The ``agent-<agentId>.meta.json`` beside a subagent file (``{}`` when there is
    none, or it is not a regular file: a FIFO would wait for a writer)."""
    try:
        value = json.loads(read_regular_file(path.with_name(_plain(path).name[: -len(".jsonl")] + ".meta.json"),
                                             lambda f: f.read(1 << 20)))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _spawning_calls(parent: Path, agent_ids: set[str]) -> dict[str, str]:
    """For each of ``agent_ids``, the call id of the tool result in ``parent`` whose
    ``toolUseResult.agentId`` names it (the first one)."""
    calls: dict[str, str] = {}
    f: BinaryIO | None = None
    try:
        f = open_regular_file(parent)  # never a FIFO's wait
        for raw in f:
            if b'"agentId"' not in raw or b'"tool_result"' not in raw:
                continue
            record = json_or_none(raw)
            result = record.get("toolUseResult") if isinstance(record, dict) else None
            agent_id = result.get("agentId") if isinstance(result, dict) else None
            if not isinstance(agent_id, str) or agent_id not in agent_ids or agent_id in calls:
                continue
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if (isinstance(block, dict) and block.get("type") == "tool_result"
                        and isinstance(block.get("tool_use_id"), str)):
                    calls[agent_id] = block["tool_use_id"]
                    break
        f.close()
    except BaseException as e:
        if f is not None:
            f.close()
        elif isinstance(e, OSError):
            return calls  # it cannot be opened: none found
        raise
    return calls


def _is_source_name(path: Path) -> bool:
    return path.suffix in (".jsonl", ".json") or path.name.endswith(".jsonl.zst")


def _plain(path: Path) -> Path:
    """``rollout.jsonl`` for ``rollout.jsonl.zst`` (any other path as it is)."""
    return path.with_name(path.name[: -len(".zst")]) if is_compressed(path) else path


def _digest_only(path: Path) -> tuple[None, str, int, None]:
    import hashlib

    sha = hashlib.sha256()

    def digest(f: BinaryIO) -> int:
        size = 0
        while chunk := f.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
        return size

    size = read_regular_file(path, digest)
    return None, "sha256:" + sha.hexdigest(), size, None


def _imported_from(dest: Path) -> dict[str, Any] | None:
    """The ``source`` of the session-meta of a transcript this imported, or None."""
    meta = _imported_meta(dest)
    source = meta.get("source") if meta is not None else None
    return source if isinstance(source, dict) else None


def _imported_meta(dest: Path) -> dict[str, Any] | None:
    """The session-meta payload of a transcript this imported, or None."""
    try:
        # Never blocking: a FIFO where a transcript goes would wait for a writer.
        first = read_regular_file(dest, lambda f: f.readline())
    except OSError:
        return None
    try:
        envelope = json.loads(first)
    except ValueError:
        return None
    payload = envelope.get("payload") if isinstance(envelope, dict) else None
    return payload if isinstance(payload, dict) and isinstance(payload.get("source"), dict) else None


def _import_file(source: Path, dest: Path, source_format: str | None, force: bool,
                 links: dict[str, Any] | None = None) -> ImportResult:
    open_regular_file(source).close()  # a FIFO, a device: refused before anything is read
    if source.resolve() == dest.resolve():
        raise FileExistsError(17, "the destination is the source", str(dest))
    if not force and (dest.exists() or dest.is_symlink()):
        raise FileExistsError(17, "the destination exists (--force replaces it)", str(dest))
    if not is_compressed(source):
        return _import_from(source, source, dest, source_format, force, None, links)
    # A .jsonl.zst rollout: decompressed by the core, a chunk at a time, into a
    # temporary file (never whole in memory), imported from there.
    _, archive_sha, archive_size, _ = _digest_only(source)
    # Closed (and so removed) by this try on every path, not by a with: a
    # Ctrl-C at the with's line as its block ends would leave it open and named.
    plain: IO[bytes] | None = None
    try:
        plain = tempfile.NamedTemporaryFile(prefix="agent-transcript-import-", suffix=".jsonl")
        _decompress_rollout(source, plain.fileno())
        done = _import_from(source, Path(plain.name), dest, source_format, force,
                            {"sha256": archive_sha, "bytes": archive_size}, links)
        plain.close()
        return done
    except BaseException:
        if plain is not None:
            plain.close()
        raise


def _decompress_rollout(source: Path, dest_fd: int) -> None:
    # Not inline: in CPython 3.11 the line of a try nested in another is
    # outside the outer one's handler, and a Ctrl-C there would leave the
    # caller's temporary file.
    try:
        decompress(source, dest_fd)
    except ValueError:
        raise UnknownFormat(f"{source}: not a zstd stream, so neither a Claude Code session "
                            "nor a Codex rollout") from None


def _import_from(source: Path, read: Path, dest: Path, source_format: str | None, force: bool,
                 archive: dict[str, Any] | None, links: dict[str, Any] | None = None) -> ImportResult:
    """Imports ``source``, whose bytes are read from ``read`` (itself, or its decompressed copy)."""
    detected = detect_format(read)
    fmt = source_format or detected
    if fmt is None or (source_format is not None and detected is not None and detected != source_format):
        what = describe(detected) if detected else "neither a Claude Code session nor a Codex rollout"
        wanted = f", not {describe(source_format)}" if source_format and detected else ""
        raise UnknownFormat(f"{source}: {'this is ' + what if detected else what}{wanted}")
    began = os.stat(read)
    lines, sha, size, warnings = read_source(read, claude_code.slim if fmt == "claude-code" else codex.slim)
    used = lines
    if fmt == "codex" and lines and lines[0].record is None:  # G0: one document over many lines
        used = codex.g0_lines(read, lines) or lines
    ids = Ids(sha)
    out: Destination | None = None
    # What the import reads and spools through, closed on every path by this
    # try (a with's end is a line a Ctrl-C can land on before its exit).
    held = contextlib.ExitStack()
    try:
        out = Destination(dest, force=force)
        records = Records(held.enter_context(open_regular_file(read)))
        spool = held.enter_context(tempfile.TemporaryFile(dir=dest.parent))
        emit = Emitter(ids, lambda t, i, ts, p: spool.write(envelope_line(t, i, ts, p)))
        convert = _conversion.convert if fmt == "claude-code" else codex.convert
        info = convert(used, emit, warnings, records.full)
        if emit.message_count == 0 and detected is None:
            raise UnknownFormat(f"{source}: neither a Claude Code session nor a Codex rollout")
        pending = emit.pending_calls()
        if pending:
            warnings.append(f"{len(pending)} tool call(s) without a result stay pending: {', '.join(pending[:5])}")
        meta: dict[str, Any] = {
            "format": fmt,
            **info,
            "source": _source_meta(source, sha, size, len(lines), archive, links),
            "importer": importer_meta(),
            "warnings": warnings[:_MAX_WARNINGS_IN_META],
        }
        if links and "subagents" in links:
            meta["subagents"] = links["subagents"]
        if len(warnings) > _MAX_WARNINGS_IN_META:
            meta["warnings-total"] = len(warnings)
        out.write("session-meta", ids.next("meta"), emit.first_ts or _first_ts(lines), meta)
        out.copy_from(spool)
        ts = emit.ts
        written = 0
        again = hashlib.sha256()
        for line, raw in zip(lines, held.enter_context(contextlib.closing(raw_lines(read, size, again)))):
            ts = line.when or ts
            out.write(SOURCE_LINE, ids.next("line"), ts, source_line_payload(line, raw))
            written += 1
        # The lines were read again by path, as far as the first read went (a
        # live session grows meanwhile): a source cut, rewritten or replaced
        # gave fewer, or other bytes, and the import would not be its source.
        _still_the_source(source, read, began, size,
                          written == len(lines) and "sha256:" + again.hexdigest() == sha)
        held.close()
        out.commit()
    except BaseException:
        _close_after_failure(held)
        if out is not None:
            out.abort()
        raise
    return ImportResult(source, dest, fmt, warnings)


def _close_after_failure(held: contextlib.ExitStack) -> None:
    """Close what an import that failed held. A close that fails too (a spool's
    flush on the full disk that failed the import) must not keep the abort
    after it from removing the temporary file and the folders made: the
    failure being raised already says what went wrong."""
    try:
        held.close()
    except OSError:
        pass


def _source_meta(source: Path, sha: str, size: int, lines: int, archive: dict[str, Any] | None,
                 links: dict[str, Any] | None = None) -> dict[str, Any]:
    """The session-meta's ``source``: the file, for a ``.zst`` one its compressed bytes too,
    and for a subagent's file its parent session (see ``_subagent_links``)."""
    meta: dict[str, Any] = {"path": str(source.resolve()), "sha256": sha, "bytes": size, "lines": lines}
    if archive is not None:
        meta["archive"] = archive
    if links and "parent" in links:
        meta["parent"] = links["parent"]
    return meta


def _still_the_source(source: Path, read: Path, began: os.stat_result, size: int, whole: bool = True) -> None:
    """Raise unless ``read`` is still the file the import began with, no shorter
    than it was then nor than the ``size`` bytes read (a live session that grew
    is still its source), and read ``whole``: another program cut, rewrote or
    replaced it during the import."""
    try:
        now = os.stat(read)
    except FileNotFoundError:
        now = None
    if (not whole or now is None or (now.st_dev, now.st_ino) != (began.st_dev, began.st_ino)
            or now.st_size < max(size, began.st_size)):
        raise OSError(errno.EAGAIN, "the source was cut or replaced while it was imported; nothing was "
                      "written (import it again)", str(source))


def _first_ts(lines: list[Line]) -> str:
    return next((line.when for line in lines if line.when), EPOCH_TS)
