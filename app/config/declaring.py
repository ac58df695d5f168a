"""How a setting is declared: `name: Annotated[type, bounds, GROUP("VARIABLE")] = default`,
with its line of documentation in the docstring under it.

The bounds are msgspec's own `Meta(gt=..., le=...)`; a `Literal` type lists the words a value
may be. A Struct read from the environment declares every field so.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import typing
from collections.abc import Callable
from typing import Any

import msgspec

# A field without a default of its own must be given when its Struct is made directly.
NO_DEFAULT: Any = msgspec.NODEFAULT
# Of the bounds msgspec's Meta may hold, gt and le are read; another would be kept by msgspec's
# decoding but not by reading the environment, so a declaration giving one is refused.
_UNREAD_BOUNDS = ("ge", "lt", "min_length", "max_length", "pattern")


@dataclasses.dataclass(frozen=True)
class Group:
    """Settings of one concern: a heading on the reference page, with a line under it."""

    title: str
    about: str

    def __call__(self, variable: str, **details: Any) -> Env:
        """The declaration of one setting of this group, given by `variable`."""
        return Env(variable, self, **details)


@dataclasses.dataclass(frozen=True)
class Env:
    """Which variable gives a setting, and its group."""

    variable: str
    group: Group
    # What an unset variable gives, for a field that has no default of its own.
    default: Any = NO_DEFAULT
    # For a value that is more than its type says: (variable, text, default) -> value, what
    # the reference page calls its type, and the rule it keeps.
    parse: Callable[[str, str, Any], Any] | None = None
    shape: str = ""
    rule: str = ""


@dataclasses.dataclass(frozen=True)
class Declared:
    """One field of a settings Struct, with what its declaration says."""

    field: str
    kind: Any
    env: Env
    default: Any
    more_than: float | None = None
    at_most: float | None = None

    @property
    def variable(self) -> str:
        return self.env.variable

    @property
    def choices(self) -> tuple[str, ...]:
        """The words a `Literal` setting may be; empty for any other."""
        return typing.get_args(self.kind) if typing.get_origin(self.kind) is typing.Literal else ()


@functools.cache
def declared(struct: type[msgspec.Struct]) -> tuple[Declared, ...]:
    """Each field of `struct`, in order; TypeError for a field declared without its Env."""
    return tuple(_declared(struct, field) for field in msgspec.structs.fields(struct))


def _declared(struct: type[msgspec.Struct], field: msgspec.structs.FieldInfo) -> Declared:
    kind, *metadata = typing.get_args(field.type) or (field.type,)
    envs = [item for item in metadata if isinstance(item, Env)]
    if typing.get_origin(field.type) is not typing.Annotated or len(envs) != 1:
        raise TypeError(f"{struct.__name__}.{field.name} is not declared with one Env")
    metas = [item for item in metadata if isinstance(item, msgspec.Meta)]
    if any(getattr(meta, name) is not None for meta in metas for name in _UNREAD_BOUNDS):
        raise TypeError(f"{struct.__name__}.{field.name}: of Meta's bounds only gt and le are read")
    more_than = next((meta.gt for meta in metas if meta.gt is not None), None)
    at_most = next((meta.le for meta in metas if meta.le is not None), None)
    default = _default(field, envs[0])
    return Declared(field.name, kind, envs[0], default, more_than, at_most)


def _default(field: msgspec.structs.FieldInfo, env: Env) -> Any:
    """The value a setting has when its variable is not set."""
    if env.default is not NO_DEFAULT:
        return env.default
    if field.default_factory is not NO_DEFAULT:
        return field.default_factory()
    return field.default


@functools.cache
def field_docs(struct: type[msgspec.Struct]) -> dict[str, str]:
    """Each field's docstring (the string under its declaration), as one line."""
    (tree,) = ast.parse(textwrap.dedent(inspect.getsource(struct))).body
    assert isinstance(tree, ast.ClassDef)
    docs = {}
    for node, after in zip(tree.body, [*tree.body[1:], None], strict=True):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            docs[node.target.id] = " ".join(inspect.cleandoc(_text(after)).split())
    return docs


def _text(node: ast.stmt | None) -> str:
    """The string a statement is, or "" for any other statement."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return node.value.value if isinstance(node.value.value, str) else ""
    return ""
