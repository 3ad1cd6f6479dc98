"""A retrieve's index searches side by side (``Policy.parallel_searches``).

On AWS each search is a round trip to OpenSearch. A retrieve makes three: the keyword
search, the centred vector search and the plain one (core/retrieval/centering.py). In parallel, the
keyword search runs while the query is embedded, and the two vector searches run at once,
so a retrieve waits for two round trips instead of three, plus the embedding. The results
are the same searches' results. In one process with the embedded index a search holds
the interpreter: there it gains nothing and costs 0.2-0.3 ms, so it is on by default only
with the AWS backend (``composition.policy_from``; the figures: docs/benchmarks.md).

The searches run on a small shared thread pool, each in a copy of the caller's context,
so what the caller's context variables hold (a request's log keys) holds there too.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKERS = 4  # a retrieve runs at most two searches at once; a few retrieves can share
# its threads start at the first search submitted, not at import
_POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="hindsight-search")


def started(parallel: bool, call: Callable[..., T], *args: object) -> Callable[[], T]:
    """``call(*args)`` begun now; the function returned waits for its result (raising
    what it raised). Without ``parallel`` it runs here, at once, as any call."""
    if not parallel:
        result = call(*args)
        return lambda: result
    context = contextvars.copy_context()
    return _POOL.submit(context.run, call, *args).result
