"""Canonical JSON writing and JSON reading, done by the native core."""

from __future__ import annotations

from typing import Any

from . import _core

__all__ = ["canonical_json", "loads"]


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``.

    Exactly ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)``, except that NaN and infinities raise ``ValueError``,
    a dict key that is not a ``str`` raises ``TypeError``, and a lone surrogate
    is written as a lowercase ``\\udxxx`` escape so the text is valid UTF-8.

    Raises:
        TypeError: a value (or dict key) of a type JSON cannot hold.
        ValueError: NaN or an infinity, nesting deeper than 512 levels, or an
            int of more than 4300 digits.
    """
    return _core.canonical_json(value)
