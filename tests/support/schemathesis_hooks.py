"""Schemathesis hooks for tests/integration/test_schemathesis.py (loaded by SCHEMATHESIS_HOOKS).

A long-poll of a run that is not ending only waits: a valid `wait_s` is sent as 0, so a run of
the whole API does not spend minutes waiting (the long-poll has its own tests). An invalid one
is sent as generated, so its refusal is still checked.

Text that people write (names, cases, checks, contexts, labels) may not hold U+0000, which
PostgreSQL cannot store; the server refuses it with a 422 naming the field. JSON Schema cannot
say "no U+0000 at any depth of any value" without making every free-form value a recursive
schema, so the description says it in words and the generated bodies leave the character out.
Its refusal is tested field by field in tests/integration/test_found_defects.py.
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    without_nul = _without_nul(case.body)
    if without_nul != case.body:
        case.body = without_nul
    query = case.query or {}
    if "wait_s" not in query:
        return
    try:
        valid = 0 <= float(query["wait_s"]) <= 120
    except (TypeError, ValueError):
        return
    if valid:
        query["wait_s"] = 0


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


@schemathesis.serializer("application/x-ndjson", "application/jsonl")
def json_lines(context: Any, value: Any) -> dict[str, Any]:
    """An import body as the description says it: text, one test case per line."""
    if isinstance(value, bytes):
        return {"data": value}
    return {"data": str(value).encode()}
