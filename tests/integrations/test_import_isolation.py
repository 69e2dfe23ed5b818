"""``import agent_transcript`` (and its integrations package) imports no framework."""

from __future__ import annotations

import subprocess
import sys

FRAMEWORKS = ("agents", "openai", "pydantic_ai", "pydantic", "agent_framework", "msgspec", "claude_agent_sdk",
              "strands")
#: Frameworks under a namespace package, named by their package.
NAMESPACED = ("google.adk", "google.genai")


def test_importing_the_package_imports_no_framework() -> None:
    code = (
        "import sys, agent_transcript, agent_transcript.integrations, agent_transcript.formats.mirror\n"
        f"hits = sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}\n"
        f"              or m.startswith({NAMESPACED!r}))\n"
        "print(' '.join(hits))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"imported with the package: {r.stdout.strip()}"
