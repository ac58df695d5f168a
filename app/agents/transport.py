"""Connecting to an agent: resolve once, refuse internal addresses, connect to a checked IP.

The guard sits where the socket is opened, once per new connection: a check made earlier (at
registration, or before the request) could be answered differently by DNS at connect time.
Connecting to the checked IP rather than the name closes that gap, while TLS still sends the
host name as SNI and checks the certificate against it (and the Host header keeps the name).
"""

from __future__ import annotations

import asyncio
import ssl

import httpx

from agentlasso.agents.address_guard import AddressRefused, Resolver, refusal_reason
from agentlasso.agents.http1 import AgentConnection, AnswerLimits, ConnectFailed, Origin


def agent_ssl_context() -> ssl.SSLContext:
    """Certificate checks on, HTTP/1.1 only; trusts certifi's roots, or SSL_CERT_FILE/DIR if set."""
    context = httpx.create_ssl_context()
    context.set_alpn_protocols(["http/1.1"])
    return context


class GuardedConnector:
    """Opens TCP (and TLS) connections only to addresses the guard accepts."""

    def __init__(
        self,
        *,
        resolver: Resolver,
        allow_private: bool,
        ssl_context: ssl.SSLContext,
        limits: AnswerLimits,
    ) -> None:
        self._resolver = resolver
        self._allow_private = allow_private
        self._ssl_context = ssl_context
        self._limits = limits

    async def connect(self, origin: Origin) -> AgentConnection:
        """A connection to the origin (TLS for https) through the first checked address that
        answers; ConnectFailed, or AddressRefused, when there is none."""
        addresses = await self._checked_addresses(origin.host, origin.port)
        last_error: OSError | None = None
        for address in addresses:
            try:
                return await self._connect(origin, address)
            except ssl.SSLError as exc:  # the server answered: another address would not help
                raise ConnectFailed(f"TLS with {origin.host} failed") from exc
            except OSError as exc:
                last_error = exc
        raise ConnectFailed(f"could not connect to {origin.host}") from last_error

    async def _connect(self, origin: Origin, address: str) -> AgentConnection:
        https = origin.scheme == "https"
        _, connection = await asyncio.get_running_loop().create_connection(
            lambda: AgentConnection(self._limits),
            address,
            origin.port,
            ssl=self._ssl_context if https else None,
            server_hostname=origin.host if https else None,
        )
        return connection

    async def _checked_addresses(self, host: str, port: int) -> list[str]:
        """The host's addresses, refused whole when any one of them is not public."""
        try:
            addresses = await self._resolver(host, port)
        except OSError as exc:
            raise ConnectFailed(f"the host name {host} does not resolve") from exc
        if not addresses:
            raise ConnectFailed(f"the host name {host} does not resolve")
        reason = None if self._allow_private else refusal_reason(addresses)
        if reason is not None:
            raise AddressRefused(reason)
        return addresses
