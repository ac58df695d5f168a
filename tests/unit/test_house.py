"""The house rules on size (style.md): no module over 400 lines, no function over 50.

A function's length runs from its first decorator (or its `def`) to its last line, docstring and
nested functions included: that is what a reader has to hold at once. A module's length is its
line count. Both are measured on every .py file under app/ and workers/.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.source import FOLDERS, ROOT

MODULE_LINES = 400
FUNCTION_LINES = 50


def _sources() -> list[Path]:
    return sorted(path for folder in FOLDERS.values() for path in folder.rglob("*.py"))


def _function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    assert node.end_lineno is not None
    return node.end_lineno - first + 1


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (lines := _function_lines(node)) > FUNCTION_LINES
    ]


def test_the_sources_are_found() -> None:
    sources = _sources()
    assert any(path.name == "server.py" for path in sources)
    assert any(path.is_relative_to(FOLDERS["agentlasso_workers"]) for path in sources)


def test_no_module_is_over_400_lines() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in _sources()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    ]
    print("\n".join(offenders))
    assert not offenders, "modules over 400 lines:\n" + "\n".join(offenders)


def test_no_function_is_over_50_lines() -> None:
    offenders = [line for path in _sources() for line in _long_functions(path)]
    print("\n".join(offenders))
    assert not offenders, "functions over 50 lines:\n" + "\n".join(offenders)
