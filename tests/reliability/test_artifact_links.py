"""Links where artifacts go are refused, never followed.

* An artifact file replaced by a symbolic link (to a copy of the right bytes, to
  anything else, or to nothing): ``read_artifact`` raises ``ValueError``, as
  for any file that is not the stored artifact (not ``ELOOP``'s ``OSError``);
  ``write_artifact`` of the same content replaces the link itself.
* A symbolic link as the ``<stem>.artifacts`` folder: ``read_artifact`` and
  ``write_artifact`` raise ``ValueError`` and touch nothing behind it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_transcript import Session


def stored(tmp_path: Path) -> tuple[Session, dict[str, object], Path]:
    s = Session.create(tmp_path / "run.jsonl")
    art = s.write_artifact("the full result", excerpt="the")
    return s, art, s.artifact_path(str(art["file"]))


@pytest.mark.parametrize("link_to", ["same bytes", "other bytes", "nothing", "a folder"])
def test_an_artifact_replaced_by_a_link_is_refused(tmp_path: Path, link_to: str) -> None:
    s, art, path = stored(tmp_path)
    victim = tmp_path / "victim"
    if link_to == "same bytes":
        victim.write_bytes(path.read_bytes())
    elif link_to == "other bytes":
        victim.write_bytes(b"secret")
    elif link_to == "a folder":
        victim.mkdir()
    path.unlink()
    path.symlink_to(victim)
    with s:
        with pytest.raises(ValueError, match="link"):
            s.read_artifact(art)
        # Storing it again replaces the link, not what it points to.
        assert s.write_artifact("the full result", excerpt="the") == art
        assert not path.is_symlink() and s.read_artifact(art) == b"the full result"
    if link_to == "other bytes":
        assert victim.read_bytes() == b"secret"


def test_a_linked_artifacts_folder_is_refused(tmp_path: Path) -> None:
    s, art, path = stored(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    folder = path.parent
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    with s:
        with pytest.raises(ValueError, match="link"):
            s.read_artifact(art)
        with pytest.raises(ValueError, match="link"):
            s.write_artifact("another result", excerpt="a")
    assert sorted(p.name for p in elsewhere.iterdir()) == before
    assert folder.is_symlink()


def test_a_dangling_linked_artifacts_folder_is_refused(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        (tmp_path / "run.artifacts").symlink_to(tmp_path / "nowhere")
        with pytest.raises(ValueError, match="link"):
            s.write_artifact("x", excerpt="x")
        with pytest.raises(ValueError, match="link"):
            s.read_artifact({"file": "sha256-00", "digest": "sha256:00"})
    assert not os.path.lexists(tmp_path / "nowhere")


def test_a_missing_folder_still_reads_as_gone(tmp_path: Path) -> None:
    with Session.create(tmp_path / "run.jsonl") as s:
        assert s.read_artifact({"file": "sha256-00", "digest": "sha256:00"}) is None
