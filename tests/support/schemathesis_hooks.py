"""Schemathesis hooks for tests/integration/test_schemathesis.py (loaded by SCHEMATHESIS_HOOKS).

A long-poll of a run that is not ending only waits: a valid `wait_s` (a query parameter, or a
field of a results batch) is sent as 0, so a run of the whole API does not spend minutes
waiting (the long-poll has its own tests). An invalid one is sent as generated, so its refusal
is still checked.

Text may not hold U+0000 (PostgreSQL cannot store it) but where an agent answered it: the
description says so with a pattern on every such string, so no body is changed here.
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    for values in (case.query, case.body):
        if isinstance(values, dict) and _is_valid_wait(values.get("wait_s")):
            values["wait_s"] = 0


def _is_valid_wait(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    try:
        return 0 <= float(value) <= 120
    except ValueError:
        return False


@schemathesis.serializer("application/x-ndjson", "application/jsonl")
def json_lines(context: Any, value: Any) -> dict[str, Any]:
    """An import body as the description says it: text, one test case per line."""
    if isinstance(value, bytes):
        return {"data": value}
    return {"data": str(value).encode()}
