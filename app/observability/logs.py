"""The processes' logs: plain text for people, or one JSON object a line for a log pipeline.

`configure_logging` sets up the root logger once per process; `log_context` adds fields (a
run id, a chunk, a worker) to every record logged inside it, in tasks started there too.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import sys
import time
import typing
import urllib.parse
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType, TracebackType
from typing import IO, Any

import msgspec

from agentlasso.config import LogFormat, LogLevel, LogSettings, read_setting

LOG_FORMATS: tuple[str, ...] = typing.get_args(LogFormat)
LOG_LEVELS: tuple[str, ...] = typing.get_args(LogLevel)
TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"

# A field named like a credential is logged as REDACTED whatever it holds: a key or a header
# value passed as context or `extra` by mistake would otherwise sit in every log store and
# backup, readable by whoever can read logs. The name decides, so no value is ever inspected.
_SECRET_MARKERS = ("secret", "password", "api_key", "apikey", "token", "authorization")
# Query parameters that are credentials by their exact name: OpenID Connect's callback carries
# a one-time authorization code and the sign-in's state (/login/sso/callback).
_SECRET_QUERY_NAMES = frozenset({"code", "state"})
# Libraries that log through handlers of their own: in JSON they go through the root's.
_LIBRARY_LOGGERS = (
    "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi",
    "arq", "arq.worker", "arq.jobs", "arq.connections", "litestar", "asyncio",
)  # fmt: skip
# One INFO line per HTTP request: at agent-call rates that costs real CPU, and agent URLs may
# carry keys in their query. Their warnings still come through.
_PER_REQUEST_LOGGERS = ("httpx", "httpx2", "httpcore")
_CORE_FIELDS = frozenset({"ts", "level", "logger", "message", "exc_type", "exc", "stack"})
# What every LogRecord has; anything else on a record came from `extra` or the log context.
# `color_message` is uvicorn's message with terminal colours, a copy of `message`.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName", "color_message",
}  # fmt: skip

_log_context: ContextVar[Mapping[str, object]] = ContextVar(
    "agentlasso_log_context", default=MappingProxyType({})
)


def log_format_from_env(environ: Mapping[str, str]) -> str:
    """AGENTLASSO_LOG_FORMAT: `text` (when unset or empty) or `json`; ValueError otherwise."""
    return str(read_setting(LogSettings, "log_format", environ))


def log_level_from_env(environ: Mapping[str, str]) -> str:
    """AGENTLASSO_LOG_LEVEL: a level name, `INFO` when unset or empty; ValueError otherwise."""
    return str(read_setting(LogSettings, "log_level", environ))


def configure_logging(
    log_format: str, level: str = "INFO", *, stream: IO[str] | None = None
) -> None:
    """One handler on the root logger, writing `log_format` to stderr (or `stream`); calling
    again replaces it. In JSON, libraries' own handlers are removed so every line is JSON."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"the log format must be one of {', '.join(LOG_FORMATS)}")
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(log_handler(log_format, stream or sys.stderr))
    root.setLevel(level)
    quiet_level = max(logging.WARNING, root.level)
    for name in _PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(quiet_level)
    if log_format == "json":
        _route_libraries_to_root()


def log_handler(log_format: str, stream: IO[str]) -> logging.Handler:
    """A handler writing records to `stream` as text or JSON, with the log context added."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    handler.addFilter(LogContextFilter())
    return handler


def _route_libraries_to_root() -> None:
    for name in _LIBRARY_LOGGERS:
        # Whatever an earlier configuration left (a server's dictConfig disables loggers and
        # sets their levels) is undone: the root's level and handler decide.
        library_logger = logging.getLogger(name)
        library_logger.handlers.clear()
        library_logger.propagate = True
        library_logger.disabled = False
        library_logger.setLevel(logging.NOTSET)
    # Warnings and a crash's traceback would otherwise be written to stderr as plain text.
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught


def _log_uncaught(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    logging.getLogger("agentlasso").critical("uncaught exception", exc_info=(exc_type, exc, tb))


@contextlib.contextmanager
def log_context(**fields: object) -> Iterator[None]:
    """Add `fields` to every record logged inside the block, and in tasks started in it."""
    token = _log_context.set(_with_fields(fields))
    try:
        yield
    finally:
        _log_context.reset(token)


def bind_log_context(**fields: object) -> None:
    """Add `fields` to every record logged from now on in this context (a task, say), and in
    tasks it starts afterwards."""
    _log_context.set(_with_fields(fields))


def current_log_context() -> Mapping[str, object]:
    """The fields records logged here get."""
    return _log_context.get()


def _with_fields(fields: Mapping[str, object]) -> Mapping[str, object]:
    clashes = sorted(name for name in fields if name in _RECORD_ATTRIBUTES | _CORE_FIELDS)
    if clashes:
        raise ValueError(f"log context fields may not be named {', '.join(clashes)}")
    # A new mapping each time: tasks that copied the context keep what they saw.
    return MappingProxyType({**_log_context.get(), **fields})


class LogContextFilter(logging.Filter):
    """Copies the log context onto each record where it is logged (a field given in `extra`
    wins), so it is right whichever thread later formats the record."""

    def filter(self, record: logging.LogRecord) -> bool:
        attributes = vars(record)
        for name, value in _log_context.get().items():
            attributes.setdefault(name, value)
        return True


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON: ts, level, logger, message, then context and extra
    fields, and exc_type and exc for an exception. Never raises, whatever the fields hold."""

    def __init__(self) -> None:
        super().__init__()
        self._encoder = msgspec.json.Encoder(enc_hook=_as_text)

    def format(self, record: logging.LogRecord) -> str:
        fields = self._core_fields(record)
        extra = {name: value for name, value in _extra_fields(record) if name not in fields}
        try:
            return self._encoder.encode({**fields, **_redacted(extra)}).decode()
        except Exception:  # a cycle, a lone surrogate...: still one line, with what can be kept
            kept = {name: _plain(value) for name, value in {**fields, **extra}.items()}
            return self._encoder.encode(_redacted(kept)).decode()

    def _core_fields(self, record: logging.LogRecord) -> dict[str, object]:
        fields: dict[str, object] = {
            "ts": _rfc3339_utc(record),
            "level": record.levelname,
            "logger": record.name,
            "message": _message(record),
        }
        fields |= _access_fields(record)
        if record.exc_info and record.exc_info[0] is not None:
            fields["exc_type"] = _type_name(record.exc_info[0])
            fields["exc"] = record.exc_text or self.formatException(record.exc_info)
        if record.stack_info:
            fields["stack"] = self.formatStack(record.stack_info)
        return fields


def _rfc3339_utc(record: logging.LogRecord) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{seconds}.{int(record.msecs):03d}Z"


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # arguments that do not fit the message: keep both rather than lose it
        return f"{_as_text(record.msg)} (arguments that did not fit: {_as_text(record.args)})"


def _access_fields(record: logging.LogRecord) -> dict[str, object]:
    """uvicorn's access line as fields. The query is left out: it can carry a sign-in token."""
    if record.name != "uvicorn.access" or not isinstance(record.args, tuple):
        return {}
    if len(record.args) != 5:
        return {}
    client_addr, method, full_path, http_version, status_code = record.args
    path = str(full_path).split("?", 1)[0]
    return {
        "message": f"{method} {path} {status_code}",
        "client_addr": client_addr,
        "method": method,
        "path": path,
        "http_version": http_version,
        "status_code": status_code,
    }


class AccessQueryRedaction(logging.Filter):
    """On uvicorn's access lines, the value of every query parameter named like a credential
    (a sign-in link's `token`, say) is REDACTED: uvicorn's text line logs the whole query."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            client_addr, method, full_path, http_version, status_code = args
            path = redacted_query(str(full_path))
            record.args = (client_addr, method, path, http_version, status_code)
        return True


def redacted_query(full_path: str) -> str:
    """A path and query with the values of parameters named like credentials hidden."""
    path, mark, query = full_path.partition("?")
    if not mark:
        return full_path
    parts = []
    for part in query.split("&"):
        name, equals, _ = part.partition("=")
        plain = urllib.parse.unquote_plus(name)
        hidden = equals and (is_secret_name(plain) or plain.lower() in _SECRET_QUERY_NAMES)
        parts.append(f"{name}={REDACTED}" if hidden else part)
    return f"{path}?{'&'.join(parts)}"


def with_access_redaction(config: Mapping[str, Any]) -> dict[str, Any]:
    """uvicorn's logging configuration (a dictConfig mapping), its access lines redacted."""
    redacting = copy.deepcopy(dict(config))
    redacting.setdefault("filters", {})["access_query"] = {"()": AccessQueryRedaction}
    for handler in redacting.get("handlers", {}).values():
        handler.setdefault("filters", []).append("access_query")
    return redacting


def _extra_fields(record: logging.LogRecord) -> Iterator[tuple[str, object]]:
    for name, value in vars(record).items():
        if name not in _RECORD_ATTRIBUTES:
            yield name, value


def _type_name(exc_type: type[BaseException]) -> str:
    if exc_type.__module__ == "builtins":
        return exc_type.__qualname__
    return f"{exc_type.__module__}.{exc_type.__qualname__}"


def is_secret_name(name: str) -> bool:
    """Whether a field of this name may hold a credential."""
    folded = name.lower().replace("-", "_")
    return any(marker in folded for marker in _SECRET_MARKERS)


def _redacted(fields: Mapping[str, object]) -> dict[str, object]:
    """The fields with credentials hidden, in nested mappings (headers, say) too."""
    return {
        name: REDACTED if is_secret_name(str(name)) else _redacted_value(value)
        for name, value in fields.items()
    }


def _redacted_value(value: object) -> object:
    if isinstance(value, Mapping):
        return _redacted(value)
    if isinstance(value, list | tuple):
        return [_redacted_value(item) for item in value]
    return value


def _plain(value: object) -> object:
    """A value JSON can hold for sure: a scalar, or text without lone surrogates."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"<{type(value).__name__} that cannot be logged>"


def _as_text(value: object) -> str:
    """What JSON cannot hold as is, as text (`str`), or its type if even that fails."""
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"
