"""opensearch-py's errors translated into the domain's, with what to do about them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hindsight.core.errors import EmbeddingModelMismatchError, UnavailableError


@contextmanager
def translated_errors(index_name: str, action: str) -> Iterator[None]:
    """Raise the domain's errors for opensearch-py's during ``action`` on ``index_name``."""
    from opensearchpy import exceptions as os_errors
    from opensearchpy.helpers import BulkIndexError

    try:
        yield
    except (EmbeddingModelMismatchError, UnavailableError):
        raise
    except os_errors.ConnectionError as exc:
        raise UnavailableError(
            f"the search index is unavailable: cannot reach OpenSearch for {action} "
            f"({exc.__class__.__name__}); retry later"
        ) from exc
    except (os_errors.AuthenticationException, os_errors.AuthorizationException) as exc:
        raise UnavailableError(
            f"OpenSearch refused the credentials for {action} (HTTP {exc.status_code}); "
            "check HINDSIGHT_OPENSEARCH_URL, the auth mode and the role's access policy"
        ) from exc
    except os_errors.NotFoundError as exc:
        raise UnavailableError(
            f"the search index {index_name!r} does not exist; create it "
            "(`hindsight serve` does on start) or run `hindsight reindex`"
        ) from exc
    except BulkIndexError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise UnavailableError(
            f"OpenSearch rejected {len(exc.errors)} document(s) during {action}: {first}"
        ) from exc
    except os_errors.TransportError as exc:
        raise UnavailableError(
            f"the search index failed during {action} (HTTP {exc.status_code}: "
            f"{exc.error}); retry later"
        ) from exc
