"""The CLI reference page is the CLI's own help: a changed flag without a regenerated page fails."""

from __future__ import annotations

from tests.support import cli_docs


def test_the_cli_page_is_what_the_cli_prints() -> None:
    assert cli_docs.PAGE.read_text() == cli_docs.render(), (
        "docs/reference/cli.md is out of date: run `.venv/bin/python -m tests.support.cli_docs`"
    )


def test_every_command_has_a_section() -> None:
    commands = [" ".join(command) for command, _ in cli_docs.every_command()]
    assert {"dev", "api", "worker", "migrate", "keys create", "keys revoke", "ci", "run"} <= set(
        commands
    )
