"""One exit status for every outcome of a command: the part of ``main`` all commands share.

Light on purpose: ``grep`` runs through it without the other commands' modules
being imported (a search of gigabytes should not wait on them).
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from .. import CorruptTranscript, SessionLocked, TranscriptError, UnsupportedVersion
from ..inspect import describe_os_error
from .errors import PROG, CliError
from .style import escaped

__all__ = ["run"]


def run(command: Callable[[], int]) -> int:
    """Run ``command`` (which parses its arguments and does the work) and return its exit status:
    bad input or a refused operation is one line on stderr and 2, Ctrl-C 130, a closed pipe 141."""
    _quiet_stdout_errors()
    try:
        status = command()
        sys.stdout.flush()
        return status
    except CliError as exc:
        _error(str(exc))
        return exc.status
    except (SessionLocked, UnsupportedVersion, CorruptTranscript, TranscriptError) as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except RecursionError:  # not reached by anything the reader accepts; never a traceback
        _error("a value in this transcript is nested too deeply to show")
        return 2
    except BrokenPipeError:
        _devnull_stdout()
        return 141
    except OSError as exc:
        _error(describe_os_error(exc, getattr(exc, "filename", None) or "?"))
        return 2


def _error(message: str) -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        pass
    sys.stderr.write(f"{PROG}: {escaped(message)}\n")  # one line, whatever a file name holds


def _quiet_stdout_errors() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def _devnull_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
