"""``html`` of a big transcript: memory bounded (not timed), every record on exactly one page.

A ~24 MiB generated transcript, torn at the end as a crash leaves it, is
rendered as a folder of pages in a child process; its peak RSS is held to
load's own (the core's index of the file) plus a fixed allowance, however big
the file: the envelopes are rendered one at a time and written as they go.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_transcript.bench.generator import write_transcript

from .test_render import chunk_lines

_CHILD = """
import resource, sys
{body}
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
LOAD = "from agent_transcript import Session\ns = Session.peek(sys.argv[1])\nfrom agent_transcript.inspect import read\nr = read(sys.argv[1], lenient=True)\nn = len(r)"
HTML = "from agent_transcript.cli import main\nassert main(['html', sys.argv[1], '-o', sys.argv[2]]) == 0"
ALLOWANCE_MB = 64


def peak_mb(body: str, *args: str) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(body=body), *args], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip().splitlines()[-1]) / 1024


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("viewer-scale") / "big.jsonl"
    write_transcript(path, 24, seed=3, torn=True)
    return path


def test_html_of_a_big_transcript_is_paged_with_bounded_memory(big: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    read_rss = peak_mb(LOAD.replace("s = Session.peek(sys.argv[1])\n", ""), str(big))
    html_rss = peak_mb(HTML, str(big), str(out))
    assert html_rss < read_rss + ALLOWANCE_MB, (html_rss, read_rss)
    pages = sorted((out / "p").iterdir())
    assert len(pages) > 5
    seen: list[int] = []
    for chunk in sorted((out / "c").iterdir()):
        assert chunk.stat().st_size < 8 * 1024 * 1024
        first, lines_ = chunk_lines(chunk)
        seen += [first + n for n, line in enumerate(lines_) if line]
    lines = big.read_bytes().count(b"\n")
    assert seen == list(range(1, lines + 1))  # every whole line once, in order; the torn one is said, not shown
    index = (out / "index.html").read_text("utf-8")
    assert "torn tail: line" in index and "The run ended here." in pages[-1].read_text("utf-8")
