"""Which addresses an agent may be called at, and the registration-time URL check.

No network: addresses are classified as literals, and host names go through injected resolvers.
"""

from __future__ import annotations

import ipaddress
import socket

import pytest

from agentlasso.agents.address_guard import (
    check_agent_url,
    embedded_ipv4,
    non_public_kind,
    parse_agent_url,
    refusal_reason,
)

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",  # just below the shared range
    "100.128.0.0",  # just above it
    "172.15.255.255",
    "172.32.0.0",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",  # mapped, leads to a public address
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
]

NOT_PUBLIC = [
    ("127.0.0.1", "a loopback address"),
    ("127.255.255.254", "a loopback address"),
    ("10.0.0.5", "a private address"),
    ("172.16.0.1", "a private address"),
    ("172.31.255.255", "a private address"),
    ("192.168.1.1", "a private address"),
    ("169.254.169.254", "the cloud metadata address"),
    ("169.254.1.1", "a link-local address"),
    ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ("100.127.255.255", "a shared (carrier-grade NAT) address"),
    ("0.0.0.0", "an unspecified address"),
    ("0.1.2.3", "an unspecified address"),
    ("224.0.0.1", "a multicast address"),
    ("239.255.255.250", "a multicast address"),
    ("240.0.0.1", "a reserved address"),
    ("255.255.255.255", "a reserved address"),
    ("192.0.0.8", "a reserved address"),
    ("192.0.2.1", "a reserved address"),
    ("198.18.0.1", "a reserved address"),
    ("198.51.100.7", "a reserved address"),
    ("203.0.113.9", "a reserved address"),
    ("::1", "a loopback address"),
    ("::", "an unspecified address"),
    ("fd00:ec2::254", "the cloud metadata address"),
    ("fd12:3456::1", "a private address"),
    ("fc00::1", "a private address"),
    ("fec0::1", "a private address"),
    ("fe80::1", "a link-local address"),
    ("ff02::1", "a multicast address"),
    ("::7f00:1", "a reserved address"),  # IPv4-compatible, deprecated
    ("100::1", "a reserved address"),
    ("2001::1", "a reserved address"),  # Teredo
    ("2001:db8::1", "a reserved address"),
    ("64:ff9b:1::a00:5", "a reserved address"),  # local-use NAT64
    # IPv6 forms that lead to an internal IPv4 address are judged by that address.
    ("::ffff:127.0.0.1", "a loopback address"),
    ("::ffff:10.0.0.5", "a private address"),
    ("::ffff:169.254.169.254", "the cloud metadata address"),
    ("::ffff:0:127.0.0.1", "a loopback address"),  # IPv4-translated
    ("64:ff9b::a9fe:a9fe", "the cloud metadata address"),  # NAT64 of 169.254.169.254
    ("64:ff9b::7f00:1", "a loopback address"),
    ("2002:7f00:1::1", "a loopback address"),  # 6to4 of 127.0.0.1
    ("2002:a00:5::", "a private address"),  # 6to4 of 10.0.0.5
]


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    assert non_public_kind(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "kind"), NOT_PUBLIC)
def test_internal_addresses_are_named(address: str, kind: str) -> None:
    assert non_public_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("address", "inner"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::ffff:0:a00:5", "10.0.0.5"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("2002:a00:5:1::1", "10.0.0.5"),
        ("2606:4700:4700::1111", None),
        ("::1", None),
    ],
)
def test_embedded_ipv4_is_found(address: str, inner: str | None) -> None:
    found = embedded_ipv4(ipaddress.IPv6Address(address))
    assert (str(found) if found else None) == inner


@pytest.mark.parametrize(
    ("addresses", "reason"),
    [
        (["8.8.8.8"], None),
        (["8.8.8.8", "2606:4700:4700::1111"], None),
        (
            ["8.8.8.8", "10.0.0.5"],
            "the agent URL resolves to a private address, which is not allowed",
        ),
        (
            ["::ffff:127.0.0.1", "8.8.8.8"],
            "the agent URL resolves to a loopback address, which is not allowed",
        ),
        (["not-an-ip"], "the agent URL resolves to something that is not an IP address"),
    ],
)
def test_one_internal_address_refuses_the_whole_answer(
    addresses: list[str], reason: str | None
) -> None:
    assert refusal_reason(addresses) == reason


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://agent.example/run", "the agent URL must start with http:// or https://"),
        ("file:///etc/passwd", "the agent URL must start with http:// or https://"),
        ("agent.example/run", "the agent URL must start with http:// or https://"),
        ("http:///run", "the agent URL has no host"),
        (
            "https://bot:s3cret@agent.example/run",
            "the agent URL must not contain a user name or password: use the agent's headers",
        ),
        (
            "http://0177.0.0.1/",
            "the agent URL is not a valid URL: Invalid IPv4 address: '0177.0.0.1'",
        ),
    ],
)
def test_urls_that_cannot_be_agents(url: str, reason: str) -> None:
    assert parse_agent_url(url) == reason


def test_unicode_host_is_requested_in_its_ascii_form() -> None:
    parsed = parse_agent_url("https://bücher.example/agent")
    assert not isinstance(parsed, str)
    assert parsed.raw_host == b"xn--bcher-kva.example"


def answering(*addresses: str):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve


async def test_registration_accepts_a_public_host() -> None:
    url = "https://agent.example/run"
    assert await check_agent_url(url, allow_private=False, resolver=answering("8.8.8.8")) is None


async def test_registration_refuses_an_internal_host() -> None:
    reason = await check_agent_url(
        "https://agent.example/run", allow_private=False, resolver=answering("8.8.8.8", "10.0.0.5")
    )
    assert reason == "the agent URL resolves to a private address, which is not allowed"


async def test_registration_allows_internal_hosts_when_private_agents_are_allowed() -> None:
    url = "http://agent.local:8000/run"
    assert await check_agent_url(url, allow_private=True, resolver=answering("127.0.0.1")) is None


async def test_registration_refuses_a_host_that_does_not_resolve() -> None:
    async def nxdomain(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    reason = await check_agent_url(
        "https://nowhere.example/", allow_private=True, resolver=nxdomain
    )
    assert reason == "the agent URL's host (nowhere.example) does not resolve"


async def test_registration_refuses_an_impossible_host_name_without_a_query() -> None:
    host = "a" * 64 + ".invalid"  # over DNS's 63-character label: refused before any lookup
    reason = await check_agent_url(f"https://{host}/", allow_private=False)
    assert reason == f"the agent URL's host ({host}) does not resolve"


async def test_registration_refuses_a_bad_scheme_before_resolving() -> None:
    async def must_not_resolve(host: str, port: int) -> list[str]:
        raise AssertionError("resolved a URL that was already refused")

    reason = await check_agent_url(
        "gopher://agent.example/", allow_private=False, resolver=must_not_resolve
    )
    assert reason == "the agent URL must start with http:// or https://"


async def test_registration_resolves_with_the_urls_port() -> None:
    asked: list[tuple[str, int]] = []

    async def recording(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["8.8.8.8"]

    await check_agent_url("https://agent.example/", allow_private=False, resolver=recording)
    await check_agent_url("http://agent.example:8080/", allow_private=False, resolver=recording)
    assert asked == [("agent.example", 443), ("agent.example", 8080)]


@pytest.mark.parametrize("host", ["127.0.0.1", "0x7f000001", "2130706433", "127.1", "[::1]"])
async def test_numeric_loopback_forms_are_refused_by_the_default_resolver(host: str) -> None:
    # Numeric hosts: getaddrinfo parses them itself, no DNS query is made.
    reason = await check_agent_url(f"http://{host}:9/", allow_private=False)
    assert reason is not None
    assert reason.startswith("the agent URL resolves to a loopback address")
