"""Which addresses an agent may live at, and the registration-time check of an agent URL."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

import httpx

# Answers every address a host name resolves to, as IP literals (host, port) -> addresses.
Resolver = Callable[[str, int], Awaitable[list[str]]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}


class AddressRefused(Exception):
    """The agent's host resolves to an address the platform will not call; the message says why."""


def _blocks(
    *rows: tuple[str, str],
) -> tuple[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network], ...]:
    return tuple((kind, ipaddress.ip_network(network)) for kind, network in rows)


# Listed rather than left to `ip.is_global`, whose tables changed between Python patch releases.
# The first block an address falls in names the refusal, so narrow blocks come before wide ones.
_BLOCKED_V4 = _blocks(
    ("a loopback address", "127.0.0.0/8"),
    ("a private address", "10.0.0.0/8"),
    ("a private address", "172.16.0.0/12"),
    ("a private address", "192.168.0.0/16"),
    ("the cloud metadata address", "169.254.169.254/32"),
    ("a link-local address", "169.254.0.0/16"),
    ("a shared (carrier-grade NAT) address", "100.64.0.0/10"),
    ("an unspecified address", "0.0.0.0/8"),
    ("a multicast address", "224.0.0.0/4"),
    ("a reserved address", "240.0.0.0/4"),
    ("a reserved address", "192.0.0.0/24"),
    ("a reserved address", "192.0.2.0/24"),
    ("a reserved address", "198.18.0.0/15"),
    ("a reserved address", "198.51.100.0/24"),
    ("a reserved address", "203.0.113.0/24"),
)
_BLOCKED_V6 = _blocks(
    ("a loopback address", "::1/128"),
    ("an unspecified address", "::/128"),
    ("the cloud metadata address", "fd00:ec2::254/128"),
    ("a private address", "fc00::/7"),
    ("a private address", "fec0::/10"),
    ("a link-local address", "fe80::/10"),
    ("a multicast address", "ff00::/8"),
    ("a reserved address", "::/8"),
    ("a reserved address", "100::/64"),
    ("a reserved address", "2001::/23"),
    ("a reserved address", "2001:db8::/32"),
    ("a reserved address", "64:ff9b:1::/48"),
)
# IPv6 forms that carry an IPv4 address the packets end up at: judge that address instead.
_MAPPED_V4 = ipaddress.ip_network("::ffff:0:0/96")
_TRANSLATED_V4 = ipaddress.ip_network("::ffff:0:0:0/96")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a mapped, translated, NAT64 or 6to4 IPv6 address leads to, if any."""
    if address in _SIX_TO_FOUR:
        return address.sixtofour
    if address in _MAPPED_V4 or address in _TRANSLATED_V4 or address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def non_public_kind(address: IPAddress) -> str | None:
    """What kind of internal address this is ("a private address"), or None when it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            return non_public_kind(inner)
        blocked = _BLOCKED_V6
    else:
        blocked = _BLOCKED_V4
    for kind, network in blocked:
        if address in network:
            return kind
    return None if address.is_global else "a non-public address"


def refusal_reason(addresses: Iterable[str]) -> str | None:
    """Why an agent at these addresses may not be called (the first bad one), or None.

    The address itself is never named: what an internal name resolves to is not for a tenant
    to learn by registering agents.
    """
    for text in addresses:
        try:
            kind = non_public_kind(ipaddress.ip_address(text))
        except ValueError:
            return "the agent URL resolves to something that is not an IP address"
        if kind is not None:
            return f"the agent URL resolves to {kind}, which is not allowed"
    return None


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for a host, without duplicates."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:  # a label over 63 characters: no such name, and no query sent
        raise socket.gaierror(socket.EAI_NONAME, f"invalid host name {host!r}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_agent_url(url: str) -> httpx.URL | str:
    """The URL parsed as it will be requested, or why it cannot be an agent's URL."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        return f"the agent URL is not a valid URL: {exc}"
    if parsed.scheme not in ALLOWED_SCHEMES:
        return "the agent URL must start with http:// or https://"
    if not parsed.raw_host:
        return "the agent URL has no host"
    if parsed.userinfo:
        # URLs are stored and shown in clear; headers are the encrypted place for secrets.
        return "the agent URL must not contain a user name or password: use the agent's headers"
    return parsed


def origin_of(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port: where the calls (and the headers) of this URL go."""
    parsed = parse_agent_url(url)
    if isinstance(parsed, str):
        return ("", url, None)
    port = parsed.port or DEFAULT_PORTS.get(parsed.scheme)
    return (parsed.scheme, parsed.host.lower(), port)


async def check_agent_url(
    url: str, *, allow_private: bool, resolver: Resolver | None = None
) -> str | None:
    """Registration-time guard: None when the URL may be called, else the reason it may not."""
    parsed = parse_agent_url(url)
    if isinstance(parsed, str):
        return parsed
    host = parsed.raw_host.decode("ascii")
    try:
        addresses = await (resolver or resolve_host)(
            host, parsed.port or DEFAULT_PORTS[parsed.scheme]
        )
    except OSError:
        addresses = []
    if not addresses:
        return f"the agent URL's host ({host}) does not resolve"
    return None if allow_private else refusal_reason(addresses)
