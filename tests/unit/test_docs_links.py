"""The documentation holds together: every relative link and in-page anchor of the README,
the root pages and docs/ resolves, and every setting the pages show is one the code accepts.

Anchors are GitHub's heading slugs: lower case, punctuation other than ``-`` and ``_``
dropped, spaces turned into ``-``, a repeated heading numbered ``-1``, ``-2``, ...
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight.core.errors import ConfigurationError
from hindsight.settings import Settings, variable

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        REPO / "CHANGELOG.md",
        REPO / "bench" / "README.md",
        REPO / "training" / "README.md",
        *list((REPO / "docs").glob("*.md")),
    ]
)
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
SETTING = re.compile(r"\b(HINDSIGHT_[A-Z0-9_]*[A-Z0-9])\b")
SETTING_VALUE = re.compile(r"\b(HINDSIGHT_[A-Z0-9_]*[A-Z0-9])=([^\s`'\"]+)")
# Where variables read outside the settings model are named (the clients', the tools')
NAMED_IN_CODE = re.compile(r"(?:[\"']|process\.env\.)(HINDSIGHT_[A-Z0-9_]+)\b")
CODE = {
    "layers": "*.py",
    "functions": "*.py",
    "clients/python/src": "*.py",
    "clients/typescript/src": "*.ts",
    "clients/typescript/test": "*.mjs",
}


def _outside_fences(text: str) -> Iterator[tuple[bool, str]]:
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        yield fenced, line


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    for fenced, line in _outside_fences(page.read_text(encoding="utf-8")):
        match = re.match(r"^#{1,6} (.+)$", line)
        if fenced or not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> Iterator[str]:
    for fenced, line in _outside_fences(page.read_text(encoding="utf-8")):
        if fenced:
            continue
        for match in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            yield match.group(1) or match.group(2)


def _broken(page: Path, target: str) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    path_part, _, anchor = target.partition("#")
    resolved = (page.parent / path_part).resolve() if path_part else page
    if not resolved.exists():
        return f"{page.relative_to(REPO)}: {target} (no such file)"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"{page.relative_to(REPO)}: {target} (no such heading)"
    return None


def test_the_pages_exist() -> None:
    missing = [p.relative_to(REPO) for p in PAGES if not p.exists()]
    assert not missing, f"pages the documentation links together are missing: {missing}"


def test_every_relative_link_and_anchor_resolves() -> None:
    broken = [
        problem
        for page in PAGES
        if page.exists()
        for target in links(page)
        if (problem := _broken(page, target))
    ]
    assert not broken, "broken links:\n" + "\n".join(broken)


def _accepted_variables() -> set[str]:
    """The settings model's variables, and any other the code names as a string."""
    named = set()
    for folder, pattern in CODE.items():
        for source in (REPO / folder).rglob(pattern):
            text = source.read_text("utf-8")
            named |= set(NAMED_IN_CODE.findall(text))
    return {variable(name) for name in Settings.model_fields} | named


def test_every_setting_shown_is_one_the_code_accepts() -> None:
    accepted = _accepted_variables()
    unknown = sorted(
        f"{page.relative_to(REPO)}: {name}"
        for page in PAGES
        if page.exists()
        for name in set(SETTING.findall(page.read_text(encoding="utf-8")))
        if name not in accepted and not name.endswith("_")
    )
    assert not unknown, "settings the code does not read:\n" + "\n".join(unknown)


def test_every_setting_value_shown_is_one_the_code_accepts() -> None:
    fields = {variable(name): name for name in Settings.model_fields}
    refused = []
    for page in PAGES:
        if not page.exists():
            continue
        for name, value in SETTING_VALUE.findall(page.read_text(encoding="utf-8")):
            if name not in fields or "<" in value or value.startswith("$"):
                continue
            try:
                Settings.from_env({name: value.rstrip(".,;:)")})
            except ConfigurationError as error:
                refused.append(f"{page.relative_to(REPO)}: {name}={value}: {error}")
    assert not refused, "settings shown with values the code refuses:\n" + "\n".join(refused)


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        (
            "Ranking ablation across dev sets: `bench/devsets.py`",
            "ranking-ablation-across-dev-sets-benchdevsetspy",
        ),
        (
            "Production: the embedded server as a service",
            "production-the-embedded-server-as-a-service",
        ),
        ("API keys, tenants and scopes", "api-keys-tenants-and-scopes"),
    ],
)
def test_slugs_are_githubs(heading: str, expected: str) -> None:
    assert slug(heading) == expected
