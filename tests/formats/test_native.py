"""The Rust core's importer against the Python one: on every fixture and on generated
sources, the same bytes, or a refusal that hands the file to the Python importer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript.inspect.sources import native_import
from agent_transcript import formats
from agent_transcript.formats import import_transcript
from interrupt import stopped_by_a_signal

from .sources import ABORTED, BASIC, G2, PARALLEL, REPLACEMENT, ROLLBACK, SIDECHAIN, SOURCES, Source, lines

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))
import import_gen  # noqa: E402


def both(tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes]:
    native, python = tmp_path / "native.jsonl", tmp_path / "python.jsonl"
    import_transcript(src, native, force=True)
    monkeypatch.setattr(formats, "_NATIVE", False)
    import_transcript(src, python, force=True)
    monkeypatch.setattr(formats, "_NATIVE", True)
    return native.read_bytes(), python.read_bytes()


def taken(src: Path, fmt: str, tmp_path: Path) -> bool:
    with open(src, "rb") as f, open(tmp_path / "spool", "wb+") as spool:
        return not isinstance(native_import(fmt, f.fileno(), spool.fileno()), str)


@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_native_and_python_importers_write_the_same_bytes(tmp_path: Path, src: Source,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / (src.name + src.suffix)
    path.write_bytes(src.data)
    native, python = both(tmp_path, path, monkeypatch)
    assert native == python


# The Python importer's: a branch not taken, damage, a lone surrogate, a legacy compaction, the
# older Codex generations.
_PYTHONS = {"cc-compaction-after-rewind", "cc-compaction-preserving-a-segment",
            "cc-compaction-preserving-a-segment-boundary-anchor", "cc-compaction-preserving-a-broken-segment",
            "cc-rewind-branches", "cc-rewind-after-a-call", "cc-leaf-by-the-millisecond",
            "cc-torn-tail", "cc-nul-line", "cc-glued-records", "cc-lone-surrogate",
            "codex-legacy-compaction", "codex-legacy-compaction-truncates-a-long-message", "codex-g1", "codex-g0"}


@pytest.mark.parametrize("src", SOURCES, ids=[s.name for s in SOURCES])
def test_the_native_importer_takes_the_common_cases(tmp_path: Path, src: Source) -> None:
    path = tmp_path / ("s" + src.suffix)
    path.write_bytes(src.data)
    assert taken(path, src.format, tmp_path) is (src.name not in _PYTHONS)


@pytest.mark.parametrize("kind", ["claude-code", "codex"])
def test_generated_sources_import_the_same_natively(tmp_path: Path, kind: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "gen.jsonl"
    getattr(import_gen, "write_" + kind.replace("-", "_"))(str(src), 600_000)
    assert taken(src, kind, tmp_path)
    native, python = both(tmp_path, src, monkeypatch)
    assert native == python


_record = st.sampled_from([*BASIC[:5], *PARALLEL, *SIDECHAIN])
_noise = st.sampled_from([b"", b"  ", b'{"type":"tag","tag":"x","sessionId":"s1"}',
                          b'{"type":"custom-title","customTitle":"T","sessionId":"s1"}'])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(_record, _noise), min_size=1, max_size=14), st.booleans())
def test_native_output_equals_python_output_on_generated_sources(
        tmp_path_factory: pytest.TempPathFactory, body: list[object], final_newline: bool) -> None:
    tmp = tmp_path_factory.mktemp("diff")
    data = lines(BASIC[0], *body, end=b"\n" if final_newline else b"")
    src = tmp / "s.jsonl"
    src.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        native, python = both(tmp, src, mp)
    assert native == python
    os.unlink(src)


_codex = st.sampled_from([*G2[1:], *REPLACEMENT[len(G2):], *ROLLBACK[len(G2):], *ABORTED[2:]])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(_codex, _noise), min_size=1, max_size=16), st.booleans())
def test_native_output_equals_python_output_on_generated_rollouts(
        tmp_path_factory: pytest.TempPathFactory, body: list[object], final_newline: bool) -> None:
    tmp = tmp_path_factory.mktemp("diff")
    data = lines(G2[0], *body, end=b"\n" if final_newline else b"")
    src = tmp / "r.jsonl"
    src.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        native, python = both(tmp, src, mp)
    assert native == python


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_signal_during_the_native_passes_stops_the_import_with_its_handlers_exception(
        tmp_path: Path, fmt: str) -> None:
    """The core asks Python's signal handlers between stretches of its work (the
    Rust tests count the questions): the handler's own exception, as raised (a
    Ctrl-C's KeyboardInterrupt, or this one), ends the import, which leaves
    nothing behind."""
    src = tmp_path / "source.jsonl"
    (import_gen.write_claude_code if fmt == "claude-code" else import_gen.write_codex)(str(src), 16 << 20)
    dest = tmp_path / "out" / "imported.jsonl"
    with stopped_by_a_signal() as stopped, pytest.raises(stopped):
        import_transcript(src, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source.jsonl"]
    import_transcript(src, dest)  # and it is done when asked again
    assert dest.exists()


@pytest.mark.parametrize("importer", ["native", "python"])
@pytest.mark.parametrize("change", ["cut", "replaced"])
def test_a_source_cut_or_replaced_during_the_import_is_not_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, importer: str, change: str) -> None:
    """Both importers read the source again after their first pass (the native
    one at the offsets it found, the Python one by path): a source another
    program cut or replaced in between gave an import that was not of its
    source (the Python one wrote fewer source lines than it counted, or
    another file's). It is an OSError now, and nothing is written; a source
    that only grew (a live session) is imported as far as it was read."""
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

    if importer == "python":
        monkeypatch.setattr(formats, "_NATIVE", False)
        real_lines = formats.raw_lines

        def raw_lines_after_a_change(path: Path) -> Any:
            change_it()
            return real_lines(path)

        monkeypatch.setattr(formats, "raw_lines", raw_lines_after_a_change)
    else:
        real_native = formats.native_import

        def native_then_a_change(*args: Any) -> Any:
            run = real_native(*args)
            assert not isinstance(run, str)
            change_it()
            return run

        monkeypatch.setattr(formats, "native_import", native_then_a_change)
    with pytest.raises(OSError, match="cut or replaced while it was imported"):
        import_transcript(src, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.jsonl"]


def test_a_source_that_grew_during_the_import_is_imported_as_far_as_it_was_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "session.jsonl"
    first = lines(*BASIC[:3])
    src.write_bytes(first)
    real_native = formats.native_import

    def native_then_an_append(*args: Any) -> Any:
        run = real_native(*args)
        with open(src, "ab") as f:
            f.write(lines(*BASIC[3:]))
        return run

    monkeypatch.setattr(formats, "native_import", native_then_an_append)
    import_transcript(src, tmp_path / "run.jsonl")
    assert b"\n".join(formats.source_lines(tmp_path / "run.jsonl")) + b"\n" == first


_IMPORT_CHILD = """
import sys
from agent_transcript.formats import import_transcript
import_transcript(sys.argv[1], sys.argv[2])
"""


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_the_destination_goes_to_the_disk_as_it_is_written_and_the_spool_never(
        tmp_path: Path, fmt: str) -> None:
    """The import's destination is fsynced at its end: its pages are sent to
    the disk as they are written (sync_file_range, which does not wait), so the
    disk works while the converter does instead of after it; the spool, cut
    back as it is copied, is never sent. Traced: the destination's temporary
    file gets the hints, from its start, and still its fsync; the spool none."""
    src = tmp_path / "source.jsonl"
    (import_gen.write_claude_code if fmt == "claude-code" else import_gen.write_codex)(str(src), 12 << 20)
    dest = tmp_path / "imported.jsonl"
    trace = tmp_path / "trace"
    done = subprocess.run(["strace", "-f", "-qq", "-y", "-e", "trace=sync_file_range,fsync",
                           "-o", str(trace), sys.executable, "-c", _IMPORT_CHILD, str(src), str(dest)],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    calls = [c.split(None, 1)[1] for c in trace.read_text().splitlines()]
    hints = [c for c in calls if c.startswith("sync_file_range(")]
    temp = ".import-"
    assert hints and all(temp in h for h in hints), calls
    assert hints[0].split(", ")[1] == "0", hints  # what was there before the source lines too
    assert any(c.startswith("fsync(") and temp in c for c in calls), calls
    assert dest.exists()
