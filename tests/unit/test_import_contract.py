"""The import contracts of pyproject.toml hold: above all, the grading core and the domain
import nothing that does I/O, not even indirectly through a third-party package."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.support.source import module_of, package_dir

ROOT = Path(__file__).resolve().parents[2]


def _purity_contract() -> dict[str, Any]:
    """The purity rule as pyproject.toml states it (the one place it is written down)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    contract: dict[str, Any] = next(c for c in contracts if "do no I/O" in c["name"])
    return contract


PURE_PACKAGES = tuple(_purity_contract()["source_modules"])
FORBIDDEN = tuple(_purity_contract()["forbidden_modules"])
CONTRACT_COUNT = len(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]
)


def pure_files() -> list[Path]:
    files = [path for name in PURE_PACKAGES for path in sorted(package_dir(name).rglob("*.py"))]
    assert files, "the pure packages have source files"
    return files


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth, relative imports resolved."""
    package = module_of(path).rpartition(".")[0]
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


def forbidden_loaded_by(imports: str) -> set[str]:
    """The forbidden modules a fresh interpreter has loaded after these imports."""
    code = (
        f"import sys, {imports};"
        f"bad = sorted(m for m in sys.modules if any(m == n or m.startswith(n + '.') "
        f"for n in {FORBIDDEN!r})); print(','.join(bad))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(filter(None, completed.stdout.strip().split(",")))


# jsonschema-rs (the JSON Schema validator the grading core uses) imports `email.utils` for its
# format checks, which imports `socket` at module level; the validator does no I/O with it (it
# is given a retriever that refuses every reference). What it loads is its own, not ours.
VALIDATOR_LOADS = forbidden_loaded_by("jsonschema_rs")


def test_importing_the_pure_packages_loads_no_io_module() -> None:
    # A fresh interpreter: transitive imports (through a third-party package) count too.
    loaded = forbidden_loaded_by(
        f"{', '.join(PURE_PACKAGES)}, agentlasso.domain.grades, agentlasso.domain.checks, "
        "agentlasso.domain.test_cases, agentlasso.domain.runs"
    )
    assert sorted(loaded - VALIDATOR_LOADS) == []
    assert {"socket"} >= VALIDATOR_LOADS, "the validator loads more than it did: look again"


def test_import_linter_contract_holds() -> None:
    """The contract in pyproject.toml, run by import-linter as `lint-imports` runs it."""
    lint_imports = Path(sys.executable).with_name("lint-imports")
    if not lint_imports.exists():
        pytest.skip("import-linter (the dev extra) is not installed in this environment")
    completed = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"{CONTRACT_COUNT} kept, 0 broken" in completed.stdout


def test_the_api_process_does_not_load_the_model_sdk() -> None:
    # Only workers call the judge; the SDK would cost every API process about 77 MB.
    code = "import sys, agentlasso.server, agentlasso.cli.main; print('anthropic' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "False"
