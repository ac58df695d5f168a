"""The grading core and the domain import nothing that does I/O (style.md, pyproject contract)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("app/grading", "app/domain")
FORBIDDEN = (
    "asyncpg",
    "redis",
    "arq",
    "httpx",
    "litestar",
    "anthropic",
    "uvicorn",
    "socket",
    "app.db",
    "app.api",
    "app.services",
    "app.agents",
    "app.judge",
)


def pure_files() -> list[Path]:
    files = [path for package in PURE_PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    assert files, "the pure packages have source files"
    return files


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth, relative imports resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            modules.add(base)
            modules.update(f"{base}.{alias.name}" for alias in node.names)
    return modules


def is_forbidden(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in FORBIDDEN)


@pytest.mark.parametrize("path", pure_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_pure_modules_import_no_io(path: Path) -> None:
    assert sorted(filter(is_forbidden, imported_modules(path))) == []


def test_importing_the_pure_packages_loads_no_io_module() -> None:
    # A fresh interpreter: transitive imports (through a third-party package) count too.
    code = (
        "import sys, app.grading, app.domain.results, app.domain.checks, app.domain.test_cases;"
        f"bad = sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') "
        f"for n in {FORBIDDEN!r})); print(','.join(bad))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == ""


def test_import_linter_contract_holds() -> None:
    """The contract in pyproject.toml, run by import-linter as `lint-imports` runs it."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        pytest.skip("import-linter (the dev extra) is not installed in this environment")
    completed = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 kept, 0 broken" in completed.stdout


def test_the_api_process_does_not_load_the_model_sdk() -> None:
    # Only workers call the judge; the SDK would cost every API process about 77 MB.
    code = "import sys, app.api.app, app.cli; print('anthropic' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "False"
