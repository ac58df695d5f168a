"""The platform on one machine: embedded PostgreSQL and Valkey, and `agentlasso dev`."""

from app.devstack.processes import ServiceStartError
from app.devstack.services import (
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
