"""The one rule of who may do what: every route of the API and the pages, the scope a key needs
and the role a signed-in user needs.

A route is its method and its path template, as the router matches it (`scope["path_template"]`).
The API key guard and the page guard both look here; no handler checks a scope or a role of its
own, and tests/integration/test_route_scopes.py fails for a route this table does not name. A
session opened with a key is held to the key's scope; a user's session to the user's role.

Why each row says what it says is REASONS (app/http/permission_reasons.py); docs/reference/scopes.md
shows both.
"""

from __future__ import annotations

from typing import Final

import msgspec

from agentlasso.domain.accounts import Role, role_includes
from agentlasso.domain.scopes import Scope, includes
from agentlasso.errors import BeyondRole, BeyondScope

ADMIN, CI, INGEST, READ = Scope.ADMIN, Scope.CI, Scope.INGEST, Scope.READ


class Rule(msgspec.Struct, frozen=True):
    """The scope a key needs for a route, the role a user needs, what the route does, as a
    refusal names it, and whether only a person (a user's session) may use it."""

    scope: Scope
    role: Role
    action: str
    people_only: bool = False


def _rules(
    rows: dict[str, tuple[Scope, Role, str]], people_only: frozenset[str] = frozenset()
) -> dict[str, Rule]:
    return {
        route: Rule(scope, role, action, route in people_only)
        for route, (scope, role, action) in rows.items()
    }


# Who belongs to the organisation is for its people to say, never a key of one of its projects.
PEOPLE_ONLY_ROUTES: Final = frozenset(
    {
        "GET /settings/members",
        "POST /settings/members/invite",
        "POST /settings/members/{user_id}/role",
        "POST /settings/members/{user_id}/remove",
        "POST /settings/members/{user_id}/project-role",
    }
)
PEOPLE_ONLY: Final = (
    "Settings -> Members is for people: sign in with your own email to see or change the "
    "organisation's members. A session opened with an API key or a project's sign-in link "
    "cannot."
)


API_RULES: Final = _rules(
    {
        "GET /api/v1/agents": (READ, "viewer", "listing agents"),
        "POST /api/v1/agents": (ADMIN, "admin", "creating an agent"),
        "GET /api/v1/agents/{agent_id}": (READ, "viewer", "reading an agent"),
        "PATCH /api/v1/agents/{agent_id}": (ADMIN, "admin", "changing an agent"),
        "DELETE /api/v1/agents/{agent_id}": (ADMIN, "admin", "deleting an agent"),
        "POST /api/v1/agents/{agent_id}/invoke": (CI, "member", "calling an agent"),
        "GET /api/v1/datasets": (READ, "viewer", "listing datasets"),
        "POST /api/v1/datasets": (ADMIN, "member", "creating a dataset"),
        "GET /api/v1/datasets/{dataset_id}": (READ, "viewer", "reading a dataset"),
        "PATCH /api/v1/datasets/{dataset_id}": (ADMIN, "member", "changing a dataset"),
        "DELETE /api/v1/datasets/{dataset_id}": (ADMIN, "member", "deleting a dataset"),
        "GET /api/v1/datasets/{dataset_id}/versions": (
            READ,
            "viewer",
            "listing a dataset's versions",
        ),
        "POST /api/v1/datasets/{dataset_id}/versions": (
            ADMIN,
            "member",
            "freezing a dataset version",
        ),
        "GET /api/v1/datasets/{dataset_id}/test-cases": (READ, "viewer", "listing test cases"),
        "POST /api/v1/datasets/{dataset_id}/test-cases": (ADMIN, "member", "creating a test case"),
        "GET /api/v1/datasets/{dataset_id}/test-cases/export": (
            READ,
            "viewer",
            "exporting test cases",
        ),
        "POST /api/v1/datasets/{dataset_id}/test-cases/import": (
            ADMIN,
            "member",
            "importing test cases",
        ),
        "GET /api/v1/datasets/{dataset_id}/flaky": (READ, "viewer", "listing flaky cases"),
        "GET /api/v1/datasets/{dataset_id}/drafts": (READ, "viewer", "listing generated drafts"),
        "POST /api/v1/datasets/{dataset_id}/generate": (ADMIN, "member", "generating test cases"),
        "POST /api/v1/datasets/{dataset_id}/drafts/{draft_id}/accept": (
            ADMIN,
            "member",
            "accepting a draft",
        ),
        "POST /api/v1/datasets/{dataset_id}/drafts/{draft_id}/reject": (
            ADMIN,
            "member",
            "rejecting a draft",
        ),
        "POST /api/v1/datasets/{dataset_id}/drafts/{draft_id}/regenerate": (
            ADMIN,
            "member",
            "regenerating a draft",
        ),
        "GET /api/v1/test-cases/{test_case_id}": (READ, "viewer", "reading a test case"),
        "PATCH /api/v1/test-cases/{test_case_id}": (ADMIN, "member", "changing a test case"),
        "DELETE /api/v1/test-cases/{test_case_id}": (ADMIN, "member", "deleting a test case"),
        "POST /api/v1/test-cases/{test_case_id}/preview": (CI, "member", "previewing a test case"),
        "POST /api/v1/grading/preview": (CI, "member", "previewing checks"),
        "GET /api/v1/eval-runs": (READ, "viewer", "listing runs"),
        "POST /api/v1/eval-runs": (CI, "member", "starting a run"),
        "GET /api/v1/eval-runs/{run_id}": (READ, "viewer", "reading a run"),
        "GET /api/v1/eval-runs/{run_id}/events": (READ, "viewer", "following a run"),
        "GET /api/v1/eval-runs/{run_id}/results": (READ, "viewer", "reading a run's results"),
        "GET /api/v1/eval-runs/{run_id}/compare": (READ, "viewer", "comparing runs"),
        "POST /api/v1/eval-runs/{run_id}/cancel": (CI, "member", "cancelling a run"),
        "POST /api/v1/eval-runs/{run_id}/next-user-turn": (
            CI,
            "member",
            "asking for a user's next turn",
        ),
        "POST /api/v1/eval-run-results": (CI, "member", "posting a run's results"),
        "GET /api/v1/judge-settings": (READ, "viewer", "reading the judge settings"),
        "PATCH /api/v1/judge-settings": (ADMIN, "admin", "changing the judge settings"),
        "GET /api/v1/traces": (READ, "viewer", "listing traces"),
        "GET /api/v1/traces/{trace_id}": (READ, "viewer", "reading a trace"),
        "GET /api/v1/traces/conversations/{conversation_id}": (
            READ,
            "viewer",
            "reading a conversation",
        ),
        "POST /api/v1/traces/{trace_id}/test-case": (
            ADMIN,
            "member",
            "making a test case of a trace",
        ),
        "POST /api/v1/traces/conversations/{conversation_id}/test-case": (
            ADMIN,
            "member",
            "making a test case of a conversation",
        ),
        "GET /api/v1/trace-settings": (READ, "viewer", "reading the trace settings"),
        "PUT /api/v1/trace-settings": (ADMIN, "admin", "changing trace retention"),
        "GET /api/v1/workers": (READ, "viewer", "listing workers"),
        "GET /api/v1/audit-log": (ADMIN, "admin", "reading the audit log"),
        "POST /api/v1/review-items": (ADMIN, "member", "queueing items for review"),
        "GET /api/v1/review-items": (READ, "viewer", "listing the review queue"),
        "GET /api/v1/review-items/{item_id}": (READ, "viewer", "reading a review item"),
        "POST /api/v1/review-items/{item_id}/labels": (ADMIN, "member", "labelling a review item"),
        "POST /api/v1/review-items/{item_id}/test-case": (
            ADMIN,
            "member",
            "making a test case of a reviewed trace",
        ),
        "POST /api/v1/test-cases/{test_case_id}/checks/{check_id}/examples": (
            ADMIN,
            "member",
            "calibrating an AI-judge criterion",
        ),
        "GET /api/v1/datasets/{dataset_id}/judge-agreement": (
            READ,
            "viewer",
            "reading the judge's agreement",
        ),
        "GET /api/v1/trace-rules": (READ, "viewer", "listing trace rules"),
        "POST /api/v1/trace-rules": (ADMIN, "admin", "creating a trace rule"),
        "GET /api/v1/trace-rules/{rule_id}": (READ, "viewer", "reading a trace rule"),
        "DELETE /api/v1/trace-rules/{rule_id}": (ADMIN, "admin", "deleting a trace rule"),
        "GET /api/v1/alerts": (READ, "viewer", "listing alerts"),
        "POST /api/v1/alerts": (ADMIN, "admin", "creating an alert"),
        "GET /api/v1/alerts/{alert_id}": (READ, "viewer", "reading an alert"),
        "DELETE /api/v1/alerts/{alert_id}": (ADMIN, "admin", "deleting an alert"),
        "POST /api/v1/alerts/{alert_id}/test": (ADMIN, "admin", "sending an alert's test post"),
        "POST /v1/traces": (INGEST, "admin", "sending traces"),
        "POST /api/v1/traces/otlp": (INGEST, "admin", "sending traces"),
    }
)

# The pages follow the API: a page that reads needs `read`, a form needs what its API call does.
PAGE_RULES: Final = _rules(
    {
        "GET /": (READ, "viewer", "opening the app"),
        "POST /logout": (READ, "viewer", "signing out"),
        "POST /ui/check-json": (READ, "viewer", "checking JSON as you type"),
        "POST /ui/check-regex": (READ, "viewer", "checking a pattern as you type"),
        "GET /datasets": (READ, "viewer", "listing datasets"),
        "POST /datasets": (ADMIN, "member", "creating a dataset"),
        "GET /datasets/new": (READ, "viewer", "opening the new dataset form"),
        "GET /datasets/{dataset_id}": (READ, "viewer", "reading a dataset"),
        "POST /datasets/{dataset_id}": (ADMIN, "member", "changing a dataset"),
        "GET /datasets/{dataset_id}/delete": (READ, "viewer", "opening the delete form"),
        "POST /datasets/{dataset_id}/delete": (ADMIN, "member", "deleting a dataset"),
        "GET /datasets/{dataset_id}/export": (READ, "viewer", "exporting test cases"),
        "GET /datasets/{dataset_id}/import": (READ, "viewer", "opening the import form"),
        "POST /datasets/{dataset_id}/import": (ADMIN, "member", "importing test cases"),
        "POST /datasets/{dataset_id}/versions": (ADMIN, "member", "freezing a dataset version"),
        "GET /datasets/{dataset_id}/flaky": (READ, "viewer", "listing flaky cases"),
        "GET /datasets/{dataset_id}/cases/new": (READ, "viewer", "opening the new case form"),
        "POST /datasets/{dataset_id}/cases/new": (ADMIN, "member", "creating a test case"),
        "GET /datasets/{dataset_id}/run": (READ, "viewer", "opening the run form"),
        "POST /datasets/{dataset_id}/run": (CI, "member", "starting a run"),
        "GET /datasets/{dataset_id}/generate": (READ, "viewer", "opening the generate form"),
        "POST /datasets/{dataset_id}/generate": (ADMIN, "member", "generating test cases"),
        "GET /datasets/{dataset_id}/drafts": (READ, "viewer", "listing generated drafts"),
        "GET /datasets/{dataset_id}/drafts/{draft_id}/edit": (READ, "viewer", "opening a draft"),
        "POST /datasets/{dataset_id}/drafts/{draft_id}/edit": (ADMIN, "member", "editing a draft"),
        "POST /datasets/{dataset_id}/drafts/{draft_id}/{action}": (
            ADMIN,
            "member",
            "reviewing a draft",
        ),
        "GET /cases/{case_id}": (READ, "viewer", "reading a test case"),
        "POST /cases/{case_id}": (ADMIN, "member", "changing a test case"),
        "POST /cases/{case_id}/delete": (ADMIN, "member", "deleting a test case"),
        "GET /cases/{case_id}/history": (READ, "viewer", "reading a test case's history"),
        "GET /runs": (READ, "viewer", "listing runs"),
        "GET /runs/{run_id}": (READ, "viewer", "reading a run"),
        "GET /runs/{run_id}/live": (READ, "viewer", "following a run"),
        "GET /runs/{run_id}/compare": (READ, "viewer", "comparing runs"),
        "GET /runs/{run_id}/cases/{test_case_id}": (READ, "viewer", "reading a case's result"),
        "POST /runs/{run_id}/cancel": (CI, "member", "cancelling a run"),
        "POST /runs/{run_id}/rerun": (CI, "member", "starting a run"),
        "GET /traces": (READ, "viewer", "listing traces"),
        "GET /trace-rules": (READ, "viewer", "listing trace rules and alerts"),
        "GET /trace-rules/{rule_id}": (READ, "viewer", "reading a trace rule"),
        "GET /alerts/{alert_id}": (READ, "viewer", "reading an alert"),
        "POST /alerts/{alert_id}/test": (ADMIN, "admin", "sending an alert's test post"),
        "GET /traces/{trace_id}": (READ, "viewer", "reading a trace"),
        "GET /traces/conversations/{conversation_id}": (READ, "viewer", "reading a conversation"),
        "GET /traces/add": (READ, "viewer", "opening the add-to-dataset form"),
        "POST /traces/add": (ADMIN, "member", "making test cases of traces"),
        "POST /traces/{trace_id}/add-conversation": (
            ADMIN,
            "member",
            "making a test case of a trace",
        ),
        "POST /traces/conversations/{conversation_id}/add": (
            ADMIN,
            "member",
            "making a test case of a conversation",
        ),
        "GET /review": (READ, "viewer", "reading the review queue"),
        "POST /review/queue": (ADMIN, "member", "queueing items for review"),
        "GET /review/{item_id}": (READ, "viewer", "reading a review item"),
        "POST /review/{item_id}/labels": (ADMIN, "member", "labelling a review item"),
        "GET /datasets/{dataset_id}/judge-agreement": (
            READ,
            "viewer",
            "reading the judge's agreement",
        ),
        "POST /datasets/{dataset_id}/judge-agreement/examples": (
            ADMIN,
            "member",
            "calibrating an AI-judge criterion",
        ),
        "GET /settings": (READ, "viewer", "reading the settings"),
        "POST /settings/keys": (ADMIN, "admin", "creating an API key"),
        "POST /settings/keys/{key_id}/revoke": (ADMIN, "admin", "revoking an API key"),
        "POST /settings/agent": (ADMIN, "admin", "saving the agent"),
        "POST /settings/agent/default": (ADMIN, "admin", "choosing the default agent"),
        "POST /settings/agent/test": (CI, "member", "calling the agent"),
        "POST /settings/judge": (ADMIN, "admin", "changing the judge settings"),
        "POST /settings/judge/test": (ADMIN, "admin", "testing the judge key"),
        "POST /settings/traces": (ADMIN, "admin", "changing trace retention"),
        "GET /settings/audit-log": (ADMIN, "admin", "reading the audit log"),
        "GET /settings/members": (ADMIN, "admin", "listing the members"),
        "POST /settings/members/invite": (ADMIN, "admin", "inviting a member"),
        "POST /settings/members/{user_id}/role": (ADMIN, "admin", "changing a member's role"),
        "POST /settings/members/{user_id}/remove": (ADMIN, "admin", "removing a member"),
        "POST /settings/members/{user_id}/project-role": (
            ADMIN,
            "admin",
            "setting a member's role in this project",
        ),
    },
    PEOPLE_ONLY_ROUTES,
)

RULES: Final = {**API_RULES, **PAGE_RULES}
# Open to everyone, with no key or session: probes, metrics, signing in (/login/sso and its
# /login/sso/callback among it: single sign-on), setting a password with
# a one-time link, static files, and the API's own description (each path here and every path
# beneath it).
OPEN_PATHS: Final = (
    "/health",
    "/ready",
    "/metrics",
    "/login",
    "/set-password",
    "/static",
    "/schema",
)
# Whoever is signed in may ask which methods a path takes.
ANY_SCOPE_METHODS: Final = frozenset({"OPTIONS"})
# A route missing from the table (a test fails for it first) is refused to all but an admin key
# and an owner.
UNLISTED: Final = Rule(ADMIN, "owner", "this request")


def route_key(method: str, path_template: str) -> str:
    """How the table names a route: `POST /api/v1/agents`."""
    return f"{method.upper()} {path_template}"


def is_open(path_template: str) -> bool:
    """Whether a path is one of OPEN_PATHS, or beneath one."""
    return any(path_template == p or path_template.startswith(p + "/") for p in OPEN_PATHS)


def rule_for(method: str, path_template: str) -> Rule | None:
    """The route's rule; None for a method any scope may use."""
    if method.upper() in ANY_SCOPE_METHODS:
        return None
    return RULES.get(route_key(method, path_template), UNLISTED)


def refusal(held: Scope, rule: Rule) -> str:
    """The sentence a refused request reads."""
    return f'This key\'s scope is "{held.value}"; {rule.action} needs "{rule.scope.value}".'


def require_scope(held: Scope, method: str, path_template: str) -> None:
    """Nothing when a key of scope `held` may make this request; BeyondScope otherwise."""
    rule = rule_for(method, path_template)
    if rule is not None and not includes(held, rule.scope):
        raise BeyondScope(refusal(held, rule))


def role_refusal(held: Role, rule: Rule) -> str:
    """The sentence a user refused for their role reads."""
    return f'Your role is "{held}"; {rule.action} needs the role "{rule.role}" or above.'


def require_role(held: Role, method: str, path_template: str) -> None:
    """Nothing when a user of role `held` may make this request; BeyondRole otherwise."""
    rule = rule_for(method, path_template)
    if rule is not None and not role_includes(held, rule.role):
        raise BeyondRole(role_refusal(held, rule))


def require_person(method: str, path_template: str) -> None:
    """Nothing when a session that is no person's (a key's, a link's) may make this request;
    BeyondRole otherwise."""
    rule = rule_for(method, path_template)
    if rule is not None and rule.people_only:
        raise BeyondRole(PEOPLE_ONLY)


def beyond_scope(method: str, path_template: str) -> str:
    """What a 403 from this route means, as the API's description says it."""
    rule = rule_for(method, path_template) or UNLISTED
    wider = sorted(scope.value for scope in Scope if includes(scope, rule.scope))
    keys = " or ".join(f"`{scope}`" for scope in wider).replace("` or `", "`, `", len(wider) - 2)
    return f"The key's scope does not allow this: {rule.action} needs a key of scope {keys}."
