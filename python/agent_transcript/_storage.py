"""The file underneath a session: creating it, taking its lock, repairing its tail.

The lock is ``flock(2)`` on the transcript itself, taken without waiting: it dies
with the process, so a ``kill -9`` leaves nothing stale. A repair writes the good
prefix into ``<path>.repair``, locks that file *before* renaming it over the
transcript, and only then lets go of the old inode, so the path is locked at
every instant. Whoever takes the lock checks afterwards that the path still names
the inode it locked, and starts again if a repair swapped it meanwhile.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, TypeVar

from . import _core, _platform
from .errors import CorruptTranscript, SessionLocked

FILE_MODE = 0o600

#: What an archive's name ends with (``run.jsonl`` -> ``run.jsonl.zst``).
ARCHIVE_SUFFIX = ".zst"
#: The first bytes of a zstd frame, whatever the file's name.
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def refuse_archive(path: Path, fd: int | None = None) -> None:
    """Refuse to write a transcript under an archive's name, or to load an archive.

    A transcript is plain JSONL: a name ending in ``.zst`` is an archive's,
    which every reader reads as zstd. With ``fd`` (load), a file that holds a
    zstd frame is an archive whatever its name.

    Raises:
        CorruptTranscript: ``fd``'s file is a zstd archive.
        ValueError: ``path``'s name ends in ``.zst``.
    """
    if fd is not None and os.pread(fd, len(_ZSTD_MAGIC), 0) == _ZSTD_MAGIC:
        raise CorruptTranscript(
            "a zstd archive, not a transcript a session can open: read it as it is with "
            "Session.peek or show/check/stats, or extract it first with "
            "`agent-transcript archive --extract PATH` (Session.unarchive)", None, str(path))
    if path.name.endswith(ARCHIVE_SUFFIX):
        raise ValueError(f"{path}: a name ending in {ARCHIVE_SUFFIX} is an archive's, and a transcript "
                         f"is plain JSONL: name it without {ARCHIVE_SUFFIX} "
                         "(`agent-transcript archive` makes the archive of a closed one)")
DIR_MODE = 0o700

_T = TypeVar("_T")


def make_parents(path: Path, made: list[Path] | None = None) -> list[Path]:
    """Create the missing parent directories of ``path``, each ``0700`` whatever
    the umask; returns those it made, outermost first (see ``remove_made``).

    Each is added to ``made`` (a new list, if None) in the line that makes it,
    so that a caller who passes its own list knows what to remove after a
    Ctrl-C at any line of this."""
    made = [] if made is None else made
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        if parent.parent == parent:
            break
        parent = parent.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE); made.append(d)  # noqa: E702  (one line: made is recorded)
        except FileExistsError:
            continue
        os.chmod(d, DIR_MODE)
    return made


def make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents, each ``0700`` whatever the
    umask (the folders of a page, an export); returns those it made."""
    return make_parents(folder / "_")  # the parents of a name in it: the folder included


def remove_made(folders: list[Path]) -> None:
    """Remove the folders ``make_parents`` made for a file that was not
    created after all, innermost first, each only while it is empty (another
    process may have put something there meanwhile)."""
    for d in reversed(folders):
        try:
            os.rmdir(d)
        except OSError:
            return


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionLocked(f"{path}: another session has this transcript open") from None


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def refuse_unless_regular(mode: int, path: Path) -> None:
    """Raise unless ``mode`` is a regular file's: ``IsADirectoryError`` for a
    directory, else ``OSError(EINVAL)``, each saying what the path is."""
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _NOT_REGULAR if test(mode)), "an unknown kind of file")
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    raise OSError(code, f"not a regular file ({kind})", str(path))


class Descriptor:
    """An open descriptor and the duty to close it, exactly once.

    A Ctrl-C (``KeyboardInterrupt``) can land between any two lines of Python.
    Whoever holds a Descriptor closes it when anything fails; handing it on and
    closing it are each done in one line, so an interrupt finds the descriptor
    either still here or gone (closed, or owned by someone else), never both.
    ``fd`` is -1 when there is none. Close on the normal path inside the ``try``
    whose ``except`` closes it too, never in a ``finally``, where an interrupt
    would skip the close.
    """

    __slots__ = ("fd", "created")

    def __init__(self) -> None:
        self.fd = -1
        #: The file open_locked created (a dangling link's target, maybe), or None.
        self.created: Path | None = None

    def close(self) -> None:
        """Close the descriptor, if there is one."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1; os.close(fd)  # noqa: E702  (one line: see above)

    def replace(self, other: Descriptor) -> None:
        """Take ``other``'s descriptor in place of this one's (there must be one),
        which is closed."""
        old, self.fd, other.fd = self.fd, other.fd, -1; os.close(old)  # noqa: E702


def open_regular(path: Path, flags: int) -> int:
    """``os.open(path, flags)`` for a regular file, never blocking on anything
    else (opening a FIFO waits for its other end; a device may act on open):
    refused by ``stat`` before the open, and by ``fstat`` after it (the path may
    have changed in between), with ``refuse_unless_regular``'s errors.

    The caller binds the descriptor to what closes it (a ``Descriptor``'s
    ``fd``) in the line of the call; ``open_regular_file`` hands it to a
    file object instead.
    """
    fd = Descriptor()
    try:
        _open_regular(fd, path, flags)
        got, fd.fd = fd.fd, -1; return got  # noqa: E702  (one line: handed on, or still fd's)
    except BaseException:
        fd.close()
        raise


def open_regular_file(path: Path) -> BinaryIO:
    """``open_regular`` for reading, as a file object that owns the descriptor.

    Its holder closes it on every path, as a ``Descriptor``'s does: on the
    normal one inside the ``try`` whose ``except BaseException`` closes it too
    (closing a file object twice is harmless), or through ``read_regular_file``.
    A ``with`` is not enough: an interrupt at the ``with`` line, as the block
    ends, lands before the file's ``__exit__`` and leaves it to the garbage
    collector.
    """
    fd = Descriptor()
    f: BinaryIO | None = None
    try:
        _open_regular(fd, path, os.O_RDONLY)
        f, fd.fd = os.fdopen(fd.fd, "rb"), -1  # one line: from here on the file closes it
        return f
    except BaseException:
        fd.close()
        if f is not None:
            f.close()
        raise


def read_regular_file(path: Path, read: Callable[[BinaryIO], _T]) -> _T:
    """``read(f)`` of the file ``open_regular_file`` opens at ``path``, which
    is closed afterwards, whatever happens (a Ctrl-C at any line included)."""
    f: BinaryIO | None = None
    try:
        f = open_regular_file(path)
        got = read(f)
        f.close()
        return got
    except BaseException:
        if f is not None:
            f.close()
        raise


def _open_regular(fd: Descriptor, path: Path, flags: int) -> None:
    """``open_regular`` into ``fd`` (empty); ``fd`` is empty again if it fails."""
    refuse_unless_regular(os.stat(path).st_mode, path)
    try:
        fd.fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
        refuse_unless_regular(os.fstat(fd.fd).st_mode, path)
        fcntl.fcntl(fd.fd, fcntl.F_SETFL, fcntl.fcntl(fd.fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        fd.close()
        raise


def open_locked(fd: Descriptor, path: Path, *, create: bool) -> None:
    """Open ``path`` for appending into ``fd`` (empty) and lock it.

    With ``create``, a missing file is created ``0600`` (``fd.created`` is then
    the path of the file this call created); a dangling symlink at ``path`` gets
    the file it names created (as ``open(2)`` does), its missing parents too.
    Raises ``SessionLocked`` at once when another session holds it,
    ``FileNotFoundError`` when it is missing and ``create`` is false, and
    ``OSError`` for what is not a regular file (see ``open_regular``),
    ``ValueError`` to create under an archive's name (see ``refuse_archive``);
    ``fd`` is then empty again, and a file this call created is gone (unless
    another session has locked it meanwhile: it is theirs).
    """
    if create:
        refuse_archive(path)
    flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
    try:
        while True:
            fd.created = None
            if create:
                try:
                    fd.fd, fd.created = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE), path
                except FileExistsError:
                    try:
                        _open_regular(fd, path, flags)
                    except FileNotFoundError:
                        if not os.path.islink(path):
                            raise
                        # A dangling symlink: create what it names (O_EXCL alone
                        # never follows a link).
                        target = Path(os.path.realpath(path))
                        make_parents(target)
                        try:
                            fd.fd, fd.created = os.open(target, flags | os.O_CREAT | os.O_EXCL,
                                                        FILE_MODE), target
                        except FileExistsError:
                            continue  # made meanwhile: open it as it is
            else:
                _open_regular(fd, path, flags)
            if fd.created:
                os.fchmod(fd.fd, FILE_MODE)
            _lock(fd.fd, path)
            if _same_file(fd.fd, path):
                return
            # A repair swapped the file between our open and our lock: go again.
            fd.close()
    except BaseException:
        _remove_created(fd)
        fd.close()
        raise


def _remove_created(fd: Descriptor) -> None:
    """Unlink the file ``open_locked`` created into ``fd``, which failed (a
    Ctrl-C between the create and the return included), so that it leaves no
    empty file behind; only under its lock, since another session may have
    opened the new file and locked it meanwhile, and then it is theirs."""
    created, fd.created = fd.created, None
    if created is None or fd.fd < 0:
        return
    try:
        fcntl.flock(fd.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _same_file(fd.fd, created) and os.fstat(fd.fd).st_size == 0:
            os.unlink(created)
    except OSError:
        pass  # left as it is: an empty file, which a create takes as new


@dataclass(frozen=True)
class TailRepair:
    """What the tail check found and did."""

    warning: str | None
    #: The last line is whole but has no ``\n``: the next append writes one first.
    missing_newline: bool


_BLANK = b" \t\r"
_HEX = frozenset(b"0123456789abcdef")
# How every line this library writes begins; "h" stands for a lowercase hex digit.
_ENVELOPE_START = b'{"id":"' + b"h" * 32 + b'","payload":'


def check_head(fd: int, path: Path) -> None:
    """Refuse a file whose first non-blank line is not a whole session-meta,
    before load writes, renames or deletes anything.

    Lets through an empty or blank file (the core's replay refuses it, and the
    tail check writes nothing there) and a file whose only line is a torn
    session-meta, what a crash inside ``create`` leaves: the repair removes it.

    Raises:
        CorruptTranscript, UnsupportedVersion: the file is not a transcript
            this library reads (an archive among them).
        ValueError: the file is named as an archive (see ``refuse_archive``).
    """
    refuse_archive(path, fd)
    first, ended, end = _first_line(fd)
    if not first:
        return
    try:
        # The core's own verdict on that line: replay of the file up to its end.
        _core.Transcript.read_only(fd, end)
    except CorruptTranscript as e:
        if not ended and _starts_like_an_envelope(first):
            return  # the lone, torn session-meta of an unfinished create
        raise type(e)(e.message, e.line, str(path)) from None


def _starts_like_an_envelope(line: bytes) -> bool:
    """Whether ``line`` (or the part of it there is) begins as this library's lines do."""
    head = line[: len(_ENVELOPE_START)]
    return all(b in _HEX if want == ord("h") else b == want
               for b, want in zip(head, _ENVELOPE_START))


def _first_line(fd: int) -> tuple[bytes, bool, int]:
    """``(start, ended, end)`` of the first non-blank line of the file: its first
    bytes from its first non-blank one (enough to tell whether it begins like an
    envelope), whether a ``\n``
    ends it, and the offset just past it and its ``\n``. ``start`` is ``b""``
    when every line is blank. Reads a chunk at a time, whatever the line's length."""
    offset = 0
    found = False  # the first non-blank line has begun
    start = b""
    while True:
        chunk = os.pread(fd, 1 << 16, offset)
        if not chunk:
            return start, False, offset
        at = 0
        if not found:
            rest = chunk.lstrip(_BLANK + b"\n")
            if not rest:
                offset += len(chunk)
                continue
            at = len(chunk) - len(rest)
            found = True
        if len(start) < len(_ENVELOPE_START):
            start += chunk[at : at + len(_ENVELOPE_START) - len(start)]
        end = chunk.find(b"\n", at)
        if end >= 0:
            return start, True, offset + end + 1
        offset += len(chunk)


def remove_leftover_repair(path: Path) -> None:
    """Delete a ``<path>.repair`` left by a repair that died before its rename.

    A ``path`` that is a symlink names its target: the leftover is the target's.
    """
    try:
        os.unlink(repair_path(Path(os.path.realpath(path))))
    except FileNotFoundError:
        pass


def repair_path(path: Path) -> Path:
    """Where the repair of ``path`` is written: ``<name>.repair`` beside it.

    A name too long for that (a legal one of 249 to 255 bytes, say) gets
    ``<its first bytes>.<16 hex digits of its SHA-256>.repair`` instead (see
    ``beside``).
    """
    return beside(path, "", ".repair")


def beside(path: Path, prefix: str, suffix: str) -> Path:
    """``<prefix><name><suffix>`` in ``path``'s folder, for a file that belongs
    to ``path`` (its repair, an import's temporary file).

    A name too long for that gets ``<prefix><its first bytes>.<16 hex digits of
    its SHA-256><suffix>`` instead: always the same for the same name, and as
    long as the folder allows.
    """
    name = os.fsencode(path.name)
    head, tail = os.fsencode(prefix), os.fsencode(suffix)
    limit = name_max(path.parent)
    if len(head) + len(name) + len(tail) <= limit:
        return path.with_name(prefix + path.name + suffix)
    tag = b"." + hashlib.sha256(name).hexdigest()[:16].encode() + tail
    cut = max(0, limit - len(head) - len(tag))
    while 0 < cut < len(name) and 0x80 <= name[cut] < 0xC0:
        cut -= 1  # not in the middle of a UTF-8 character
    return path.with_name(os.fsdecode(head + name[:cut] + tag))


def refuse_to_replace(path: Path) -> None:
    """Raise (as ``refuse_unless_regular`` does) unless ``path`` is missing,
    a regular file or a symlink: what a writer may rename a new file over. A
    device, FIFO or socket there is not a file this library wrote, and renaming
    over it replaces it for every program (a page written to ``/dev/null``
    would leave a regular file in its place)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISLNK(mode):
        refuse_unless_regular(mode, path)


def open_replacement(path: Path) -> tuple[int, Path]:
    """A new, empty file to write ``path``'s next content into, and its name:
    ``.<name>.<random>.tmp`` beside it (cut as ``beside`` cuts), made with
    ``O_EXCL``, so never opened through a symlink someone left there, nor shared
    with another writer of the same ``path``; ``0600`` whatever the umask, as
    everything made from a transcript is. The caller renames it over
    ``path`` with ``replace_with``, or unlinks it.

    Raises:
        OSError: ``path`` is something ``refuse_to_replace`` refuses, or the
            file cannot be created.
    """
    refuse_to_replace(path)
    while True:
        tmp = beside(path, ".", f".{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE), tmp
        except FileExistsError:
            continue


def replace_with(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` over ``path`` (see ``open_replacement``), checking
    again just before that ``path`` did not become something not to replace."""
    refuse_to_replace(path)
    os.replace(tmp, path)


def move_into_place(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` to ``path``, never over a file there, even one made a
    moment ago: ``FileExistsError`` then, with ``tmp`` left for the caller.

    A rename replaces whatever has the name by then, so a check before it
    leaves a window in which a file someone else made is lost; a hard link
    fails on an existing name instead. A file system without hard links gets
    the check and the rename (the window returns there, and only there).
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, "the name was taken meanwhile", str(path)) from None
        os.rename(tmp, path)
        return
    os.unlink(tmp)


# What link(2) answers where the file system has no hard links (FAT, some FUSE
# and network mounts), or none for this file.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS})


def name_max(folder: Path) -> int:
    """The longest file name, in bytes, that ``folder``'s filesystem takes."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


#: What the tail check's two kinds of damage mean. A torn last line is what a
#: crash leaves, and begins with ``{`` (this library never writes a leading
#: blank): a malformed last line that does not, or one after another malformed
#: line, is damage, which load refuses and leaves as it is.
TAIL_DAMAGE = {
    "corrupt": "the last two non-blank lines are both malformed",
    "damaged": "the last non-blank line is malformed and does not begin with '{'",
}


def repair_tail(fd: Descriptor, path: Path) -> TailRepair:
    """Run load's repair on the locked ``fd`` of ``path``.

    A cut leaves the repaired file's descriptor in ``fd`` (the old one closed).
    Returns the warning to report. Raises ``CorruptTranscript`` when the end
    is damage rather than a torn write (see ``TAIL_DAMAGE``); the file is
    then untouched.
    """
    kind, keep, line, removed, missing_newline, _ = _core.tail_check(fd.fd)
    if kind in TAIL_DAMAGE:
        raise CorruptTranscript(f"{TAIL_DAMAGE[kind]}: damage, not a crash", line, str(path))
    if kind != "torn":
        return TailRepair(None, missing_newline)
    _write_repair(fd, _resolved(fd.fd, path), keep)
    return TailRepair(
        f"removed a torn last line: line {line}, {removed} bytes",
        False,  # the good prefix ends with the newline before the torn line
    )


def _resolved(fd: int, path: Path) -> Path:
    """``path`` with its symlinks followed, checked to still name ``fd``'s file.

    The repair is renamed over the file itself: renamed over a symlink, it would
    replace the link and leave the file it points to torn.
    """
    real = Path(os.path.realpath(path))
    if not _same_file(fd, real):
        raise OSError(errno.ESTALE, "the transcript was replaced while it was being opened", str(path))
    return real


def _write_repair(fd: Descriptor, path: Path, keep: int) -> None:
    """Copy the first ``keep`` bytes of ``fd``'s file into ``<path>.repair``, lock
    it, rename it over ``path`` and put its descriptor in ``fd``."""
    repair = repair_path(path)
    mode = stat.S_IMODE(os.fstat(fd.fd).st_mode)
    out = Descriptor()
    try:
        out.fd = os.open(repair, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         mode)
        os.fchmod(out.fd, mode)
        _lock(out.fd, repair)
        _copy_prefix(fd.fd, out.fd, keep)
        _platform.sync(out.fd)
        os.rename(repair, path)
        fsync_dir(path.parent)
        fcntl.fcntl(out.fd, fcntl.F_SETFL, fcntl.fcntl(out.fd, fcntl.F_GETFL) | os.O_APPEND)
        fd.replace(out)
    except BaseException:
        # Before the rename the original is untouched and the copy goes; after
        # it, the repaired file is the transcript and only its descriptor goes.
        out.close()
        try:
            os.unlink(repair)
        except OSError:
            pass
        raise


def _copy_prefix(src: int, dst: int, length: int) -> None:
    # copy_file_range lets the filesystem share or copy blocks without a trip
    # through user space; fall back to plain reads where it is not supported.
    done = 0
    try:
        while done < length:
            n = _platform.copy_file_range(src, dst, length - done, done, done)
            if n == 0:
                break
            done += n
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
    while done < length:
        chunk = os.pread(src, min(1 << 20, length - done), done)
        if not chunk:
            raise OSError(errno.EIO, "the transcript shrank during its repair")
        os.pwrite(dst, chunk, done)
        done += len(chunk)


def fsync_dir(directory: Path) -> None:
    """fsync a directory, so that names created or renamed in it are durable."""
    dfd = Descriptor()
    try:
        dfd.fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        _platform.sync(dfd.fd)
        dfd.close()
    except BaseException:
        dfd.close()
        raise


def absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute from the working directory now (links and ``..``
    left as they are), so that a later ``os.chdir`` moves neither the transcript
    nor its artifacts."""
    return Path(path).absolute()


def unlink_quietly(path: Path) -> None:
    """Remove ``path``, if it can be removed."""
    try:
        os.unlink(path)
    except OSError:
        pass
