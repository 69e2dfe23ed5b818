"""``.jsonl.zst`` archives: a closed transcript compressed by the Rust core, and
read back as if it were the ``.jsonl`` it was.

An archive is read by decompressing it, a chunk at a time, into an unlinked
temporary file (on disk, in the temporary folder: a 1 GiB archive never sits
decompressed in memory) and reading that as the transcript; the file goes when
its descriptor is closed.
"""

from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from pathlib import Path

from . import _core, _platform, _storage
from ._storage import ARCHIVE_SUFFIX as SUFFIX
from .errors import CorruptTranscript, SessionLocked


def is_archive(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an archive (by its name: ``*.zst``)."""
    return os.fspath(path).endswith(SUFFIX)


def open_for_reading(path: Path) -> int:
    """A read-only descriptor of the transcript at ``path``: the file itself
    (see ``_storage.open_regular``), or for an archive an unlinked
    temporary file holding its decompressed bytes.

    Raises:
        OSError: the file cannot be opened or read.
        CorruptTranscript: an archive that is not a whole zstd stream.
    """
    # Each descriptor is held from the line that opens it to the one that
    # hands it on: a Ctrl-C between two lines leaves none open (a bare int in
    # a local would be lost with the frame).
    src = _storage.Descriptor()
    out = _storage.Descriptor()
    try:
        src.fd = _storage.open_regular(path, os.O_RDONLY)
        if not is_archive(path):
            got, src.fd = src.fd, -1; return got  # noqa: E702  (one line: handed on, or still src's)
        _scratch(out)
        _decompress(src.fd, out.fd, path)
        src.close()
        got, out.fd = out.fd, -1; return got  # noqa: E702
    except BaseException:
        out.close()
        src.close()
        raise


def _decompress(archive: int, out: int, path: Path) -> None:
    # Not inline: in CPython 3.11 the line of a try nested in another is
    # outside the outer one's handler, and a Ctrl-C there would leave the
    # caller's descriptors open.
    try:
        _core.zstd_decompress(archive, out)
    except ValueError as e:
        raise CorruptTranscript(str(e), None, str(path)) from None


def _scratch(out: _storage.Descriptor) -> None:
    """A new, unlinked read-write file in the temporary folder, into ``out`` (empty)."""
    folder = tempfile.gettempdir()
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            out.fd = os.open(folder, flag | os.O_RDWR | os.O_CLOEXEC, 0o600)
            return
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    out.fd, name = tempfile.mkstemp(prefix="agent-transcript-", dir=folder)
    os.unlink(name)


def archive(path: Path, keep: bool) -> Path:
    """See ``agent_transcript.Session.archive``."""
    if is_archive(path):
        raise ValueError(f"{path}: already an archive")
    # A symlink names the file to archive: the archive goes beside that file,
    # and it is that file that goes (renamed over, or unlinked, a link would
    # leave the transcript where it was).
    path = Path(os.path.realpath(path))
    dest = path.with_name(path.name + SUFFIX)
    if len(os.fsencode(dest.name)) > _storage.name_max(path.parent):
        raise OSError(errno.ENAMETOOLONG, "the transcript's name is too long for the archive's "
                      f"(its name and {SUFFIX!r})", str(dest))
    # A name of up to 255 bytes with .zst has room for .partial only if it is
    # short enough: else it is cut and tagged with its digest (_storage.beside).
    partial = _storage.beside(path, "", SUFFIX + ".partial")
    if os.path.lexists(dest):
        raise FileExistsError(errno.EEXIST, "the archive is there already", str(dest))
    src = _storage.Descriptor()
    out = _storage.Descriptor()
    locked = False  # the .partial is this call's only under the lock
    try:
        # The writer's lock, held throughout: no session can append meanwhile,
        # and one that holds it makes this raise SessionLocked.
        _storage.open_locked(src, path, create=False)
        locked = True
        size = os.fstat(src.fd).st_size
        _remove_partial(partial)  # what an archive killed before its rename left
        # 0600 whatever the transcript's mode and the umask: a copy never reads wider.
        out.fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.fchmod(out.fd, 0o600)
        _core.zstd_compress(src.fd, size, out.fd, _core.ZSTD_LEVEL)
        _platform.sync(out.fd)
        out.close()
        if not _reads_back_as(partial, src.fd, size):
            raise OSError(errno.EIO, "the archive read back differs from the transcript", str(partial))
        # Never over a file put there since the check above (a copy of an
        # older archive, say): a rename would lose it.
        _put_in_place(partial, dest, path, keep)
        src.close()
        return dest
    except BaseException:
        out.close()
        src.close()
        if locked:
            _discard(partial)
        raise


def extract(path: Path, keep: bool) -> Path:
    """See ``agent_transcript.Session.unarchive``."""
    if not is_archive(path):
        raise ValueError(f"{path}: not an archive (its name does not end in {SUFFIX})")
    path = Path(os.path.realpath(path))  # a symlink names the archive to extract
    dest = path.with_name(path.name[: -len(SUFFIX)])
    if not dest.name:
        raise ValueError(f"{path}: the archive's name is only {SUFFIX}: no name to extract to")
    partial = _storage.beside(dest, "", ".partial")
    if os.path.lexists(dest):
        raise FileExistsError(errno.EEXIST, "a file is there already", str(dest))
    src = _storage.Descriptor()
    out = _storage.Descriptor()
    locked = False  # the .partial is this call's only under the lock
    try:
        src.fd = _storage.open_regular(path, os.O_RDONLY)
        locked = _lock_archive(src.fd, path)  # one extract of it at a time
        _remove_partial(partial)  # what an extract killed before its rename left
        # A new transcript: 0600, as every file this library makes.
        out.fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.fchmod(out.fd, 0o600)
        _decompress(src.fd, out.fd, path)
        _platform.sync(out.fd)
        if not _core.zstd_matches(src.fd, out.fd, os.fstat(out.fd).st_size):
            raise OSError(errno.EIO, "the transcript read back differs from the archive", str(partial))
        out.close()
        _put_in_place(partial, dest, path, keep)  # never over a file put there meanwhile
        src.close()
        return dest
    except BaseException:
        out.close()
        src.close()
        if locked:
            _discard(partial)
        raise


def _put_in_place(partial: Path, dest: Path, source: Path, keep: bool) -> None:
    """Link the verified ``partial`` to ``dest``, never over a file there, and
    make it durable; then remove ``source`` unless ``keep``."""
    _storage.move_into_place(partial, dest)
    _storage.fsync_dir(dest.parent)
    if not keep:
        os.unlink(source)
        _storage.fsync_dir(source.parent)


def _discard(partial: Path) -> None:
    """Remove the ``.partial`` a failed or interrupted call leaves: before the
    link it is the unfinished copy; after it, ``dest`` holds the file (the
    name is gone already, or is a second name of it)."""
    try:
        os.unlink(partial)
    except OSError:
        pass


def _lock_archive(fd: int, path: Path) -> bool:
    """Lock the archive ``fd`` (True), or raise ``SessionLocked`` when another extract holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionLocked(f"{path}: another process is extracting this archive") from None
    return True


# The two below are not inline in archive(): in CPython 3.11 the line of a try
# nested in another is outside the outer one's handler, and a Ctrl-C there
# left the transcript locked (its descriptor open for good) and the .partial.


def _remove_partial(partial: Path) -> None:
    try:
        os.unlink(partial)
    except FileNotFoundError:
        pass


def _reads_back_as(partial: Path, src: int, size: int) -> bool:
    """Whether the archive at ``partial`` decompresses to the first ``size``
    bytes of ``src``, read back from the file."""
    check = _storage.Descriptor()
    try:
        check.fd = os.open(partial, os.O_RDONLY | os.O_CLOEXEC)
        same = _core.zstd_matches(check.fd, src, size)
        check.close()
        return same
    except BaseException:
        check.close()
        raise
