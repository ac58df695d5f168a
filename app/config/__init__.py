"""Configuration, read once from the environment. Every setting is declared once, in
agentlasso.config.settings, with its variable, type, default, bounds and a line of
documentation; docs/reference/settings.md is made from there."""

from agentlasso.config.parsing import SettingRefused
from agentlasso.config.reading import (
    ENVIRONMENT_VARIABLES,
    MUST_BE_POSITIVE,
    given_text,
    load_client_settings,
    load_settings,
    parse_public_url,
    read_setting,
    read_settings,
)
from agentlasso.config.settings import (
    DECLARED,
    DEFAULT_DATABASE_URL,
    DEFAULT_JUDGE_PRICES,
    DEFAULT_REDIS_URL,
    MAX_TRACE_VALUE_DEPTH,
    ClientSettings,
    LogFormat,
    LogLevel,
    LogSettings,
    Settings,
)

__all__ = [
    "DECLARED",
    "DEFAULT_DATABASE_URL",
    "DEFAULT_JUDGE_PRICES",
    "DEFAULT_REDIS_URL",
    "ENVIRONMENT_VARIABLES",
    "MAX_TRACE_VALUE_DEPTH",
    "MUST_BE_POSITIVE",
    "ClientSettings",
    "LogFormat",
    "LogLevel",
    "LogSettings",
    "SettingRefused",
    "Settings",
    "given_text",
    "load_client_settings",
    "load_settings",
    "parse_public_url",
    "read_setting",
    "read_settings",
]
