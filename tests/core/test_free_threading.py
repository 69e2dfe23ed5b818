"""Free-threaded CPython: the native module keeps the GIL on (it declares
``gil_used = true``), since its canonical writer walks lists and dicts with
borrowed references that another thread could free under it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

import pytest


@pytest.mark.skipif(not sysconfig.get_config_var("Py_GIL_DISABLED"),
                    reason="only a free-threaded interpreter can run without the GIL")
def test_importing_the_core_turns_the_gil_back_on() -> None:
    code = "import sys, agent_transcript._core; print(sys._is_gil_enabled())"
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, check=True, env=env)
    assert out.stdout.strip() == "True"
