"""An opensearch-py client for a local node, an Amazon OpenSearch domain or a collection."""

from __future__ import annotations

from typing import Any, Literal

from hindsight.core.errors import ConfigurationError

AuthMode = Literal["none", "basic", "sigv4-es", "sigv4-aoss"]


def build_opensearch_client(
    url: str,
    auth_mode: AuthMode = "none",
    region: str | None = None,
    username: str | None = None,
    password: str | None = None,
    timeout: float = 10.0,
    http_compress: bool | None = None,
) -> Any:
    """An ``opensearchpy.OpenSearch`` client for a local node, a domain or a collection.

    ``sigv4-es`` signs for Amazon OpenSearch Service, ``sigv4-aoss`` for OpenSearch
    Serverless, with credentials from boto3's standard chain. Request bodies are gzipped
    except on loopback, where compressing costs more than it saves (bulk of vectors: 2x).
    """
    from urllib.parse import urlparse

    from opensearchpy import OpenSearch

    if http_compress is None:
        http_compress = urlparse(url).hostname not in ("127.0.0.1", "localhost", "::1")
    options: dict[str, Any] = {
        "hosts": [url],
        "timeout": timeout,
        "max_retries": 2,
        "retry_on_timeout": True,
        "http_compress": http_compress,
    }
    if auth_mode == "basic":
        if not username or password is None:
            raise ValueError("basic auth needs a username and a password")
        options["http_auth"] = (username, password)
    elif auth_mode in ("sigv4-es", "sigv4-aoss"):
        import boto3
        from opensearchpy import RequestsAWSV4SignerAuth, RequestsHttpConnection

        session = boto3.Session()
        credentials = session.get_credentials()
        region = region or session.region_name
        if credentials is None or not region:
            raise ConfigurationError(
                "no AWS credentials or region for signing OpenSearch requests; configure the "
                "standard AWS chain (AWS_DEFAULT_REGION or HINDSIGHT_REGION, AWS_PROFILE or a "
                "role)"
            )
        service = "es" if auth_mode == "sigv4-es" else "aoss"
        options["http_auth"] = RequestsAWSV4SignerAuth(credentials, region, service)
        options["connection_class"] = RequestsHttpConnection
    elif auth_mode != "none":
        raise ValueError(f"unknown OpenSearch auth mode {auth_mode!r}")
    return OpenSearch(**options)
