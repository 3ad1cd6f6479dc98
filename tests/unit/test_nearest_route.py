"""A path that matches no route is answered with the nearest real one, and only then."""

from __future__ import annotations

import pytest

from hindsight.api.nearest_route import nearest_route, not_found_message

NEAR_MISSES = [
    (("POST", "/v1/memory"), ("POST", "/v1/memories")),
    (("POST", "/memories"), ("POST", "/v1/memories")),
    (("POST", "/v1/retrieval"), ("POST", "/v1/retrieve")),
    (("POST", "/v1/search"), ("POST", "/v1/retrieve")),
    (("POST", "/v1/recall"), ("POST", "/v1/retrieve")),
    (("GET", "/health"), ("GET", "/v1/health")),
    (("GET", "/v1/memory/01JABCDEF"), ("GET", "/v1/memories/{memory_id}")),
    (("DELETE", "/v1/memory/01JABCDEF"), ("DELETE", "/v1/memories/{memory_id}")),
    (("GET", "/v1/user/test_user/memories"), ("GET", "/v1/users/{user_id}/memories")),
    (("GET", "/v1/users/用户一/memory"), ("GET", "/v1/users/{user_id}/memories")),
    (("GET", "/doc"), ("GET", "/docs")),
    (("GET", "/explore"), ("GET", "/explorer")),
]
# paths that are near no route: a suggestion would only mislead
FAR_AWAY = ["/favicon.ico", "/robots.txt", "/admin", "/wp-login.php", "/api", "/v2/things", "/记忆"]


@pytest.mark.parametrize(("asked", "meant"), NEAR_MISSES)
def test_a_near_miss_names_the_route_meant(asked: tuple[str, str], meant: tuple[str, str]) -> None:
    assert nearest_route(*asked) == meant
    assert f"did you mean {meant[0]} {meant[1]}?" in not_found_message(*asked)


def test_a_path_near_no_route_gets_no_suggestion() -> None:
    suggested = [path for path in FAR_AWAY if nearest_route("GET", path) is not None]

    assert suggested == []  # 0 of 7
    assert not_found_message("GET", "/favicon.ico") == (
        "no route GET /favicon.ico; the routes are listed at /docs"
    )
