"""An unknown command names the command most likely meant, and only a likely one."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hindsight.cli.app import app
from hindsight.cli.suggest import nearest_command

COMMANDS = ["serve", "mcp", "store", "import", "retrieve", "reflect", "list", "show", "forget"]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("recall", "retrieve"),
        ("search", "retrieve"),
        ("retreive", "retrieve"),
        ("ls", "list"),
        ("remember", "store"),
        ("stor", "store"),
        ("delete", "forget"),
    ],
)
def test_a_likely_command_is_named(typed: str, meant: str) -> None:
    assert nearest_command(typed, COMMANDS) == meant


@pytest.mark.parametrize("typed", ["xyzzy", "deploy", "回忆", "q"])
def test_an_unlikely_one_is_not(typed: str) -> None:
    assert nearest_command(typed, COMMANDS) is None


def test_the_cli_says_which_command_was_meant() -> None:
    result = CliRunner().invoke(app, ["recall", "test_user", "what can't I eat"])

    assert result.exit_code == 2
    assert "No such command 'recall'. Did you mean 'retrieve'?" in result.output


def test_a_real_command_is_untouched() -> None:
    result = CliRunner().invoke(app, ["retrieve", "--help"])

    assert result.exit_code == 0
    assert "No such command" not in result.output
