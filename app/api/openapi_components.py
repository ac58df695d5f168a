"""The component schemas of the API's description: every Struct it speaks, as msgspec itself
describes (and enforces) it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import msgspec

import agentlasso.api
import agentlasso.schemas
from agentlasso.http.problems import Problem


def msgspec_schemas() -> dict[str, Any]:
    """Every Struct the API speaks, as msgspec itself describes (and enforces) it."""
    _, components = msgspec.json.schema_components(
        _api_structs(), ref_template="#/components/schemas/{name}"
    )
    return components


def _api_structs() -> list[type[msgspec.Struct]]:
    structs: list[type[msgspec.Struct]] = [Problem]
    for module_info in _modules_of(agentlasso.api, agentlasso.schemas):
        module = importlib.import_module(module_info.name)
        structs += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, msgspec.Struct)
            and value.__module__ == module.__name__
        ]
    return structs


def _modules_of(*packages: ModuleType) -> Iterator[pkgutil.ModuleInfo]:
    """The modules of the API's packages: its handlers, and the shapes it speaks."""
    for package in packages:
        yield from pkgutil.iter_modules(package.__path__, f"{package.__name__}.")
