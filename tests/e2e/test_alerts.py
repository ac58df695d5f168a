"""Alerts on a trace rule's grades (contract section 18): real worker processes evaluate them
and post each change of state to a webhook receiver on loopback, which checks the signature;
the traces come from the real OpenTelemetry SDK."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.production_traces import agent_turn, production_tracer
from tests.support.waiting import eventually
from tests.support.watching import WatchedPlatform
from tests.support.webhook_receiver import SECRET, WebhookReceiver, running_receiver

QUESTION = "Where is my order 77?"
FINE = "Order 77 arrives Thursday."
PROMISE = "It will arrive tomorrow, I promise."
NO_PROMISES = [{"type": "output_not_contains", "value": "I promise"}]


async def traces_graded(platform: WatchedPlatform, replies: list[str]) -> list[str]:
    """The agent's turns with these replies, sent in one export; their trace ids once graded."""
    with production_tracer(platform.url, platform.key, held=True) as tracer:
        trace_ids = [agent_turn(tracer, QUESTION, reply) for reply in replies]
    for trace_id in trace_ids:
        await platform.graded(trace_id)
    return trace_ids


async def pass_rate_alert(
    platform: WatchedPlatform, rule_id: str, receiver: WebhookReceiver, **levels: Any
) -> dict[str, Any]:
    return await platform.created(
        "/api/v1/alerts", name="Promises", source={"rule_id": rule_id}, metric="pass_rate",
        window_s=3600, webhook_url=receiver.url, webhook_secret=SECRET, **levels,
    )  # fmt: skip


async def state_becomes(platform: WatchedPlatform, alert_id: str, state: str) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        alert = await platform.alert(alert_id)
        return alert if alert["state"] == state else None

    return await eventually(reached, timeout_s=30, what=f"alert {state}")


async def posts(receiver: WebhookReceiver, count: int) -> list[Any]:
    async def arrived() -> list[Any] | None:
        accepted = receiver.accepted()
        return [post.json for post in accepted] if len(accepted) >= count else None

    return await eventually(arrived, timeout_s=30, what=f"{count} webhook posts")


async def test_ok_warn_alert_ok_posts_three_signed_changes_and_no_more(
    watching: WatchedPlatform,
) -> None:
    rule = await watching.rule(name="No promises", checks=NO_PROMISES)
    await traces_graded(watching, [FINE] * 4)
    with running_receiver() as receiver:
        alert = await pass_rate_alert(
            watching, rule["id"], receiver, warn={"below": 0.8}, alert={"below": 0.5}
        )
        # A new alert that finds all well says nothing.
        await state_becomes(watching, alert["id"], "ok")
        warned = await traces_graded(watching, [PROMISE] * 2)  # 4 of 6 pass
        await state_becomes(watching, alert["id"], "warn")
        alerted = await traces_graded(watching, [PROMISE] * 4)  # 4 of 10
        await state_becomes(watching, alert["id"], "alert")
        await traces_graded(watching, [FINE] * 30)  # 34 of 40
        await state_becomes(watching, alert["id"], "ok")
        bodies = await posts(receiver, 3)
        await asyncio.sleep(3)  # evaluated six times more meanwhile
        assert len(receiver.posts) == 3, [post.json["state"] for post in receiver.posts]
        assert all(post.signed for post in receiver.posts)
        assert {post.headers["X-AgentLasso-Event"] for post in receiver.posts} == {
            "alert.state_changed"
        }
    assert [(body["previous_state"], body["state"]) for body in bodies] == [
        ("ok", "warn"), ("warn", "alert"), ("alert", "ok"),
    ]  # fmt: skip
    assert [body["value"] for body in bodies] == [pytest.approx(4 / 6), 0.4, 0.85]
    assert [body["samples"] for body in bodies] == [6, 10, 40]
    assert [body["threshold"] for body in bodies] == [{"below": 0.8}, {"below": 0.5}, None]
    assert bodies[0]["source"] == {"type": "trace_rule", "id": rule["id"], "name": "No promises"}
    assert bodies[0]["alert"]["url"] == f"https://agentlasso.example.com/alerts/{alert['id']}"
    assert {link["trace_id"] for link in bodies[0]["failing"]} == set(warned)
    assert {link["trace_id"] for link in bodies[1]["failing"]} == set(warned + alerted)
    assert bodies[1]["failing"][0]["url"].startswith("https://agentlasso.example.com/traces/")
    history = (await watching.alert(alert["id"]))["history"]
    assert [(event["to_state"], event["delivery"]) for event in history] == [
        ("ok", "delivered"), ("alert", "delivered"), ("warn", "delivered"), ("ok", "not_sent"),
    ]  # fmt: skip


async def test_a_failing_receiver_is_tried_again_until_it_takes_the_post(
    watching: WatchedPlatform,
) -> None:
    rule = await watching.rule(name="No promises", checks=NO_PROMISES)
    await traces_graded(watching, [PROMISE] * 3)
    with running_receiver(failures=2) as receiver:
        alert = await pass_rate_alert(watching, rule["id"], receiver, alert={"below": 0.5})
        [body] = await posts(receiver, 1)
        sent = list(receiver.posts)
    assert body["state"] == "alert" and body["previous_state"] is None
    assert len(sent) == 3, "two failures, then the post that was taken"
    assert len({post.body for post in sent}) == 1, "the same body each time"
    assert len({post.headers["X-AgentLasso-Delivery"] for post in sent}) == 1
    assert all(post.signed for post in sent)
    [event] = (await watching.alert(alert["id"]))["history"]
    assert (event["delivery"], event["attempts"]) == ("delivered", 3)


async def test_send_test_posts_a_signed_test_and_says_how_it_went(
    watching: WatchedPlatform,
) -> None:
    rule = await watching.rule(name="No promises", checks=NO_PROMISES)
    with running_receiver() as receiver:
        alert = await pass_rate_alert(watching, rule["id"], receiver, alert={"below": 0.5})
        answer = await watching.http.post(f"/api/v1/alerts/{alert['id']}/test")
        assert answer.json() == {"delivered": True, "status": 204, "error": None}
        [test_post] = [p for p in receiver.posts if p.headers["X-AgentLasso-Event"] == "alert.test"]
    assert test_post.signed and test_post.json["alert"]["name"] == "Promises"
    with running_receiver(failures=1) as refusing:
        other = await pass_rate_alert(watching, rule["id"], refusing, alert={"below": 0.5})
        answer = await watching.http.post(f"/api/v1/alerts/{other['id']}/test")
    assert answer.json() == {
        "delivered": False, "status": 500, "error": "The webhook answered 500.",
    }  # fmt: skip
