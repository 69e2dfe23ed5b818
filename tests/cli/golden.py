"""The golden outputs of the read commands on the fixtures (tests/data/cli/golden/).

``show``, ``show --replayed``, ``check`` and ``stats``, as text (plain and
coloured) and ``--json``, on every fixture transcript: their exit status,
stdout and stderr, byte for byte. They were written by the command line as it
was before the package was reshaped into sub-packages (issue 9), and
tests/cli/test_golden.py holds every later version to them. Regenerate only
when an output is meant to change:

    python tests/cli/golden.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run as a script: tests/ holds the cli package

from cli.helpers import DATA, env  # noqa: E402

GOLDEN = DATA / "golden"

COMMANDS: dict[str, list[str]] = {
    "show": ["show"],
    "show-full": ["show", "--full"],
    "show-colour": ["show", "--color", "always"],
    "show-json": ["show", "--json"],
    "show-replayed": ["show", "--replayed"],
    "show-replayed-colour": ["show", "--replayed", "--color", "always"],
    "show-replayed-json": ["show", "--replayed", "--json"],
    "check": ["check"],
    "check-json": ["check", "--json"],
    "stats": ["stats"],
    "stats-colour": ["stats", "--color", "always"],
    "stats-json": ["stats", "--json"],
}


def fixtures() -> list[str]:
    """Every fixture file the read commands are run on (the artifacts folder is data)."""
    return sorted(p.name for p in DATA.iterdir() if p.is_file())


def outputs(name: str) -> dict[str, dict[str, object]]:
    """Every command of COMMANDS on fixture ``name``, run on a copy by its bare name."""
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(DATA / name, Path(tmp) / name)
        arts = (DATA / name).with_suffix(".artifacts")
        if arts.is_dir():
            shutil.copytree(arts, Path(tmp) / arts.name)
        for key, argv in COMMANDS.items():
            r = subprocess.run(
                [sys.executable, "-m", "agent_transcript", *argv, name],
                cwd=tmp,
                capture_output=True,
                timeout=120,
                env=env(),
            )
            out[key] = {
                "exit": r.returncode,
                "stdout": r.stdout.decode("utf-8", "surrogateescape"),
                "stderr": r.stderr.decode("utf-8", "surrogateescape"),
            }
    return out


def golden_path(name: str) -> Path:
    return GOLDEN / (name + ".json")


def main() -> int:
    GOLDEN.mkdir(exist_ok=True)
    for name in fixtures():
        text = json.dumps(outputs(name), indent=1, ensure_ascii=True, sort_keys=True) + "\n"
        golden_path(name).write_text(text, encoding="ascii")
        print("wrote", golden_path(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
