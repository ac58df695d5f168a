"""Assertions the tests share."""

from __future__ import annotations

from typing import Any

import httpx


def assert_problem(
    response: httpx.Response,
    status: int,
    *,
    pointer: str | None = None,
    parameter: str | None = None,
) -> dict[str, Any]:
    """The response is a problem+json of this status, naming the field when one is given."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["title"] and body["detail"] and body["type"]
    if pointer is not None:
        pointers = [error.get("pointer") for error in body.get("errors", [])]
        assert pointer in pointers, body
    if parameter is not None:
        parameters = [error.get("parameter") for error in body.get("errors", [])]
        assert parameter in parameters, body
    return body
