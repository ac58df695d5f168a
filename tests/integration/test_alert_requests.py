"""POST /api/v1/alerts: what an alert must hold, each refusal naming its field; the webhook URL
through the address guard; never the secret in an answer; another project's alert is not found."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest

from agentlasso.config import Settings
from tests.integration.test_agents import app_client
from tests.support.assertions import assert_problem
from tests.support.databases import new_project_key

SECRET = "a-shared-secret-of-some-length"


async def new_rule(client: httpx.AsyncClient) -> dict[str, Any]:
    answer = await client.post(
        "/api/v1/trace-rules",
        json={"name": "r", "checks": [{"type": "tool_called", "tool": "orders.track"}]},
    )
    assert answer.status_code == 201, answer.text
    rule: dict[str, Any] = answer.json()
    return rule


def alert_body(rule_id: str, **changes: Any) -> dict[str, Any]:
    body = {
        "name": "Tracking", "source": {"rule_id": rule_id}, "metric": "pass_rate",
        "window_s": 3600, "warn": {"below": 0.9}, "alert": {"below": 0.5},
        "webhook_url": "http://127.0.0.1:9/hook", "webhook_secret": SECRET,
    }  # fmt: skip
    return body | changes


@pytest.mark.parametrize(
    ("changes", "pointer", "words"),
    [
        ({"alert": {"below": 0.5, "above": 0.9}}, "/alert", "one of below or above"),
        ({"alert": {}}, "/alert", "one of below or above"),
        ({"alert": {"below": 2}}, "/alert", "a rate from 0 to 1"),
        ({"warn": {"above": 0.9}}, "/warn", "both be below or both be above"),
        ({"warn": {"below": 0.4}}, "/warn", "would warn after it alerts"),
        ({"metric": "check_fail_rate"}, "/check_id", "check_fail_rate"),
        ({"metric": "error_rate", "check_id": "check_1"}, "/check_id", "only then"),
        ({"window_s": 10}, "/window_s", ""),
        ({"webhook_secret": "short"}, "/webhook_secret", ""),
        ({"webhook_url": "ftp://example.com/x"}, "/webhook_url", "http:// or https://"),
        ({"source": {}}, "/source", "one of rule_id or dataset_id"),
        ({"metric": "p99"}, "/metric", ""),
    ],
)
async def test_an_alert_that_cannot_be_used_is_refused_naming_the_field(
    client: httpx.AsyncClient, changes: dict[str, Any], pointer: str, words: str
) -> None:
    rule = await new_rule(client)
    answer = await client.post("/api/v1/alerts", json=alert_body(rule["id"], **changes))
    problem = assert_problem(answer, 422)
    found = [(e.get("pointer", ""), e["detail"]) for e in problem["errors"]]
    assert any(at.startswith(pointer) and words in detail for at, detail in found), found
    assert (await client.get("/api/v1/alerts")).json() == {"alerts": []}


async def test_a_check_fail_rate_alert_names_one_of_the_rules_checks(
    client: httpx.AsyncClient,
) -> None:
    rule = await new_rule(client)
    body = alert_body(rule["id"], metric="check_fail_rate", check_id="nope", warn=None,
                      alert={"above": 0.2})  # fmt: skip
    problem = assert_problem(await client.post("/api/v1/alerts", json=body), 422)
    assert problem["errors"][0]["pointer"] == "/check_id"
    assert rule["checks"][0]["id"] in problem["errors"][0]["detail"]
    body["check_id"] = rule["checks"][0]["id"]
    assert (await client.post("/api/v1/alerts", json=body)).status_code == 201


async def test_an_unknown_source_is_not_found_where_the_body_names_it(
    client: httpx.AsyncClient, database_url: str
) -> None:
    other = await new_project_key(database_url)
    async with httpx.AsyncClient(
        base_url=str(client.base_url), headers={"x-api-key": other}
    ) as http:
        someone_elses = await new_rule(http)
    for source, pointer in (
        ({"rule_id": someone_elses["id"]}, "/source/rule_id"),
        ({"rule_id": "not-an-id"}, "/source/rule_id"),
        ({"dataset_id": "00000000-0000-4000-8000-000000000000"}, "/source/dataset_id"),
    ):
        body = alert_body("x") | {"source": source}
        assert_problem(await client.post("/api/v1/alerts", json=body), 404, pointer=pointer)


async def test_a_webhook_to_an_internal_address_is_refused(
    settings: Settings, api_key: str
) -> None:
    guarded = msgspec.structs.replace(settings, allow_private_agents=False)
    async with app_client(guarded, api_key) as http:
        rule = await new_rule(http)
        for url, words in (
            ("http://169.254.169.254/latest/meta-data", "the cloud metadata address"),
            ("http://127.0.0.1:8080/hook", "a loopback address"),
            ("http://10.1.2.3/hook", "a private address"),
        ):
            answer = await http.post("/api/v1/alerts", json=alert_body(rule["id"], webhook_url=url))
            problem = assert_problem(answer, 422, pointer="/webhook_url")
            assert words in str(problem), problem
        assert (await http.get("/api/v1/alerts")).json() == {"alerts": []}


async def test_an_alert_never_shows_its_secret_and_is_its_projects_own(
    client: httpx.AsyncClient, database_url: str
) -> None:
    rule = await new_rule(client)
    answer = await client.post("/api/v1/alerts", json=alert_body(rule["id"]))
    assert answer.status_code == 201, answer.text
    alert = answer.json()
    assert SECRET not in answer.text and "webhook_secret" not in alert
    assert (alert["state"], alert["history"]) == (None, None)
    read = await client.get(f"/api/v1/alerts/{alert['id']}")
    assert SECRET not in read.text and read.json()["history"] == []
    other = await new_project_key(database_url)
    async with httpx.AsyncClient(
        base_url=str(client.base_url), headers={"x-api-key": other}
    ) as http:
        for method, path in (
            ("GET", f"/api/v1/alerts/{alert['id']}"),
            ("DELETE", f"/api/v1/alerts/{alert['id']}"),
            ("POST", f"/api/v1/alerts/{alert['id']}/test"),
        ):
            assert (await http.request(method, path)).status_code == 404
        assert (await http.get("/api/v1/alerts")).json() == {"alerts": []}
    assert (await client.delete(f"/api/v1/alerts/{alert['id']}")).status_code == 204
    assert (await client.get(f"/api/v1/alerts/{alert['id']}")).status_code == 404
