"""Structured logs: what a JSON line holds, the log context, redaction, and the settings."""

from __future__ import annotations

import asyncio
import io
import logging
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from agentlasso.observability.logs import (
    REDACTED,
    bind_log_context,
    configure_logging,
    current_log_context,
    log_context,
    log_format_from_env,
    log_handler,
    log_level_from_env,
    redacted_query,
)

RFC3339_UTC_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


class JsonLog:
    """A logger of its own (outside the root's tree) writing JSON lines to a buffer."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.logger = logging.Logger("agentlasso.test", logging.DEBUG)
        self.logger.addHandler(log_handler("json", self.stream))

    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()

    def records(self) -> list[dict[str, Any]]:
        return [msgspec.json.decode(line) for line in self.lines()]

    def only(self) -> dict[str, Any]:
        [record] = self.records()
        return record


@pytest.fixture
def log() -> JsonLog:
    return JsonLog()


@pytest.mark.parametrize(
    ("level", "name"),
    [
        (logging.DEBUG, "DEBUG"),
        (logging.INFO, "INFO"),
        (logging.WARNING, "WARNING"),
        (logging.ERROR, "ERROR"),
        (logging.CRITICAL, "CRITICAL"),
    ],
)
def test_a_record_has_ts_level_logger_and_the_formatted_message(
    log: JsonLog, level: int, name: str
) -> None:
    log.logger.log(level, "chunk %d of run %s", 3, "r-1")
    record = log.only()
    assert list(record)[:4] == ["ts", "level", "logger", "message"]
    assert RFC3339_UTC_MS.match(record["ts"]), record["ts"]
    assert record["level"] == name
    assert record["logger"] == "agentlasso.test"
    assert record["message"] == "chunk 3 of run r-1"
    assert "exc" not in record and "exc_type" not in record


def test_the_timestamp_is_the_records_own_time_in_utc_with_milliseconds() -> None:
    stream = io.StringIO()
    handler = log_handler("json", stream)
    record = logging.LogRecord("agentlasso.test", logging.INFO, __file__, 1, "at", None, None)
    record.created, record.msecs = 1_780_000_000.0429, 42.9
    handler.handle(record)
    assert msgspec.json.decode(stream.getvalue())["ts"] == "2026-05-28T20:26:40.042Z"


def test_an_exception_gives_its_type_and_its_traceback_as_one_string(log: JsonLog) -> None:
    counts: dict[str, int] = {}
    try:
        counts["missing"]
    except KeyError:
        log.logger.exception("lookup failed")
    record = log.only()
    assert record["level"] == "ERROR"
    assert record["exc_type"] == "KeyError"
    assert record["exc"].startswith("Traceback (most recent call last):")
    assert record["exc"].endswith("KeyError: 'missing'")
    assert len(log.lines()) == 1


def test_an_exception_outside_builtins_is_named_with_its_module(log: JsonLog) -> None:
    try:
        msgspec.json.decode(b"{")
    except msgspec.DecodeError:
        log.logger.warning("bad body", exc_info=True)
    assert log.only()["exc_type"] == "msgspec.DecodeError"


@pytest.mark.parametrize(
    "message",
    ["two\nlines", "carriage\r\nreturn", 'quotes " and \\ backslashes', "tab\there", "é ✓ 日本"],
)
def test_every_record_is_one_line_whatever_its_message_holds(log: JsonLog, message: str) -> None:
    log.logger.info(message)
    assert len(log.stream.getvalue().split("\n")) == 2, "one line and its newline"
    assert log.only()["message"] == message


def test_extra_fields_follow_the_core_ones(log: JsonLog) -> None:
    log.logger.info("claimed", extra={"run_id": "r-1", "chunk_no": 4, "ratio": 0.5, "ok": True})
    record = log.only()
    assert record["run_id"] == "r-1" and record["chunk_no"] == 4
    assert record["ratio"] == 0.5 and record["ok"] is True


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class Point:
    def __str__(self) -> str:
        return "(1, 2)"


def cyclic() -> list[Any]:
    items: list[Any] = []
    items.append(items)
    return items


@pytest.mark.parametrize(
    ("value", "logged"),
    [
        (Point(), "(1, 2)"),
        (Unprintable(), "<unprintable Unprintable>"),
        ({"nested": [1, {"deep": None}]}, {"nested": [1, {"deep": None}]}),
        ((1, "two"), [1, "two"]),
        (float("nan"), None),
        (2**80, 2**80),
        ("lone \udcff surrogate", "lone \\udcff surrogate"),
        (cyclic(), "<list that cannot be logged>"),
    ],
    ids=["object", "unprintable", "nested", "tuple", "nan", "big-int", "surrogate", "cycle"],
)
def test_odd_field_values_never_stop_a_record_being_logged(
    log: JsonLog, value: object, logged: object
) -> None:
    log.logger.info("odd", extra={"value": value})
    record = log.only()
    assert record["message"] == "odd"
    assert record["value"] == logged


def test_a_message_whose_arguments_do_not_fit_is_still_logged(log: JsonLog) -> None:
    log.logger.info("%d chunks", "three")
    assert log.only()["message"] == "%d chunks (arguments that did not fit: ('three',))"


def test_a_message_with_a_lone_surrogate_is_still_logged(log: JsonLog) -> None:
    log.logger.info("file \udcff.txt")
    assert log.only()["message"] == "file \\udcff.txt"


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "x-api-key",
        "X_API_KEY",
        "apiKey",
        "secret_key",
        "password",
        "db_password",
        "token",
        "sign_in_token",
        "Authorization",
        "proxy_authorization",
    ],
)
def test_a_field_named_like_a_credential_is_redacted(log: JsonLog, name: str) -> None:
    log.logger.info("calling", extra={name: "al_live_abc123", "agent_id": "a-1"})
    record = log.only()
    assert record[name] == REDACTED
    assert record["agent_id"] == "a-1"
    assert "al_live_abc123" not in log.stream.getvalue()


def test_credentials_in_nested_mappings_are_redacted(log: JsonLog) -> None:
    headers = {"Authorization": "Bearer s3cr3t", "content-type": "application/json"}
    log.logger.info("request", extra={"request": {"headers": headers, "calls": [{"token": "t"}]}})
    request = log.only()["request"]
    assert request["headers"] == {"Authorization": REDACTED, "content-type": "application/json"}
    assert request["calls"] == [{"token": REDACTED}]
    assert "s3cr3t" not in log.stream.getvalue()


def test_a_context_field_named_like_a_credential_is_redacted(log: JsonLog) -> None:
    with log_context(run_id="r-1", judge_api_key="sk-ant-xyz"):
        log.logger.info("judging")
    record = log.only()
    assert record["judge_api_key"] == REDACTED and record["run_id"] == "r-1"


def test_context_fields_appear_inside_the_block_only(log: JsonLog) -> None:
    with log_context(run_id="r-1", project_id="p-1"):
        log.logger.info("inside")
        with log_context(chunk_no=2):
            log.logger.info("nested")
        log.logger.info("inside again")
    log.logger.info("outside")
    inside, nested, again, outside = log.records()
    assert (inside["run_id"], inside["project_id"]) == ("r-1", "p-1") and "chunk_no" not in inside
    assert (nested["run_id"], nested["chunk_no"]) == ("r-1", 2)
    assert "chunk_no" not in again
    assert "run_id" not in outside
    assert current_log_context() == {}


def test_a_field_given_in_extra_wins_over_the_context(log: JsonLog) -> None:
    with log_context(chunk_no=1):
        log.logger.info("next chunk", extra={"chunk_no": 2})
    assert log.only()["chunk_no"] == 2


async def test_tasks_started_in_a_context_log_with_it_and_keep_their_own(log: JsonLog) -> None:
    async def lane(chunk_no: int) -> None:
        with log_context(chunk_no=chunk_no):
            await asyncio.sleep(0)  # the lanes interleave
            log.logger.info("chunk done")

    with log_context(worker_id="w-1", run_id="r-1"):
        tasks = [asyncio.create_task(lane(n)) for n in range(3)]
    log.logger.info("outside")  # the tasks copied the context; leaving it does not change theirs
    await asyncio.gather(*tasks)
    *lanes, _ = sorted(log.records(), key=lambda record: record.get("chunk_no", 99))
    assert [(r["worker_id"], r["run_id"], r["chunk_no"]) for r in lanes] == [
        ("w-1", "r-1", 0),
        ("w-1", "r-1", 1),
        ("w-1", "r-1", 2),
    ]


async def test_bind_log_context_lasts_for_the_rest_of_the_task(log: JsonLog) -> None:
    async def job() -> None:
        bind_log_context(job_id="j-1")
        log.logger.info("started")
        await asyncio.sleep(0)
        log.logger.info("finished")

    await asyncio.create_task(job())
    log.logger.info("after")
    started, finished, after = log.records()
    assert started["job_id"] == finished["job_id"] == "j-1"
    assert "job_id" not in after


@pytest.mark.parametrize("name", ["message", "level", "ts", "msg", "exc_info"])
def test_a_context_field_may_not_take_a_name_the_record_uses(name: str) -> None:
    with pytest.raises(ValueError, match=name), log_context(**{name: "x"}):
        pass


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "text"),
        ({"AGENTLASSO_LOG_FORMAT": ""}, "text"),
        ({"AGENTLASSO_LOG_FORMAT": "text"}, "text"),
        ({"AGENTLASSO_LOG_FORMAT": "json"}, "json"),
        ({"AGENTLASSO_LOG_FORMAT": " JSON "}, "json"),
    ],
)
def test_the_log_format_setting(environ: dict[str, str], expected: str) -> None:
    assert log_format_from_env(environ) == expected


@pytest.mark.parametrize("value", ["yaml", "logfmt", "jsonl", "1"])
def test_another_log_format_is_an_error_naming_the_variable_and_the_choices(value: str) -> None:
    with pytest.raises(ValueError, match="AGENTLASSO_LOG_FORMAT must be one of text, json") as e:
        log_format_from_env({"AGENTLASSO_LOG_FORMAT": value})
    assert repr(value) in str(e.value)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "INFO"),
        ({"AGENTLASSO_LOG_LEVEL": "debug"}, "DEBUG"),
        ({"AGENTLASSO_LOG_LEVEL": "WARNING"}, "WARNING"),
    ],
)
def test_the_log_level_setting(environ: dict[str, str], expected: str) -> None:
    assert log_level_from_env(environ) == expected


def test_an_unknown_log_level_is_an_error_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="AGENTLASSO_LOG_LEVEL must be one of DEBUG, INFO"):
        log_level_from_env({"AGENTLASSO_LOG_LEVEL": "verbose"})


LIBRARY_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "arq.worker", "httpx")


@pytest.fixture
def process_logging() -> Iterator[None]:
    """configure_logging changes the process's loggers: put them back afterwards."""
    root = logging.getLogger()
    saved_root = (list(root.handlers), root.level)
    saved = {
        name: (list(lg.handlers), lg.propagate, lg.level)
        for name in LIBRARY_LOGGERS
        for lg in [logging.getLogger(name)]
    }
    saved_hook = sys.excepthook
    try:
        yield
    finally:
        root.handlers[:], root.level = saved_root
        for name, (handlers, propagate, level) in saved.items():
            lg = logging.getLogger(name)
            lg.handlers[:], lg.propagate, lg.level = handlers, propagate, level
        sys.excepthook = saved_hook
        logging.captureWarnings(False)


@pytest.mark.usefixtures("process_logging")
def test_configuring_twice_leaves_one_handler_and_routes_libraries_through_it() -> None:
    stream = io.StringIO()
    uvicorn_handler = logging.StreamHandler(io.StringIO())
    logging.getLogger("uvicorn.error").addHandler(uvicorn_handler)
    logging.getLogger("uvicorn.access").propagate = False
    configure_logging("json", stream=stream)
    configure_logging("json", "INFO", stream=stream)

    assert len(logging.getLogger().handlers) == 1
    logging.getLogger("uvicorn.error").info("Started server process [%d]", 42)
    logging.getLogger("arq.worker").info("Starting worker for %d functions: %s", 1, "run_lane")
    logging.getLogger("httpx").info("HTTP Request: POST http://agent/?key=k")  # quietened
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("deprecated thing", DeprecationWarning, stacklevel=1)
    records = [msgspec.json.decode(line) for line in stream.getvalue().splitlines()]
    assert [(r["logger"], r["level"]) for r in records] == [
        ("uvicorn.error", "INFO"),
        ("arq.worker", "INFO"),
        ("py.warnings", "WARNING"),
    ]
    assert records[0]["message"] == "Started server process [42]"
    assert "color_message" not in records[0]


@pytest.mark.usefixtures("process_logging")
def test_the_access_log_gives_fields_and_leaves_the_query_out() -> None:
    stream = io.StringIO()
    configure_logging("json", stream=stream)
    access = logging.getLogger("uvicorn.access")
    args = ("127.0.0.1:5123", "GET", "/login?token=one-time", "1.1", 302)
    access.info('%s - "%s %s HTTP/%s" %d', *args)
    record = msgspec.json.decode(stream.getvalue())
    assert record["message"] == "GET /login 302"
    assert (record["method"], record["path"], record["status_code"]) == ("GET", "/login", 302)
    assert "one-time" not in stream.getvalue()


@pytest.mark.usefixtures("process_logging")
def test_the_text_format_stays_for_people() -> None:
    stream = io.StringIO()
    configure_logging("text", "WARNING", stream=stream)
    logging.getLogger("agentlasso.lanes").info("not shown")
    logging.getLogger("agentlasso.lanes").warning("chunk %d handed back", 3)
    assert stream.getvalue() == "WARNING agentlasso.lanes: chunk 3 handed back\n"


@pytest.mark.usefixtures("process_logging")
def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="text, json"):
        configure_logging("xml")


@pytest.mark.parametrize(
    ("logged", "shown"),
    [
        ("/login?token=abc&next=/runs", "/login?token=[redacted]&next=/runs"),
        (
            "/x?api_key=k&q=refund&csrf_token=t",
            "/x?api_key=[redacted]&q=refund&csrf_token=[redacted]",
        ),
        ("/x?Access%5FToken=v", "/x?Access%5FToken=[redacted]"),
        ("/x?token", "/x?token"),
        ("/datasets?q=token", "/datasets?q=token"),
        ("/datasets", "/datasets"),
        (
            "/login/sso/callback?code=c0de&state=s7&iss=x",
            "/login/sso/callback?code=[redacted]&state=[redacted]&iss=x",
        ),
    ],
)
def test_an_access_lines_credential_parameters_are_redacted(logged: str, shown: str) -> None:
    assert redacted_query(logged) == shown
