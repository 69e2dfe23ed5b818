"""Artifacts: full tool results kept beside a transcript, content-addressed.

``run.jsonl`` keeps its artifacts in ``run.artifacts/``. An artifact's ``file``
is a basename there, never a path, because transcripts get moved; a name that is
anything but a plain basename is refused before the filesystem is touched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import _core, _platform, _storage


def check_basename(file: Any) -> str:
    """``file`` if it is a plain basename, else ``ValueError``."""
    if not isinstance(file, str):
        raise ValueError(f"an artifact file name is a str, not {type(file).__name__}")
    if (not file or file in (".", "..") or "/" in file or "\\" in file or "\0" in file
            or ".." in file):
        raise ValueError(f"not a plain artifact file name: {file!r}")
    return file


class ArtifactStore:
    """The ``<stem>.artifacts/`` folder of one transcript."""

    def __init__(self, transcript: Path) -> None:
        self.folder = transcript.with_name(transcript.stem + ".artifacts")

    def path(self, file: str) -> Path:
        """The path of artifact ``file``."""
        return self.folder / check_basename(file)

    def write(self, content: str | bytes, *, excerpt: str) -> dict[str, Any]:
        """Store ``content`` atomically under its digest; returns the artifact dict."""
        if isinstance(content, str):
            data = content.encode("utf-8", "surrogatepass")
            chars = len(content)
        elif isinstance(content, (bytes, bytearray, memoryview)):
            data = bytes(content)
            chars = len(data.decode("utf-8", "replace"))
        else:
            raise TypeError(f"artifact content is str or bytes, not {type(content).__name__}")
        if not isinstance(excerpt, str):
            raise TypeError(f"excerpt must be str, not {type(excerpt).__name__}")
        digest = _core.digest(data)
        file = digest.replace(":", "-")
        target = self.folder / file
        if not target.exists():
            _storage.make_parents(target)
            self._write_atomically(target, data)
        return {
            "file": file,
            "digest": digest,
            "bytes": len(data),
            "chars": chars,
            "elided-chars": max(0, chars - len(excerpt)),
        }

    def _write_atomically(self, target: Path, data: bytes) -> None:
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     _storage.FILE_MODE)
        try:
            os.fchmod(fd, _storage.FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            _platform.sync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        os.rename(tmp, target)

    def read(self, artifact: Any) -> bytes | None:
        """The bytes of ``artifact``; None when its file is gone; ``ValueError``
        for a bad name or bytes that do not match its digest."""
        if not isinstance(artifact, dict):
            raise ValueError("an artifact is a dict with 'file' and 'digest'")
        path = self.folder / check_basename(artifact.get("file"))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        expected = artifact.get("digest")
        if expected is not None and _core.digest(data) != expected:
            raise ValueError(f"artifact {path.name} does not match its digest")
        return data
