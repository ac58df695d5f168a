"""The API's description made exact: every status an operation answers, problem+json bodies,
the schemas the server enforces, the key it requires, the media types it speaks.

Litestar documents each operation's success and a generic 400, and builds its component
schemas without the constraints msgspec enforces (unknown fields refused, item bounds, some
minimums). So after the app is built its document is completed here, from one table of what
each operation can answer and from msgspec's own schemas of the same Structs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from litestar import Litestar
from litestar.openapi.spec import (
    Components,
    Link,
    OpenAPI,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    RequestBody,
    Schema,
    SecurityScheme,
)
from litestar.openapi.spec.enums import OpenAPIFormat, OpenAPIType

from agentlasso.api.comparisons import MAX_COMPARED
from agentlasso.api.openapi_components import msgspec_schemas
from agentlasso.api.openapi_examples import BODY_EXAMPLES, IMPORT_EXAMPLE
from agentlasso.api.openapi_links import LINKS
from agentlasso.api.openapi_rules import (
    ids_as_uuids,
    otlp_json_components,
    schemas_named_in,
    without_nul,
)
from agentlasso.http.pagination import COMPARE_CURSOR, CURSOR_PATTERN, MAX_LIMIT
from agentlasso.http.permissions import beyond_scope
from agentlasso.http.problems import PROBLEM_JSON
from agentlasso.services.traces import TRACE_CURSOR_PATTERN

API_KEY_SCHEME = "apiKey"
# What each problem status means, as the document says it.
MEANINGS = {
    400: "The body is not JSON, or is empty.",
    401: "No API key, an unknown one, or a revoked one.",
    404: "No such object in your project (named in the path, or by `errors` in the body).",
    409: "The request conflicts with the object's state (the detail says how).",
    413: "The body is over this endpoint's limit.",
    415: "The body is not in a media type this endpoint reads.",
    422: "The request is not valid: `errors` names each bad field or parameter.",
    429: "Over the project's request rate or one of its quotas; see Retry-After.",
    503: "The server is busy (no database connection, or too many waiting requests); see "
    "Retry-After.",
}
_MODEL_AWAY = (
    "The model did not answer (unreachable, overloaded, or too slow), or the server is busy: "
    "nothing to fix in the request; try again after Retry-After. A key the model refused is a "
    "409 saying so."
)
# What a status means for one operation, where it means more than MEANINGS says.
OWN_MEANINGS = {
    ("generateCases", 503): _MODEL_AWAY,
    ("regenerateCaseDraft", 503): _MODEL_AWAY,
    ("nextUserTurn", 503): (
        "The simulated user's model could not be asked (unreachable, overloaded, too slow, a "
        "refused key, an unusable answer after the retries, or the server's budget for the "
        "project spent), or the server is busy: the detail says why. Record the conversation "
        "as not graded with it."
    ),
}
# Every /api/v1 operation may answer these: authentication, rates, a busy server.
EVERY_OPERATION = (401, 429, 503)
_BODY = (400, 413, 422)
# What each operation answers besides its success and EVERY_OPERATION. A test checks that every
# operation of the app is here, so a new one cannot go undocumented.
ERRORS: dict[str, tuple[int, ...]] = {
    "listAgents": (422,),
    "listAuditLog": (422,),
    "createAgent": _BODY,
    "getAgent": (404,),
    "updateAgent": (*_BODY, 404),
    "deleteAgent": (404,),
    "invokeAgent": (*_BODY, 404, 409),
    "listDatasets": (422,),
    "createDataset": _BODY,
    "getDataset": (404,),
    "updateDataset": (*_BODY, 404),
    "deleteDataset": (404, 409),
    "createDatasetVersion": (*_BODY, 404, 409),
    "listDatasetVersions": (404, 422),
    "listTestCases": (404, 422),
    "createTestCase": (*_BODY, 404, 409),
    "importTestCases": (*_BODY, 404, 409, 415),
    "exportTestCases": (404, 422),
    "getTestCase": (404,),
    "updateTestCase": (*_BODY, 404),
    "deleteTestCase": (404,),
    "previewTestCase": (*_BODY, 404),
    "previewChecks": _BODY,
    "listRuns": (404, 422),
    "createRun": (*_BODY, 404, 409),
    "getRun": (404, 422),
    "runEvents": (404,),
    "cancelRun": (404,),
    "listRunResults": (404, 422),
    "compareRuns": (404, 409, 422),
    "listFlakyCases": (404, 422),
    "postRunResults": (*_BODY, 404, 409),
    "getJudgeSettings": (),
    "listWorkers": (),
    "exportTracesUnderApi": (400, 413, 415),
    "listTraces": (422,),
    "getTrace": (404,),
    "createTestCaseFromTrace": (*_BODY, 404, 409),
    "getTraceConversation": (404,),
    "createTestCaseFromConversation": (*_BODY, 404, 409),
    "getTraceSettings": (),
    "createTraceRule": _BODY,
    "listTraceRules": (),
    "getTraceRule": (404,),
    "deleteTraceRule": (404,),
    "createAlert": (*_BODY, 404),
    "listAlerts": (),
    "getAlert": (404,),
    "deleteAlert": (404,),
    "testAlert": (404,),
    "updateTraceSettings": _BODY,
    "updateJudgeSettings": _BODY,
    "generateCases": (*_BODY, 404, 409),
    "listCaseDrafts": (404, 422),
    "acceptCaseDraft": (*_BODY, 404, 409),
    "rejectCaseDraft": (404, 409),
    "regenerateCaseDraft": (404, 409),
    "nextUserTurn": (*_BODY, 404, 409),
    "enqueueReviewItems": (*_BODY, 404),
    "listReviewItems": (422,),
    "getReviewItem": (404,),
    "labelReviewItem": (*_BODY, 404),
    "getJudgeAgreement": (404,),
    "addJudgeExample": (*_BODY, 404, 409),
    "createTestCaseFromReviewedTrace": (*_BODY, 404, 409),
}


def complete(app: Litestar, priced_models: Iterable[str]) -> None:
    """Complete the app's OpenAPI document in place; a project may choose `priced_models` only."""
    document = app.openapi_schema
    document.components = document.components or Components()
    document.components.schemas = msgspec_schemas()
    _only_priced_models(document.components.schemas, sorted(priced_models))
    document.components.security_schemes = {
        API_KEY_SCHEME: SecurityScheme(
            type="apiKey",
            name="x-api-key",
            security_scheme_in="header",
            description="A project API key (`Authorization: Bearer` works too).",
        )
    }
    for path, method, operation in _operations(document):
        _complete_operation(path, method, operation)
    bodies = {
        name
        for path, _, operation in _operations(document)
        if path.startswith("/api/v1") and operation.request_body is not None
        for name in schemas_named_in(operation.request_body.to_schema())
    }
    without_nul(document.components.schemas, bodies - {"OtlpRequest"})
    ids_as_uuids(document.components.schemas, bodies)
    document.components.schemas |= otlp_json_components()


def _operations(document: OpenAPI) -> list[tuple[str, str, Operation]]:
    found = []
    for path, item in (document.paths or {}).items():
        for method in ("get", "post", "put", "patch", "delete"):
            operation = getattr(item, method, None)
            if operation is not None:
                found.append((path, method, operation))
    return found


def _complete_operation(path: str, method: str, operation: Operation) -> None:
    responses: dict[str, Any] = dict(operation.responses or {})
    responses.pop("400", None)  # Litestar's generic entry, of a body shape we never send
    if path.startswith("/api/v1"):
        operation.security = [{API_KEY_SCHEME: []}]
        for status in (*EVERY_OPERATION, *ERRORS[operation.operation_id or ""]):
            meaning = OWN_MEANINGS.get((operation.operation_id or "", status), MEANINGS[status])
            responses[str(status)] = _problem(meaning, retried=status in (429, 503))
    _SPECIAL.get(operation.operation_id or "", _nothing)(operation, responses)
    if operation.security:
        responses["403"] = _problem(beyond_scope(method, path))
    _add_links(operation.operation_id or "", responses)
    _add_example(operation)
    own = _OPERATION_PARAMETERS.get(operation.operation_id or "", {})
    for parameter in operation.parameters or []:
        name = getattr(parameter, "name", "")
        exact = own.get(name) or _PARAMETERS.get(name)
        if exact is not None:
            parameter.schema = exact  # type: ignore[union-attr]
    operation.responses = responses


def _add_example(operation: Operation) -> None:
    example = BODY_EXAMPLES.get(operation.operation_id or "")
    body = operation.request_body
    if example is not None and isinstance(body, RequestBody):
        body.content["application/json"].example = example


def _add_links(operation_id: str, responses: dict[str, Any]) -> None:
    """What a client can do next with what an operation created."""
    created = LINKS.get(operation_id)
    if created is None:
        return
    status, follows = created
    responses[status].links = {
        name: Link(
            operation_id=name, parameters=follow.parameters or None, request_body=follow.body
        )
        for name, follow in follows.items()
    }


def _problem(description: str, *, retried: bool = False) -> OpenAPIResponse:
    retry_after = OpenAPIHeader(
        schema=Schema(type=OpenAPIType.INTEGER, minimum=1), description="Seconds to wait."
    )
    return OpenAPIResponse(
        description=description,
        content={PROBLEM_JSON: OpenAPIMediaType(schema=_ref("Problem"))},
        headers={"Retry-After": retry_after} if retried else None,
    )


def _ref(name: str) -> Reference:
    return Reference(ref=f"#/components/schemas/{name}")


def _json(description: str, schema: Schema | Reference) -> OpenAPIResponse:
    return OpenAPIResponse(
        description=description, content={"application/json": OpenAPIMediaType(schema=schema)}
    )


def _created_run(operation: Operation, responses: dict[str, Any]) -> None:
    created = Schema(one_of=[_ref("CreatedCiRun"), _ref("CreatedServerRun")])
    responses["201"] = _json("The run: CI mode lists its cases, server mode is queued.", created)


def _posted_results(operation: Operation, responses: dict[str, Any]) -> None:
    responses["202"] = _json(
        "Stored; the AI judge is still judging: long-poll the run.", _ref("StillJudging")
    )


def _events(operation: Operation, responses: dict[str, Any]) -> None:
    # In OpenAPI 3.1 the schema of an event stream describes each event.
    event = Schema(
        type=OpenAPIType.OBJECT,
        required=["event", "data"],
        properties={
            "event": Schema(type=OpenAPIType.STRING, enum=["progress", "final", "reconnect"]),
            "data": Schema(
                type=OpenAPIType.STRING,
                content_media_type="application/json",
                content_schema=_ref("Run"),
                description="The run, as GET /eval-runs/{run_id} shows it.",
            ),
            "retry": Schema(type=OpenAPIType.INTEGER, minimum=0),
        },
    )
    responses["200"] = OpenAPIResponse(
        description="`progress` as the run moves, then `final` (or `reconnect` when the "
        "stream has lasted its limit; keepalive comments between).",
        content={"text/event-stream": OpenAPIMediaType(schema=event)},
    )


def _import(operation: Operation, responses: dict[str, Any]) -> None:
    lines = Schema(type=OpenAPIType.STRING, description="One test case (a JSON object) per line.")
    content = {
        media_type: OpenAPIMediaType(schema=lines, example=IMPORT_EXAMPLE)
        for media_type in ("application/x-ndjson", "application/jsonl")
    }
    # Another tool's file, named by `format` (docs/guides/importing.md).
    for media_type, what in (
        ("text/csv", "A CSV file with a header row (format=csv)."),
        ("application/yaml", "A promptfoo test file or config (format=promptfoo)."),
        ("application/json", "A promptfoo, LangSmith or Langfuse file (format=...)."),
    ):
        content[media_type] = OpenAPIMediaType(
            schema=Schema(type=OpenAPIType.STRING, description=what)
        )
    operation.request_body = RequestBody(required=True, content=content)


def _export(operation: Operation, responses: dict[str, Any]) -> None:
    text = Schema(type=OpenAPIType.STRING)
    responses["200"] = OpenAPIResponse(
        description="The cases as JSON Lines (format=jsonl) or CSV (format=csv), streamed.",
        content={
            "application/x-ndjson": OpenAPIMediaType(schema=text),
            "text/csv": OpenAPIMediaType(schema=text),
        },
    )


def _otlp(operation: Operation, responses: dict[str, Any]) -> None:
    """OTLP/HTTP: the body is OTLP's own (protobuf, or OTLP/JSON), and so is the answer."""
    # An ExportTraceServiceRequest in OTLP/JSON (hex ids), as the server's decoder reads it.
    request = _ref("OtlpRequest")
    binary = Schema(type=OpenAPIType.STRING, content_media_type="application/x-protobuf")
    operation.request_body = RequestBody(
        required=True,
        content={
            "application/json": OpenAPIMediaType(schema=request),
            "application/x-protobuf": OpenAPIMediaType(schema=binary),
        },
    )
    answer = Schema(
        type=OpenAPIType.OBJECT,
        properties={"partialSuccess": Schema(type=OpenAPIType.OBJECT)},
        description="Empty, or OTLP's partial success naming the refused spans.",
    )
    responses["200"] = OpenAPIResponse(
        description="Accepted (spans are read within a second or so).",
        content={
            "application/json": OpenAPIMediaType(schema=answer),
            "application/x-protobuf": OpenAPIMediaType(schema=binary),
        },
    )
    operation.security = [{API_KEY_SCHEME: []}]
    for status in (*EVERY_OPERATION, 400, 413, 415):
        responses[str(status)] = _problem(MEANINGS[status], retried=status in (429, 503))


def _ready(operation: Operation, responses: dict[str, Any]) -> None:
    responses["503"] = _json("The database or Redis does not answer.", _ref("Readiness"))


def _nothing(operation: Operation, responses: dict[str, Any]) -> None:
    return None


_SPECIAL = {
    "createRun": _created_run,
    "postRunResults": _posted_results,
    "runEvents": _events,
    "importTestCases": _import,
    "exportTestCases": _export,
    "ready": _ready,
    "exportTraces": _otlp,
    "exportTracesUnderApi": _otlp,
}
_PARAMETERS = {
    "limit": Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=MAX_LIMIT, default=50),
    "cursor": Schema(type=OpenAPIType.STRING, pattern=CURSOR_PATTERN),
    "wait_s": Schema(type=OpenAPIType.NUMBER, minimum=0, maximum=120, default=0),
}
# An operation whose pages are not the usual ones.
_OPERATION_PARAMETERS = {
    "compareRuns": {
        "limit": Schema(type=OpenAPIType.INTEGER, minimum=1, maximum=MAX_COMPARED, default=50),
        "cursor": Schema(type=OpenAPIType.STRING, pattern=COMPARE_CURSOR.pattern),
    },
    "listTraces": {
        "cursor": Schema(type=OpenAPIType.STRING, pattern=TRACE_CURSOR_PATTERN),
        "started_after": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.DATE_TIME),
        "started_before": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.DATE_TIME),
    },
}


def _only_priced_models(schemas: dict[str, Any], models: list[str]) -> None:
    model = schemas["JudgeSettingsUpdate"]["properties"]["model"]
    model["anyOf"] = [
        {"type": "string", "enum": models} if option.get("type") == "string" else option
        for option in model["anyOf"]
    ]
