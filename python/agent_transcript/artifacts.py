"""Artifacts: full tool results kept beside a transcript, content-addressed.

``run.jsonl`` keeps its artifacts in ``run.artifacts/``. An artifact's ``file``
is a basename there, never a path, because transcripts get moved; a name that is
anything but a plain basename is refused before the filesystem is touched.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
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


# The artifacts folder is opened as itself, never through a link: the files in
# it are then opened, written and renamed relative to that descriptor.
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def artifacts_folder(transcript: str | os.PathLike[str]) -> Path:
    """The folder of a transcript's artifacts: ``<stem>.artifacts/`` beside it
    (``run.jsonl`` -> ``run.artifacts/``; the archive ``run.jsonl.zst`` has
    ``run.jsonl``'s). A stem too long for the suffix (a transcript name of 251
    to 255 bytes) is cut and tagged with its digest, as the repair file's name
    is (``_storage.beside``)."""
    path = Path(transcript)
    if path.name.endswith(".zst"):
        path = path.with_name(path.name[: -len(".zst")])
    return _storage.beside(path.with_name(path.stem), "", ".artifacts")


def open_stored(transcript: str | os.PathLike[str], file: str) -> int | None:
    """A descriptor of the stored artifact ``file`` of ``transcript``, for
    reading; None when none is there: a bad name, no such file, or in its
    place (or the folder's) a symbolic link, a FIFO, a device. Never follows a
    link, never blocks: a FIFO's open waits for a writer, and a link to
    ``/dev/zero`` reads forever."""
    try:
        name = check_basename(file)
    except ValueError:
        return None
    try:
        folder = os.open(artifacts_folder(transcript), _FOLDER_FLAGS)
    except OSError:
        return None
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


# A stored artifact is opened as itself (never through a link), and without
# waiting (a FIFO put in its place): a regular file ignores O_NONBLOCK.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class ArtifactStore:
    """The ``<stem>.artifacts/`` folder of one transcript."""

    def __init__(self, transcript: Path) -> None:
        self.folder = artifacts_folder(transcript)

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
        folder = self._make_folder()
        try:
            # Already there with the right digest (stored by another thread,
            # process or run): done. Anything else there (cut short, tampered,
            # a link) is replaced.
            if _read(folder, file, len(data)) != data:
                _write_atomically(folder, file, data)
        finally:
            os.close(folder)
        return {
            "file": file,
            "digest": digest,
            "bytes": len(data),
            "chars": chars,
            "elided-chars": max(0, chars - len(excerpt)),
        }

    def _open_folder(self) -> int | None:
        """A descriptor of the artifacts folder, opened without following a link
        (a link there is ``ValueError``); None when it is missing."""
        try:
            return os.open(self.folder, _FOLDER_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise self._refused(e) from None

    def _make_folder(self) -> int:
        """``_open_folder``, creating the folder (``0700``, parents too) if missing."""
        folder = self._open_folder()
        if folder is not None:
            return folder
        _storage.make_parents(self.folder / "artifact")
        try:
            return os.open(self.folder, _FOLDER_FLAGS)
        except OSError as e:
            raise self._refused(e) from None

    def _refused(self, e: OSError) -> Exception:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(self.folder):
            return ValueError(f"{self.folder} is a symbolic link: an artifacts folder is never "
                              "followed")
        return e

    def read(self, artifact: Any) -> bytes | None:
        """The bytes of ``artifact``; None when its file is gone; ``ValueError``
        for a bad name, a link in its place (or as the folder), or bytes that do
        not match its digest."""
        if not isinstance(artifact, dict):
            raise ValueError("an artifact is a dict with 'file' and 'digest'")
        file = check_basename(artifact.get("file"))
        folder = self._open_folder()
        if folder is None:
            return None
        try:
            data = _read(folder, file)
        finally:
            os.close(folder)
        if data is None:
            return None
        expected = artifact.get("digest")
        if expected is not None and _core.digest(data) != expected:
            raise ValueError(f"artifact {file} does not match its digest")
        return data


def _write_atomically(folder: int, file: str, data: bytes) -> None:
    """``data`` into ``file`` of the folder open as ``folder``: a temporary file,
    fsynced, renamed over whatever is there, the folder fsynced."""
    # A temporary name of its own for every write: two threads storing the
    # same content, or a restart that has the pid a killed writer had, never
    # meet an earlier temporary file (a stale one is left alone, unused).
    tmp = f".{file}.{os.getpid()}-{secrets.token_hex(8)}.tmp"
    fd = _storage.Descriptor()
    try:
        fd.fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                        _storage.FILE_MODE, dir_fd=folder)
        os.fchmod(fd.fd, _storage.FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd.fd, view):]
        os.fsync(fd.fd)
        fd.close()
        os.rename(tmp, file, src_dir_fd=folder, dst_dir_fd=folder)  # atomic, over whatever is there
    except BaseException:
        fd.close()
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
        raise
    os.fsync(folder)


def _read(folder: int, file: str, size: int | None = None) -> bytes | None:
    """The bytes of ``file`` in the folder open as ``folder``, never through a
    link; None when it is missing, or when ``size`` is given and it is not that
    long or is a link (to be replaced). Without ``size``, a link is ``ValueError``."""
    try:
        fd = os.open(file, _FILE_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        if size is not None:
            return None  # a link where the artifact goes: replaced, never followed
        raise ValueError(f"artifact {file} is a symbolic link, not a stored artifact: "
                         "it is never followed") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            if size is not None:
                return None  # replaced, never read
            raise ValueError(f"artifact {file} is not a regular file (a FIFO or a device in its "
                             "place): it is never read")
        if size is not None and st.st_size != size:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)
