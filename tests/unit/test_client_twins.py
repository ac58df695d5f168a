"""The public client's response shapes stay twins of the server's: every field the client reads
is one the server sends, with a value the client can decode."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from agentlasso import client
from agentlasso.api import comparisons, run_results, runs, test_cases

# Server response Struct -> the client Struct that decodes it.
TWINS: list[tuple[type[msgspec.Struct], type[msgspec.Struct]]] = [
    (runs.CreatedCiRun, client.CreatedRun),
    (runs.RunTestCase, client.RunTestCase),
    (runs.Run, client.Run),
    (runs.CreatedServerRun, client.Run),
    (runs.Counts, client.Counts),
    (runs.JudgeUsage, client.JudgeUsage),
    (run_results.ResultsAnswer, client.ResultsAnswer),
    (run_results.StillJudging, client.ResultsAnswer),
    (run_results.StoredResult, client.CaseResult),
    (run_results.ResultPage, client.ResultPage),
    (test_cases.TestCase, client.TestCase),
    (test_cases.TestCasePage, client.TestCasePage),
    (comparisons.ComparisonOut, client.Comparison),
    (comparisons.ComparedCaseOut, client.ComparisonItem),
    (comparisons.BucketCounts, client.BucketCounts),
]
# Client fields an answer leaves out on purpose, so the client's default stands for them.
DEFAULTED = {
    (run_results.ResultsAnswer, "/results/0/trial"): "a CI-mode run has one trial",
    (run_results.StillJudging, "/results"): "a 202 carries no grades yet",
}


def example(info: mi.Type) -> Any:
    """A JSON value of this type with every optional part present."""
    if isinstance(info, mi.Metadata):  # a field's description or bounds: the type beneath
        return example(info.type)
    if isinstance(info, mi.StructType):
        fields = {field.encode_name: example(field.type) for field in info.fields}
        if info.tag_field is not None:
            fields[info.tag_field] = info.tag
        return fields
    if isinstance(info, mi.UnionType):
        present = [member for member in info.types if not isinstance(member, mi.NoneType)]
        return example(present[0])
    if isinstance(info, mi.LiteralType):
        return info.values[0]
    if isinstance(info, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        return [example(info.item_type)]
    if isinstance(info, mi.TupleType):
        return [example(item) for item in info.item_types]
    if isinstance(info, mi.DictType):
        return {"key": example(info.value_type)}
    return _scalar(info)


def _scalar(info: mi.Type) -> Any:
    scalars: dict[type, Any] = {
        mi.StrType: "text",
        mi.IntType: 3,
        mi.FloatType: 0.5,
        mi.BoolType: True,
        mi.AnyType: {"any": "value"},
        mi.UUIDType: str(uuid.uuid4()),
        mi.DateTimeType: datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC).isoformat(),
        mi.NoneType: None,
    }
    return scalars[type(info)]


def subset_problems(client_value: Any, server_value: Any, where: str) -> list[str]:
    """Where the client's decoded value differs from what the server sent."""
    if isinstance(client_value, dict) and isinstance(server_value, dict):
        problems = [f"{where}/{key} is not sent" for key in client_value if key not in server_value]
        return problems + [
            problem
            for key in client_value
            if key in server_value
            for problem in subset_problems(client_value[key], server_value[key], f"{where}/{key}")
        ]
    if isinstance(client_value, list) and isinstance(server_value, list):
        return [
            problem
            for index, (mine, theirs) in enumerate(zip(client_value, server_value, strict=True))
            for problem in subset_problems(mine, theirs, f"{where}/{index}")
        ]
    return (
        [] if client_value == server_value else [f"{where}: {client_value!r} != {server_value!r}"]
    )


@pytest.mark.parametrize(("server", "twin"), TWINS, ids=lambda shape: shape.__qualname__)
def test_the_client_decodes_every_field_it_declares_from_the_server_shape(
    server: type[msgspec.Struct], twin: type[msgspec.Struct]
) -> None:
    sent = msgspec.json.encode(msgspec.convert(example(mi.type_info(server)), server))
    decoded = msgspec.json.decode(sent, type=twin)
    defaulted = {where for (shape, where) in DEFAULTED if shape is server}
    problems = subset_problems(msgspec.to_builtins(decoded), msgspec.json.decode(sent), "")
    assert set(problems) - {f"{where} is not sent" for where in defaulted} == set()
    declared = {field.encode_name for field in _fields(twin)}
    sent_fields = {field.encode_name for field in _fields(server)}
    unsent = declared - sent_fields - {where.strip("/") for where in defaulted}
    assert not unsent, f"the client reads fields the server never sends: {unsent}"


def _fields(shape: type[msgspec.Struct]) -> tuple[mi.Field, ...]:
    info = mi.type_info(shape)
    assert isinstance(info, mi.StructType)
    return info.fields


def test_the_client_knows_how_many_results_a_post_may_carry() -> None:
    assert client.MAX_RESULTS_PER_POST == run_results.MAX_RESULTS_PER_POST


def test_the_client_knows_how_many_compared_cases_a_page_may_hold() -> None:
    assert client.MAX_COMPARED_PER_PAGE == comparisons.MAX_COMPARED
