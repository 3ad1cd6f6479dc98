"""False positives and cost of the store-time secret filter on the LoCoMo turns.

Every LoCoMo turn (ordinary conversation: no secret in it) is run through
``hindsight.core.secrets.find_secrets`` as the store path runs it; every find is a false
positive. Prints the count (target 0), each false positive with its turn, and the cost
per text (the median of a few passes over all turns), then the same for a set of texts
that do hold secrets (each must be found).

    .venv/bin/python bench/secrets_fp.py [--data ../shared/data/locomo10.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import load_locomo

from hindsight.core.secrets import find_secrets, redact_secrets

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo10.json"
PASSES = 5

# real-looking secrets (the documented example values and made-up ones), English and Chinese
POSITIVES = (
    "我的AWS密钥是 AKIAIOSFODNN7EXAMPLE，别告诉别人",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "用这个 token：ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 推代码",
    "slack bot token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "charge it with sk_live_4eC39HqLyjWDarjtT1zdp7dc please",
    "OPENAI_API_KEY=sk-proj-abc123DEF456ghi789JKL012mno345PQR",
    "maps key AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "登录令牌 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
    "数据库连接 postgres://admin:s3cr3t!@db.example.com:5432/app",
    "我的信用卡号是4111 1111 1111 1111，有效期12/28",
    "pay with 5500-0000-0000-0004 tomorrow",
)


def per_text_microseconds(texts: list[str]) -> float:
    """Median over passes of the mean time per text of ``redact_secrets``."""
    timings = []
    for _ in range(PASSES):
        started = time.perf_counter()
        for text in texts:
            redact_secrets(text)
        timings.append((time.perf_counter() - started) / len(texts) * 1e6)
    return statistics.median(timings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    args = parser.parse_args(argv)
    conversations = load_locomo(args.data)
    texts = [turn.content for conversation in conversations for turn in conversation.turns]
    false_positives = [(text, find) for text in texts for find in find_secrets(text)]
    for text, find in false_positives:
        print(f"  false positive {find.kind}: {text[find.start : find.end]!r} in {text[:120]!r}")
    missed = [text for text in POSITIVES if not find_secrets(text)]
    for text in missed:
        print(f"  missed: {text!r}")
    print(f"LoCoMo turns scanned: {len(texts)}")
    print(f"false positives on LoCoMo: {len(false_positives)}")
    print(f"secret samples found: {len(POSITIVES) - len(missed)}/{len(POSITIVES)}")
    print(f"cost per LoCoMo turn: {per_text_microseconds(texts):.1f} µs (median of {PASSES})")
    long_text = " ".join(texts[:400])  # a long memory: ~{len} characters
    print(
        f"cost per long text ({len(long_text):,} chars): "
        f"{per_text_microseconds([long_text]) / 1000:.2f} ms"
    )
    return 0 if not false_positives and not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
