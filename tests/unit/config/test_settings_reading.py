"""What each kind of setting takes from its variable, as the declarations say."""

from __future__ import annotations

from typing import Any

import pytest

from agentlasso.config import (
    DEFAULT_JUDGE_PRICES,
    ClientSettings,
    LogSettings,
    SettingRefused,
    Settings,
    load_settings,
    read_settings,
)


@pytest.mark.parametrize(
    ("environ", "field", "taken"),
    [
        ({}, "database_url", "postgresql://postgres@127.0.0.1:5432/agentlasso"),
        ({"DATABASE_URL": ""}, "database_url", "postgresql://postgres@127.0.0.1:5432/agentlasso"),
        ({"AGENTLASSO_DB_POOL_MIN": ""}, "db_pool_min", 2),
        ({"AGENTLASSO_DB_POOL_MIN": "7"}, "db_pool_min", 7),
        ({"AGENTLASSO_METRICS_PORT": "9100"}, "metrics_port", 9100),
        ({"AGENTLASSO_GRADING_BUDGET_S": "2"}, "grading_budget_s", 2.0),
        ({"AGENTLASSO_SHOW_WORKER_HOSTS": " Yes "}, "show_worker_hosts", True),
        ({"AGENTLASSO_SHOW_WORKER_HOSTS": "no"}, "show_worker_hosts", False),
        ({"AGENTLASSO_JUDGE_FORCED_TOOL_MODELS": "a, b,"}, "judge_forced_tool_models", ("a", "b")),
        ({"AGENTLASSO_JUDGE_FORCED_TOOL_MODELS": ""}, "judge_forced_tool_models", ()),
        ({"AGENTLASSO_SECRET_KEY": "k"}, "secret_key", "k"),
        ({"AGENTLASSO_PUBLIC_URL": "https://lasso.example.com/"}, "public_url",
         "https://lasso.example.com"),
        ({"AGENTLASSO_CHUNK_STALE_S": "3"}, "chunk_stale_s", 3.0),
        ({"AGENTLASSO_JUDGE_PRICES": '{"m": [1, 2]}'}, "judge_prices",
         {**DEFAULT_JUDGE_PRICES, "m": (1.0, 2.0)}),
    ],
)  # fmt: skip
def test_a_variable_gives_its_setting(environ: dict[str, str], field: str, taken: Any) -> None:
    assert getattr(read_settings(Settings, environ), field) == taken


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("AGENTLASSO_DB_POOL_MIN", "many", "must be a whole number, got 'many'"),
        ("AGENTLASSO_JUDGE_WAIT_S", "soon", "must be a number, got 'soon'"),
        ("AGENTLASSO_TRACE_MAX_VALUE_DEPTH", "40", "must be at most 32, got 40"),
        ("AGENTLASSO_PUBLIC_URL", "ftp://x", "must be an http or https address"),
        ("AGENTLASSO_JUDGE_PRICES", "[]", 'must be JSON like {"model": [2.0, 10.0]}'),
    ],
)
def test_a_value_that_is_not_its_setting_stops_the_process_naming_it(
    name: str, value: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as refused:
        load_settings()
    assert str(refused.value).startswith(f"{name} {said}")


def test_a_log_setting_is_one_of_its_words_in_any_case() -> None:
    taken = read_settings(
        LogSettings, {"AGENTLASSO_LOG_FORMAT": " JSON ", "AGENTLASSO_LOG_LEVEL": ""}
    )
    assert (taken.log_format, taken.log_level) == ("json", "INFO")
    with pytest.raises(SettingRefused, match="AGENTLASSO_LOG_LEVEL must be one of DEBUG, INFO"):
        read_settings(LogSettings, {"AGENTLASSO_LOG_LEVEL": "loud"})


def test_the_ci_commands_read_the_platform_and_its_key() -> None:
    assert read_settings(ClientSettings, {}) == ClientSettings(url="http://127.0.0.1:8000")
    given = {"AGENTLASSO_URL": "https://lasso.example.com", "AGENTLASSO_API_KEY": "al_k"}
    assert read_settings(ClientSettings, given).api_key == "al_k"
