"""The frameworks run offline: their own scripted models, no tracing export, no network."""

from __future__ import annotations

import os

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
