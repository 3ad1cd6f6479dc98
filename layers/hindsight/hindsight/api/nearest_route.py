"""The nearest real route to a path that matches none, for the 404's message.

A person guesses paths: ``POST /v1/memory`` for ``POST /v1/memories``, ``/v1/retrieval``
for ``/v1/retrieve``. Every entry point (``hindsight serve``, the Lambda resolvers, the
template-driven gateway) answers such a path 404 naming the nearest route of the
operation table, found by comparing the path with every operation's path (its
``{parameters}`` filled in from the request's segments, so ids do not count against it).
"""

from __future__ import annotations

import difflib

from hindsight.api.operations import OPERATIONS

# below this similarity a path is not a near miss of any route, and none is suggested
SUGGESTION_CUTOFF = 0.7
# words people use for an operation the API names otherwise
_SYNONYMS = {
    "search": "retrieve",
    "recall": "retrieve",
    "query": "retrieve",
    "find": "retrieve",
    "remember": "memories",
    "store": "memories",
    "reflection": "reflect",
}
SAME_METHOD_BONUS = 0.05  # a route of the request's method wins a near tie


def _filled(template: str, segments: list[str]) -> str | None:
    """``template`` with its ``{parameters}`` taken from the request's segments (None when
    the number of segments differs)."""
    parts = template.strip("/").split("/")
    if len(parts) != len(segments):
        return None
    pairs = zip(parts, segments, strict=True)
    return "/" + "/".join(seg if part.startswith("{") else part for part, seg in pairs)


def nearest_route(method: str, path: str) -> tuple[str, str] | None:
    """The (method, path) of the real route nearest to ``method path``, or None when no
    route is near enough. A route of the same method wins a tie."""
    segments = [_SYNONYMS.get(seg.lower(), seg) for seg in path.strip("/").split("/")]
    path = "/" + "/".join(segments)
    best: tuple[float, str, str] | None = None
    for candidate_method, template in [(o.method, o.path) for o in OPERATIONS]:
        compared = _filled(template, segments) or template
        score = difflib.SequenceMatcher(None, path, compared).ratio()
        if candidate_method == method:
            score += SAME_METHOD_BONUS
        if best is None or score > best[0]:
            best = (score, candidate_method, template)
    if best is None or best[0] < SUGGESTION_CUTOFF:
        return None
    return best[1], best[2]


def not_found_message(method: str, path: str) -> str:
    """The 404's message: the nearest route when there is one, else where to look."""
    nearest = nearest_route(method, path)
    if nearest is None:
        return f"no route {method} {path}; the routes are listed at /docs"
    return f"no route {method} {path}; did you mean {nearest[0]} {nearest[1]}? (all routes: /docs)"
