"""What the API refuses of a conversation case, naming the field: the older criteria (which
would be numbered apart from its turns' checks), and a preview of one reply (which cannot
grade its turns)."""

from __future__ import annotations

import httpx

from tests.support.api import create_dataset

CONVERSATION = {
    "turns": [
        {"user": "I want a refund", "checks": [{"type": "output_contains", "value": "NEVER"}]},
    ]
}


async def test_a_conversation_with_the_older_criteria_is_refused(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    refused = await client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases",
        json={"conversation": CONVERSATION, "evaluation_criteria_json": {"tools": ["a"]}},
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["pointer"] == "/evaluation_criteria_json"


async def test_one_reply_cannot_preview_a_conversations_turns(client: httpx.AsyncClient) -> None:
    dataset = await create_dataset(client)
    body = {"conversation": CONVERSATION, "checks": [{"type": "output_contains", "value": "ok"}]}
    created = await client.post(f"/api/v1/datasets/{dataset['id']}/test-cases", json=body)
    assert created.status_code == 201, created.text
    stored = await client.post(
        f"/api/v1/test-cases/{created.json()['id']}/preview", json={"actual_output": "ok"}
    )
    assert stored.status_code == 422, stored.text
    assert stored.json()["errors"][0]["pointer"] == "/conversation"
    assert "one reply cannot grade its turns" in stored.json()["errors"][0]["detail"]
