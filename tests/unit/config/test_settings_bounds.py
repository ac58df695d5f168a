"""A limit set to 0 or less would not limit (or would stop everything): refused at start-up,
naming the variable, rather than found out in production."""

from __future__ import annotations

import pytest

from agentlasso.config import ENVIRONMENT_VARIABLES, MUST_BE_POSITIVE, load_settings


@pytest.mark.parametrize("field", sorted(MUST_BE_POSITIVE))
@pytest.mark.parametrize("raw", ["0", "-1"])
def test_a_limit_of_zero_or_less_is_refused_naming_it(
    field: str, raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = ENVIRONMENT_VARIABLES[field]
    monkeypatch.setenv(name, raw)
    with pytest.raises(SystemExit) as refused:
        load_settings()
    assert str(refused.value) == f"{name} must be more than 0, got '{raw}'"


def test_a_project_share_above_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLASSO_PROJECT_SHARE", "1.5")
    with pytest.raises(SystemExit) as refused:
        load_settings()
    assert str(refused.value) == "AGENTLASSO_PROJECT_SHARE must be at most 1, got 1.5"


def test_positive_limits_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLASSO_QUOTA_GENERATIONS_PER_MIN", "3")
    monkeypatch.setenv("AGENTLASSO_PROJECT_SHARE", "1")
    settings = load_settings()
    assert settings.quota_generations_per_min == 3 and settings.project_share == 1.0
