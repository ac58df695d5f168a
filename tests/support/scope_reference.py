"""docs/reference/scopes.md, written from the scope table (app/http/permissions.py), so the page
says what the server enforces.

    .venv/bin/python -m tests.support.scope_reference     # rewrites the page

tests/unit/test_scope_reference.py holds the committed page equal to `reference_page()`.
"""

from __future__ import annotations

from pathlib import Path

from agentlasso.domain.scopes import SCOPE_MEANINGS, Scope, includes
from agentlasso.http.permission_reasons import REASONS
from agentlasso.http.permissions import API_RULES, OPEN_PATHS, PAGE_RULES, Rule

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "scopes.md"

_INTRO = """\
# API key scopes and user roles

<!-- Generated from app/http/permissions.py by `python -m tests.support.scope_reference`:
     edit the table there, not this page. -->

Every API key has a scope, chosen when it is made (`agentlasso keys create --project NAME
--scope ci`, or Settings, `API keys`) and shown in Settings' list of keys. Keys made before
scopes existed are `admin`, so they do what they always did. `agentlasso keys create` makes
an `admin` key unless `--scope` says otherwise: the operator's first key sets the project up
(agents, datasets), as keys always did. Settings' form offers `ci` first, the key most often
made there (for a CI secret), and the narrowest that runs the gate.

| Scope | May do | Includes |
|---|---|---|
"""

_RULE = """
A key used beyond its scope gets a **403** `application/problem+json` whose `detail` names the
scope needed, such as `This key's scope is "ci"; creating an agent needs "admin".` The scope is
checked before the object is looked up, so the refusal is the same whether or not the object
exists (another project's objects are still a 404 to a key that may ask for them). A missing,
unknown or revoked key is a 401, as before.

Why the table is as it is:

{reasons}
## The web app

Signing in with a key gives the session that key's scope (the one-time link `agentlasso dev`
prints signs in as `admin`). A `read` session sees every page; a form beyond its scope answers
a 403 page with the same sentence, and nothing changes. A `ci` session may also start, cancel
and re-run runs and send the agent a test message. An `ingest` key cannot sign in: every page
reads, and it reads nothing. The header says `Key scope: ...` for any session but `admin`.

A person signed in as a user (a password, or a link they were given) is held to their role
instead, by the table's `Role needed` column: their organisation's role, or the role set for
them in the project when there is one. A page or form above it answers a 403 page naming the
role needed, such as `Your role is "viewer"; creating a dataset needs the role "member" or
above.` (an htmx request gets the same page, shown in place of the page's content).

Settings -> Members is for people: its routes say "none: a person" for the scope, and a session
opened with a key of any scope, or with a project's sign-in link, gets a 403 page saying a
person must sign in. Inviting, changing a member's organisation role and removing a member
need the role `admin` in the organisation itself, not only in the project.
"""


def reference_page() -> str:
    """The whole page: the scopes, why, then every route of the API and of the pages."""
    scopes = "".join(
        f"| `{scope}` | {SCOPE_MEANINGS[scope]} | {_included(scope)} |\n" for scope in Scope
    )
    open_paths = ", ".join(f"`{path}`" for path in OPEN_PATHS)
    return (
        _INTRO
        + scopes
        + _RULE.format(reasons=REASONS)
        + "\n## Every API route\n\n"
        + _table(API_RULES)
        + "\n## Every page and form\n\n"
        + _table(PAGE_RULES)
        + f"\nOpen to everyone, with no key: {open_paths} (and what is beneath them).\n"
    )


def _included(scope: Scope) -> str:
    others = [f"`{other}`" for other in Scope if other != scope and includes(scope, other)]
    return ", ".join(others) or "nothing else"


def _table(rules: dict[str, Rule]) -> str:
    rows = "".join(
        f"| `{route}` | {rule.action} | {_scope_needed(rule)} | `{rule.role}` |\n"
        for route, rule in sorted(rules.items(), key=lambda item: _by_path(item[0]))
    )
    header = "| Route | What it does | Scope needed | Role needed |\n|---|---|---|---|\n"
    return header + rows


def _scope_needed(rule: Rule) -> str:
    return "none: a person" if rule.people_only else f"`{rule.scope}`"


def _by_path(route: str) -> tuple[str, str]:
    method, _, path = route.partition(" ")
    return (path, method)


if __name__ == "__main__":
    PAGE.write_text(reference_page(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(PAGE.parents[2])}")
