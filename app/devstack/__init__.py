"""The platform on one machine: embedded PostgreSQL and Valkey, and `agentlasso dev`."""

from agentlasso.devstack.processes import ServiceStartError
from agentlasso.devstack.services import (
    EmbeddedServices,
    remove_embedded_data,
    start_embedded_services,
)

__all__ = [
    "EmbeddedServices",
    "ServiceStartError",
    "remove_embedded_data",
    "start_embedded_services",
]
