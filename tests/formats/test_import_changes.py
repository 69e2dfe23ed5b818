"""An import whose source changes under it, or whose process is interrupted: it
imports what it read, or nothing at all."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agent_transcript import formats
from agent_transcript.formats import import_transcript
from interrupt import Stopped, stopped_by_a_signal

from .sources import BASIC, lines

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))
import import_gen  # noqa: E402


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_signal_during_the_import_stops_it_with_its_handlers_exception(tmp_path: Path, fmt: str) -> None:
    """A signal handler's exception (a Ctrl-C's KeyboardInterrupt, or this one)
    ends the import, which leaves nothing behind; asked again, it is done."""
    src = tmp_path / "source.jsonl"
    (import_gen.write_claude_code if fmt == "claude-code" else import_gen.write_codex)(str(src), 4 << 20)
    dest = tmp_path / "out" / "imported.jsonl"
    with pytest.raises(Stopped), stopped_by_a_signal():
        import_transcript(src, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source.jsonl"]
    import_transcript(src, dest)
    assert dest.exists()


@pytest.mark.parametrize("change", ["cut", "replaced"])
def test_a_source_cut_or_replaced_during_the_import_is_not_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """A source another program cut or replaced while it was read would give an
    import that is not of its source: an OSError, and nothing is written."""
    src = tmp_path / "session.jsonl"
    src.write_bytes(lines(*BASIC))
    dest = tmp_path / "out" / "run.jsonl"

    def change_it() -> None:
        if change == "cut":
            with open(src, "r+b") as f:
                f.truncate(40)
        else:
            other = tmp_path / "other.jsonl"
            other.write_bytes(lines(*BASIC[:2]))
            other.replace(src)

    real_lines = formats.raw_lines

    def raw_lines_after_a_change(path: Path, *rest: Any) -> Any:
        change_it()
        return real_lines(path, *rest)

    monkeypatch.setattr(formats, "raw_lines", raw_lines_after_a_change)
    with pytest.raises(OSError, match="cut or replaced while it was imported"):
        import_transcript(src, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]
