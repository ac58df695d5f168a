"""Every setting an operator can give is in the documentation (the README and docs/), so none is
found only by reading code."""

from __future__ import annotations

import re

from agentlasso.config import ENVIRONMENT_VARIABLES

from tests.support.processes import ROOT


def documented_variables(readme: str) -> set[str]:
    """Names in backticks; on a line, `_MAX` after `AGENTLASSO_JUDGE_TIMEOUT_S` stands for
    each `AGENTLASSO_JUDGE..._MAX` the full name's prefixes make."""
    found: set[str] = set()
    for line in readme.splitlines():
        names = re.findall(r"`(_?[A-Z][A-Z0-9_]+)[`=]", line)
        full = [name for name in names if not name.startswith("_")]
        found.update(full)
        for suffix in (name for name in names if name.startswith("_")):
            for name in full:
                parts = name.split("_")
                found.update("_".join(parts[:cut]) + suffix for cut in range(1, len(parts) + 1))
    return found


def documentation() -> str:
    """The README and every page of docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(page.read_text() for page in pages)


def test_every_environment_variable_is_documented() -> None:
    documented = documented_variables(documentation())
    assert sorted(set(ENVIRONMENT_VARIABLES.values()) - documented) == []
