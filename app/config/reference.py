"""docs/reference/settings.md, made from the settings' declarations:
`python -m agentlasso.config.reference > docs/reference/settings.md`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import msgspec

from agentlasso.config.declaring import Declared, Group, declared, field_docs
from agentlasso.config.parsing import LIST, TRUE_WORDS
from agentlasso.config.settings import DECLARED

TITLE = "# Settings"
INTRODUCTION = (
    "<!-- Made by `python -m agentlasso.config.reference` from app/config/settings.py, where"
    " each setting is declared: edit it there. -->\n\n"
    "Every process reads its settings from the environment once, as it starts. A variable"
    " unset or empty keeps its default (but for a list, where empty is the empty list); a"
    " value that is not its setting's type, or outside its bounds, stops the process with a"
    " message naming the variable."
)
KINDS: dict[Any, str] = {
    bool: f"yes or no: {', '.join(f'`{word}`' for word in TRUE_WORDS[:-1])} or"
    f" `{TRUE_WORDS[-1]}` (in any case) is yes",
    int: "whole number",
    int | None: "whole number",
    float: "number",
    str: "text",
    str | None: "text",
    LIST: "comma-separated list",
}


def render() -> str:
    """The whole page, Markdown."""
    return "\n\n".join([TITLE, INTRODUCTION, *_sections()]) + "\n"


def _sections() -> Iterator[str]:
    """Each group's heading and line, then each of its settings, in declaration order."""
    groups: dict[Group, list[str]] = {}
    for struct in DECLARED:
        docs = field_docs(struct)
        for setting in declared(struct):
            entry = _entry(struct, setting, docs[setting.field])
            groups.setdefault(setting.env.group, []).append(entry)
    for group, entries in groups.items():
        yield f"## {group.title}\n\n{group.about}"
        yield from entries


def _entry(struct: type[msgspec.Struct], setting: Declared, doc: str) -> str:
    """One setting: its variable as the heading, its line, and what it takes."""
    if not doc:
        raise TypeError(f"{struct.__name__}.{setting.field} has no docstring under it")
    facts = [
        ("Type", setting.env.shape or _kind(setting)),
        ("Default", _default(setting)),
        ("Bounds", _bounds(setting)),
        ("Setting", f"`{struct.__name__}.{setting.field}`"),
    ]
    lines = "\n".join(f"- {name}: {value}" for name, value in facts)
    return f"### `{setting.variable}`\n\n{doc}\n\n{lines}"


def _kind(setting: Declared) -> str:
    if setting.choices:
        return "one word"
    return KINDS[setting.kind]


def _default(setting: Declared) -> str:
    """The value an unset variable gives, written as it would be set."""
    value = setting.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, int) and setting.variable.endswith("_BYTES"):
        return f"`{value}` ({_binary(value)})"
    if isinstance(value, tuple):
        return f"`{','.join(value)}`"
    if isinstance(value, dict):
        return f"`{msgspec.json.encode(value).decode()}`"
    return f"`{value}`"


def _binary(size: int) -> str:
    """A size in bytes as KiB or MiB, as the README writes it."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


def _bounds(setting: Declared) -> str:
    """What a value must be besides its type."""
    if setting.choices:
        return f"one of {', '.join(f'`{word}`' for word in setting.choices)}, in any case"
    bounds = [
        f"{words} {bound:g}"
        for words, bound in (("more than", setting.more_than), ("at most", setting.at_most))
        if bound is not None
    ]
    return ", ".join(bounds) or setting.env.rule or "none"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
