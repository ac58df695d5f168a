"""The scopes reference page is the scope table itself: a changed rule without a regenerated
page fails."""

from __future__ import annotations

from agentlasso.http.permissions import RULES
from tests.support.scope_reference import PAGE, reference_page


def test_the_committed_scopes_page_is_the_generated_one() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference_page(), (
        "docs/reference/scopes.md is out of date: run "
        "`.venv/bin/python -m tests.support.scope_reference`"
    )


def test_the_page_lists_every_route_of_the_table() -> None:
    page = reference_page()
    assert all(f"| `{route}` |" in page for route in RULES)
