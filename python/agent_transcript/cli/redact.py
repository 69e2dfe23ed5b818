"""``--redact`` and ``--redact-rules FILE``: the options of every command whose output may be shared."""

from __future__ import annotations

import argparse

from ..inspect import describe_os_error
from ..redaction import RedactionRulesError, Redactor
from .errors import CliError

__all__ = ["redaction_options", "redactor_of"]


def redaction_options(p: argparse.ArgumentParser) -> None:
    """Add ``--redact`` and ``--redact-rules FILE`` to a command's parser."""
    p.add_argument("--redact", action="store_true",
                   help="replace API keys, tokens, private keys and password=-style values by "
                        "[redacted:KIND] in the output (the transcript is never changed)")
    p.add_argument("--redact-rules", metavar="FILE",
                   help="more rules, one 'KIND REGEX' a line (implies --redact)")


def redactor_of(args: argparse.Namespace) -> Redactor | None:
    """The redactor the options ask for, or None without ``--redact`` or ``--redact-rules``.

    Raises:
        CliError: the rules file cannot be read or holds a line that is not a rule.
    """
    rules = getattr(args, "redact_rules", None)
    if not (getattr(args, "redact", False) or rules):
        return None
    try:
        return Redactor.from_rules(rules)
    except RedactionRulesError as exc:
        raise CliError(f"--redact-rules {exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"--redact-rules {rules}: not UTF-8 text") from None
    except OSError as exc:
        raise CliError("--redact-rules " + describe_os_error(exc, rules or "?")) from None
