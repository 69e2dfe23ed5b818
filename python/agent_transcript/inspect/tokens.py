"""Tokens a run used, read from the usage its transcript records; counted once per model response.

Where usage comes from:

* a message's extras: a framework's usage object (a dict under ``usage``,
  ``usage_metadata`` or ``usage_details``, as pydantic-ai's ``ModelResponse``,
  an OpenAI or Anthropic response, Google ADK's event keep it), with the
  model and the response id beside it when they are there;
* an imported Claude Code session's source lines: each assistant record's
  ``message.usage``. Claude Code writes one line per content block of a
  response, each with the response's ``usage``: they are one response
  (``message.id``), counted once, each count the largest its lines give;
* an imported Codex rollout's ``token_count`` events: cumulative totals, so
  each event counts what it adds to the one before it, on the message of the
  response it follows (its ``source-line``'s ``message``, which the importer
  writes).

Each response has a key (its response id when the transcript records one,
else its line's envelope id): within a run and across the runs of a folder a
key is counted once, so a resumed session that repeats its history and a fork
(which shares its source's ids line for line) add nothing twice.

The four counts are apart, whatever the provider: ``input`` is the input
neither read from nor written to the cache, so the four add up to every token
the response used and a price table prices each token once. Providers count
differently: Anthropic's input (and Bedrock's) leaves the cached input out,
OpenAI's, Codex's, Gemini's and pydantic-ai's include it, and the part read
from (or written to) the cache is taken out of it here. Gemini counts the
model's thinking apart from its answer (``thoughts_token_count``); it is
billed as output, and counted in ``output`` here.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, TypeGuard

from .. import _core
from ..envelope import Envelope
from .paths import Descriptor
from .reader import open_file

__all__ = ["TokenCount", "Usage", "TokenTotals", "PriceTable", "PriceTableError", "read_usage", "usage_of",
           "token_totals"]

_MESSAGE_FIELDS = frozenset(("role", "content", "name", "tool_calls", "tool_call_id", "sticky", "sysprompt", "depth"))
_USAGE_KEYS = ("usage", "usage_metadata", "usageMetadata", "usage_details")
_INPUT = ("input_tokens", "prompt_tokens", "inputTokens", "prompt_token_count", "promptTokenCount", "request_tokens",
          "input_token_count")
_OUTPUT = ("output_tokens", "completion_tokens", "outputTokens", "candidates_token_count", "candidatesTokenCount",
           "response_tokens", "output_token_count")
_THOUGHTS = ("thoughts_token_count", "thoughtsTokenCount")  # Gemini's thinking: output, counted apart
_CACHE_READ = ("cache_read_input_tokens", "cache_read_tokens", "cached_input_tokens", "cacheReadInputTokens",
               "cached_content_token_count", "cachedContentTokenCount", "cached_tokens")
_CACHE_CREATION = ("cache_creation_input_tokens", "cache_write_tokens", "cacheWriteInputTokens")
#: Anthropic's names for the cached input, which its input count leaves out.
_ANTHROPIC_CACHE = ("cache_read_input_tokens", "cache_creation_input_tokens")
#: Bedrock's (and Strands'), whose input count leaves it out unless input and output make the total.
_BEDROCK_CACHE = ("cacheReadInputTokens", "cacheWriteInputTokens")
_MODEL_KEYS = ("model", "model_name", "modelId", "model_version")
_RESPONSE_ID_KEYS = ("provider_response_id", "response_id", "message-id")


@dataclass(frozen=True)
class TokenCount:
    """Tokens in four counts apart, which add up to all the tokens used: input
    (neither read from the cache nor written to it), output, ``cache_read``
    (input read from the cache) and ``cache_creation`` (input written to it)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0

    def __add__(self, other: TokenCount) -> TokenCount:
        return TokenCount(self.input + other.input, self.output + other.output,
                          self.cache_read + other.cache_read, self.cache_creation + other.cache_creation)

    def most(self, other: TokenCount) -> TokenCount:
        """Each count the larger of the two: one response seen on several lines."""
        return TokenCount(max(self.input, other.input), max(self.output, other.output),
                          max(self.cache_read, other.cache_read), max(self.cache_creation, other.cache_creation))

    @property
    def total(self) -> int:
        """All four counts together."""
        return self.input + self.output + self.cache_read + self.cache_creation

    def to_json(self) -> dict[str, int]:
        """``{"input", "output", "cache_read", "cache_creation"}``."""
        return {"input": self.input, "output": self.output, "cache_read": self.cache_read,
                "cache_creation": self.cache_creation}


@dataclass(frozen=True)
class Usage:
    """One model response's usage as the transcript records it.

    Attributes:
        key: what it is counted once by: ``response:<id>`` or ``envelope:<id>``.
        message_id: the envelope id of the transcript message it belongs to, or None.
        model: the model that answered, or None when the transcript does not say.
        line: the line it was read from (the first, for a response on several lines).
        tokens: its counts.
    """

    key: str
    message_id: str | None
    model: str | None
    line: int
    tokens: TokenCount


@dataclass
class TokenTotals:
    """Tokens of one run or of a folder: in all, per model, per message."""

    total: TokenCount = field(default_factory=TokenCount)
    responses: int = 0
    by_model: dict[str, TokenCount] = field(default_factory=dict)
    by_message: dict[str, TokenCount] = field(default_factory=dict)

    def add(self, usage: Usage) -> None:
        """Count one response."""
        self.total += usage.tokens
        self.responses += 1
        model = usage.model or "unknown"
        self.by_model[model] = self.by_model.get(model, TokenCount()) + usage.tokens
        if usage.message_id is not None:
            self.by_message[usage.message_id] = self.by_message.get(usage.message_id, TokenCount()) + usage.tokens

    def to_json(self, prices: PriceTable | None = None) -> dict[str, Any]:
        """The totals as JSON (``by_message`` left out: it can be long); ``cost`` with ``prices``."""
        out: dict[str, Any] = {**self.total.to_json(), "responses": self.responses,
                               "by_model": {m: c.to_json() for m, c in sorted(self.by_model.items())}}
        if prices is not None:
            out["cost"] = prices.cost(self)
        return out


def token_totals(usages: Iterable[Usage], seen: set[str] | None = None) -> TokenTotals:
    """The totals of ``usages``, each key once; ``seen`` (a folder's keys counted so far) is
    skipped and grows with the keys counted here."""
    seen = set() if seen is None else seen
    totals = TokenTotals()
    for usage in usages:
        if usage.key in seen:
            continue
        seen.add(usage.key)
        totals.add(usage)
    return totals


class PriceTableError(ValueError):
    """A price table that is not the documented format."""


@dataclass(frozen=True)
class PriceTable:
    """Prices per million tokens, by model, from a file the user gives (none is shipped).

    The file is JSON: an object whose keys are model names (a name ending in ``*``
    is a prefix: ``"claude-sonnet-4*"``) and whose values give the price of a
    million tokens of each kind, any of ``input``, ``output``, ``cache_read``,
    ``cache_creation`` (a kind left out costs nothing)::

        {"claude-sonnet-4-5": {"input": 3, "output": 15, "cache_read": 0.3, "cache_creation": 3.75},
         "gpt-5*": {"input": 1.25, "output": 10, "cache_read": 0.125}}

    The exact name wins over a prefix, a longer prefix over a shorter one.
    """

    prices: Mapping[str, Mapping[str, float]]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PriceTable:
        """The table in the file at ``path``.

        Raises:
            PriceTableError: the file is not that JSON.
            OSError: the file cannot be read.
        """
        with open(path, "rb") as f:
            raw = f.read()
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise PriceTableError(f"{os.fspath(path)}: not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise PriceTableError(f"{os.fspath(path)}: not a JSON object of models")
        kinds = set(TokenCount().to_json())
        for model, row in value.items():
            if not isinstance(row, dict) or not row:
                raise PriceTableError(f"{os.fspath(path)}: {model}: not an object of prices")
            for kind, price in row.items():
                if kind not in kinds:
                    raise PriceTableError(f"{os.fspath(path)}: {model}: {kind!r} is not one of {', '.join(sorted(kinds))}")
                if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0 or not math.isfinite(price):
                    raise PriceTableError(f"{os.fspath(path)}: {model}: {kind}: not a price (a number >= 0)")
        return cls(value)

    def price_of(self, model: str) -> Mapping[str, float] | None:
        """The prices of ``model``, or None when the table has none."""
        if model in self.prices:
            return self.prices[model]
        best = max((k for k in self.prices if k.endswith("*") and model.startswith(k[:-1])), key=len, default=None)
        return self.prices[best] if best is not None else None

    def cost(self, totals: TokenTotals) -> dict[str, Any]:
        """``{"total": …, "unpriced_models": [...]}``: the cost of the models the table prices."""
        total = 0.0
        unpriced = []
        for model, count in sorted(totals.by_model.items()):
            row = self.price_of(model)
            if row is None:
                unpriced.append(model)
                continue
            total += sum(row.get(kind, 0) * n for kind, n in count.to_json().items()) / 1_000_000
        return {"total": total, "unpriced_models": unpriced}


def _count(v: Any) -> TypeGuard[int]:
    """Whether ``v`` is a number of tokens (a bool, a float or a negative is not)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _int(d: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    for k in keys:
        v = d.get(k)
        if _count(v):
            return v
    return 0


def count_of(usage: Mapping[str, Any]) -> TokenCount | None:
    """The counts of one usage object, whatever its provider's names, the four apart
    (the module's docstring says how); None when it names none."""
    if not any(_count(usage.get(k)) for k in _INPUT + _OUTPUT + _CACHE_READ + _CACHE_CREATION):
        return None
    cache_read = _int(usage, _CACHE_READ)
    cache_creation = _int(usage, _CACHE_CREATION)
    for details in ("input_tokens_details", "prompt_tokens_details"):  # OpenAI nests the cached part
        d = usage.get(details)
        if not cache_read and isinstance(d, dict):
            cache_read = _int(d, ("cached_tokens",))
        if not cache_creation and isinstance(d, dict):
            cache_creation = _int(d, ("cache_write_tokens",))
    input_, output = _int(usage, _INPUT), _int(usage, _OUTPUT)
    if not _cache_left_out(usage, input_, output):
        # A cached part larger than the input said to hold it is the provider's
        # error: the input is then 0, never below.
        input_ = max(0, input_ - cache_read - cache_creation)
    return TokenCount(input_, output + _int(usage, _THOUGHTS), cache_read, cache_creation)


def _cache_left_out(usage: Mapping[str, Any], input_: int, output: int) -> bool:
    """Whether the provider's input count leaves the cached input out (Anthropic's,
    Bedrock's) rather than including it (everyone else's)."""
    if any(k in usage for k in _ANTHROPIC_CACHE):
        # LiteLLM's OpenAI-shaped usage names Anthropic's cache counts beside an
        # OpenAI prompt count, which includes them.
        return "prompt_tokens" not in usage
    if any(k in usage for k in _BEDROCK_CACHE):
        # Strands' rule (its metrics): a model whose input and output make the
        # total (OpenAI's, through Strands) included the cache in its input.
        total = usage.get("totalTokens")
        return not (_count(total) and input_ + output == total)
    return False


def _find_usage(value: Any, depth: int = 0) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(usage, the dict holding it) for each usage object inside ``value``."""
    if depth > 4:
        return
    if isinstance(value, dict):
        for k in _USAGE_KEYS:
            u = value.get(k)
            if isinstance(u, dict):
                yield u, value
                return
        for v in value.values():
            yield from _find_usage(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _find_usage(v, depth + 1)


def _text(holder: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = holder.get(k)
        if isinstance(v, str) and v:
            return v
    return None


class _Reader:
    """One file's usage, line by line."""

    def __init__(self) -> None:
        self.found: dict[str, Usage] = {}
        self.response_message: dict[str, str] = {}  # a Claude Code response id -> its message's envelope id
        self.codex_session: str | None = None
        self.codex_model: str | None = None
        self.codex_total: TokenCount | None = None

    def put(self, usage: Usage) -> None:
        had = self.found.get(usage.key)
        if had is None:
            self.found[usage.key] = usage
        else:
            self.found[usage.key] = Usage(had.key, had.message_id or usage.message_id, had.model or usage.model,
                                          had.line, had.tokens.most(usage.tokens))

    def message(self, envelope_id: str, line: int, payload: dict[str, Any]) -> None:
        extras = {k: v for k, v in payload.items() if k not in _MESSAGE_FIELDS}
        cc = extras.get("claude-code")
        if isinstance(cc, dict) and isinstance(cc.get("message-id"), str):
            self.response_message.setdefault(cc["message-id"], envelope_id)
        for usage, holder in _find_usage(extras):
            count = count_of(usage)
            if count is None:
                continue
            rid = _text(holder, _RESPONSE_ID_KEYS)
            self.put(Usage(f"response:{rid}" if rid else f"envelope:{envelope_id}", envelope_id,
                           _text(holder, _MODEL_KEYS), line, count))

    def source_line(self, envelope_id: str, line: int, record: dict[str, Any], message: str | None) -> None:
        kind = record.get("type")
        m = record.get("message")
        if kind == "assistant" and isinstance(m, dict) and isinstance(m.get("usage"), dict):
            count = count_of(m["usage"])
            if count is None:
                return
            rid = m.get("id") if isinstance(m.get("id"), str) else None
            key = f"response:{rid}" if rid else f"envelope:{envelope_id}"
            model = m.get("model") if isinstance(m.get("model"), str) else None
            self.put(Usage(key, None, model, line, count))
            return
        body = record.get("payload") if isinstance(record.get("payload"), dict) else record
        if not isinstance(body, dict):
            return
        if kind == "session_meta" and isinstance(body.get("id"), str):
            self.codex_session = body["id"]
        elif kind == "turn_context" and isinstance(body.get("model"), str):
            self.codex_model = body["model"]
        elif body.get("type") == "token_count":
            self._codex_tokens(envelope_id, line, body.get("info"), message)

    def _codex_tokens(self, envelope_id: str, line: int, info: Any, message: str | None) -> None:
        if not isinstance(info, dict):
            return
        total = info.get("total_token_usage")
        if isinstance(total, dict) and (now := count_of(total)) is not None:
            before = self.codex_total or TokenCount()
            if now == before:
                return  # the same totals again: nothing new was used
            self.codex_total = now
            step = TokenCount(now.input - before.input, now.output - before.output,
                              now.cache_read - before.cache_read, now.cache_creation - before.cache_creation)
            where = f"codex:{self.codex_session}:{now.total}" if self.codex_session else f"envelope:{envelope_id}"
            self.put(Usage(where, message, self.codex_model, line, step))
            return
        last = info.get("last_token_usage")
        counted = count_of(last) if isinstance(last, dict) else None
        if counted is not None:
            self.put(Usage(f"envelope:{envelope_id}", message, self.codex_model, line, counted))

    def usages(self) -> list[Usage]:
        out = []
        for u in self.found.values():
            if u.message_id is None and u.key.startswith("response:"):
                mid = self.response_message.get(u.key[len("response:"):])
                if mid is not None:
                    u = Usage(u.key, mid, u.model, u.line, u.tokens)
            out.append(u)
        return out


#: The words a line that tells of usage holds (a framework's, Claude Code's, Codex's
#: token_count and what dates it): only such lines are parsed.
_WANTED = ["usage", "token_count", "turn_context", "session_meta", "message-id"]
#: What the core searches for: a part of each word (every word holds one), the
#: part other text seldom holds; the core keeps a line only if it holds a word.
_ANCHORS = ["usage", "n_c", "n_m", "ge-i"]
#: Read a block at a time: 1 MiB took less CPU than 4 (a block that fits the cache).
_BLOCK = 1 << 20


def read_usage(path: str) -> list[Usage]:
    """Every model response's usage the transcript at ``path`` records (``.jsonl`` or
    ``.jsonl.zst``), one per key, in file order. Lines that do not parse are skipped.

    Raises:
        OSError: the file cannot be read.
    """
    reader = _Reader()
    # Held from the line that opens it and closed by this try's own lines: an
    # export reads this, and a Ctrl-C at a finally's line would leave it open.
    fd = Descriptor()
    try:
        fd.fd = open_file(path)
        for number, raw in _wanted_lines(fd.fd):
            _read_line(reader, number, raw)
        fd.close()
    except BaseException:
        fd.close()
        raise
    return reader.usages()


def _wanted_lines(fd: int) -> Iterator[tuple[int, bytes]]:
    """``(number, line)`` of each line of the file ``fd`` that holds one of the
    ``_WANTED`` words. The core searches the file a block at a time for all the
    words at once: most lines of a big file tell of no usage, and a search in
    Python made ``html`` of a big transcript half as slow again."""
    for number, start, length in _core.lines_holding(fd, _ANCHORS, _WANTED, _BLOCK):
        yield number, os.pread(fd, length, start)


def usage_of(envelopes: Iterable[Envelope]) -> list[Usage]:
    """What ``read_usage`` finds, from envelopes read already (a transcript's, in
    file order): a reader that holds them all saves reading the file again."""
    reader = _Reader()
    for env in envelopes:
        if isinstance(env.payload, dict):
            _read_envelope(reader, env.line, env.id, env.type, env.payload, None)
    return reader.usages()


def _read_line(reader: _Reader, number: int, raw: bytes) -> None:
    try:
        envelope = json.loads(raw)
    except ValueError:
        return
    if isinstance(envelope, dict) and isinstance(envelope.get("payload"), dict):
        _read_envelope(reader, number, str(envelope.get("id")), envelope.get("type"), envelope["payload"], raw)


def _read_envelope(reader: _Reader, number: int, eid: str, kind: Any, payload: dict[str, Any],
                   raw: bytes | None) -> None:
    """One envelope's usage into ``reader``; ``raw`` is its line when the search
    for the words has already found them in it."""
    if kind == "message":
        reader.message(eid, number, payload)
    elif kind == "source-line" and isinstance(text := payload.get("text"), str):
        # An imported line of a source is parsed only if it holds a word of usage.
        if raw is None and not any(word in text for word in _WANTED):
            return
        try:
            record = json.loads(text)
        except ValueError:
            return
        message = payload.get("message")
        if isinstance(record, dict):
            reader.source_line(eid, number, record, message if isinstance(message, str) else None)
