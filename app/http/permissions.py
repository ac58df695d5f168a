"""The one rule of who may do what: every route of the API and the pages, and the scope it needs.

A route is its method and its path template, as the router matches it (`scope["path_template"]`).
The API key guard and the page guard both look here; no handler checks a scope of its own, and
tests/integration/test_route_scopes.py fails for a route this table does not name.

Why each row says what it says is REASONS, below; docs/reference/scopes.md shows both.
"""

from __future__ import annotations

from typing import Final

import msgspec

from agentlasso.domain.scopes import Scope, includes
from agentlasso.errors import BeyondScope

ADMIN, CI, INGEST, READ = Scope.ADMIN, Scope.CI, Scope.INGEST, Scope.READ


REASONS: Final = """\
- Every GET needs `read`; `ci` and `admin` include it.
- Runs need `ci`: starting one (CI mode or server mode, so `agentlasso ci` and `agentlasso
  run` work with a `ci` key), cancelling it, posting its results, a simulated user's next
  turn; so do the calls that only try the agent or the checks (invoke, preview), since a `ci`
  key already starts runs that call the agent and the judge.
- Writing datasets and test cases needs `admin`. A `ci` key lives in a CI system that builds
  pull requests, and a pull request must not be able to rewrite the golden cases its own gate
  is graded against; there is no narrower writer's scope to give.
- Agents (their URLs and secret headers), API keys, the judge key, trace retention and
  deleting need `admin`. OpenTelemetry trace export needs `ingest`: give your exporter an
  `ingest` key, which can read nothing back.
- `OPTIONS` answers any live key or session: it tells only which methods a path takes.
"""


class Rule(msgspec.Struct, frozen=True):
    """The scope a route needs, and what the route does, as a refusal names it."""

    scope: Scope
    action: str


def _rules(rows: dict[str, tuple[Scope, str]]) -> dict[str, Rule]:
    return {route: Rule(scope, action) for route, (scope, action) in rows.items()}


API_RULES: Final = _rules(
    {
        "GET /api/v1/agents": (READ, "listing agents"),
        "POST /api/v1/agents": (ADMIN, "creating an agent"),
        "GET /api/v1/agents/{agent_id}": (READ, "reading an agent"),
        "PATCH /api/v1/agents/{agent_id}": (ADMIN, "changing an agent"),
        "DELETE /api/v1/agents/{agent_id}": (ADMIN, "deleting an agent"),
        "POST /api/v1/agents/{agent_id}/invoke": (CI, "calling an agent"),
        "GET /api/v1/datasets": (READ, "listing datasets"),
        "POST /api/v1/datasets": (ADMIN, "creating a dataset"),
        "GET /api/v1/datasets/{dataset_id}": (READ, "reading a dataset"),
        "PATCH /api/v1/datasets/{dataset_id}": (ADMIN, "changing a dataset"),
        "DELETE /api/v1/datasets/{dataset_id}": (ADMIN, "deleting a dataset"),
        "GET /api/v1/datasets/{dataset_id}/versions": (READ, "listing a dataset's versions"),
        "POST /api/v1/datasets/{dataset_id}/versions": (ADMIN, "freezing a dataset version"),
        "GET /api/v1/datasets/{dataset_id}/test-cases": (READ, "listing test cases"),
        "POST /api/v1/datasets/{dataset_id}/test-cases": (ADMIN, "creating a test case"),
        "GET /api/v1/datasets/{dataset_id}/test-cases/export": (READ, "exporting test cases"),
        "POST /api/v1/datasets/{dataset_id}/test-cases/import": (ADMIN, "importing test cases"),
        "GET /api/v1/datasets/{dataset_id}/flaky": (READ, "listing flaky cases"),
        "GET /api/v1/datasets/{dataset_id}/drafts": (READ, "listing generated drafts"),
        "POST /api/v1/datasets/{dataset_id}/generate": (ADMIN, "generating test cases"),
        "POST /api/v1/datasets/{dataset_id}/drafts/{draft_id}/accept": (
            ADMIN,
            "accepting a draft",
        ),
        "POST /api/v1/datasets/{dataset_id}/drafts/{draft_id}/reject": (
            ADMIN,
            "rejecting a draft",
        ),
        "POST /api/v1/datasets/{dataset_id}/drafts/{draft_id}/regenerate": (
            ADMIN,
            "regenerating a draft",
        ),
        "GET /api/v1/test-cases/{test_case_id}": (READ, "reading a test case"),
        "PATCH /api/v1/test-cases/{test_case_id}": (ADMIN, "changing a test case"),
        "DELETE /api/v1/test-cases/{test_case_id}": (ADMIN, "deleting a test case"),
        "POST /api/v1/test-cases/{test_case_id}/preview": (CI, "previewing a test case"),
        "POST /api/v1/grading/preview": (CI, "previewing checks"),
        "GET /api/v1/eval-runs": (READ, "listing runs"),
        "POST /api/v1/eval-runs": (CI, "starting a run"),
        "GET /api/v1/eval-runs/{run_id}": (READ, "reading a run"),
        "GET /api/v1/eval-runs/{run_id}/events": (READ, "following a run"),
        "GET /api/v1/eval-runs/{run_id}/results": (READ, "reading a run's results"),
        "GET /api/v1/eval-runs/{run_id}/compare": (READ, "comparing runs"),
        "POST /api/v1/eval-runs/{run_id}/cancel": (CI, "cancelling a run"),
        "POST /api/v1/eval-runs/{run_id}/next-user-turn": (CI, "asking for a user's next turn"),
        "POST /api/v1/eval-run-results": (CI, "posting a run's results"),
        "GET /api/v1/judge-settings": (READ, "reading the judge settings"),
        "PATCH /api/v1/judge-settings": (ADMIN, "changing the judge settings"),
        "GET /api/v1/traces": (READ, "listing traces"),
        "GET /api/v1/traces/{trace_id}": (READ, "reading a trace"),
        "GET /api/v1/traces/conversations/{conversation_id}": (READ, "reading a conversation"),
        "POST /api/v1/traces/{trace_id}/test-case": (ADMIN, "making a test case of a trace"),
        "POST /api/v1/traces/conversations/{conversation_id}/test-case": (
            ADMIN,
            "making a test case of a conversation",
        ),
        "GET /api/v1/trace-settings": (READ, "reading the trace settings"),
        "PUT /api/v1/trace-settings": (ADMIN, "changing trace retention"),
        "GET /api/v1/workers": (READ, "listing workers"),
        "GET /api/v1/audit-log": (ADMIN, "reading the audit log"),
        "POST /v1/traces": (INGEST, "sending traces"),
        "POST /api/v1/traces/otlp": (INGEST, "sending traces"),
    }
)

# The pages follow the API: a page that reads needs `read`, a form needs what its API call does.
PAGE_RULES: Final = _rules(
    {
        "GET /": (READ, "opening the app"),
        "POST /logout": (READ, "signing out"),
        "POST /ui/check-json": (READ, "checking JSON as you type"),
        "POST /ui/check-regex": (READ, "checking a pattern as you type"),
        "GET /datasets": (READ, "listing datasets"),
        "POST /datasets": (ADMIN, "creating a dataset"),
        "GET /datasets/new": (READ, "opening the new dataset form"),
        "GET /datasets/{dataset_id}": (READ, "reading a dataset"),
        "POST /datasets/{dataset_id}": (ADMIN, "changing a dataset"),
        "GET /datasets/{dataset_id}/delete": (READ, "opening the delete form"),
        "POST /datasets/{dataset_id}/delete": (ADMIN, "deleting a dataset"),
        "GET /datasets/{dataset_id}/export": (READ, "exporting test cases"),
        "GET /datasets/{dataset_id}/import": (READ, "opening the import form"),
        "POST /datasets/{dataset_id}/import": (ADMIN, "importing test cases"),
        "POST /datasets/{dataset_id}/versions": (ADMIN, "freezing a dataset version"),
        "GET /datasets/{dataset_id}/flaky": (READ, "listing flaky cases"),
        "GET /datasets/{dataset_id}/cases/new": (READ, "opening the new case form"),
        "POST /datasets/{dataset_id}/cases/new": (ADMIN, "creating a test case"),
        "GET /datasets/{dataset_id}/run": (READ, "opening the run form"),
        "POST /datasets/{dataset_id}/run": (CI, "starting a run"),
        "GET /datasets/{dataset_id}/generate": (READ, "opening the generate form"),
        "POST /datasets/{dataset_id}/generate": (ADMIN, "generating test cases"),
        "GET /datasets/{dataset_id}/drafts": (READ, "listing generated drafts"),
        "GET /datasets/{dataset_id}/drafts/{draft_id}/edit": (READ, "opening a draft"),
        "POST /datasets/{dataset_id}/drafts/{draft_id}/edit": (ADMIN, "editing a draft"),
        "POST /datasets/{dataset_id}/drafts/{draft_id}/{action}": (ADMIN, "reviewing a draft"),
        "GET /cases/{case_id}": (READ, "reading a test case"),
        "POST /cases/{case_id}": (ADMIN, "changing a test case"),
        "POST /cases/{case_id}/delete": (ADMIN, "deleting a test case"),
        "GET /cases/{case_id}/history": (READ, "reading a test case's history"),
        "GET /runs": (READ, "listing runs"),
        "GET /runs/{run_id}": (READ, "reading a run"),
        "GET /runs/{run_id}/live": (READ, "following a run"),
        "GET /runs/{run_id}/compare": (READ, "comparing runs"),
        "GET /runs/{run_id}/cases/{test_case_id}": (READ, "reading a case's result"),
        "POST /runs/{run_id}/cancel": (CI, "cancelling a run"),
        "POST /runs/{run_id}/rerun": (CI, "starting a run"),
        "GET /traces": (READ, "listing traces"),
        "GET /traces/{trace_id}": (READ, "reading a trace"),
        "GET /traces/conversations/{conversation_id}": (READ, "reading a conversation"),
        "GET /traces/add": (READ, "opening the add-to-dataset form"),
        "POST /traces/add": (ADMIN, "making test cases of traces"),
        "POST /traces/{trace_id}/add-conversation": (ADMIN, "making a test case of a trace"),
        "POST /traces/conversations/{conversation_id}/add": (
            ADMIN,
            "making a test case of a conversation",
        ),
        "GET /settings": (READ, "reading the settings"),
        "POST /settings/keys": (ADMIN, "creating an API key"),
        "POST /settings/keys/{key_id}/revoke": (ADMIN, "revoking an API key"),
        "POST /settings/agent": (ADMIN, "saving the agent"),
        "POST /settings/agent/default": (ADMIN, "choosing the default agent"),
        "POST /settings/agent/test": (CI, "calling the agent"),
        "POST /settings/judge": (ADMIN, "changing the judge settings"),
        "POST /settings/judge/test": (ADMIN, "testing the judge key"),
        "POST /settings/traces": (ADMIN, "changing trace retention"),
        "GET /settings/audit-log": (ADMIN, "reading the audit log"),
    }
)

RULES: Final = {**API_RULES, **PAGE_RULES}
# Open to everyone, with no key or session: probes, metrics, signing in, setting a password with
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
# A route missing from the table (a test fails for it first) is refused to all but admin.
UNLISTED: Final = Rule(ADMIN, "this request")


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


def beyond_scope(method: str, path_template: str) -> str:
    """What a 403 from this route means, as the API's description says it."""
    rule = rule_for(method, path_template) or UNLISTED
    wider = sorted(scope.value for scope in Scope if includes(scope, rule.scope))
    keys = " or ".join(f"`{scope}`" for scope in wider).replace("` or `", "`, `", len(wider) - 2)
    return f"The key's scope does not allow this: {rule.action} needs a key of scope {keys}."
