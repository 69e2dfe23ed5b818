"""show, show --replayed, check and stats print what they printed before the
package was reshaped (issue 9): byte for byte, on every fixture (see golden.py)."""

from __future__ import annotations

import json

import pytest

from cli.golden import COMMANDS, fixtures, golden_path, outputs


@pytest.mark.parametrize("name", fixtures())
def test_read_commands_print_the_golden_output(name: str) -> None:
    expected = json.loads(golden_path(name).read_text(encoding="ascii"))
    got = outputs(name)
    assert sorted(expected) == sorted(COMMANDS)
    for key in COMMANDS:
        assert got[key] == expected[key], (name, key)
