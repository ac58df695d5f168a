"""Each way an agent call fails, as the sentence a person reads in the failed checks."""

from __future__ import annotations

import errno
import socket
import ssl

from agentlasso.agents.http1 import ConnectFailed, HeadersTooLarge

_ERRNO_PHRASES = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ECONNABORTED: "connection aborted",
    errno.EPIPE: "connection closed while sending",
    errno.ETIMEDOUT: "connection timed out",
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
}


def timed_out(timeout_s: float) -> str:
    """The attempt ran past its timeout."""
    return f"the agent call timed out after {timeout_s:g} s"


def task_unfinished(task_id: str, state: str, timeout_s: float) -> str:
    """An A2A task the agent was still working on when the call's time ran out."""
    return f"the agent's A2A task {task_id[:64]!r} was still {state[:32]} after {timeout_s:g} s"


def answered_status(status: int) -> str:
    """The agent answered with a status that is not a reply."""
    if 300 <= status < 400:
        return f"the agent answered HTTP {status} (a redirect, not followed)"
    return f"the agent answered HTTP {status}"


def over_limit(max_body_bytes: int) -> str:
    """The answer is bigger than the platform reads."""
    return f"the agent's answer is over the {byte_size(max_body_bytes)} limit"


def headers_over_limit(exc: HeadersTooLarge) -> str:
    """The answer's headers are bigger, or more, than the platform reads."""
    if exc.what == "framing":
        return "the agent's answer has more chunk framing than a body of its size needs"
    if exc.what == "interim answers":
        return f"the agent sent more than {exc.limit} interim (1xx) answers before its answer"
    if exc.what == "fields":
        return f"the agent's answer has more than the {exc.limit} header fields the platform reads"
    return f"the agent's answer headers are over the {byte_size(exc.limit)} limit"


def encoded_answer(encoding: str) -> str:
    """The answer came compressed although the platform asked for it plain."""
    return (
        f"the agent's answer is {encoding}-encoded, which the platform does not decode "
        "(it asks for identity)"
    )


def connection_failed(exc: Exception) -> str:
    """A network failure: could not connect, or the connection broke before the answer."""
    if isinstance(exc, ConnectFailed):
        return f"could not connect to the agent: {_network_reason(exc)}"
    return f"the connection to the agent failed: {_network_reason(exc)}"


def request_refused() -> str:
    """The request cannot be sent (a stored header with a line break, say): not the agent's.

    The HTTP library's own message quotes the offending header value, which may be a secret:
    it is never passed on.
    """
    return (
        "the request to the agent cannot be sent: its URL or one of its headers is not valid "
        "in HTTP (set the agent's headers again)"
    )


def with_tries(error: str, tries: int) -> str:
    """The last attempt's error, saying how many attempts were made when more than one."""
    return error if tries == 1 else f"{error} ({tries} tries)"


def byte_size(count: int) -> str:
    """A byte count as a person writes it: 1 MiB, 512 KiB, 1000 bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _network_reason(exc: BaseException) -> str:
    """The most telling cause in an exception chain, in a few words."""
    for cause in _chain(exc):
        if isinstance(cause, socket.gaierror):
            return "the host name does not resolve"
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"the TLS certificate was not accepted ({cause.verify_message})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause})"
        if isinstance(cause, OSError) and cause.errno in _ERRNO_PHRASES:
            return _ERRNO_PHRASES[cause.errno]
    return str(exc) or type(exc).__name__


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain
