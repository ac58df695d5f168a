"""The demo `agentlasso dev` seeds: a support-bot dataset and the bot itself, served by the API.

Every deterministic check type appears. The bot answers from a table; one case fails on
purpose (it promises a delivery date), so the first run shows what a failure looks like.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import msgspec

DEMO_AGENT_PATH = "/dev/demo-agent"
_CARD = r"\b(?:\d[ -]?){13,16}\b"


class DemoCase(msgspec.Struct, frozen=True):
    """A case, and what the demo bot answers to it."""

    input: str
    checks: list[dict[str, Any]]
    output: str
    tools: list[str]
    description: str = ""
    # The arguments the bot calls a tool with (by tool name); {} for the others.
    arguments: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)


def _called(*tools: str) -> list[dict[str, Any]]:
    return [{"type": "tool_called", "tool": tool} for tool in tools]


def _contains(value: str, regex: bool = False, severity: str = "critical") -> dict[str, Any]:
    return {"type": "output_contains", "value": value, "regex": regex, "severity": severity}


def _forbids(value: str, regex: bool = False, severity: str = "critical") -> dict[str, Any]:
    return {"type": "output_not_contains", "value": value, "regex": regex, "severity": severity}


def _not_called(tool: str) -> dict[str, Any]:
    return {"type": "tool_not_called", "tool": tool}


def _order(*tools: str) -> dict[str, Any]:
    return {"type": "tool_order", "tools": list(tools)}


_JSON = {"type": "output_valid_json"}
_INVOICE = {
    "type": "output_matches_schema",
    "schema": {
        "type": "object",
        "required": ["order", "total", "currency"],
        "properties": {
            "order": {"type": "integer"},
            "total": {"type": "string", "pattern": "^[0-9]+[.][0-9]{2}$"},
            "currency": {"enum": ["EUR", "USD"]},
        },
    },
}
# The bot's tools as it declares them: tool_args_valid checks its calls against them.
DEMO_TOOLS = [
    {
        "name": "stripe.refund",
        "description": "Refund an order, in whole or in part.",
        "input_schema": {
            "type": "object",
            "required": ["order_id", "amount"],
            "properties": {
                "order_id": {"type": "string", "pattern": "^[0-9]+$"},
                "amount": {"type": "number", "exclusiveMinimum": 0},
            },
        },
    },
]

DEMO_CASES = [
    DemoCase("I want a refund for order 1042, it arrived broken.",
             [{"type": "tool_called", "tool": "stripe.refund", "arguments": {"order_id": "1042"}},
              _order("orders.lookup", "stripe.refund"),
              {"type": "tool_args_valid", "tool": "stripe.refund"},
              {"type": "max_tool_calls", "count": 3},
              _contains("3-5 business days"), _forbids(_CARD, regex=True)],
             "Sorry about that! I refunded order 1042; the money is back in 3-5 business days.",
             ["orders.lookup", "stripe.refund"], "refund of a broken item",
             {"stripe.refund": {"order_id": "1042", "amount": 49.9}}),
    DemoCase("Cancel my order 2231 please.",
             [*_called("orders.cancel"), _not_called("stripe.refund"), _contains("cancelled")],
             "Order 2231 is cancelled; you were not charged.", ["orders.lookup", "orders.cancel"],
             "cancel before shipping"),
    DemoCase("Where is my package? Order 7781.",
             [*_called("shipping.track"), _contains(r"\b(?:arriv|deliver)", regex=True),
              _forbids("guarantee")],
             "Order 7781 is on its way and should arrive Friday. I guarantee it!",
             ["orders.lookup", "shipping.track"], "tracking must not promise dates"),
    DemoCase("What's your return policy?",
             [_not_called("stripe.refund"), _contains("30 days")],
             "You can return any item within 30 days of delivery.", [], "policy question"),
    DemoCase("Send me the invoice for order 1042 as JSON.",
             [*_called("billing.get_invoice"), _JSON, _INVOICE],
             '{"order": 1042, "total": "49.90", "currency": "EUR"}', ["billing.get_invoice"],
             "structured answer"),
    DemoCase("I forgot my password.",
             [*_called("account.send_reset_link"), _forbids(r"password is\b", regex=True)],
             "I sent a reset link to the email on your account.", ["account.send_reset_link"],
             "never reveal a password"),
    DemoCase("Change the shipping address on order 3310 to 12 Elm St.",
             [_order("orders.lookup", "orders.update_address"), _contains("12 Elm St")],
             "Done: order 3310 now ships to 12 Elm St.",
             ["orders.lookup", "orders.update_address"], "address change"),
    DemoCase("My card was charged twice for order 5521.",
             [_order("orders.lookup", "billing.list_charges", "stripe.refund"),
              _forbids(_CARD, regex=True)],
             "You were charged twice; I refunded the duplicate charge.",
             ["orders.lookup", "billing.list_charges", "stripe.refund"], "double charge"),
    DemoCase("Do you ship to Canada?",
             [_not_called("orders.lookup"), _contains("Canada"),
              {"type": "latency_below", "ms": 5000}],
             "Yes, we ship to Canada in 5-8 business days.", [], "shipping question"),
    DemoCase("I want to talk to a human.",
             [*_called("support.handoff"), _contains(r"\b(?:agent|colleague)\b", regex=True)],
             "I am connecting you with a colleague now.", ["support.handoff"], "handoff"),
    DemoCase("Is the blue kettle in stock?",
             [*_called("catalog.check_stock"), _contains("in stock")],
             "The blue kettle is in stock and ships today.", ["catalog.check_stock"],
             "stock question"),
    DemoCase("Apply my discount code SAVE10 to order 6120.",
             [_order("orders.lookup", "orders.apply_discount"), _contains("SAVE10")],
             "SAVE10 is applied to order 6120.", ["orders.lookup", "orders.apply_discount"],
             "discount code"),
    DemoCase("Delete my account.",
             [*_called("account.request_deletion"),
              _forbids("deleted immediately", severity="minor")],
             "I requested the deletion; you will get a confirmation email within 48 hours.",
             ["account.request_deletion"], "account deletion"),
    DemoCase("What's the status of the refund for order 1042?",
             [*_called("stripe.refund_status"), _not_called("stripe.refund")],
             "The refund for order 1042 was sent on Monday.", ["stripe.refund_status"],
             "no second refund"),
    DemoCase("Upgrade the shipping of order 8812 to express.",
             [_order("orders.lookup", "shipping.upgrade"), _contains("express")],
             "Order 8812 now ships express.", ["orders.lookup", "shipping.upgrade"],
             "shipping upgrade"),
    DemoCase("List my last orders as JSON.",
             [*_called("orders.list"), _JSON],
             '[{"order": 1042}, {"order": 2231}]', ["orders.list"], "structured list"),
    DemoCase("Just the number of my last order, please.",
             [*_called("orders.list"), {"type": "output_equals", "value": "1042"}],
             " 1042", ["orders.list"], "an exact answer"),
    DemoCase("Your kettle burnt my hand, I am going to sue.",
             [*_called("support.handoff"), _forbids(r"\bour fault\b", regex=True)],
             "I am very sorry. I am passing this to a colleague who will call you today.",
             ["support.handoff"], "no admission of liability"),
    DemoCase("Do you sell gift cards?",
             [_not_called("orders.lookup"), _contains("gift card")],
             "Yes: gift cards from 10 to 200 EUR, sent by email.", [], "gift cards"),
    DemoCase("Change my email to new@example.com.",
             [*_called("account.update_email"), _contains("confirm")],
             "Please confirm the change from the link we sent to new@example.com.",
             ["account.update_email"], "email change"),
    DemoCase("What are your opening hours?",
             [_not_called("orders.lookup"), _contains(r"\d{1,2}\s?(?:am|pm)", regex=True)],
             "Our support team is here from 9am to 6pm, Monday to Friday.", [], "opening hours"),
]  # fmt: skip

_REPLIES = {case.input: case for case in DEMO_CASES}


def demo_reply(user_input: object) -> dict[str, Any]:
    """What the demo bot answers: `{"output": ..., "tool_calls": [...]}`, as any agent does."""
    case = _REPLIES.get(user_input) if isinstance(user_input, str) else None
    if case is None:
        return {"output": "I can help with orders, refunds and shipping.", "tool_calls": []}
    calls = [{"name": tool, "arguments": case.arguments.get(tool, {})} for tool in case.tools]
    return {"output": case.output, "tool_calls": calls}


class DemoIds(msgspec.Struct, frozen=True):
    """What was seeded."""

    dataset_id: str
    agent_id: str


def seed_demo(base_url: str, api_key: str, state_file: Path) -> DemoIds:
    """Seed the demo once; on later starts point the demo agent at this start's URL."""
    agent_url = base_url + DEMO_AGENT_PATH
    with httpx.Client(base_url=base_url, headers={"x-api-key": api_key}, timeout=30) as client:
        if state_file.exists():
            ids = msgspec.json.decode(state_file.read_bytes(), type=DemoIds)
            client.patch(f"/api/v1/agents/{ids.agent_id}", json={"url": agent_url})
            return ids
        ids = _seed(client, agent_url)
    state_file.write_bytes(msgspec.json.encode(ids))
    return ids


def _seed(client: httpx.Client, agent_url: str) -> DemoIds:
    dataset = client.post(
        "/api/v1/datasets",
        json={"name": "Demo: support bot", "data_context": {"store": "Acme", "region": "EU"},
              "description": "Seeded by `agentlasso dev`: every deterministic check type."},
    ).json()  # fmt: skip
    lines = "".join(
        json.dumps({"input": c.input, "checks": c.checks, "description": c.description}) + "\n"
        for c in DEMO_CASES
    )
    client.post(
        f"/api/v1/datasets/{dataset['id']}/test-cases/import",
        content=lines.encode(),
        headers={"content-type": "application/x-ndjson"},
    ).raise_for_status()
    agent = client.post(
        "/api/v1/agents",
        json={"name": "Demo support bot", "url": agent_url, "timeout_s": 10, "tools": DEMO_TOOLS},
    ).json()
    return DemoIds(dataset_id=dataset["id"], agent_id=agent["id"])
