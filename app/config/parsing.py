"""A setting's text, as the environment gives it, read as its value; a value that is not one
is refused with a message naming the variable and saying what it must be."""

from __future__ import annotations

import urllib.parse
from typing import Any

import msgspec

from agentlasso.config.declaring import Declared

TRUE_WORDS = ("1", "true", "yes", "on")
LIST = tuple[str, ...]


class SettingRefused(ValueError):
    """A variable's value that cannot be its setting; the message says why, naming it."""


def is_given(setting: Declared, raw: str) -> bool:
    """Whether `raw` sets the setting: empty is unset, but for a list, where it is the empty
    list; a word from a list of choices may be padded with spaces."""
    if setting.choices:
        return bool(raw.strip())
    return bool(raw) or setting.kind == LIST


def parse(setting: Declared, raw: str) -> Any:
    """The value `raw` gives the setting, within its bounds; SettingRefused otherwise."""
    name, custom = setting.variable, setting.env.parse
    if custom is not None:
        return custom(name, raw, setting.default)
    if setting.choices:
        return _choice(name, raw, setting.choices)
    value = _typed(name, raw, setting.kind)
    if setting.more_than is not None and value <= setting.more_than:
        raise SettingRefused(f"{name} must be more than {setting.more_than}, got {raw!r}")
    if setting.at_most is not None and not value <= setting.at_most:
        raise SettingRefused(f"{name} must be at most {setting.at_most}, got {value}")
    return value


def _typed(name: str, raw: str, kind: Any) -> Any:
    """`raw` as the setting's type."""
    if kind is bool:
        return raw.strip().lower() in TRUE_WORDS
    if kind in (int, float, int | None):
        number = float if kind is float else int
        try:
            return number(raw)
        except ValueError:
            noun = "a whole number" if number is int else "a number"
            raise SettingRefused(f"{name} must be {noun}, got {raw!r}") from None
    if kind == LIST:
        return tuple(item.strip() for item in raw.split(",") if item.strip())
    return raw  # text, or text or None


def _choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    """The one of `choices` that `raw` names, in any case."""
    for choice in choices:
        if choice.lower() == raw.strip().lower():
            return choice
    raise SettingRefused(f"{name} must be one of {', '.join(choices)}, got {raw.strip()!r}")


def parse_url_setting(name: str, raw: str, _default: object = None) -> str:
    """The web app's address without a trailing slash; SettingRefused saying what is wrong."""
    url = urllib.parse.urlsplit(raw.strip())
    # A user name or password would be printed in every CI log that links a run: refused, and
    # not echoed back.
    if url.username is not None or url.password is not None:
        raise SettingRefused(f"{name} must not carry a user name or password.")
    if url.scheme not in ("http", "https") or not url.hostname or _bad_port(url):
        problem = "an http or https address"
    elif "?" in raw or "#" in raw:
        problem = "an address without a query or fragment"
    elif any(char.isspace() for char in raw.strip()):
        problem = "an address without spaces"
    else:
        return urllib.parse.urlunsplit(url._replace(path=url.path.rstrip("/")))
    raise SettingRefused(
        f"{name} must be {problem}, like https://lasso.example.com (optionally with a path "
        f"prefix: https://example.com/lasso), got {raw!r}"
    )


def _bad_port(url: urllib.parse.SplitResult) -> bool:
    try:
        url.port  # noqa: B018 (reading it validates it)
    except ValueError:
        return True
    return False


def parse_price_setting(
    name: str, raw: str, default: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """The built-in price table, with models from a JSON object {"model": [in, out]} on top."""
    try:
        extra = msgspec.json.decode(raw, type=dict[str, tuple[float, float]])
    except msgspec.DecodeError as exc:
        raise SettingRefused(f'{name} must be JSON like {{"model": [2.0, 10.0]}}: {exc}') from exc
    return {**default, **extra}
