"""The plain-Python baselines of the performance targets, for the benches.

``baseline_stdlib`` / ``baseline_orjson`` (a loader with Session.load's exact
semantics, ``json.loads`` or ``orjson.loads`` per line), the peek baselines and
the user's append loop. See ``python/agent_transcript/bench/baselines.py`` for what
each does and why: that file is the one copy of this code, kept inside the
package because the ``agent-transcript bench`` command ships in the
wheel and must compare against exactly these baselines.

It is loaded here by path, not imported through ``agent_transcript``, so the
baseline tests run with nothing but the standard library and orjson: no native
module, no build. The benchmark generator (``bench/generator.py``, byte-for-byte the
shared ``gen_transcript.py``) is loaded the same way.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "python" / "agent_transcript" / "bench"


def _load_by_path(name: str) -> ModuleType:
    qualified = f"benches_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, PACKAGE_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module        # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


_impl = _load_by_path("baselines")
gen = _load_by_path("generator")

BaselineCorrupt = _impl.BaselineCorrupt
BaselineUnsupportedVersion = _impl.BaselineUnsupportedVersion
Loaded = _impl.Loaded
Peeked = _impl.Peeked
UserAppender = _impl.UserAppender
check_tail = _impl.check_tail
have_orjson = _impl.have_orjson
is_sticky = _impl.is_sticky
load = _impl.load
peek = _impl.peek
stdlib_loads = _impl.stdlib_loads
stdlib_dumps = _impl.stdlib_dumps
orjson_dumps = _impl.orjson_dumps

#: The names the issue uses.
baseline_stdlib = _impl.load_stdlib
baseline_orjson = _impl.load_orjson
peek_stdlib = _impl.peek_stdlib
peek_orjson = _impl.peek_orjson
write_transcript = gen.write_transcript
