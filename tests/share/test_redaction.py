"""Redaction: generated secrets in their real formats go, look-alikes stay, the source never changes."""

from __future__ import annotations

import base64
import json
import os
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_transcript import Message, Session
from agent_transcript.cli.app import main
from agent_transcript.redaction import Redactor, RedactionRulesError, write_redacted_copy

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
UPPER_DIGITS = string.ascii_uppercase + string.digits

R = Redactor.from_rules()


def chars(alphabet: str, n: int, m: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=n, max_size=m if m is not None else n)


def with_digit(s: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(s, st.sampled_from(string.digits)).map(lambda p: p[0][:-1] + p[1] if p[0] else p[1])


def _b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


jwts = st.tuples(st.sampled_from(["HS256", "RS256", "ES256"]), st.text(ALNUM, min_size=1, max_size=20),
                 chars(URLSAFE, 20, 86)).map(
    lambda t: f"{_b64url({'alg': t[0], 'typ': 'JWT'})}.{_b64url({'sub': t[1], 'iat': 1700000000})}.{t[2]}")
pem = st.tuples(st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "]),
                st.lists(chars(ALNUM + "+/", 64), min_size=1, max_size=5)).map(
    lambda t: f"-----BEGIN {t[0]}PRIVATE KEY-----\n" + "\n".join(t[1]) + f"\n-----END {t[0]}PRIVATE KEY-----")

#: (kind, strategy of a secret in that provider's real format)
SECRETS: list[tuple[str, st.SearchStrategy[str]]] = [
    ("anthropic-key", chars(URLSAFE, 93).map(lambda s: f"sk-ant-api03-{s}AA")),
    ("anthropic-key", chars(URLSAFE, 60, 100).map(lambda s: f"sk-ant-admin01-{s}")),
    ("openai-key", with_digit(chars(ALNUM, 48)).map(lambda s: f"sk-{s}")),
    ("openai-key", with_digit(chars(URLSAFE, 40, 160)).map(lambda s: f"sk-proj-{s}")),
    ("openai-key", with_digit(chars(URLSAFE, 40, 80)).map(lambda s: f"sk-svcacct-{s}")),
    ("github-token", st.tuples(st.sampled_from("pousr"), chars(ALNUM, 36)).map(lambda t: f"gh{t[0]}_{t[1]}")),
    ("github-token", chars(ALNUM + "_", 82).map(lambda s: f"github_pat_{s}")),
    ("slack-token", st.tuples(st.sampled_from("bpa"), chars(string.digits, 10, 13), chars(string.digits, 10, 13),
                              chars(ALNUM, 24)).map(lambda t: f"xox{t[0]}-{t[1]}-{t[2]}-{t[3]}")),
    ("aws-access-key", st.tuples(st.sampled_from(["AKIA", "ASIA"]), chars(UPPER_DIGITS, 16)).map("".join)),
    ("google-api-key", chars(URLSAFE, 35).map(lambda s: f"AIza{s}")),
    ("jwt", jwts),
    ("private-key", pem),
]

#: Text around a secret: words, punctuation, quotes; never a character a key is made of right next to it.
words = st.lists(st.sampled_from(["the", "key", "is", "use", "config:", "(", ")", "\n", "'", '"', ",", "->", "value",
                                  "export", "=", "Authorization", "日本語", "🙂"]), max_size=6).map(" ".join)


@given(st.sampled_from(SECRETS).flatmap(lambda ks: st.tuples(st.just(ks[0]), ks[1])), words, words)
@settings(max_examples=400)
def test_a_secret_in_its_real_format_is_redacted(kind_secret: tuple[str, str], before: str, after: str) -> None:
    kind, secret = kind_secret
    text = f"{before} {secret} {after}"
    out = R.redact(text)
    assert secret not in out
    assert f"[redacted:{kind}]" in out
    assert out.startswith(before) and out.endswith(after)
    assert R.redact(out) == out  # idempotent: a second pass changes nothing


@given(st.sampled_from(SECRETS).flatmap(lambda ks: ks[1]))
@settings(max_examples=200)
def test_a_secret_inside_a_json_string_leaves_valid_json(secret: str) -> None:
    line = json.dumps({"id": "a", "payload": {"role": "tool", "content": f"got {secret}\n"}}).encode()
    out = R.redact_line(line)
    value = json.loads(out)
    assert secret not in json.dumps(value) and secret not in out.decode()
    assert value["payload"]["role"] == "tool"


LOOK_ALIKES = st.one_of(
    chars("0123456789abcdef", 32),  # an envelope id
    chars("0123456789abcdef", 64).map(lambda s: f"sha256:{s}"),  # a digest
    st.uuids().map(str),
    chars(string.ascii_lowercase, 3, 30).map(lambda s: f"risk-{s}"),  # "sk-" inside a word
    chars(string.ascii_lowercase + "-", 5, 40).map(lambda s: f"sk-{s}"),  # sk- and no digit: prose, not a key
    chars(ALNUM, 1, 15).map(lambda s: f"sk-{s}"),  # too short
    chars(UPPER_DIGITS, 1, 15).map(lambda s: f"AKIA{s}"),  # too short
    chars(ALNUM, 10, 30).map(lambda s: f"ghp_{s}"),  # too short
    chars(string.ascii_lowercase, 1, 20).map(lambda s: f"xoxb-{s}"),  # no digit
    chars(URLSAFE, 5, 20).map(lambda s: f"eyJ{s}"),  # a JWT's head alone
    st.sampled_from(["-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
                     "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----",
                     "max_tokens=4096", "input_tokens: 12", "the password is weak", "token budget",
                     "scikit-learn", "task-sk-1", "passwords are hashed", "secretary=Ann", "tokens=12",
                     "my_token_count=3", "bearer of bad news", "[redacted:token]"]),
)


@given(st.lists(LOOK_ALIKES, min_size=1, max_size=4), words)
@settings(max_examples=400)
def test_look_alikes_stay(parts: list[str], glue: str) -> None:
    text = f" {glue} ".join(parts)
    assert R.redact(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("password=hunter22 next", "password=[redacted:password] next"),
    ('DB_PASSWORD="s3cr3t pass"', 'DB_PASSWORD="[redacted:password]"'),
    ("secret: 'abc123'", "secret: '[redacted:secret]'"),
    ('{"api_key": "abc123456"}', '{"api_key": "[redacted:api-key]"}'),
    ("TOKEN=abcdef;", "TOKEN=[redacted:token];"),
    ("curl -H 'Authorization: Bearer abcdefghijklmnop1234'", "curl -H 'Authorization: Bearer [redacted:bearer-token]'"),
    ("k = sk-ant-api03-" + "x" * 30, "k = [redacted:anthropic-key]"),
    ("-----BEGIN PRIVATE KEY-----\nMIIE cut off", "[redacted:private-key]"),
])
def test_assignments_and_blocks(text: str, expected: str) -> None:
    assert R.redact(text) == expected


def test_a_secret_under_a_secret_key_goes_whole() -> None:
    value = {"headers": {"Authorization": "Basic dXNlcjpwYXNz"}, "password": "x", "tokens": 5, "token": "abc"}
    got = R.redact_value(value)
    assert got["password"] == "[redacted:password]" and got["token"] == "[redacted:token]"
    assert got["tokens"] == 5 and got["headers"]["Authorization"] == "Basic dXNlcjpwYXNz"


def test_user_rules(tmp_path: Path) -> None:
    rules = tmp_path / "rules.txt"
    rules.write_text("# ours\n\nacme-token  acme_[0-9a-f]{8}\ndb-password (?i)dbpass=(?P<secret>\\S+)\n")
    r = Redactor.from_rules(rules)
    assert r.redact("x acme_0123abcd DBPASS=hunter2 y") == "x [redacted:acme-token] DBPASS=[redacted:db-password] y"
    assert r.redact("sk-proj-" + "a1" * 20) == "[redacted:openai-key]"  # the built-in rules still run


@pytest.mark.parametrize(("text", "line", "why"), [
    ("just-a-kind\n", 1, "not a rule"),
    ("# c\nbad! x\n", 2, "not a rule"),
    ("k (unclosed\n", 1, "not a regular expression"),
    ("k a*\n", 1, "empty string"),
])
def test_bad_rules_are_refused_with_their_line(tmp_path: Path, text: str, line: int, why: str) -> None:
    rules = tmp_path / "rules.txt"
    rules.write_text(text)
    with pytest.raises(RedactionRulesError, match=why) as got:
        Redactor.from_rules(rules)
    assert got.value.line == line


def _secret_transcript(path: Path) -> str:
    secret = "sk-proj-" + "Ab3" * 20
    with Session.create(path, {"task": "deploy"}) as s:
        s.append_message(Message.user(f"use {secret} for the call"))
        s.append_message(Message.assistant(tool_calls=[{"id": "c1", "type": "function", "function": {
            "name": "login", "arguments": json.dumps({"user": "ann", "password": "pa55word!"})}}]))
        s.append_message(Message.tool("c1", "ok"))
    with open(path, "ab") as f:
        f.write(b'{"id":"torn","payload":{"content":"AKIAABCDEFGHIJKLMNOP')  # a torn tail, kept as text
    return secret


def test_a_redacted_copy_keeps_every_line_and_the_source(tmp_path: Path) -> None:
    src = tmp_path / "run.jsonl"
    secret = _secret_transcript(src)
    before = src.read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    copy = Path(write_redacted_copy(str(src), str(out), R))
    assert src.read_bytes() == before
    assert os.stat(copy).st_mode & 0o777 == 0o600
    lines, got = before.split(b"\n"), copy.read_bytes().split(b"\n")
    assert len(lines) == len(got)
    text = copy.read_bytes().decode()
    assert secret not in text and "pa55word" not in text and "AKIAABCDEFGHIJKLMNOP" not in text
    assert "[redacted:openai-key]" in text and "[redacted:aws-access-key]" in text
    assert lines[0] == got[0]  # a line without a secret is the same bytes
    assert Session.peek(copy).messages[0].content == "use [redacted:openai-key] for the call"


def test_html_redact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "run.jsonl"
    secret = _secret_transcript(src)
    before = src.read_bytes()
    plain, redacted = tmp_path / "plain.html", tmp_path / "redacted.html"
    assert main(["html", str(src), "-o", str(plain)]) == 0
    assert main(["html", str(src), "-o", str(redacted), "--redact"]) == 0
    assert secret in plain.read_text()  # the page without --redact shows it: the test can fail
    page = redacted.read_text()
    assert secret not in page and "pa55word" not in page and "AKIAABCDEFGHIJKLMNOP" not in page
    assert "[redacted:openai-key]" in page
    assert src.read_bytes() == before
    assert os.stat(redacted).st_mode & 0o777 == 0o600


def test_html_bad_rules_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "run.jsonl"
    _secret_transcript(src)
    rules = tmp_path / "rules"
    rules.write_text("k (\n")
    assert main(["html", str(src), "-o", str(tmp_path / "p.html"), "--redact-rules", str(rules)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rules:1: not a regular expression" in err
    assert not (tmp_path / "p.html").exists()
