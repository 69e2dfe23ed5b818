"""docs/reference/cli.md is what docs/scripts/cli_reference.py makes from the parsers now."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "cli_reference.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render() -> str:
    """The page as the script makes it, in a fresh interpreter (it sets the environment)."""
    done = subprocess.run([sys.executable, "-c", f"import runpy; print(runpy.run_path({str(SCRIPT)!r})['render'](), end='')"],
                          capture_output=True, text=True, check=True, env={**os.environ})
    return done.stdout


def test_the_committed_cli_page_is_current() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert page == render(), "docs/reference/cli.md is stale: run python docs/scripts/cli_reference.py"


def test_every_command_and_option_is_on_the_page() -> None:
    """The page is made from the parsers, not from a list that could fall behind them."""
    from agent_transcript.cli import app
    import argparse

    page = render()
    parser = app._parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, command in sub.choices.items():
        assert f"## `{name}`" in page
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}" in page or f", {option}" in page, (name, option)
    assert "`--profile PROFILE`" in page or "`--profile" in page  # the bench's own parser


def test_check_mode_fails_on_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = generator()
    stale = tmp_path / "cli.md"
    stale.write_text("# Command line\n", encoding="utf-8")
    monkeypatch.setattr(module, "PAGE", stale)
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME", ""))
    assert module.main(["--check"]) == 1
    assert module.main([]) == 0
    assert module.main(["--check"]) == 0
