"""Secrets at the door: find credentials and card numbers in text before it is stored.

A memory is kept for months, embedded, indexed, shown to LLMs and exported; an API key an
agent pastes into it should not be. ``find_secrets`` finds, in any language's text:

- provider keys and tokens: AWS access key ids (``AKIA…``) and secret keys (40 characters
  next to an access key id or a "secret key" / 密钥 label), GitHub (``ghp_``, ``gho_``,
  ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack (``xox…-``), Stripe (``sk_live_``,
  ``rk_live_``, test keys too), OpenAI (``sk-…``, ``sk-proj-…``), Google (``AIza…``), JWTs;
- private keys (``-----BEGIN … PRIVATE KEY-----`` blocks);
- passwords in connection strings (``scheme://user:password@host``: the password only);
- card numbers: 13 to 19 digits, spaces or dashes between groups allowed, a known card
  prefix and a valid Luhn check digit.

The patterns are our own (no detector library: the maintained ones scan files line by line
with entropy heuristics that flag ordinary ids, and none finds card numbers with a Luhn
check); every boundary is ASCII-only, so a key glued to Chinese text (``密钥是AKIA…``) is
still found. ``redact_secrets`` replaces each find by a typed placeholder
(``[REDACTED:aws_access_key]``) and counts them by type; ``SecretScreen`` applies a
policy (``redact``, ``refuse`` or ``off``) to the texts of a store.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from hindsight.core.errors import ConfigurationError, InvalidRequestError

SecretsMode = Literal["redact", "refuse", "off"]
SECRETS_MODES: tuple[SecretsMode, ...] = ("redact", "refuse", "off")

_A = r"(?<![A-Za-z0-9_])"  # an ASCII word boundary before (Chinese text around is fine)
_Z = r"(?![A-Za-z0-9_])"  # and after


@dataclass(frozen=True)
class SecretFind:
    """One secret: its type and where it is (``[start, end)`` of the text)."""

    kind: str
    start: int
    end: int


class RedactionCount(BaseModel):
    """How many secrets of one type a store replaced (the store answer's ``redacted``)."""

    type: str
    count: int


def _luhn_ok(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|35|6[0245]|62|8[1-8]")


def _card_ok(raw: str) -> bool:
    digits = re.sub(r"[ -]", "", raw)
    return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None and _luhn_ok(digits)


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # the part of the match that is secret (a password, not the URL)
    accept: Callable[[str], bool] | None = None
    needs: str | None = None  # a literal the text must hold for the pattern to match at all


_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
            r"(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|[A-Za-z0-9+/=\s]*)"
        ),
        needs="PRIVATE KEY",
    ),
    _Detector(
        "jwt",
        re.compile(_A + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}" + _Z),
        needs="eyJ",
    ),
    _Detector(
        "aws_access_key",
        re.compile(_A + r"(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}" + _Z),
    ),
    _Detector(
        "aws_secret_key",
        re.compile(
            r"(?i:secret[ _-]?(?:access[ _-]?)?key|aws[ _-]?secret|密钥|私钥|秘钥)"
            r"[^A-Za-z0-9/+\n]{1,24}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
    ),
    _Detector(
        "github_token",
        re.compile(_A + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{50,255})"),
        needs="_",
    ),
    _Detector("slack_token", re.compile(_A + r"xox[abposre]-[A-Za-z0-9-]{10,250}"), needs="xox"),
    _Detector(
        "stripe_key",
        re.compile(_A + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,250}" + _Z),
        needs="_",
    ),
    _Detector(
        "openai_key",
        re.compile(_A + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,250}" + _Z),
        accept=lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s[3:]),
        needs="sk-",
    ),
    _Detector("google_api_key", re.compile(_A + r"AIza[0-9A-Za-z_-]{35}" + _Z), needs="AIza"),
    _Detector(
        "password",
        re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@\[\]]{1,128}:([^\s@/?#\[\]]{1,256})@"),
        group=1,
        needs="://",
    ),
    _Detector(
        "card_number",
        re.compile(r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])"),
        accept=_card_ok,
    ),
)
# AWS secret keys without a label: a 40-character token in a text that holds an access key id
_BARE_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")


def _mixed(token: str) -> bool:
    return (
        any(c.isdigit() for c in token)
        and any(c.islower() for c in token)
        and any(c.isupper() for c in token)
    )


def _candidates(text: str) -> Iterator[SecretFind]:
    for detector in _DETECTORS:
        if detector.needs is not None and detector.needs not in text:
            continue
        for match in detector.pattern.finditer(text):
            secret = match.group(detector.group)
            if detector.accept is not None and not detector.accept(secret):
                continue
            yield SecretFind(detector.kind, match.start(detector.group), match.end(detector.group))


def find_secrets(text: str) -> list[SecretFind]:
    """Every secret in ``text``, in order, none overlapping (the earlier detector wins)."""
    found = list(_candidates(text))
    if any(f.kind == "aws_access_key" for f in found):
        found += [
            SecretFind("aws_secret_key", m.start(), m.end())
            for m in _BARE_AWS_SECRET.finditer(text)
            if _mixed(m.group())
        ]
    kept: list[SecretFind] = []
    for find in found:  # detectors in priority order: keep a find only where none is yet
        if all(find.end <= k.start or find.start >= k.end for k in kept):
            kept.append(find)
    return sorted(kept, key=lambda f: f.start)


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact_secrets(text: str) -> tuple[str, Counter[str]]:
    """``text`` with every secret replaced by its typed placeholder, and the counts."""
    finds = find_secrets(text)
    if not finds:
        return text, Counter()
    parts: list[str] = []
    cursor = 0
    for find in finds:
        parts.append(text[cursor : find.start])
        parts.append(placeholder(find.kind))
        cursor = find.end
    parts.append(text[cursor:])
    return "".join(parts), Counter(f.kind for f in finds)


def counts_list(counts: Counter[str]) -> list[RedactionCount]:
    return [RedactionCount(type=kind, count=n) for kind, n in sorted(counts.items())]


def secrets_mode(value: str) -> SecretsMode:
    """A policy's ``secrets`` as a mode (``ConfigurationError`` for anything else)."""
    for mode in SECRETS_MODES:
        if value == mode:
            return mode
    raise ConfigurationError(
        f"the secrets policy {value!r} is not one of redact, refuse, off; set HINDSIGHT_SECRETS"
    )


class SecretsRefusedError(InvalidRequestError):
    """The content holds a secret and the policy is ``refuse`` (422); nothing was stored."""


@dataclass(frozen=True)
class Screened:
    """Texts after the screen, and what was replaced in them."""

    texts: tuple[str | None, ...]
    counts: Counter[str]

    @property
    def redacted(self) -> list[RedactionCount] | None:
        return counts_list(self.counts) or None


@dataclass(frozen=True)
class SecretScreen:
    """The store-time policy: ``redact`` (default), ``refuse`` or ``off``; a caller's own
    mode (``Principal.secrets``, from its API key) wins over the deployment's."""

    mode: SecretsMode = "redact"

    def mode_for(self, override: str | None) -> str:
        return override if override in SECRETS_MODES else self.mode

    def screen(
        self, texts: tuple[str | None, ...], override: str | None, where: str = "content"
    ) -> Screened:
        """The texts redacted (``redact``), as they are (``off``), or
        ``SecretsRefusedError`` naming what was found (``refuse``)."""
        mode = self.mode_for(override)
        if mode == "off":
            return Screened(texts, Counter())
        total: Counter[str] = Counter()
        out: list[str | None] = []
        for text in texts:
            if not text:
                out.append(text)
                continue
            cleaned, counts = redact_secrets(text)
            total += counts
            out.append(cleaned)
        if total and mode == "refuse":
            kinds = ", ".join(f"{kind} ×{n}" for kind, n in sorted(total.items()))
            raise SecretsRefusedError(
                f"{where} holds what looks like a secret ({kinds}); nothing was stored. Remove "
                "it (or replace it with a placeholder) and store again: this key's secrets "
                "policy is 'refuse' (HINDSIGHT_SECRETS, or the key's own 'secrets')"
            )
        return Screened(tuple(out), total)


DEFAULT_SECRET_SCREEN = SecretScreen()
