"""`agentlasso api` in a process that reaches loopback only (`python -m tests.support.guarded_api`).

Fuzzing the API registers agents at whatever URLs the fuzzer invents, and a free try calls them.
Here no such call (nor a DNS lookup of an invented name) can leave the machine: the process's
sockets refuse every address that is not loopback, before anything is sent.
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


def _is_loopback(host: object) -> bool:
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return str(host).lower() in _LOOPBACK_NAMES


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not _is_loopback(host):
        raise socket.gaierror(socket.EAI_NONAME, "name lookups are off in this test process")
    return _real_getaddrinfo(host, *args, **kwargs)


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
    from app.cli.main import main

    sys.exit(main(["api", *sys.argv[1:]]))
