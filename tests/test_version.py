"""One version: the Cargo workspace's, seen the same by the package and its metadata."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import metadata, version
from pathlib import Path

import agent_transcript

ROOT = Path(__file__).resolve().parents[1]


def workspace_version() -> str:
    text = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    section = text.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
    found = re.search(r'^version\s*=\s*"([^"]+)"', section, re.MULTILINE)
    assert found, "no version in [workspace.package]"
    return found.group(1)


def test_version_is_the_workspace_version() -> None:
    assert agent_transcript.__version__ == workspace_version()
    assert version("agent-transcript") == agent_transcript.__version__


def test_metadata_names_license_urls_and_platforms() -> None:
    meta = metadata("agent-transcript")
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Repository", "Issues", "Changelog"} <= set(urls), urls
    classifiers = meta.get_all("Classifier") or []
    assert "Operating System :: POSIX :: Linux" in classifiers
    assert "Operating System :: MacOS" in classifiers
    assert not any("Windows" in c for c in classifiers)


def test_cli_version() -> None:
    r = subprocess.run([sys.executable, "-m", "agent_transcript", "--version"],
                       capture_output=True, text=True, check=False)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"agent-transcript {workspace_version()}\n", "")
