"""Settings: HINDSIGHT_* variables into one typed model; bad values name the variable."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hindsight.core.errors import ConfigurationError
from hindsight.core.policy import Policy
from hindsight.settings import Settings, variable


def test_defaults_without_any_variable() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.backend == "embedded"
    assert settings.data_dir == Path(".hindsight")
    assert settings.embedder == "e5"
    assert settings.reflector == "learned"
    assert settings.reflector_offline == "learned"
    assert settings.table == "hindsight"
    assert settings.opensearch_index == "hindsight-memories"
    assert settings.opensearch_auth == "none"
    assert settings.create_resources is True
    assert settings.allow_anonymous is False
    assert settings.anonymous_tenant == "local"
    assert settings.ann_threshold == 20_000
    assert settings.api_keys_cache_seconds == 300.0
    assert settings.reflection_queue_url == ""


# unset, these follow the backend (bootstrap.policy_from): the parallel searches gain where
# each search is a round trip (tests/unit/test_parallel_searches.py)
BY_BACKEND = frozenset({"parallel_searches"})


def test_every_policy_knob_is_a_setting_with_the_same_default() -> None:
    policy = Policy()
    settings = Settings()
    for knob in dataclasses.fields(Policy):
        assert knob.name in Settings.model_fields, f"{variable(knob.name)} is missing"
        expected = None if knob.name in BY_BACKEND else getattr(policy, knob.name)
        assert getattr(settings, knob.name) == expected, knob.name


def test_variables_are_parsed_into_their_types() -> None:
    settings = Settings.from_env(
        {
            "HINDSIGHT_BACKEND": "aws",
            "HINDSIGHT_DATA_DIR": "/srv/hindsight",
            "HINDSIGHT_ANN_THRESHOLD": "5000",
            "HINDSIGHT_DEDUP_WINDOW_SECONDS": "60",
            "HINDSIGHT_CANDIDATE_POOL": "40",
            "HINDSIGHT_VECTOR_WEIGHT": "0.7",
            "HINDSIGHT_CONFIDENCE_WEIGHTS": '{"high": 1.0, "low": 0.5}',
            "HINDSIGHT_REFLECTION_QUEUE_URL": "https://sqs.example/queue",
            "OTHER_VARIABLE": "ignored",
        }
    )
    assert settings.backend == "aws"
    assert settings.data_dir == Path("/srv/hindsight")
    assert settings.ann_threshold == 5000
    assert settings.dedup_window_seconds == 60.0
    assert settings.candidate_pool == 40
    assert settings.vector_weight == 0.7
    # medium, left out, keeps its default rather than falling to 1.0
    assert settings.confidence_weights == {"high": 1.0, "medium": 0.85, "low": 0.5}
    assert settings.reflection_queue_url == "https://sqs.example/queue"


def test_variable_names_are_upper_case_only() -> None:
    assert Settings.from_env({"hindsight_backend": "aws"}).backend == "embedded"


def test_data_dir_expands_the_home_directory() -> None:
    settings = Settings.from_env({"HINDSIGHT_DATA_DIR": "~/memories"})
    assert settings.data_dir == Path.home() / "memories"


def test_reads_os_environ_by_default_and_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HINDSIGHT_TABLE", "from-environment")
    assert Settings.from_env().table == "from-environment"
    assert Settings().table == "hindsight"  # direct construction reads no environment
    assert Settings(table="given").table == "given"


def test_overrides_win_and_none_overrides_are_skipped(tmp_path: Path) -> None:
    environ = {"HINDSIGHT_DATA_DIR": "/from/env", "HINDSIGHT_ALLOW_ANONYMOUS": "false"}
    settings = Settings.from_env(environ, data_dir=tmp_path, allow_anonymous=None)
    assert settings.data_dir == tmp_path
    assert settings.allow_anonymous is False
    assert Settings.from_env(environ, data_dir=str(tmp_path)).data_dir == tmp_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("TRUE", True),
        (" yes ", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("No", False),
        ("off", False),
        ("", False),
    ],
)
def test_booleans(raw: str, expected: bool) -> None:
    settings = Settings.from_env(
        {
            "HINDSIGHT_ALLOW_ANONYMOUS": raw,
            "HINDSIGHT_CREATE_RESOURCES": raw,
            "HINDSIGHT_AUTO_APPROVE_HIGH_CONFIDENCE": raw,
        }
    )
    assert settings.allow_anonymous is expected
    assert settings.create_resources is expected
    assert settings.auto_approve_high_confidence is expected


@pytest.mark.parametrize(
    ("name", "raw", "fix"),
    [
        ("HINDSIGHT_CREATE_RESOURCES", "maybe", "true or false"),
        ("HINDSIGHT_ANN_THRESHOLD", "many", "a whole number"),
        ("HINDSIGHT_CANDIDATE_POOL", "0", "a whole number ≥ 1"),
        ("HINDSIGHT_DEDUP_WINDOW_SECONDS", "an hour", "a number"),
        ("HINDSIGHT_DEDUP_WINDOW_SECONDS", "-5", "a number ≥ 0"),
        ("HINDSIGHT_RETRIEVE_BUDGET_SECONDS", "0", "a number > 0"),
        ("HINDSIGHT_VECTOR_WEIGHT", "1.5", "a number between 0 and 1"),
        ("HINDSIGHT_CONFIDENCE_WEIGHTS", "{high: 1}", "a JSON object"),
        ("HINDSIGHT_CONFIDENCE_WEIGHTS", "[1, 2]", "a JSON object"),
        ("HINDSIGHT_CONFIDENCE_WEIGHTS", '{"certain": 1.0}', "a JSON object"),
        ("HINDSIGHT_CONFIDENCE_WEIGHTS", '{"low": -1}', "a JSON object"),
    ],
)
def test_invalid_values_name_the_variable_and_what_to_set(name: str, raw: str, fix: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({name: raw})
    message = caught.value.message
    assert f"{name} is invalid" in message
    assert f"set it to {fix}" in message


def test_every_invalid_variable_is_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({"HINDSIGHT_ANN_THRESHOLD": "x", "HINDSIGHT_SEMANTIC_BOOST": "y"})
    assert "HINDSIGHT_ANN_THRESHOLD" in caught.value.message
    assert "HINDSIGHT_SEMANTIC_BOOST" in caught.value.message


def test_settings_are_immutable() -> None:
    settings = Settings()
    with pytest.raises(ValueError):
        settings.backend = "aws"  # type: ignore[misc]


def test_confidence_weights_left_out_keep_their_defaults() -> None:
    settings = Settings.from_env({"HINDSIGHT_CONFIDENCE_WEIGHTS": '{"low": 0.3}'})
    assert settings.confidence_weights == {"high": 1.0, "medium": 0.85, "low": 0.3}


def test_an_unknown_setting_name_is_refused_in_code() -> None:
    with pytest.raises(ValueError, match="bogus"):
        Settings(bogus=1)  # type: ignore[call-arg]
