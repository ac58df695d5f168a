"""An example body for each operation that takes one, as the OpenAPI description shows it.

They are what a reader copies first, and what Schemathesis sends in its examples phase, so each
is a valid request (ids in them name nothing, so those requests answer 404).
"""

from __future__ import annotations

from typing import Any

_SOME_ID = "00000000-0000-4000-8000-000000000000"
_CHECKS = [
    {"type": "tool_called", "tool": "orders.lookup"},
    {"type": "output_contains", "value": "refund"},
    {"type": "output_not_contains", "value": "guarantee", "severity": "minor"},
    {"type": "llm_judge", "criterion": "The reply says when the refund arrives."},
]
_CASE = {
    "input": "Where is my refund for order 1234?",
    "checks": _CHECKS,
    "description": "A refund question names the order and the delay.",
    "tags": ["refunds", "smoke"],
}
_AGENT = {
    "name": "support bot",
    "url": "https://agent.example.com/chat",
    "headers": {"Authorization": "Bearer sk-..."},
    "timeout_s": 30,
    "max_concurrency": 20,
}
_REPLY = {
    "actual_output": "Your refund for order 1234 arrives in 3-5 business days.",
    "actual_tool_calls": [{"name": "orders.lookup", "arguments": {"order": 1234}}],
}

BODY_EXAMPLES: dict[str, Any] = {
    "createAgent": _AGENT,
    "createAlert": {
        "name": "Refund rule failing",
        "source": {"rule_id": _SOME_ID},
        "metric": "pass_rate",
        "window_s": 3600,
        "warn": {"below": 0.95},
        "alert": {"below": 0.9},
        "min_samples": 20,
        "webhook_url": "https://hooks.example.com/agentlasso",
        "webhook_secret": "a-long-shared-secret-for-hmac",
    },
    "createTraceRule": {
        "name": "Refunds look the order up first",
        "filter": {"tool": "orders.refund", "attributes": {"service.name": "support-bot"}},
        "sample_rate": 0.1,
        "checks": [
            {"type": "tool_order", "tools": ["orders.lookup", "orders.refund"]},
            {"type": "output_not_contains", "value": "guarantee"},
            {"type": "llm_judge", "criterion": "Declines to give legal advice."},
        ],
        "daily_judge_budget_usd": 5,
        "backfill_hours": 24,
    },
    "updateAgent": {"timeout_s": 60, "max_concurrency": 10},
    "invokeAgent": {"input": "Where is order 1234?"},
    "createDataset": {
        "name": "refunds",
        "description": "Refund questions from real tickets.",
        "data_context": {"region": "eu", "refund_days": "3-5"},
    },
    "updateDataset": {"description": "Refund questions, reviewed in November."},
    "createDatasetVersion": {"name": "2025-11-release"},
    "createTestCase": _CASE,
    "updateTestCase": {"checks": _CHECKS[:2]},
    "previewTestCase": _REPLY,
    "previewChecks": {"input": _CASE["input"], "checks": _CHECKS, **_REPLY},
    "createRun": {
        "dataset_id": _SOME_ID,
        "pass_threshold": 0.95,
        "labels": {"branch": "main"},
        "tags": ["smoke"],
    },
    "postRunResults": {"run_id": _SOME_ID, "results": [{"test_case_id": _SOME_ID, **_REPLY}]},
    "nextUserTurn": {
        "test_case_id": _SOME_ID,
        "trial": 1,
        "transcript": [
            {"role": "user", "content": "I want to return the kettle I bought."},
            {
                "role": "assistant",
                "content": "Which order was it on?",
                "tool_calls": [{"name": "orders.search", "arguments": {"item": "kettle"}}],
            },
        ],
    },
    "updateJudgeSettings": {"model": "claude-sonnet-5-5"},
    "generateCases": {
        "system_prompt": "You are the support agent of an online shop. Never promise refunds.",
        "tools": [{"name": "orders.lookup", "description": "Find an order by its number."}],
        "instruction": "Focus on refunds of damaged goods.",
        "count": 10,
    },
    "acceptCaseDraft": {"expected_output": "States that the refund takes 3-5 business days."},
    "createTestCaseFromTrace": {
        "dataset_id": _SOME_ID,
        "checks": [{"type": "tool_called", "tool": "orders.lookup"}],
        "expected_output": "Your refund for order 1234 arrives in 3-5 business days.",
    },
    "createTestCaseFromConversation": {"dataset_id": _SOME_ID},
    "updateTraceSettings": {"retention_days": 30},
    "enqueueReviewItems": {"run_id": _SOME_ID, "outcome": "failed", "limit": 50},
    "labelReviewItem": {
        "verdict": "passed",
        "checks": [{"check_id": "c1", "verdict": "passed", "note": "It names the delay."}],
    },
    "createTestCaseFromReviewedTrace": {"dataset_id": _SOME_ID},
    "addJudgeExample": {
        "result_ref": _SOME_ID,
        "verdict": "passed",
        "note": "3-5 business days is when it arrives: that meets the criterion.",
    },
}
# One JSON Lines import body: a test case per line.
IMPORT_EXAMPLE = (
    '{"input": "Where is my refund for order 1234?", "checks": '
    '[{"type": "output_contains", "value": "refund"}]}\n'
    '{"input": "Cancel my subscription", "checks": [{"type": "tool_called", "tool": "cancel"}]}\n'
)
