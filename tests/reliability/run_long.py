#!/usr/bin/env python3
"""Run the reliability suite at full scale and print its figures.

    python tests/reliability/run_long.py            # AT_LONG=1, about 25 minutes
    python tests/reliability/run_long.py -k kill9   # one scenario (pytest -k)

Every test reports its figures (``rkit.figure``) into a file; this prints them
as a table at the end. Run it against a release build (``maturin develop
--release``), as root (tmpfs mounts, setuid to nobody), with gcc installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    figures = Path(tempfile.mkdtemp(prefix="at-figures-")) / "figures.jsonl"
    env = dict(os.environ, AT_LONG="1", AT_FIGURES=str(figures))
    started = time.monotonic()
    rc = subprocess.call([sys.executable, "-m", "pytest", str(HERE), "-q", "-p", "no:cacheprovider",
                          "-o", "addopts=--strict-markers", *sys.argv[1:]], env=env)
    took = time.monotonic() - started
    print(f"\n== reliability figures (AT_LONG=1, pytest exit {rc}, {took / 60:.1f} min)")
    if figures.exists():
        for line in figures.read_text().splitlines():
            record = json.loads(line)
            name = record.pop("scenario")
            record.pop("long", None)
            print(f"{name:44s} " + ", ".join(f"{k}={v}" for k, v in sorted(record.items())))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
