"""Secrets taken out of text before a transcript is shared: ``[redacted:<kind>]`` in their place.

``Redactor.from_rules(path)`` gives the built-in rules (API keys and tokens with a
provider's prefix, JWTs, private-key blocks, ``password=``-style assignments)
followed by the user's rules from ``path`` (or none). ``redact(text)`` returns the
text with each secret replaced by ``[redacted:<kind>]``; ``redact_value(value)``
does the same for every string inside a JSON value (and replaces a string held
under a key that names a secret, such as ``"password": "…"``); ``redact_line(raw)``
does it for one transcript line, kept byte for byte when nothing in it is a
secret. Nothing here writes: the source file is never changed.

The rules file: one rule a line, ``KIND REGEX`` (the kind, letters, digits, ``-``
and ``_``, then spaces, then a Python regular expression up to the end of the
line). Blank lines and lines whose first non-blank character is ``#`` are
skipped. A regex with a group named ``secret`` has only that group replaced
(``db-password (?i)dbpass=(?P<secret>\\S+)`` keeps ``dbpass=``); otherwise the
whole match is. User rules run after the built-in ones, in file order::

    # our internal tokens
    acme-token  acme_[0-9a-f]{32}
    db-password (?i)dbpass=(?P<secret>\\S+)
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from .. import canonical_json
from ..inspect import open_file

__all__ = ["Redactor", "RedactionRule", "RedactionRulesError", "BUILTIN_RULES", "write_redacted_copy"]

_PLACEHOLDER = "[redacted:{}]"
_NOT_REDACTED = r"(?!\[redacted:)"  # every rule leaves its own output alone: redact(redact(x)) == redact(x)

# A secret's key name (in an assignment or a JSON object) and the kind it is redacted as.
_SECRET_KEYS = (
    r"password|passwd|pwd|passphrase|secret|client[_-]?secret|secret[_-]?key|api[_-]?key|apikey"
    r"|access[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|private[_-]?key"
    r"|aws[_-]?secret[_-]?access[_-]?key"
)
_SECRET_KEY = re.compile(rf"(?i)(?:{_SECRET_KEYS})")


def _key_kind(key: str) -> str:
    k = key.lower().replace("_", "-")
    if k in ("passwd", "pwd", "passphrase"):
        return "password"
    if k == "apikey":
        return "api-key"
    return k


class RedactionRulesError(ValueError):
    """A rules file that cannot be used: a line that is not ``KIND REGEX``, or a regex that does not compile.

    Attributes:
        path: the rules file.
        line: the 1-based line at fault.
    """

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line


@dataclass(frozen=True)
class RedactionRule:
    """One rule: what a secret looks like (``pattern``) and the kind it is redacted as.

    When ``pattern`` has a group named ``secret`` only that group is replaced.
    """

    kind: str
    pattern: re.Pattern[str]

    def apply(self, text: str) -> str:
        """``text`` with each match of this rule replaced."""
        placeholder = _PLACEHOLDER.format(self.kind)
        if "secret" not in self.pattern.groupindex:
            return self.pattern.sub(placeholder, text)

        def keep_around(m: re.Match[str]) -> str:
            start, end = m.span("secret")
            if start < 0:
                return m.group(0)
            whole = m.group(0)
            return whole[: start - m.start()] + placeholder + whole[end - m.start():]

        return self.pattern.sub(keep_around, text)


def _rule(kind: str, pattern: str, flags: int = 0) -> RedactionRule:
    return RedactionRule(kind, re.compile(pattern, flags))


_EDGE = r"(?<![A-Za-z0-9_\-])"  # not inside a longer word: "risk-…" holds no "sk-" key
_END = r"(?![A-Za-z0-9_\-])"

BUILTIN_RULES: tuple[RedactionRule, ...] = (
    # A PEM private key, whole; one cut off before its END line is redacted to the end of the text.
    _rule("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                         r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)", re.DOTALL),
    _rule("anthropic-key", _EDGE + r"sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_\-]{20,}"),
    # OpenAI's keys: legacy sk-<48>, sk-proj-…, sk-svcacct-…, sk-admin-…; a digit somewhere, so "sk-not-a-real-key-example" stays.
    _rule("openai-key", _EDGE + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{20,}" + _END),
    _rule("github-token", _EDGE + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})" + _END),
    _rule("slack-token", _EDGE + r"xox[bpaors]-(?=[A-Za-z0-9\-]*[0-9])[A-Za-z0-9\-]{10,}" + _END),
    _rule("aws-access-key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _rule("google-api-key", _EDGE + r"AIza[0-9A-Za-z_\-]{35}" + _END),
    _rule("jwt", _EDGE + r"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,}" + _END),
    _rule("bearer-token", r"(?i)\bbearer\s+(?P<secret>" + _NOT_REDACTED + r"[A-Za-z0-9._~+/\-]{16,}=*)"),
    # password=…, secret: "…", "api_key": "…" inside JSON text, TOKEN='…'.
    RedactionRule("", re.compile(
        rf"(?i)(?<![A-Za-z0-9])(?P<key>{_SECRET_KEYS})(?![A-Za-z0-9])[\"']?\s*[:=]\s*"
        rf"(?:\"(?P<dq>{_NOT_REDACTED}[^\"\n]{{3,}})\"|'(?P<sq>{_NOT_REDACTED}[^'\n]{{3,}})'"
        rf"|(?P<bare>{_NOT_REDACTED}[^\s\"',;&)}}\]]{{3,}}))")),
)


def _assignment(m: re.Match[str]) -> str:
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    start, end = m.span(group)
    whole = m.group(0)
    return whole[: start - m.start()] + _PLACEHOLDER.format(_key_kind(m.group("key"))) + whole[end - m.start():]


_KIND = re.compile(r"[A-Za-z0-9_\-]+")


def _read_rules(path: str) -> list[RedactionRule]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    rules = []
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split(None, 1)
        if len(parts) != 2 or not _KIND.fullmatch(parts[0]):
            raise RedactionRulesError(path, n, "not a rule: KIND REGEX (a kind of letters, digits, - and _, then a regex)")
        try:
            pattern = re.compile(parts[1])
        except re.error as exc:
            raise RedactionRulesError(path, n, f"not a regular expression: {exc}") from None
        if pattern.match(""):
            raise RedactionRulesError(path, n, "this regex matches the empty string")
        rules.append(RedactionRule(parts[0], pattern))
    return rules


class Redactor:
    """Replaces secrets with ``[redacted:<kind>]``: the built-in rules, then the user's.

    Args:
        rules: the rules, applied in order (``BUILTIN_RULES`` and any others).
    """

    def __init__(self, rules: tuple[RedactionRule, ...] = BUILTIN_RULES) -> None:
        self.rules = tuple(rules)

    @classmethod
    def from_rules(cls, path: str | os.PathLike[str] | None = None) -> Redactor:
        """The built-in rules followed by those of the rules file at ``path`` (none when None).

        Raises:
            RedactionRulesError: a line of the file is not a rule.
            OSError: the file cannot be read.
            UnicodeDecodeError: the file is not UTF-8.
        """
        extra = _read_rules(os.fspath(path)) if path is not None else []
        return cls(BUILTIN_RULES + tuple(extra))

    def redact(self, text: str) -> str:
        """``text`` with every secret a rule finds replaced by ``[redacted:<kind>]``."""
        for rule in self.rules:
            if rule.kind:
                text = rule.apply(text)
            else:
                text = rule.pattern.sub(_assignment, text)
        return text

    def redact_value(self, value: Any) -> Any:
        """``value`` (any JSON value) with each string redacted, and a string held under a key that
        names a secret (``"password"``, ``"api_key"``, ``"token"``, …) replaced whole. Keys are kept."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if isinstance(v, str) and v and _SECRET_KEY.fullmatch(k) and not v.startswith("[redacted:"):
                    out[k] = _PLACEHOLDER.format(_key_kind(k))
                else:
                    out[k] = self.redact_value(v)
            return out
        return value

    def redact_line(self, raw: bytes) -> bytes:
        """One transcript line (without its ``\\n``) redacted: a JSON line is written again as canonical
        JSON with its strings redacted, only when one of them changed (else ``raw`` itself); a line that
        is not JSON (a torn or damaged one) is redacted as text."""
        text = raw.decode("utf-8", "replace")
        try:
            value = json.loads(text)
        except ValueError:
            redacted_text = self.redact(text)
            return raw if redacted_text == text else redacted_text.encode("utf-8")
        redacted = self.redact_value(value)
        if redacted == value:
            return raw
        return canonical_json(redacted).encode("utf-8")


def write_redacted_copy(path: str, folder: str, redactor: Redactor) -> str:
    """A redacted copy of the transcript at ``path`` (``.jsonl`` or ``.jsonl.zst``), written as
    ``folder/<name>.jsonl`` (mode 0600): each line through ``redact_line``, blank lines and the
    ends of lines kept. What a page or an export of a redacted transcript is made from; ``path``
    is only read. Returns the copy's path.

    Raises:
        OSError: ``path`` cannot be read or the copy cannot be written.
    """
    name = os.path.basename(path)
    if name.endswith(".zst"):
        name = name[: -len(".zst")]
    dest = os.path.join(folder, name)
    fd = open_file(path)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        with os.fdopen(fd, "rb", closefd=False) as src, \
                open(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            for line in src:
                body = line.rstrip(b"\n")
                out.write(redactor.redact_line(body) if body.strip() else body)
                out.write(line[len(body):])
    finally:
        os.close(fd)
    return dest
