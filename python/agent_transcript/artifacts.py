"""Artifacts: full tool results kept beside a transcript, content-addressed.

``run.jsonl`` keeps its artifacts in ``run.artifacts/``. An artifact's ``file``
is a basename there, never a path, because transcripts get moved; a name that is
anything but a plain basename is refused before the filesystem is touched.
"""

from __future__ import annotations

import errno
import os
import secrets
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
        # Already there with the right digest (stored by another thread, process
        # or run): done. Anything else there (cut short, tampered) is replaced.
        if _read(target, len(data)) != data:
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
        # A temporary name of its own for every write: two threads storing the
        # same content, or a restart that has the pid a killed writer had, never
        # meet an earlier temporary file (a stale one is left alone, unused).
        tmp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(8)}.tmp")
        fd = _storage.Descriptor()
        try:
            fd.fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                            _storage.FILE_MODE)
            os.fchmod(fd.fd, _storage.FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd.fd, view):]
            os.fsync(fd.fd)
            fd.close()
            os.rename(tmp, target)  # atomic, over whatever is there
        except BaseException:
            fd.close()
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def read(self, artifact: Any) -> bytes | None:
        """The bytes of ``artifact``; None when its file is gone; ``ValueError``
        for a bad name or bytes that do not match its digest."""
        if not isinstance(artifact, dict):
            raise ValueError("an artifact is a dict with 'file' and 'digest'")
        path = self.folder / check_basename(artifact.get("file"))
        data = _read(path)
        if data is None:
            return None
        expected = artifact.get("digest")
        if expected is not None and _core.digest(data) != expected:
            raise ValueError(f"artifact {path.name} does not match its digest")
        return data


def _read(path: Path, size: int | None = None) -> bytes | None:
    """The bytes of the file at ``path`` (never through a link); None when it is
    missing, or when ``size`` is given and the file is not that long."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        if size is not None and e.errno == errno.ELOOP:
            return None  # a link where the artifact goes: replaced, never followed
        raise
    try:
        if size is not None and os.fstat(fd).st_size != size:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)
