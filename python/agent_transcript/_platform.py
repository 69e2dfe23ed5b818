"""Where the POSIX systems this package runs on differ: Linux and macOS, in one place.

What each platform promises for ``durability="fsync"``:

* Linux: every append ends with ``fdatasync(2)`` (the Rust core's ``sync_data``):
  the line's bytes and the file's new size are on the device, and the kernel asks
  the drive to flush its write cache where the filesystem uses barriers (ext4,
  xfs and btrfs do by default). A repair ``fsync``\\ s the new file and its folder.
* macOS: ``fsync(2)`` there only hands the data to the drive, whose cache may
  still lose it on power loss, and there is no ``fdatasync``. So every append
  ends with ``fcntl(F_FULLFSYNC)`` (Rust's ``sync_data`` does that on Apple
  systems), and so does the repair here (``sync``), falling back to
  ``fsync`` on filesystems that refuse ``F_FULLFSYNC`` (some network ones).
* ``durability="flush"`` is the same everywhere: one ``write(2)`` per append, so a
  crash of the process loses nothing written; a crash of the machine may lose
  the last appends (and only whole lines: the tail repair cuts a torn one).

Windows is not supported yet: the design relies on POSIX advisory locks
(``flock``) and on renaming a repaired file over one that is open, which
Windows refuses. Importing the package there raises ``ImportError`` saying so.
"""

from __future__ import annotations

import errno
import os
import sys

if sys.platform == "win32":
    raise ImportError(
        "agent_transcript does not support Windows yet: it needs POSIX file locking "
        "(flock, one advisory lock per open file) and POSIX append and rename semantics "
        "(an O_APPEND write is one atomic append; a repaired file is renamed over the "
        "open transcript), which Windows does not provide. Linux and macOS are supported."
    )

import fcntl  # noqa: E402  (after the Windows check: there is no fcntl there)

#: Where this process's descriptors can be reopened by number, or None where
#: there is no such folder (macOS, a Linux without /proc mounted). Tests set it
#: to None to run the macOS branch on Linux.
PROC_SELF_FD: str | None = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None


def copy_file_range(src: int, dst: int, count: int, offset_src: int, offset_dst: int) -> int:
    """``os.copy_file_range``, or ``OSError(ENOSYS)`` where Python has none.

    Python has it on Linux only (and not in every Linux build: one linked against
    a glibc older than 2.27 lacks it). ENOSYS sends the caller to its plain
    ``pread``/``pwrite`` copy, as an unsupported filesystem would.
    """
    copy = getattr(os, "copy_file_range", None)  # looked up per call: tests remove it
    if copy is None:
        raise OSError(errno.ENOSYS, "copy_file_range is not available on this platform")
    n: int = copy(src, dst, count, offset_src, offset_dst)
    return n


def sync(fd: int) -> None:
    """Make ``fd``'s data and metadata durable, as far as the platform can promise.

    ``fcntl(F_FULLFSYNC)`` where it exists (macOS: it flushes the drive's cache,
    which ``fsync`` does not), else ``fsync``; a filesystem that refuses
    ``F_FULLFSYNC`` gets ``fsync``.
    """
    full = getattr(fcntl, "F_FULLFSYNC", None)
    if full is not None:
        try:
            fcntl.fcntl(fd, full)
            return
        except OSError as e:
            if e.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOTTY):
                raise
    os.fsync(fd)


def child_reader(fd: int) -> int | None:
    """In a forked child, a descriptor to read ``fd``'s file through that holds no
    lock: a fresh open of it where ``/proc`` can reopen it, else ``/dev/null``
    (reads then fail). Never ``flock(LOCK_UN)``: that would unlock the parent."""
    if PROC_SELF_FD is not None:
        try:
            return os.open(f"{PROC_SELF_FD}/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            pass
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
