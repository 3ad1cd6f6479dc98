"""The edge's one table: each domain error to its HTTP status (the core knows none)."""

from __future__ import annotations

import pytest

from hindsight.adapters.aws.ssm_api_keys import ApiKeySourceError
from hindsight.api.auth import ApiKeyConfigError
from hindsight.api.errors import STATUS_BY_ERROR, is_server_error, status_for
from hindsight.core import errors
from hindsight.core.usecases.fan_out import FanOutError


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.MalformedRequestError("x"), 400),
        (errors.UnauthorizedError("x"), 401),
        (errors.ForbiddenError("x"), 403),
        (errors.NotFoundError("x"), 404),
        (errors.ConflictError("x"), 409),
        (errors.DuplicateMemoryError("m1"), 409),
        (errors.EmbeddingModelMismatchError("x"), 409),
        (errors.PayloadTooLargeError("x"), 413),
        (errors.InvalidRequestError("x"), 422),
        (errors.RateLimitedError("x"), 429),
        (errors.ConfigurationError("x"), 500),
        (errors.HindsightError("x"), 500),
        (errors.UnavailableError("x"), 503),
        (errors.ReflectorOutputError("x"), 503),
        (ValueError("not ours"), 500),
    ],
)
def test_each_error_answers_its_status(error: BaseException, status: int) -> None:
    assert status_for(error) == status
    assert is_server_error(error) is (status >= 500)


def test_errors_defined_elsewhere_answer_like_their_domain_ancestor() -> None:
    assert status_for(ApiKeyConfigError("x")) == 500  # a ConfigurationError
    assert status_for(ApiKeySourceError("x")) == 500
    assert status_for(FanOutError("x")) == 503  # an UnavailableError


def test_the_core_errors_carry_no_status() -> None:
    for cls in STATUS_BY_ERROR:
        assert not hasattr(cls, "http_status"), cls.__name__


def test_aws_backend_without_a_region_says_what_to_set(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A newcomer's first try of HINDSIGHT_BACKEND=aws: a configuration error, not a trace."""
    from hindsight.bootstrap import build_aws_service
    from hindsight.core.errors import ConfigurationError
    from hindsight.settings import Settings
    from tests.fakes import HashingEmbedder

    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    with pytest.raises(ConfigurationError, match="AWS_DEFAULT_REGION") as raised:
        build_aws_service(Settings(backend="aws"), embedder=HashingEmbedder())
    assert "make run-aws" in raised.value.message
