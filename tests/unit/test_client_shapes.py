"""The public client decodes the server's answers into the server's own shapes
(agentlasso.schemas), so the two cannot drift apart: no response shape is declared twice."""

from __future__ import annotations

import inspect

import msgspec

from agentlasso import client, schemas
from agentlasso.api import comparisons, run_results

# The one shape the client declares itself: what it posts, each field UNSET until reported
# (the server reads those fields as raw JSON, a type no client could build).
CLIENT_WRITES = {"ResultToPost"}


def test_every_shape_the_client_reads_is_a_schema_the_api_speaks() -> None:
    structs = {
        name: value
        for name, value in vars(client).items()
        if inspect.isclass(value) and issubclass(value, msgspec.Struct)
    }
    read = {name: shape for name, shape in structs.items() if name not in CLIENT_WRITES}
    assert read, "the client reads no shapes"
    foreign = {
        name: shape.__module__
        for name, shape in read.items()
        if not shape.__module__.startswith(f"{schemas.__name__}.")
    }
    assert not foreign, f"the client declares its own response shapes: {foreign}"
    assert {name for name in structs if structs[name].__module__ == client.__name__} == (
        CLIENT_WRITES
    )


def test_the_client_knows_how_many_results_a_post_may_carry() -> None:
    assert client.MAX_RESULTS_PER_POST == run_results.MAX_RESULTS_PER_POST


def test_the_client_knows_how_many_compared_cases_a_page_may_hold() -> None:
    assert client.MAX_COMPARED_PER_PAGE == comparisons.MAX_COMPARED
