"""Every Python example of README.md and docs/**/*.md runs, and prints what its page says.

The blocks of one page run in order, each in a fresh interpreter, in one
temporary folder per page: a later block may read the files an earlier one
wrote, as a reader following the page would. Expected output is written in the
block itself, as ``#> `` comment lines: the block's stdout must be exactly
those lines, in order. A block with none may print anything.

The line before a block may say, in an HTML comment the page does not show:

* ``<!-- docs-test: requires=MODULE -->`` (or ``requires=MODULE:NAME``, several
  allowed): the block runs when that module (and name in it) can be imported,
  and is skipped, saying so, otherwise. CI installs every extra, so there every
  block runs.
* ``<!-- docs-test: skip REASON -->``: never run (say why).
* ``<!-- docs-test: run -->`` before a ``sh`` block: run it too, with bash
  (``set -euo pipefail``), in its place among the page's blocks; an ``sh``
  block without it (an install command, a path of the reader's) is only shown.

A block whose fence says ``python title="..."`` (a one-line fragment shown for
comparison, such as a framework's "before") is not a program and is not run.
Every transcript a page leaves behind must then check clean
(``agent-transcript check``, exit 0): a page never teaches a way to write a
damaged file. The folder holds ``transcript.schema.json``, the schema a reader downloads from
the JSON Schema page.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCHEMA = DOCS / "reference" / "transcript.schema.json"
PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "scripts" not in p.parts)]

_BLOCK = re.compile(
    r"(?:^<!--\s*docs-test:(?P<marker>[^>]*?)-->\n)?^```(?P<info>(?:python|sh)[^\n]*)\n(?P<code>.*?)^```$",
    re.M | re.S,
)


@dataclass
class Example:
    """One fenced Python block of a page."""

    page: Path
    line: int
    code: str
    requires: list[str] = field(default_factory=list)
    skip: str | None = None
    shell: bool = False

    @property
    def expected(self) -> list[str] | None:
        """The ``#>`` lines, or None when the block shows no output."""
        shown = [m.group(1) for m in re.finditer(r"^\s*#> ?(.*)$", self.code, re.M)]
        return shown or None

    def missing(self) -> str | None:
        """The first requirement this interpreter lacks, or None."""
        for requirement in self.requires:
            module, _, name = requirement.partition(":")
            try:
                if importlib.util.find_spec(module) is None:
                    return requirement
                if name and not hasattr(importlib.import_module(module), name):
                    return requirement
            except ImportError:
                return requirement
        return None


def examples(page: Path) -> list[Example]:
    """Every runnable Python block of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in _BLOCK.finditer(text):
        marker = (m.group("marker") or "").strip()
        shell = m.group("info").strip() == "sh"
        if shell and "run" not in marker.split():
            continue  # shown, not run
        if not shell and m.group("info").strip() != "python":
            continue  # python title="before": a fragment, not a program
        example = Example(page, text.count("\n", 0, m.start("code")) + 1, m.group("code"), shell=shell)
        if marker.startswith("skip"):
            example.skip = marker[4:].strip() or "marked skip"
        for word in marker.split():
            if word.startswith("requires="):
                example.requires.append(word.removeprefix("requires="))
        found.append(example)
    return found


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_pages_have_examples() -> None:
    """The extractor finds the blocks (a change of fence syntax would silently test nothing)."""
    counts = {_name(p): len(examples(p)) for p in PAGES}
    assert counts["docs/getting-started.md"] >= 4
    assert counts["README.md"] >= 1
    assert sum(counts.values()) >= 28, counts
    for page in PAGES:
        for example in examples(page):
            assert example.code.strip(), f"{_name(page)}:{example.line}: an empty block"


def test_a_wrong_output_is_caught(tmp_path: Path) -> None:
    """The harness compares: a block that prints something else fails."""
    good = Example(tmp_path / "p.md", 1, 'print("yes")\n#> yes\n')
    bad = Example(tmp_path / "p.md", 1, 'print("no")\n#> yes\n')
    assert run(good, tmp_path) is None
    assert "printed" in (run(bad, tmp_path) or "")


def run(example: Example, cwd: Path) -> str | None:
    """Run one block in a fresh interpreter in ``cwd``; a message if it failed, else None."""
    env = {**os.environ, "PYTHONWARNINGS": "error", "NO_COLOR": "1", "COLUMNS": "100"}
    env.pop("PYTHONPATH", None)
    bin_dir = str(Path(sys.executable).parent)  # agent-transcript, installed beside this interpreter
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    command = (["bash", "-c", "set -euo pipefail\n" + example.code] if example.shell
               else [sys.executable, "-c", example.code])
    done = subprocess.run(command, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    where = f"{_name(example.page) if example.page.is_relative_to(ROOT) else example.page}:{example.line}"
    if done.returncode != 0:
        return f"{where}: exit {done.returncode}\n{done.stderr[-3000:]}"
    expected = example.expected
    if expected is not None and done.stdout.splitlines() != expected:
        return f"{where}: printed\n{done.stdout}\nbut the page shows\n" + "\n".join(expected)
    return None


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    shutil.copy(SCHEMA, tmp_path / SCHEMA.name)
    skipped = []
    for example in examples(page):
        why = example.skip or (f"needs {example.missing()}" if example.missing() else None)
        if why:
            skipped.append(f"line {example.line}: {why}")
            continue
        failure = run(example, tmp_path)
        assert failure is None, failure
    if skipped and len(skipped) == len(examples(page)):
        pytest.skip("; ".join(skipped))
    left = sorted(str(p) for p in tmp_path.rglob("*.jsonl"))
    if left:
        done = subprocess.run([sys.executable, "-m", "agent_transcript", "check", *left],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{_name(page)} leaves a transcript that does not check clean:\n{done.stdout}{done.stderr}"
