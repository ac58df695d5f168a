"""Settings read from the environment, once, at start-up; a value refused stops the process
with a message naming its variable."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from agentlasso.config.declaring import NO_DEFAULT, Declared, declared
from agentlasso.config.parsing import SettingRefused, is_given, parse, parse_url_setting
from agentlasso.config.settings import ClientSettings, Settings

S = TypeVar("S", bound=msgspec.Struct)


def read_settings(struct: type[S], environ: Mapping[str, str]) -> S:
    """`struct` from `environ`: each setting not set (or empty) keeps its default;
    SettingRefused for a value that cannot be its setting."""
    values: dict[str, Any] = {}
    for setting in declared(struct):
        if (raw := _given(setting, environ)) is not None:
            values[setting.field] = parse(setting, raw)
        elif setting.env.default is not NO_DEFAULT:
            values[setting.field] = setting.env.default
    return struct(**values)


def read_setting(struct: type[msgspec.Struct], field: str, environ: Mapping[str, str]) -> Any:
    """One setting of `struct` from `environ`, or its default; SettingRefused as above."""
    setting = _setting(struct, field)
    raw = _given(setting, environ)
    return setting.default if raw is None else parse(setting, raw)


def given_text(struct: type[msgspec.Struct], field: str) -> str | None:
    """The text of the variable that gives `field`, or None when it is unset or empty."""
    return os.environ.get(_setting(struct, field).variable) or None


def _setting(struct: type[msgspec.Struct], field: str) -> Declared:
    (setting,) = [setting for setting in declared(struct) if setting.field == field]
    return setting


def _given(setting: Declared, environ: Mapping[str, str]) -> str | None:
    """The variable's text when it sets the setting; None when it is unset (or empty)."""
    raw = environ.get(setting.variable)
    return raw if raw is not None and is_given(setting, raw) else None


def load_settings() -> Settings:
    """The API's and the worker's settings; SystemExit saying which value is refused, and why."""
    try:
        return read_settings(Settings, os.environ)
    except SettingRefused as refused:
        raise SystemExit(str(refused)) from None


def load_client_settings() -> ClientSettings:
    """What the CI commands read from the environment (text only: nothing is refused)."""
    return read_settings(ClientSettings, os.environ)


def parse_public_url(name: str, raw: str) -> str:
    """AGENTLASSO_PUBLIC_URL's address without a trailing slash; SystemExit saying what is
    wrong with it."""
    try:
        return parse_url_setting(name, raw)
    except SettingRefused as refused:
        raise SystemExit(str(refused)) from None


# Each setting of the API and the worker, by field: its variable; and those that must be more
# than 0.
ENVIRONMENT_VARIABLES = {setting.field: setting.variable for setting in declared(Settings)}
MUST_BE_POSITIVE = frozenset(
    setting.field for setting in declared(Settings) if setting.more_than == 0
)
