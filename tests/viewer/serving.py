"""``agent-transcript serve`` in a child process, for the tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator
from contextlib import contextmanager


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """The base URL of ``serve FOLDER --port 0``, stopped on exit."""
    child = subprocess.Popen([sys.executable, "-m", "agent_transcript", "serve", str(folder), "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        m = re.search(r"at (http://127\.0\.0\.1:\d+/) ", first)
        assert m, (first, child.stderr.read() if child.poll() is not None and child.stderr else "")
        yield m.group(1)
    finally:
        child.terminate()
        child.wait(timeout=10)
        for stream in (child.stdout, child.stderr):
            if stream:
                stream.close()


def append_line(path: Path, data: bytes) -> None:
    """Append ``data`` from another process, as a writer would."""
    subprocess.run([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'ab'); f.write(sys.stdin.buffer.read()); f.close()", str(path)],
                   input=data, check=True, timeout=30)
