"""`agentlasso api` in a process that reaches loopback only (`python -m tests.support.guarded_api`).

Fuzzing the API registers agents at whatever URLs the fuzzer invents, and a free try calls them.
Here no such call (nor a DNS lookup of an invented name) can leave the machine: the process's
sockets refuse every address that is not loopback, before anything is sent. So that the fuzzer's
agents can be registered at all (the address guard wants a name that resolves to a public
address), every name that is not loopback resolves, without a query, to one public stand-in
address, which the sockets then refuse like any other.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import Any

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
# Where every other name "resolves": a public address (example.com's), never connected to.
PUBLIC_STAND_IN = "93.184.215.14"


def _is_loopback(host: object) -> bool:
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host).lower() in _LOOPBACK_NAMES


def _getaddrinfo(host: Any, port: Any = None, *args: Any, **kwargs: Any) -> Any:
    if host is None or _is_loopback(host):
        return _real_getaddrinfo(host, port, *args, **kwargs)
    if _is_ip_literal(host):
        # A literal needs no lookup: the numeric-only flag makes sure none is made.
        return _real_getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0,
                                 socket.AI_NUMERICHOST)  # fmt: skip
    number = int(port) if str(port or "").isdigit() else 0
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (PUBLIC_STAND_IN, number))]


def _is_ip_literal(host: object) -> bool:
    text = host.decode() if isinstance(host, bytes) else str(host)
    try:
        ipaddress.ip_address(text.strip("[]").split("%")[0])
    except ValueError:
        return False
    return True


def _connect(sock: socket.socket, address: Any) -> None:
    if isinstance(address, tuple) and not _is_loopback(address[0]):
        raise ConnectionRefusedError(f"only loopback is reachable here, not {address[0]}")
    _real_connect(sock, address)


def _connect_ex(sock: socket.socket, address: Any) -> int:
    if isinstance(address, tuple) and not _is_loopback(address[0]):
        return 111  # ECONNREFUSED
    return _real_connect_ex(sock, address)


def refuse_the_outside() -> None:
    """From now on this process reaches loopback only."""
    socket.getaddrinfo = _getaddrinfo
    socket.socket.connect = _connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]


if __name__ == "__main__":
    refuse_the_outside()
    from agentlasso.cli.main import main

    sys.exit(main(["api", *sys.argv[1:]]))
