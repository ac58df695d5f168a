"""Choosing TCP ports to listen on."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def _address_family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def is_port_free(host: str, port: int) -> bool:
    """Whether a server could listen on `port` at `host` right now."""
    with socket.socket(_address_family(host), socket.SOCK_STREAM) as probe:
        # Servers set SO_REUSEADDR too: a port left in TIME_WAIT by a previous run counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = LOOPBACK) -> int:
    """A port the kernel reports free on `host`."""
    with socket.socket(_address_family(host), socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


def preferred_or_free_port(host: str, preferred: int) -> int:
    """`preferred` if nothing listens on it, else any free port."""
    if preferred and is_port_free(host, preferred):
        return preferred
    return free_port(host)
