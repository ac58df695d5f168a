"""Connecting to an agent: resolve once, refuse internal addresses, connect to a checked IP.

The guard sits where the socket is opened, once per new connection: a check made earlier (at
registration, or before the request) could be answered differently by DNS at connect time.
Connecting to the checked IP rather than the name closes that gap, while TLS still sends the
host name as SNI and checks the certificate against it (and the Host header keeps the name).
"""

from __future__ import annotations

import ssl

import httpcore
import httpx

from app.agents.address_guard import AddressRefused, Resolver, refusal_reason


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
        network_backend: httpcore.AsyncNetworkBackend,
    ) -> None:
        self._resolver = resolver
        self._allow_private = allow_private
        self._ssl_context = ssl_context
        self._backend = network_backend

    async def connect(self, origin: httpcore.Origin) -> httpcore.AsyncNetworkStream:
        """A stream to the origin (TLS for https) through the first checked address that answers."""
        host = origin.host.decode("ascii")
        addresses = await self._checked_addresses(host, origin.port)
        stream = await self._connect_first(addresses, origin.port)
        if origin.scheme != b"https":
            return stream
        try:
            return await stream.start_tls(self._ssl_context, server_hostname=host)
        except BaseException:
            await stream.aclose()
            raise

    async def _checked_addresses(self, host: str, port: int) -> list[str]:
        """The host's addresses, refused whole when any one of them is not public."""
        try:
            addresses = await self._resolver(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"the host name {host} does not resolve") from exc
        if not addresses:
            raise httpcore.ConnectError(f"the host name {host} does not resolve")
        reason = None if self._allow_private else refusal_reason(addresses)
        if reason is not None:
            raise AddressRefused(reason)
        return addresses

    async def _connect_first(self, addresses: list[str], port: int) -> httpcore.AsyncNetworkStream:
        """A TCP stream to the first address that accepts, else the last address's error."""
        for address in addresses[:-1]:
            try:
                return await self._backend.connect_tcp(address, port)
            except httpcore.ConnectError:
                continue
        return await self._backend.connect_tcp(addresses[-1], port)
