"""The secret detector (core/secrets.py): real-looking secrets in English and Chinese text are
found and typed; ordinary numbers, ids and URLs are not."""

from __future__ import annotations

import pytest

from hindsight.core.errors import ConfigurationError
from hindsight.core.secrets import (
    SecretScreen,
    SecretsRefusedError,
    find_secrets,
    redact_secrets,
    secrets_mode,
)

AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
OPENAI = "sk-proj-abc123DEF456ghi789JKL012mno345PQR"
GOOGLE = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x\nq2Zl+8Tz\n-----END RSA PRIVATE KEY-----"

FOUND = [
    (f"我的AWS密钥是 {AWS_KEY_ID}，别告诉别人", "aws_access_key", AWS_KEY_ID),
    (f"我的AWS密钥是{AWS_KEY_ID}", "aws_access_key", AWS_KEY_ID),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_key", AWS_SECRET),
    (f"秘钥：{AWS_SECRET}", "aws_secret_key", AWS_SECRET),
    (f"push with {GITHUB} please", "github_token", GITHUB),
    (f"用这个令牌{GITHUB_PAT}推代码", "github_token", GITHUB_PAT),
    (f"slack bot token {SLACK}", "slack_token", SLACK),
    (f"charge it with {STRIPE}", "stripe_key", STRIPE),
    (f"OPENAI_API_KEY={OPENAI}", "openai_key", OPENAI),
    (f"maps key {GOOGLE}.", "google_api_key", GOOGLE),
    (f"登录令牌 {JWT} 过期了", "jwt", JWT),
    (f"here it is:\n{PEM}\nthanks", "private_key", PEM),
    ("db is postgres://admin:s3cr3t!@db.example.com:5432/app", "password", "s3cr3t!"),
    ("数据库连接 mysql://root:密码123@10.0.0.5/shop", "password", "密码123"),
    ("我的信用卡号是4111 1111 1111 1111，有效期12/28", "card_number", "4111 1111 1111 1111"),
    ("pay with 5500-0000-0000-0004 tomorrow", "card_number", "5500-0000-0000-0004"),
    ("银联卡号6222020200112233446在钱包里", "card_number", "6222020200112233446"),
    ("amex 378282246310005 expires soon", "card_number", "378282246310005"),
]


@pytest.mark.parametrize(("text", "kind", "secret"), FOUND)
def test_a_secret_is_found_with_its_type(text: str, kind: str, secret: str) -> None:
    [find] = find_secrets(text)
    assert find.kind == kind
    assert text[find.start : find.end] == secret


def test_redaction_puts_typed_placeholders_and_counts_them() -> None:
    text = f"key {AWS_KEY_ID} and secret {AWS_SECRET}; cards 4111111111111111, 5500000000000004"
    redacted, counts = redact_secrets(text)
    assert redacted == (
        "key [REDACTED:aws_access_key] and secret [REDACTED:aws_secret_key]; "
        "cards [REDACTED:card_number], [REDACTED:card_number]"
    )
    assert counts == {"aws_access_key": 1, "aws_secret_key": 1, "card_number": 2}


def test_a_bare_aws_secret_is_found_next_to_its_key_id() -> None:
    text = f"{AWS_KEY_ID} {AWS_SECRET}"
    assert [f.kind for f in find_secrets(text)] == ["aws_access_key", "aws_secret_key"]
    assert find_secrets(AWS_SECRET) == []  # alone, 40 characters are not enough


@pytest.mark.parametrize(
    "text",
    [
        "call me at 13800138000 or +1 (415) 555-0132",
        "order 1234567890123 shipped; tracking 9400 1000 0000 0000 0000 00",
        "4111 1111 1111 1112 fails the Luhn check",
        "1234 5678 9012 3456 is not a card prefix that passes",
        "ISBN 978-3-16-148410-0, born 1987-06-05, 2023-05-08 13:56",
        "see https://example.com/a/b?c=d and ftp://files.example.com/pub",
        "mailto:someone@example.com and user@example.com",
        "the task-force met; sk-8 skating; a risk-free sk-i trip",
        "AKIA is an acronym; ghp_short; xoxo, gossip girl",
        "我在2023年5月8日下午1点56分去了北京，电话13912345678",
        "the commit 3f786850e387550fdab836ed7e6dc57c8e8ad1b6 fixed it",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
    ],
)
def test_ordinary_text_has_no_secret(text: str) -> None:
    assert find_secrets(text) == []


def test_the_screen_redacts_refuses_or_lets_pass() -> None:
    texts = (f"我的AWS密钥是 {AWS_KEY_ID}", None, "nothing here")
    redacted = SecretScreen("redact").screen(texts, None)
    assert redacted.texts == ("我的AWS密钥是 [REDACTED:aws_access_key]", None, "nothing here")
    assert [r.model_dump() for r in redacted.redacted or []] == [
        {"type": "aws_access_key", "count": 1}
    ]
    assert SecretScreen("off").screen(texts, None).texts == texts
    with pytest.raises(SecretsRefusedError) as refused:
        SecretScreen("redact").screen(texts, "refuse", "items[3]")
    assert "items[3]" in refused.value.message and "aws_access_key" in refused.value.message
    assert "nothing was stored" in refused.value.message
    assert SecretScreen("refuse").screen(texts, "off").texts == texts  # the key's own wins


def test_an_unknown_mode_is_a_configuration_error() -> None:
    assert secrets_mode("refuse") == "refuse"
    with pytest.raises(ConfigurationError, match="HINDSIGHT_SECRETS"):
        secrets_mode("mask")
