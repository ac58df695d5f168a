"""The requests the agent client writes: an agent URL parsed once into where it goes and its
request line, the head of its requests (Host, the agent's stored headers, the client's own),
and the trace context each call carries (contract section 14)."""

from __future__ import annotations

from collections.abc import Mapping

from agentlasso.agent_wire.calls import AgentTarget
from agentlasso.agents.address_guard import parse_agent_url
from agentlasso.agents.http1 import Origin
from agentlasso.domain.agent_headers import HEADER_NAME, HEADER_VALUE

# Sent whatever the agent's stored headers say: identity keeps a gzip bomb from being inflated.
_FIXED_HEADERS = [(b"Content-Type", b"application/json"), (b"Accept-Encoding", b"identity")]
_DEFAULT_HEADERS = {"user-agent": b"AgentLasso", "accept": b"application/json"}
# traceparent is the call's own (section 14): a stored header of that name is never sent.
RESERVED_HEADERS = frozenset(
    {
        "content-type", "accept-encoding", "content-length", "transfer-encoding", "host",
        "connection", "traceparent",
    }
)  # fmt: skip


class Endpoint:
    """An agent URL parsed once: where it goes, its request line and its Host header."""

    __slots__ = ("host_header", "origin", "request_line", "target")

    def __init__(self, origin: Origin, target: bytes, host_header: bytes) -> None:
        self.origin = origin
        self.target = target
        self.request_line = b"POST " + target + b" HTTP/1.1\r\n"
        self.host_header = host_header


class Exchange:
    """One call's requests: where they go, their head and trace context, what they are for."""

    __slots__ = ("head", "origin", "target", "traceparent")

    def __init__(
        self, origin: Origin, head: bytes, traceparent: bytes, target: AgentTarget
    ) -> None:
        self.origin, self.head, self.traceparent, self.target = origin, head, traceparent, target

    def request(self, content: bytes) -> bytes:
        """The whole request carrying this content (a call's first request, or an A2A poll)."""
        return b"%s%d\r\ntraceparent: %s\r\n\r\n%s" % (
            self.head,
            len(content),
            self.traceparent,
            content,
        )


def parse_endpoint(url: str) -> Endpoint | str:
    """Where the URL's requests go and their request line, or why it cannot be an agent's."""
    parsed = parse_agent_url(url)
    if isinstance(parsed, str):
        return parsed
    scheme = parsed.scheme
    port = parsed.port or (443 if scheme == "https" else 80)
    origin = Origin(scheme, parsed.raw_host.decode("ascii"), port)
    return Endpoint(origin, parsed.raw_path, parsed.netloc)


def request_head(endpoint: Endpoint, agent_headers: Mapping[str, str]) -> bytes | None:
    """The request line and headers, ending with `Content-Length: ` for the body's length to
    follow; None when a stored header is not valid in HTTP (it is never sent)."""
    if not all(
        HEADER_NAME.fullmatch(n) and HEADER_VALUE.fullmatch(v) for n, v in agent_headers.items()
    ):
        return None
    headers = request_headers(endpoint.host_header, agent_headers)
    fields = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return endpoint.request_line + fields + b"Content-Length: "


def request_headers(
    host_header: bytes, agent_headers: Mapping[str, str]
) -> list[tuple[bytes, bytes]]:
    """Host, the agent's stored headers (minus those the client owns), then the client's own."""
    headers = [(b"Host", host_header)]
    names = set()
    for name, value in agent_headers.items():
        lowered = name.lower()
        if lowered not in RESERVED_HEADERS:
            headers.append((name.encode(), value.encode()))
            names.add(lowered)
    headers += [
        (name.encode(), value) for name, value in _DEFAULT_HEADERS.items() if name not in names
    ]
    headers += _FIXED_HEADERS
    return headers


def header_value(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes:
    """A response header's value by lower-case name, empty when absent."""
    for key, value in headers:
        if key.lower() == name:
            return value
    return b""


def card_request(endpoint: Endpoint, agent_headers: Mapping[str, str]) -> bytes | None:
    """A GET of the URL (an A2A agent card) with the agent's headers; None when a stored header
    is not valid in HTTP."""
    head = request_head(endpoint, agent_headers)
    if head is None:
        return None
    # The POST head without its body's length: the same headers, on a GET with no body.
    fields = head[len(endpoint.request_line) : -len(b"Content-Length: ")]
    return b"GET " + endpoint.target + b" HTTP/1.1\r\n" + fields + b"\r\n"
