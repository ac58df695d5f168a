"""Benchmark: JSON Schema validation as output_matches_schema and tool_args_valid use it.

Run: PYTHONPATH=. .venv/bin/python -m tests.perf.bench_schema_checks [--values N]
Prints the time to compile a realistic schema (an order: 10 properties, a nested array of line
items), the cache's answer for it, and validations per second on valid and invalid values,
compiled once; then the hostile pattern `^(a+)+$` against 50,000 "a" and a "!".
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from agentlasso.grading.schemas import CompiledSchema, compile_schema, compiled

ORDER: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["order_id", "customer", "items", "currency", "total"],
    "additionalProperties": False,
    "$defs": {"money": {"type": "number", "minimum": 0, "multipleOf": 0.01}},
    "properties": {
        "order_id": {"type": "string", "pattern": "^ord_[0-9A-Za-z]{8,24}$"},
        "customer": {
            "type": "object",
            "required": ["email"],
            "properties": {
                "email": {"type": "string", "format": "email", "maxLength": 254},
                "name": {"type": "string", "minLength": 1},
            },
        },
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "items": {
                "type": "object",
                "required": ["sku", "quantity", "price"],
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                    "quantity": {"type": "integer", "minimum": 1},
                    "price": {"$ref": "#/$defs/money"},
                },
            },
        },
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "total": {"$ref": "#/$defs/money"},
        "status": {"enum": ["open", "paid", "refunded", "cancelled"]},
        "refund_reason": {"type": ["string", "null"], "maxLength": 500},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "created_at": {"type": "string", "format": "date-time"},
    },
}


def make_order(rng: random.Random, valid: bool) -> dict[str, Any]:
    """An order of 1 to 20 line items; an invalid one has a negative price in its last item."""
    items = [
        {"sku": f"SKU-{rng.randrange(10_000):04d}", "quantity": rng.randrange(1, 5), "price": 9.99}
        for _ in range(rng.randrange(1, 21))
    ]
    if not valid:
        items[-1]["price"] = -3
    return {
        "order_id": f"ord_{rng.randrange(10**12):012d}",
        "customer": {"email": "zoe@example.com", "name": "Zoë"},
        "items": items,
        "currency": "EUR",
        "total": round(9.99 * len(items), 2),
        "status": rng.choice(["open", "paid", "refunded"]),
        "refund_reason": None,
        "tags": ["web", "priority"],
        "created_at": "2026-05-01T12:00:00Z",
    }


def time_compile(rounds: int) -> None:
    """Compiling from nothing (the cache bypassed with a distinct description), and cached."""
    started = time.perf_counter()
    for index in range(rounds):
        result = compile_schema({**ORDER, "description": f"bench {index} {time.time_ns()}"})
        assert isinstance(result, CompiledSchema), result
    cold_ms = (time.perf_counter() - started) / rounds * 1000
    compile_schema(ORDER)
    started = time.perf_counter()
    for _ in range(rounds):
        compile_schema(ORDER)
    warm_us = (time.perf_counter() - started) / rounds * 1e6
    print(f"compile: {cold_ms:.2f} ms a schema; {warm_us:.1f} us from the cache (key included)")


def time_validation(schema: CompiledSchema, label: str, values: list[Any]) -> None:
    """Validations per second of first_error over the given values."""
    started = time.perf_counter()
    failures = sum(schema.first_error(value) is not None for value in values)
    elapsed_s = time.perf_counter() - started
    print(
        f"{label}: {len(values) / elapsed_s:,.0f} validations/s "
        f"({elapsed_s / len(values) * 1e6:.1f} us each, {failures:,} failed)"
    )


def time_hostile_pattern() -> None:
    """The classic catastrophic-backtracking pattern, on the linear-time engine."""
    schema = compiled('{"pattern":"^(a+)+$"}')
    assert isinstance(schema, CompiledSchema)
    started = time.perf_counter()
    detail = schema.first_error("a" * 50_000 + "!") or ""
    elapsed_ms = (time.perf_counter() - started) * 1000
    print(f"hostile pattern ^(a+)+$ on 50,001 characters: {elapsed_ms:.2f} ms ({detail[:40]}...)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--values", type=int, default=20_000)
    arguments = parser.parse_args()
    rng = random.Random(20260501)
    time_compile(rounds=200)
    schema = compile_schema(ORDER)
    assert isinstance(schema, CompiledSchema), schema
    valid = [make_order(rng, valid=True) for _ in range(arguments.values)]
    invalid = [make_order(rng, valid=False) for _ in range(arguments.values)]
    print(invalid and f"an invalid order reads: {schema.first_error(invalid[0])}")
    time_validation(schema, "valid orders  ", valid)
    time_validation(schema, "invalid orders", invalid)
    time_hostile_pattern()


if __name__ == "__main__":
    main()
