"""The memory explorer in a real browser: each test does what a person does on the page,
then checks what the page shows and what the public API answers afterwards.

Screenshots of the main views go to docs/screenshots/ (the README links them).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.browser.browser import Browser
from tests.browser.conftest import KEY, READER_KEY, SCREENSHOTS, running_server

USER = "ana"
DAY = "2026-11-{:02d}T{:02d}:00:00Z"
EPISODES: list[dict[str, Any]] = [
    {"content": "I am allergic to peanuts", "category": "health", "emotion": "worried"},
    {"content": "我对花生过敏，一吃就起疹子", "category": "health", "emotion": "worried"},
    {"content": "I like hiking on weekends", "category": "hobby", "emotion": "happy"},
    {"content": "今天去公园散步了，天气很好", "category": "daily", "emotion": "happy"},
    {"content": "My sister Lena lives in Lisbon", "category": "family", "scope": "work"},
    {"content": "Booked the dentist for next Tuesday", "category": "task", "ttl_seconds": 3600},
    {"content": "I prefer green tea over coffee", "category": "preference", "emotion": "calm"},
    {"content": "The project deadline moved to Friday", "category": "work", "scope": "work"},
]


def _store(api: httpx.Client, user: str, items: list[dict[str, Any]]) -> list[str]:
    ids = []
    for number, item in enumerate(items):
        body = {"user_id": user, "occurred_at": DAY.format(1 + number * 3, 9 + number), **item}
        reply = api.post("/v1/memories", json=body)
        assert reply.status_code == 201, reply.text
        ids.append(reply.json()["memory_id"])
    return ids


def _ask(browser: Browser, query: str, shown: str) -> None:
    """Ask the query in the Ask view and wait for ``shown`` (the results or the empty line)."""
    browser.fill("#ask-query", query)
    browser.click("#ask-form button[type=submit]")
    browser.ready()
    browser.wait(shown)


@pytest.fixture(scope="module")
def seeded(api: httpx.Client) -> dict[str, Any]:
    ids = _store(api, USER, EPISODES)
    reflected = api.post("/v1/reflect", json={"user_id": USER})
    assert reflected.status_code == 200, reflected.text
    later = _store(api, USER, [{"content": "Started learning the cello", "category": "hobby"}])
    _store(api, "ben", [{"content": "Ben likes jazz"}, {"content": "本喜欢爵士乐"}])
    return {"episodes": ids + later, "facts": reflected.json()["pending"]}


def _listed(api: httpx.Client, user: str, **query: str) -> list[dict[str, Any]]:
    reply = api.get(f"/v1/users/{user}/memories", params={"limit": "50", **query})
    assert reply.status_code == 200, reply.text
    return list(reply.json()["results"])


def _row_ids(browser: Browser) -> list[str]:
    browser.wait("#results table, #results p.empty")
    return [i for i in browser.attrs("#memory-table tbody tr", "data-memory-id") if i]


def _params(browser: Browser) -> dict[str, list[str]]:
    return parse_qs(urlparse(str(browser.send("url"))).query)


def _fact(seeded: dict[str, Any], word: str) -> dict[str, Any]:
    return next(f for f in seeded["facts"] if word in f["content"])


def test_sign_in_and_browse_a_user(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    browser.fill("#user-id", USER)
    browser.click("#user-form button")
    browser.ready()
    assert _params(browser)["user_id"] == [USER]
    shown = _row_ids(browser)
    assert shown == [m["memory_id"] for m in _listed(api, USER, limit="20")]
    page_text = browser.text("#memory-table")
    assert "我对花生过敏" in page_text and "I like hiking" in page_text
    assert browser.text("#pending-badge") == str(len(_listed(api, USER, status="pending")))
    assert browser.send("storage", name="hindsight.explorer.key") == KEY
    browser.screenshot(SCREENSHOTS / "memories.png", full_page=True)


def test_a_revoked_key_and_a_bad_date_are_explained_on_the_page(
    browser: Browser, server: str, seeded: dict[str, Any]
) -> None:
    browser.goto(f"{server}/explorer?user_id={USER}")
    browser.fill("#api-key", "browser-key-revoked-0099")
    browser.click("#auth-form button[type=submit]")
    browser.wait_text("#message.error", "Sign in with a valid API key")
    assert "API key" in browser.text("#message")
    browser.fill("#api-key", KEY)
    browser.click("#auth-form button[type=submit]")
    browser.ready()
    browser.goto(f"{server}/explorer?user_id={USER}&since=last-tuesday")
    browser.wait_text("#message.error", "is not a date")
    browser.goto(f"{server}/explorer?user_id=nobody-here")
    browser.wait_text("#results p.empty", "nobody-here")


def test_filters_match_the_api_and_the_link_can_be_shared(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id={USER}")
    browser.select("#f-kind", "episodic")
    browser.fill("#f-emotion", "happy")
    browser.select("#f-order", "oldest")
    browser.click("#filters button[type=submit]")
    browser.ready()
    expected = _listed(api, USER, kind="episodic", emotion="happy", order="oldest")
    assert [m["content"] for m in expected] == [
        "I like hiking on weekends",
        "今天去公园散步了，天气很好",
    ]
    assert _row_ids(browser) == [m["memory_id"] for m in expected]
    shared = str(browser.send("url"))
    assert "emotion=happy" in shared and "order=oldest" in shared
    browser.goto(shared)  # the same view from the link alone
    assert _row_ids(browser) == [m["memory_id"] for m in expected]

    browser.goto(f"{server}/explorer?user_id={USER}&text=花生&stored_since=2020-01-01")
    texted = _listed(api, USER, text="花生", stored_since="2020-01-01T00:00:00Z")
    assert texted and all("花生" in m["content"] for m in texted)
    assert _row_ids(browser) == [m["memory_id"] for m in texted]

    browser.goto(f"{server}/explorer?user_id={USER}&expiring=1")
    expiring = _listed(api, USER, expires_before="2100-01-01T00:00:00Z")
    assert [m["content"] for m in expiring] == ["Booked the dentist for next Tuesday"]
    assert _row_ids(browser) == [expiring[0]["memory_id"]]


def test_a_fact_shows_its_provenance_and_why(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    fact = _fact(seeded, "花生")  # 用户对花生过敏。 from the English and the Chinese episode
    browser.goto(f"{server}/explorer?user_id={USER}&view=memory&memory={fact['memory_id']}")
    assert browser.text("#memory-content") == fact["content"]
    sources = api.get(f"/v1/memories/{fact['memory_id']}").json()["memory"]["source_memory_ids"]
    links = browser.attrs(".provenance ul.sources a", "href")
    assert sorted(link.rsplit("memory=", 1)[1] for link in links if link) == sorted(sources)
    assert browser.count("ol.chain li.current") == 1
    browser.screenshot(SCREENSHOTS / "fact-detail.png", full_page=True)

    browser.click("#why-link")
    browser.ready()
    assert browser.text("#why-reflector") == fact["reflector"]
    marked = browser.texts("#why-sources mark")
    assert "对花生过敏" in marked, marked
    browser.click("#why-dry")
    browser.wait(".reflection-result")
    assert "Dry run" in browser.text(".reflection-result .summary")
    browser.screenshot(SCREENSHOTS / "why-this-fact.png", full_page=True)

    source = sources[0]
    browser.click(f".sources a[href$='memory={source}']")
    browser.ready()
    assert (
        browser.text("#memory-content")
        == api.get(f"/v1/memories/{source}").json()["memory"]["content"]
    )


def test_approve_from_the_review_queue(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    pending = _listed(api, USER, status="pending")
    assert len(pending) >= 2
    browser.goto(f"{server}/explorer?user_id={USER}&view=review")
    assert browser.text("#pending-badge") == str(len(pending))
    assert browser.count("#review-table tbody tr") == len(pending)
    browser.screenshot(SCREENSHOTS / "review-queue.png", full_page=True)
    chosen = pending[0]["memory_id"]
    browser.click(f"#review-table tr[data-memory-id='{chosen}'] input.pick")
    browser.click("#approve-selected")
    browser.wait_text(f"#review-table tr[data-memory-id='{chosen}'] .result", "approved")
    browser.wait_text("#pending-badge", str(len(pending) - 1))
    assert api.get(f"/v1/memories/{chosen}").json()["memory"]["status"] == "approved"
    assert chosen not in {m["memory_id"] for m in _listed(api, USER, status="pending")}
    other = next(m["memory_id"] for m in pending if m["memory_id"] != chosen)
    browser.click(f"#review-table tr[data-memory-id='{other}'] button[data-action=reject]")
    browser.wait_text(f"#review-table tr[data-memory-id='{other}'] .result", "rejected")
    browser.wait_text("#pending-badge", str(len(pending) - 2))
    assert api.get(f"/v1/memories/{other}").json()["memory"]["status"] == "rejected"


def test_reflection_dry_run_writes_nothing(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    before = api.get(f"/v1/users/{USER}/reflection").json()
    facts_before = _listed(api, USER, kind="semantic")
    assert before["episodes_waiting"] == 1  # the cello, stored after the reflection
    browser.goto(f"{server}/explorer?user_id={USER}&view=reflection")
    assert browser.text("#reflection-waiting") == "1"
    assert browser.text("#reflection-cursor").startswith(before["cursor"][:16].replace("T", " "))
    browser.click("#dry-run")
    browser.wait(".reflection-result")
    assert "1 episode(s) considered" in browser.text(".reflection-result .summary")
    browser.screenshot(SCREENSHOTS / "reflection.png", full_page=True)
    assert api.get(f"/v1/users/{USER}/reflection").json() == before
    assert _listed(api, USER, kind="semantic") == facts_before


def test_ask_shows_the_why_of_every_score(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id={USER}&view=ask")
    _ask(browser, "what food must she avoid", "#ask-results")
    answer = api.post(
        "/v1/retrieve", json={"user_id": USER, "query": "what food must she avoid", "top_k": 10}
    ).json()
    shown = browser.attrs("#ask-results > li", "data-memory-id")
    assert shown == [r["memory_id"] for r in answer["results"]]
    first = answer["results"][0]
    parts = browser.attrs("#ask-results > li:first-child .why-part", "data-part")
    values = browser.attrs("#ask-results > li:first-child .why-part", "data-value")
    drawn = {p: float(v) for p, v in zip(parts, values, strict=True) if p and v}
    assert {"similarity", "keyword", "score"} <= set(drawn)
    for part, value in drawn.items():
        assert value == pytest.approx(first["why"][part])
    assert browser.count("#ask-results > li:first-child .why-bar") == len(drawn)
    browser.screenshot(SCREENSHOTS / "ask.png", full_page=True)

    browser.select("#ask-kinds", "semantic")
    browser.select("#ask-status", "pending")
    browser.click("#ask-form button[type=submit]")
    browser.ready()
    browser.wait("#ask-results")
    pending = api.post(
        "/v1/retrieve",
        json={
            "user_id": USER,
            "query": "what food must she avoid",
            "kinds": ["semantic"],
            "statuses": ["pending"],
        },
    ).json()["results"]
    assert pending and all(r["status"] == "pending" for r in pending)
    shown = browser.attrs("#ask-results > li", "data-memory-id")
    assert shown == [r["memory_id"] for r in pending]


def test_ask_says_whom_no_memory_mentions(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    turns = [
        {"content": "Jon: I am opening a dance studio", "speaker": "Jon"},
        {"content": "Gina: I painted a sunset over the lake", "speaker": "Gina"},
    ]
    _store(api, "club", turns)
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id=club&view=ask")
    _ask(browser, "What did Caroline paint?", "#ask-empty")
    assert "mentions Caroline" in browser.text("#ask-empty")
    _ask(browser, "What did Gina paint?", "#ask-results")
    assert browser.count("#ask-results > li") == 2


def test_timeline_and_a_phone_screen(
    signed_in: Browser, server: str, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id={USER}&view=timeline")
    browser.wait("#timeline-chart canvas")
    assert browser.count("#timeline-table tbody tr") >= 8  # days holding a memory
    assert browser.texts("#timeline-table thead th")[1:] == ["episodic", "semantic"]
    browser.select("#timeline-group", "category")
    browser.ready()
    browser.wait("#timeline-chart canvas")
    assert "health" in browser.texts("#timeline-table thead th")
    assert _params(browser)["group"] == ["category"]
    browser.screenshot(SCREENSHOTS / "timeline.png", full_page=True)
    browser.send("viewport", width=390, height=844)
    try:
        browser.goto(f"{server}/explorer?user_id={USER}")
        assert int(browser.send("overflow")) <= 0  # nothing wider than the phone
        browser.screenshot(SCREENSHOTS / "phone.png")
    finally:
        browser.send("viewport", width=1280, height=800)


def _store_at(
    api: httpx.Client, user: str, content: str, occurred_at: str, category: str = "daily"
) -> None:
    body = {"user_id": user, "content": content, "occurred_at": occurred_at, "category": category}
    stored = api.post("/v1/memories", json=body)
    assert stored.status_code == 201, stored.text


def _timeline_span_days(browser: Browser, server: str, user: str) -> float:
    browser.goto(f"{server}/explorer?user_id={user}&view=timeline")
    browser.wait("#timeline-chart canvas")
    start, end = (browser.attrs("#timeline-chart", name)[0] for name in ("data-from", "data-to"))
    assert start is not None and end is not None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() / 86_400


def test_the_timeline_fits_its_data_a_day_or_a_year(
    signed_in: Browser, server: str, api: httpx.Client, tmp_path: Path
) -> None:
    browser = signed_in
    day = [(8, "早上喝了豆浆", "饮食"), (13, "Lunch with Lena", "family")]
    for hour, text, category in [*day, (21, "晚上跑步五公里", "运动")]:
        _store_at(api, "one_day", text, f"2026-12-01T{hour:02d}:00:00Z", category)
    for month, text in ((1, "New year in Porto"), (6, "六月搬家了"), (12, "December exams")):
        _store_at(api, "one_year", text, f"2025-{month:02d}-03T10:00:00Z")

    assert _timeline_span_days(browser, server, "one_day") == 1.0
    assert browser.texts("#timeline-table thead th")[0] == "Hour (UTC)"
    assert browser.count("#timeline-table tbody tr") == 3  # hours holding a memory
    assert "No facts yet" in browser.text("#confidence-none")
    browser.select("#timeline-group", "category")
    browser.ready()
    browser.wait("#timeline-chart canvas")
    legend = " ".join(browser.texts("#timeline-chart .u-legend th"))
    assert "饮食" in legend and "运动" in legend and "family" in legend
    browser.screenshot(tmp_path / "timeline-one-day.png", full_page=True)
    year = _timeline_span_days(browser, server, "one_year")
    assert 335 <= year <= 336  # 3 Jan to 3 Dec, in whole days
    assert browser.texts("#timeline-table thead th")[0] == "Day (UTC)"
    browser.screenshot(tmp_path / "timeline-one-year.png", full_page=True)


def test_the_facts_chart_has_a_title_not_a_count(
    signed_in: Browser, server: str, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id={USER}&view=timeline")
    browser.wait("#confidence-chart canvas")
    titles = browser.texts("h3")
    assert "Facts' confidence, by when each was last updated" in titles
    assert not any("3 high" in title for title in titles)
    legend = browser.texts("#confidence-chart .u-legend th")
    assert any("confidence" in label for label in legend)


def test_keyboard_reaches_the_sign_in(browser: Browser, server: str) -> None:
    browser.goto(f"{server}/explorer")
    for _ in range(2):  # the skip link, then the user id
        browser.send("keyboard", key="Tab")
    assert browser.send("focused") == "user-id"


def test_delete_a_memory_behind_a_confirmation(
    signed_in: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser = signed_in
    target = seeded["episodes"][6]  # green tea
    browser.goto(f"{server}/explorer?user_id={USER}&view=memory&memory={target}")
    browser.click("#delete")
    browser.wait("dialog.confirm")
    assert "fact(s) name it as a source" in browser.text("#confirm-text")
    browser.click("#confirm-cancel")
    assert api.get(f"/v1/memories/{target}").status_code == 200
    browser.click("#delete")
    browser.click("#confirm-ok")
    browser.wait_text("#message.info", f"Deleted memory {target}")
    browser.ready()
    assert target not in _row_ids(browser)
    assert api.get(f"/v1/memories/{target}").status_code == 404
    assert target not in {m["memory_id"] for m in _listed(api, USER)}


def test_erase_a_user_shows_the_counts_and_leaves_nothing(
    browser: Browser, server: str, api: httpx.Client, seeded: dict[str, Any]
) -> None:
    browser.goto(f"{server}/explorer?user_id=ben&view=forget")
    browser.fill("#api-key", READER_KEY)  # may not write every scope
    browser.click("#auth-form button[type=submit]")
    browser.ready()
    browser.click("#erase-user")
    browser.wait("dialog.confirm")
    assert "2 episode(s)" in browser.text("#confirm-text")  # global: readable by it
    browser.click("#confirm-ok")
    browser.wait_text("#message.error", "scope")
    assert len(_listed(api, "ben")) == 2
    browser.fill("#api-key", KEY)
    browser.click("#auth-form button[type=submit]")
    browser.ready()
    browser.click("#erase-user")
    browser.wait("dialog.confirm")
    assert "2 episode(s) and 0 fact(s)" in browser.text("#confirm-text")
    browser.click("#confirm-ok")
    browser.wait_text("#message.info", "Erased user ben")
    browser.ready()
    assert browser.count("#memory-table tbody tr") == 0
    assert _listed(api, "ben") == []


def test_a_fact_retired_by_an_episode_ends_its_chain_with_that_episode(
    signed_in: Browser, server: str, api: httpx.Client
) -> None:
    said = [
        ("2026-02-01T09:00:00Z", "I live in Lisbon, close to the sea."),
        ("2026-08-01T09:00:00Z", "I sold the Lisbon flat, Porto is home now."),
    ]
    ids = []
    for when, text in said:  # reflected on one at a time; the second gives no fact
        memory = {"user_id": "dee", "content": text, "occurred_at": when}
        ids.append(api.post("/v1/memories", json=memory).json()["memory_id"])
        assert api.post("/v1/reflect", json={"user_id": "dee"}).status_code == 200
    (old,) = _listed(api, "dee", kind="semantic")
    assert (old["status"], old["superseded_by"]) == ("superseded", ids[1])
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id=dee&view=memory&memory={old['memory_id']}")
    chain = browser.texts("ol.chain li")
    assert len(chain) == 2 and "(this fact)" in chain[0]
    assert "Porto is home now" in chain[1] and "an episode of" in chain[1]
    assert "undefined" not in chain[1]
    browser.click(f"ol.chain a[href$='memory={ids[1]}']")
    browser.ready()
    assert browser.text("#memory-content") == said[1][1]


def test_a_keyless_loopback_server_needs_no_sign_in(browser: Browser, tmp_path: Path) -> None:
    with running_server(tmp_path, keys=None) as url:
        stored = httpx.post(f"{url}/v1/memories", json={"user_id": "k1", "content": "无钥匙也能看"})
        assert stored.status_code == 201, stored.text
        browser.goto(f"{url}/explorer?user_id=k1")
        assert "No key" in browser.text("#auth-status")
        assert _row_ids(browser) == [stored.json()["memory_id"]]
        assert "无钥匙也能看" in browser.text("#memory-table")


def test_a_supersession_chain_is_shown_and_followed(
    signed_in: Browser, server: str, api: httpx.Client
) -> None:
    for when, text in (
        ("2026-02-01T09:00:00Z", "I live in Lisbon, close to the sea."),
        ("2026-08-01T09:00:00Z", "I live in Porto now, close to the old bridge."),
    ):
        reply = api.post(
            "/v1/memories", json={"user_id": "cai", "content": text, "occurred_at": when}
        )
        assert reply.status_code == 201, reply.text
    assert api.post("/v1/reflect", json={"user_id": "cai"}).status_code == 200
    facts = {f["status"]: f for f in _listed(api, "cai", kind="semantic")}
    current, old = facts["pending"], facts["superseded"]
    assert current["supersedes"] == [old["memory_id"]]
    browser = signed_in
    browser.goto(f"{server}/explorer?user_id=cai&view=memory&memory={current['memory_id']}")
    chain = browser.texts("ol.chain li")
    assert len(chain) == 2 and "Lisbon" in chain[0] and "superseded" in chain[0]
    assert "Porto" in chain[1] and "(this fact)" in chain[1]
    browser.click(f"ol.chain a[href$='memory={old['memory_id']}']")
    browser.ready()
    assert browser.text("dd.f-status") == "superseded"
    assert browser.count("#approve") == 0  # a superseded fact cannot be approved
    browser.click("#why-link")
    browser.ready()
    history = browser.texts("#why-history tbody tr")
    assert len(history) == 2 and "superseded" in history[0] and "pending" in history[1]


def test_the_page_never_logged_an_error(browser: Browser) -> None:
    """Last in this file: what every test before it left in the console."""
    errors = browser.send("consoleErrors")
    # refused requests (401/403/422, shown on the page) are logged by Chromium as errors
    assert all("Failed to load resource" in e for e in errors), errors
